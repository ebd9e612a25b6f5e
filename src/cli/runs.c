/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat runs [-n N | --all] [--json] [--runs-dir DIR]: the recorded runs, newest first. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static int usage(void)
{
	fprintf(stderr, "usage: moat runs [-n N | --all] [--json] [--runs-dir DIR]\n");
	return MOAT_EXIT_USAGE;
}

int moat_cli_runs(int argc, char **argv)
{
	const char *dir = NULL;
	struct moat_error err = {0};
	size_t max = 20;
	bool json = false;
	char *text = NULL;

	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (strcmp(o, "--json") == 0)
			json = true;
		else if (strcmp(o, "--all") == 0)
			max = 0;
		else if (strcmp(o, "--runs-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(o, "-n") == 0 && i + 1 < argc) {
			char *end;
			unsigned long v = strtoul(argv[++i], &end, 10);
			if (*end || !*argv[i] || argv[i][0] == '-' || v == 0 || v > 1000000)
				return usage();
			max = v;
		} else
			return usage();
	}
	if (moat_runs_list(dir, max, json, &text, &err) < 0) {
		moat_cli_print_error(&err);
		return 1;
	}
	fputs(text, stdout);
	if (json)
		fputc('\n', stdout);
	free(text);
	return 0;
}
