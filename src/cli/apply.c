/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat apply RUN-ID [PATH...]: apply held-back workspace changes of a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int moat_cli_apply(int argc, char **argv)
{
	struct moat_error err = {0};
	char *text = NULL;
	int i = 1;

	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc || argv[i][0] == '-') {
		fprintf(stderr,
			"usage: moat apply RUN-ID [--] [PATH...]\n"
			"applies the run's held-back workspace changes (all, or only PATHs);\n"
			"refused entries (devices, FIFOs, sockets, set-id files) are never applied\n");
		return i < argc && strcmp(argv[i], "--help") == 0 ? 0 : MOAT_EXIT_USAGE;
	}
	const char *run = argv[i++];
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	const char *const *paths = i < argc ? (const char *const *)argv + i : NULL;
	int k = moat_review_apply(run, paths, &text, &err);
	if (text)
		fputs(text, stdout);
	free(text);
	if (k < 0) {
		moat_cli_print_error(&err);
		return 1;
	}
	return 0;
}
