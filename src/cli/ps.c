/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat ps [--json] [--state-dir DIR]: the live runs of this user (root: all of root's). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"

int moat_cli_ps(int argc, char **argv)
{
	const char *dir = NULL;
	struct moat_run_info *runs = NULL;
	struct moat_error err;
	size_t n = 0;
	bool json = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else {
			fprintf(stderr, "usage: moat ps [--json] [--state-dir DIR]\n");
			return MOAT_EXIT_USAGE;
		}
	}
	if (json) {
		char *text = NULL;
		if (moat_ps_json(dir, &text, &err) < 0) {
			moat_cli_print_error(&err);
			return 1;
		}
		puts(text);
		free(text);
		return 0;
	}
	if (moat_ps(dir, &runs, &n, &err) < 0) {
		moat_cli_print_error(&err);
		return 1;
	}
	printf("%-32s %8s  %s\n", "RUN", "PID", "STARTED");
	for (size_t i = 0; i < n; i++) {
		char when[32] = "?";
		time_t t = (time_t)(runs[i].start_us / 1000000u);
		struct tm tm;
		if (localtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S", &tm);
		printf("%-32s %8d  %s\n", runs[i].id, runs[i].pid, when);
	}
	free(runs);
	return 0;
}
