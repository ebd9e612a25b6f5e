/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat diff [--json] RUN-ID: the workspace changes of a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int moat_cli_diff(int argc, char **argv)
{
	const char *run = NULL;
	bool json = false;
	struct moat_error err = {0};
	char *text = NULL;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] != '-' && !run)
			run = argv[i];
		else {
			fprintf(stderr, "usage: moat diff [--json] RUN-ID\n");
			return strcmp(argv[i], "--help") == 0 ? 0 : MOAT_EXIT_USAGE;
		}
	}
	if (!run) {
		fprintf(stderr, "usage: moat diff [--json] RUN-ID\n");
		return MOAT_EXIT_USAGE;
	}
	if (moat_review_diff(run, json, &text, &err) < 0) {
		moat_cli_print_error(&err);
		return 1;
	}
	fputs(text, stdout);
	free(text);
	return 0;
}
