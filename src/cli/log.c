/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat log [--type T,T] [--denied] [--json] RUN-ID|FILE */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void log_usage(FILE *f)
{
	fprintf(f,
		"usage: moat log [--type TYPE[,TYPE...]] [--denied] [--json] RUN-ID|FILE|--last\n"
		"types: start exec net dns syscall limit file alert exit\n");
}

int moat_cli_log(int argc, char **argv)
{
	const char *types = NULL, *what = NULL;
	char last[65];
	bool denied = false, json = false;
	struct moat_error err = {0};
	struct moat_log *l = NULL;
	int k;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--type") == 0 && i + 1 < argc)
			types = argv[++i];
		else if (strncmp(a, "--type=", 7) == 0)
			types = a + 7;
		else if (strcmp(a, "--denied") == 0)
			denied = true;
		else if (strcmp(a, "--json") == 0)
			json = true;
		else if (strcmp(a, "--last") == 0 && !what) {
			if (moat_runs_latest(NULL, last, sizeof(last), &err) < 0) {
				moat_cli_print_error(&err);
				return 1;
			}
			what = last;
		} else if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			log_usage(stdout);
			return 0;
		} else if (strcmp(a, "--") == 0 && i + 1 < argc && !what)
			what = argv[++i];
		else if (a[0] != '-' && !what)
			what = a;
		else {
			log_usage(stderr);
			return MOAT_EXIT_USAGE;
		}
	}
	if (!what) {
		log_usage(stderr);
		return MOAT_EXIT_USAGE;
	}
	if (moat_log_open(what, types, denied, &l, &err) < 0) {
		moat_cli_print_error(&err);
		return MOAT_EXIT_USAGE;
	}
	for (;;) {
		char *line = NULL, *text = NULL;
		k = moat_log_next(l, json ? &line : NULL, json ? NULL : &text);
		if (k <= 0)
			break;
		puts(json ? line : text);
		free(line);
		free(text);
	}
	if (moat_log_bad_lines(l))
		fprintf(stderr, "moat log: %llu line(s) skipped: not valid events\n",
			(unsigned long long)moat_log_bad_lines(l));
	moat_log_free(l);
	if (k < 0) {
		fprintf(stderr, "moat log: read error: %s\n", strerror(-k));
		return 1;
	}
	return 0;
}
