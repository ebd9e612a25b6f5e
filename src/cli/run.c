/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat run [OPTIONS] -- COMMAND [ARG...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void run_usage(void)
{
	fprintf(stderr, "usage: moat run [OPTIONS] -- COMMAND [ARG...]\n\noptions:\n");
	moat_cli_options_help();
}

/* "COUNT DEST\tRULE\n" lines from the status; names came from the sandbox, so
 * nothing but printable ASCII reaches the terminal. */
static void print_top_denied(const char *s)
{
	while (*s) {
		const char *nl = strchr(s, '\n');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);
		char line[512];
		size_t n = len < sizeof(line) - 1 ? len : sizeof(line) - 1;
		for (size_t i = 0; i < n; i++)
			line[i] = (s[i] >= 0x20 && s[i] < 0x7f) || s[i] == '\t' ? s[i] : '?';
		line[n] = 0;
		char *tab = strchr(line, '\t');
		if (tab)
			*tab = 0;
		char *sp = strchr(line, ' ');
		if (sp) {
			*sp = 0;
			fprintf(stderr, "  denied %sx %-40s%s%s\n", line, sp + 1,
				tab && tab[1] ? "  to allow: " : "", tab && tab[1] ? tab + 1 : "");
		}
		s += len + (nl ? 1 : 0);
	}
}

static void summary(const struct moat_status *st)
{
	double ms = (double)st->wall_us / 1000.0;
	double cpu = (double)(st->cpu_user_us + st->cpu_sys_us) / 1000.0;
	fprintf(stderr, "moat: run %s %s", st->run_id, moat_reason_name(st->reason));
	if (st->reason == MOAT_REASON_EXITED)
		fprintf(stderr, " %d", st->status);
	else if (st->reason == MOAT_REASON_SIGNALED)
		fprintf(stderr, " by signal %d", st->signal);
	fprintf(stderr, " (exit %d) in %.1f ms, cpu %.1f ms", st->exit_code, ms, cpu);
	if (st->denied_syscalls)
		fprintf(stderr, ", %llu denied syscalls", (unsigned long long)st->denied_syscalls);
	if (st->net_denied)
		fprintf(stderr, ", %llu denied connections", (unsigned long long)st->net_denied);
	if (st->degraded[0])
		fprintf(stderr, ", DEGRADED: %s", st->degraded);
	fputc('\n', stderr);
	/* workspace review and /output (observe.c); paths arrive escaped */
	if (st->files_changed)
		fprintf(stderr,
			"moat: workspace: %llu change(s), %llu applied, %llu held back, %llu refused\n",
			(unsigned long long)st->files_changed,
			(unsigned long long)st->files_applied, (unsigned long long)st->files_held,
			(unsigned long long)st->files_refused);
	if (st->review[0])
		fprintf(stderr, "%s", st->review);
	if (st->files_held)
		fprintf(stderr, "moat: review: moat diff %s   apply: moat apply %s [PATH...]\n",
			st->run_id, st->run_id);
	if (st->output_files || st->output_skipped)
		fprintf(stderr,
			"moat: /output: %llu file(s) collected, %llu skipped (links, special files)\n",
			(unsigned long long)st->output_files,
			(unsigned long long)st->output_skipped);
	if (st->output_error[0])
		fprintf(stderr, "moat: %s\n", st->output_error);
	if (st->net_none_attempts)
		fprintf(stderr,
			"moat: network: the command tried the network %llu time(s); --net none "
			"refused it (no packet left the sandbox). To allow a destination:\n",
			(unsigned long long)st->net_none_attempts);
	else if (st->net_allowed || st->net_denied)
		fprintf(stderr, "moat: network: %llu allowed, %llu denied\n",
			(unsigned long long)st->net_allowed, (unsigned long long)st->net_denied);
	print_top_denied(st->net_top_denied);
	if (st->log_path[0])
		fprintf(stderr, "moat: log: moat log %s  (%s)\n", st->run_id, st->log_path);
}

int moat_cli_run(int argc, char **argv)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error err = {0};
	struct moat_status st;
	int i = 1;

	if (!p) {
		fprintf(stderr, "moat: out of memory\n");
		return MOAT_EXIT_SETUP;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		run_usage();
		moat_policy_free(p);
		return 0;
	}
	if (moat_cli_parse_policy_options(p, argc, argv, &i, "run") < 0) {
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	if (i >= argc) {
		fprintf(stderr,
			"moat run: no command given (moat run [OPTIONS] -- COMMAND [ARG...])\n");
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	if (moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	/* no review without the overlay: say so before anything runs */
	const char *note = moat_workspace_note(p);
	if (note)
		fprintf(stderr, "moat: %s\n", note);
	if (!note) { /* ro: reading through a hard link exposes the other name */
		struct moat_workspace_check wc;
		struct moat_error e2 = {0};
		if (moat_workspace_check(p, &wc, &e2) >= 0 && wc.hardlinks) {
			fprintf(stderr,
				"moat: --workspace ro: %llu file(s) have other names (hard "
				"links), e.g. ",
				wc.hardlinks);
			moat_cli_put_safe(stderr, wc.hardlink_example);
			fprintf(stderr, ": the sandbox can read them\n");
		}
	}
	int k = moat_run(p, argv + i, &st, &err);
	if (k < 0) {
		if (st.reason == MOAT_REASON_NOT_FOUND || st.reason == MOAT_REASON_CANNOT_EXEC)
			moat_cli_print_error(&err);
		else if (strcmp(err.stage, "usage") == 0 || strcmp(err.stage, "policy") == 0) {
			moat_cli_print_error(&err);
			st.exit_code = MOAT_EXIT_USAGE;
		} else {
			fprintf(stderr, "moat: sandbox not started: %s step: ", err.stage);
			moat_cli_put_safe(stderr, err.message);
			fputc('\n', stderr);
		}
	}
	if (moat_policy_status_path(p)) {
		struct moat_error e2 = {0};
		if (moat_status_write_json(&st, moat_policy_status_path(p), &e2) < 0)
			moat_cli_print_error(&e2);
	}
	if (!moat_policy_quiet(p) && k >= 0)
		summary(&st);
	if (st.stdio_error[0]) {
		/* the command never saw the error: moat says it, and fails */
		fprintf(stderr, "moat: %s\n", st.stdio_error);
		if (st.exit_code == 0)
			st.exit_code = 1;
	}
	moat_policy_free(p);
	return st.exit_code;
}
