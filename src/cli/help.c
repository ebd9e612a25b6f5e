/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat CMD --help`, `moat help CMD`, and "did you mean" for commands. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

struct help {
	const char *cmd, *sub; /* sub: "" for commands without subcommands */
	const char *text;
	bool options; /* followed by the policy options */
};

static const struct help helps[] = {
	{"run", "",
	 "usage: moat run [OPTIONS] -- COMMAND [ARG...]\n"
	 "Runs COMMAND in a fresh sandbox. Exit status: the command's; 128+N if killed by\n"
	 "signal N; 124 timeout; 125 the sandbox could not be set up; 126/127 command not\n"
	 "executable/found; 2 bad usage or policy (nothing was started).\n\noptions:\n",
	 true},
	{"policy", "",
	 "usage: moat policy check FILE | moat policy show [OPTIONS]\n"
	 "       moat policy import --from srt FILE [-o OUT]\n"
	 "  check FILE    validate a policy file (exit 0 ok, 2 with the line:column)\n"
	 "  show          print the effective policy and the setup plan\n"
	 "  import        convert sandbox-runtime / Claude Code sandbox settings\n",
	 false},
	{"policy", "check",
	 "usage: moat policy check FILE\n"
	 "Validates the policy file; relative paths in it are relative to its directory.\n",
	 false},
	{"policy", "import",
	 "usage: moat policy import --from srt FILE [-o OUT]\n"
	 "Converts Anthropic sandbox-runtime settings (~/.srt-settings.json, or the\n"
	 "\"sandbox\" object of Claude Code's settings.json) into a moat policy, on stdout\n"
	 "or into OUT (which must not exist). What has no equivalent in moat is named on\n"
	 "stderr; the policy is never wider than the input: an allowance moat cannot\n"
	 "express is left out, a deny it cannot express drops the allowance around it.\n"
	 "Relative paths resolve against the current directory, '~' against $HOME.\n",
	 false},
	{"policy", "show",
	 "usage: moat policy show [OPTIONS]\n"
	 "Prints the effective policy (JSON) and the setup plan for the options given,\n"
	 "with every host path made absolute.\n\noptions:\n",
	 true},
	{"doctor", "",
	 "usage: moat doctor [--json] [--boot process|gvisor|vm [--vm-accel kvm|any]]\n"
	 "Kernel features found, what moat enforces and what it will refuse.\n"
	 "Isolation levels that work here: gvisor when runsc starts a container of\n"
	 "/bin/true; vm when QEMU, a guest kernel and a KVM that runs a guest are\n"
	 "there (with only TCG: \"available under TCG emulation only\", which a run\n"
	 "uses only with vm_accel any).\n"
	 "--boot LEVEL: prove the level by booting it: a sandbox at --isolation LEVEL\n"
	 "runs /bin/echo (up to 180 s); exit 0 when its output came back, 1 (with\n"
	 "the run's message) when not. --vm-accel any lets a vm boot under TCG.\n"
	 "--json: the same as a JSON object. Exit: 0 fine, 1 a required feature is\n"
	 "missing or the level did not boot, 2 bad usage.\n",
	 false},
	{"log", "",
	 "usage: moat log [--type TYPE[,TYPE...]] [--denied] [--json] RUN-ID|FILE|--last\n"
	 "The audit log of a run (--last: the newest run's). types: start exec net dns\n"
	 "syscall limit file alert exit\n",
	 false},
	{"diff", "",
	 "usage: moat diff [--json] RUN-ID\n"
	 "The workspace changes of a run, then a unified diff of each file whose new\n"
	 "content the run holds against the workspace's file (binary files marked,\n"
	 "control bytes escaped). --json: the manifest only.\n",
	 false},
	{"apply", "",
	 "usage: moat apply RUN-ID [--] [PATH...]\n"
	 "Applies the run's held-back workspace changes (all, or only PATHs); refused\n"
	 "entries (devices, FIFOs, sockets, set-id files) are never applied.\n",
	 false},
	{"ps", "",
	 "usage: moat ps [--json] [--state-dir DIR]\n"
	 "The live runs of this user (root: all of root's): id, pid, start time;\n"
	 "--json: also the command, workspace and limits.\n",
	 false},
	{"runs", "",
	 "usage: moat runs [-n N | --all] [--json] [--runs-dir DIR]\n"
	 "The recorded runs, newest first (default the last 20): id, start time, exit\n"
	 "status, held-back changes, command. The runs directory is pruned as a run\n"
	 "starts (at most hourly): runs older than audit.retention (default 14d) and,\n"
	 "oldest first, past audit.runs_max in total (default 4G); see moat gc.\n",
	 false},
	{"gc", "",
	 "usage: moat gc [--quiet] [--state-dir DIR]\nCleans up after crashed runs; removes the cached images (--image) no run holds and the vm level's initramfs files unused for a week.\n",
	 false},
	{"selftest", "",
	 "usage: moat selftest [--json] [--only NAME[,NAME...]] [--policy FILE] [RUN-OPTIONS...]\n"
	 "The red-team battery built into moat, against this machine and policy.\n"
	 "Exit 0: everything held or was skipped; 1: something escaped; 3: inconclusive.\n"
	 "--isolation gvisor|vm: the level's filesystem and network probes; a level\n"
	 "that cannot start here exits 125 naming why.\n",
	 false},
	{"mcp", "",
	 "usage: moat mcp [--policy FILE] [OPTIONS]\n"
	 "A Model Context Protocol server on stdin/stdout (JSON-RPC, one message a line)\n"
	 "for agent frameworks: tools run, read_file, write_file, list_dir, reset,\n"
	 "create_sandbox, destroy_sandbox in sandboxes of this policy, fixed at start: no\n"
	 "tool argument can widen it. See docs/MCP.md.\n\noptions:\n",
	 true},
	{"serve", "",
	 "usage: moat serve [--e2b] [--socket PATH] [--listen ADDR:PORT --token-file FILE\n"
	 "                  [--tls-cert FILE --tls-key FILE]] [--pool N[:POLICY]]...\n"
	 "                  [--policy FILE] [OPTIONS]\n"
	 "An HTTP/1.1 + JSON API (docs/API.md) on a unix socket (mode 0600; default\n"
	 "in the runtime directory) and optionally TCP with bearer tokens (tenants,\n"
	 "quotas) and TLS. The policy is the ceiling: a request narrows it, never\n"
	 "widens it. --pool keeps N sandboxes ready. --e2b also speaks E2B's protocol\n"
	 "(E2B_API_URL and E2B_SANDBOX_URL: this address; docs/E2B.md).\n\noptions:\n",
	 true},
	{"oci", "",
	 "usage: moat oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND\n"
	 "       (or moat-oci ...: the name engines call the runtime by)\n"
	 "moat as an OCI runtime for podman, containerd and Kubernetes (docs/OCI.md):\n"
	 "  create --bundle DIR [--pid-file F] [--console-socket S] ID | start ID |\n"
	 "  state ID | kill [--all] ID [SIG] | delete [--force] ID |\n"
	 "  exec --process FILE [--detach] [--pid-file F] [--tty --console-socket S] ID |\n"
	 "  ps [--format json] ID | pause ID | resume ID | features | --version\n"
	 "A config.json field moat cannot honour fails create, naming the field.\n",
	 false},
	{"create", "",
	 "usage: moat create [OPTIONS] [--name NAME] [--idle-timeout D] [--lifetime D]\n"
	 "Creates a sandbox that outlives this command, served by its own supervisor\n"
	 "process; prints its id once it is ready. Exit 125: it could not be set up.\n"
	 "See docs/SESSIONS.md.\n\noptions:\n",
	 true},
	{"exec", "",
	 "usage: moat exec ID|NAME [--env K=V]... [--cwd DIR] [--tty|--no-tty] [--timeout D]\n"
	 "                 -- COMMAND [ARG...]\n"
	 "Runs COMMAND in the sandbox; exits as moat run would (124 timeout, 126/127 not\n"
	 "executable/found, 128+N signal); 2: no such sandbox.\n",
	 false},
	{"ls", "", "usage: moat ls [--json]\nThe sandboxes of this user (moat create).\n", false},
	{"logs", "", "usage: moat logs [--follow] [--json] ID|NAME\nThe audit log of a sandbox.\n",
	 false},
	{"stop", "",
	 "usage: moat stop ID|NAME\nKills every process of the sandbox; its files stay.\n", false},
	{"rm", "",
	 "usage: moat rm [--force] [--quiet] ID|NAME... | moat rm --all [--force]\n"
	 "Ends the sandbox as a run ends (/output, review, exit record); refused while\n"
	 "processes run unless --force.\n",
	 false},
	{"cp", "",
	 "usage: moat cp [--max-size N] SRC ID:DEST | moat cp [--max-size N] ID:SRC DEST\n"
	 "Copies a regular file or a directory into or out of a sandbox (never through\n"
	 "a symlink; a directory into a new one, links and devices skipped; at most 32\n"
	 "deep, 100,000 entries, --max-size in all, default 1G).\n",
	 false},
	{"snapshot", "",
	 "usage: moat snapshot [--force] ID|NAME [SNAPSHOT]\n"
	 "       moat snapshot --list [--json] ID|NAME\n"
	 "       moat snapshot --delete ID|NAME SNAPSHOT\n"
	 "Saves the sandbox's files (workspace changes, /tmp, home; never processes) under\n"
	 "a name (default snap-N); refused while processes run unless --force (kills them).\n",
	 false},
	{"restore", "",
	 "usage: moat restore [--force] ID|NAME SNAPSHOT\n"
	 "Brings the sandbox's files back to the snapshot; refused while processes run\n"
	 "unless --force (kills them).\n",
	 false},
	{"reset", "",
	 "usage: moat reset [--force] ID|NAME\n"
	 "Brings the sandbox's files back to its start; refused while processes run\n"
	 "unless --force (kills them).\n",
	 false},
	{"version", "", "usage: moat --version | moat -V\n", false},
	{"help", "", "usage: moat help [COMMAND [SUBCOMMAND]]\n", false},
};

static const char *const commands[] = {
	"run", "policy", "doctor",   "log",	"diff",	  "apply", "ps", "gc",	 "selftest",
	"mcp", "serve",	 "version",  "help",	"create", "exec",  "ls", "logs", "stop",
	"rm",  "cp",	 "snapshot", "restore", "reset",  "runs",  "oci"};

const char *moat_cli_suggest_command(const char *cmd)
{
	return moat_cli_suggest(cmd, commands, sizeof(commands) / sizeof(commands[0]));
}

int moat_cli_help(const char *cmd, const char *sub)
{
	for (size_t i = 0; i < sizeof(helps) / sizeof(helps[0]); i++) {
		const struct help *h = &helps[i];
		if (strcmp(h->cmd, cmd) != 0 || strcmp(h->sub, sub ? sub : "") != 0)
			continue;
		fputs(h->text, stdout);
		if (h->options && strcmp(h->cmd, "run") == 0)
			moat_cli_knobs_help(stdout);
		if (h->options)
			moat_cli_options_help_to(stdout);
		return 0;
	}
	if (sub && *sub)
		return moat_cli_help(cmd, NULL);
	fputs("moat help: no command '", stderr);
	moat_cli_put_safe(stderr, cmd);
	const char *hint = moat_cli_suggest_command(cmd);
	fputs("'", stderr);
	if (hint)
		fprintf(stderr, " (did you mean %s?)", hint);
	fputc('\n', stderr);
	return MOAT_EXIT_USAGE;
}

bool moat_cli_wants_help(int argc, char **argv, const char **ret_sub)
{
	/* moat CMD --help, moat CMD SUB --help (policy) */
	*ret_sub = NULL;
	if (argc >= 3 && (strcmp(argv[2], "--help") == 0 || strcmp(argv[2], "-h") == 0))
		return true;
	if (argc >= 4 && strcmp(argv[1], "policy") == 0 &&
	    (strcmp(argv[3], "--help") == 0 || strcmp(argv[3], "-h") == 0)) {
		*ret_sub = argv[2];
		return true;
	}
	return false;
}
