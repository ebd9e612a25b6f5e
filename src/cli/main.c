/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat — command-line entry point: dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static void usage(FILE *f)
{
	fprintf(f,
		"moat %s — a sandbox for AI agents\n\n"
		"usage:\n"
		"  moat run [OPTIONS] -- COMMAND [ARG...]   run COMMAND in a fresh sandbox\n"
		"  moat create [OPTIONS] [--name N]         a sandbox that outlives one command\n"
		"  moat exec ID [--tty] -- COMMAND [ARG...] run COMMAND in it (moat ls, logs,\n"
		"                                           stop, rm, cp: docs/SESSIONS.md)\n"
		"  moat snapshot ID [NAME] / restore ID NAME / reset ID   its files' snapshots\n"
		"  moat policy check FILE                   validate a policy file\n"
		"  moat policy show [OPTIONS]               print the effective policy and plan\n"
		"  moat doctor [--json] [--boot LEVEL]      kernel features, what moat enforces,\n"
		"                                           which isolation levels boot here\n"
		"  moat log [--type T,..] [--denied] RUN-ID|FILE|--last   the audit log of a run\n"
		"  moat runs [-n N] [--json]                the recent runs, newest first\n"
		"  moat diff [--json] RUN-ID                the workspace changes of a run\n"
		"  moat apply RUN-ID [PATH...]              apply held-back workspace changes\n"
		"  moat ps                                  list the live runs\n"
		"  moat gc                                  clean up after crashed runs\n"
		"  moat selftest [--json] [--policy FILE]   the red-team battery on this machine\n"
		"  moat mcp [--policy FILE] [OPTIONS]       an MCP server (stdio) for agents\n"
		"  moat serve [--socket PATH] [--listen ADDR:PORT --token-file F] [--pool N[:POLICY]]\n"
		"             [--policy FILE] [OPTIONS]     an HTTP API (docs/API.md)\n"
		"  moat oci COMMAND (or as moat-oci)        the OCI runtime (docs/OCI.md)\n"
		"  moat help COMMAND / moat COMMAND --help      help of one command\n"
		"  moat --version | -V\n\n"
		"exit status of run: the command's; 128+N if killed by signal N; 124 timeout;\n"
		"125 the sandbox could not be set up; 126/127 command not executable/found;\n"
		"2 bad usage or policy.\n",
		MOAT_VERSION);
}

int main(int argc, char **argv)
{
	/* installed (linked) as moat-oci: the OCI runtime an engine calls */
	const char *base = argc > 0 && argv[0] ? strrchr(argv[0], '/') : NULL;
	base = base ? base + 1 : argc > 0 && argv[0] ? argv[0] : "";
	if (strcmp(base, "moat-oci") == 0)
		return moat_cli_oci(argc, argv);
	if (argc < 2) {
		usage(stderr);
		return MOAT_EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0 ||
	    strcmp(cmd, "-V") == 0) {
		printf("moat %s\n", MOAT_VERSION);
		return 0;
	}
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		if (strcmp(cmd, "help") == 0 && argc >= 3)
			return moat_cli_help(argv[2], argc >= 4 ? argv[3] : NULL);
		usage(stdout);
		return 0;
	}
	const char *help_sub;
	if (cmd[0] != '_' && moat_cli_wants_help(argc, argv, &help_sub))
		return moat_cli_help(cmd, help_sub);
	if (strcmp(cmd, "run") == 0)
		return moat_cli_run(argc - 1, argv + 1);
	if (strcmp(cmd, "policy") == 0)
		return moat_cli_policy(argc - 1, argv + 1);
	if (strcmp(cmd, "doctor") == 0)
		return moat_cli_doctor(argc - 1, argv + 1);
	if (strcmp(cmd, "log") == 0)
		return moat_cli_log(argc - 1, argv + 1);
	if (strcmp(cmd, "diff") == 0)
		return moat_cli_diff(argc - 1, argv + 1);
	if (strcmp(cmd, "apply") == 0)
		return moat_cli_apply(argc - 1, argv + 1);
	if (strcmp(cmd, "gc") == 0)
		return moat_cli_gc(argc - 1, argv + 1);
	if (strcmp(cmd, "ps") == 0)
		return moat_cli_ps(argc - 1, argv + 1);
	if (strcmp(cmd, "runs") == 0)
		return moat_cli_runs(argc - 1, argv + 1);
	if (strcmp(cmd, "selftest") == 0)
		return moat_cli_selftest(argc - 1, argv + 1);
	if (strcmp(cmd, "mcp") == 0)
		return moat_cli_mcp(argc - 1, argv + 1);
	if (strcmp(cmd, "serve") == 0)
		return moat_cli_serve(argc - 1, argv + 1);
	if (strcmp(cmd, "__mcp-front") == 0)
		return moat_cli_mcp_front(argc - 1, argv + 1);
	if (strcmp(cmd, "oci") == 0)
		return moat_cli_oci(argc - 1, argv + 1);
	if (strcmp(cmd, "create") == 0)
		return moat_cli_create(argc - 1, argv + 1);
	if (strcmp(cmd, "exec") == 0)
		return moat_cli_exec(argc - 1, argv + 1);
	if (strcmp(cmd, "ls") == 0)
		return moat_cli_ls(argc - 1, argv + 1);
	if (strcmp(cmd, "logs") == 0)
		return moat_cli_logs(argc - 1, argv + 1);
	if (strcmp(cmd, "stop") == 0)
		return moat_cli_stop(argc - 1, argv + 1);
	if (strcmp(cmd, "rm") == 0)
		return moat_cli_rm(argc - 1, argv + 1);
	if (strcmp(cmd, "cp") == 0)
		return moat_cli_cp(argc - 1, argv + 1);
	if (strcmp(cmd, "snapshot") == 0)
		return moat_cli_snapshot(argc - 1, argv + 1);
	if (strcmp(cmd, "restore") == 0)
		return moat_cli_restore(argc - 1, argv + 1);
	if (strcmp(cmd, "reset") == 0)
		return moat_cli_reset(argc - 1, argv + 1);
	if (strcmp(cmd, "__proxy") == 0)
		return moat_cli_proxy_helper(argc - 1, argv + 1);
	if (strcmp(cmd, "__vm-init") == 0)
		moat_vm_init_main();
	if (strcmp(cmd, "__gvisor-init") == 0)
		return moat_cli_gvisor_init(argc - 1, argv + 1);
	if (strcmp(cmd, "__probe") == 0)
		return moat_cli_probe(argc - 1, argv + 1);
	fputs("moat: unknown command '", stderr);
	moat_cli_put_safe(stderr, cmd);
	fputs("'", stderr);
	if (moat_cli_suggest_command(cmd))
		fprintf(stderr, " (did you mean %s?)", moat_cli_suggest_command(cmd));
	fputs("\n", stderr);
	usage(stderr);
	return MOAT_EXIT_USAGE;
}
