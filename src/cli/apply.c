/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat apply RUN-ID [--accept CLASS|GLOB]... [PATH...]: apply held-back
 * workspace changes of a run. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define APPLY_MAX_ACCEPT 64

static int usage(bool help)
{
	fprintf(help ? stdout : stderr,
		"usage: moat apply RUN-ID [--] [PATH...]\n"
		"       moat apply RUN-ID --accept CLASS|GLOB [--accept ...]\n"
		"applies the run's held-back workspace changes (all, only PATHs, or those of\n"
		"a risk class such as hooks, ci, startup, agent, manifest, symlink-out, pattern,\n"
		"repo, executable, deps, or matching a path glob with **; docs/FLAGGED.md);\n"
		"refused entries (devices, FIFOs, sockets, set-id files) are never applied\n");
	return help ? 0 : MOAT_EXIT_USAGE;
}

int moat_cli_apply(int argc, char **argv)
{
	struct moat_error err = {0};
	const char *accept[APPLY_MAX_ACCEPT + 1] = {NULL};
	size_t n_accept = 0;
	char *text = NULL;
	int i = 1, k;

	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	if (i >= argc || argv[i][0] == '-')
		return usage(i < argc && strcmp(argv[i], "--help") == 0);
	const char *run = argv[i++];
	while (i < argc && strncmp(argv[i], "--accept", 8) == 0) {
		const char *v = NULL;
		if (strcmp(argv[i], "--accept") == 0 && i + 1 < argc)
			v = argv[i + 1], i += 2;
		else if (strncmp(argv[i], "--accept=", 9) == 0)
			v = argv[i] + 9, i++;
		if (!v || !*v || n_accept >= APPLY_MAX_ACCEPT) {
			fprintf(stderr, "moat apply: --accept needs a class or glob (at most %d)\n",
				APPLY_MAX_ACCEPT);
			return MOAT_EXIT_USAGE;
		}
		accept[n_accept++] = v;
	}
	if (i < argc && strcmp(argv[i], "--") == 0)
		i++;
	else if (i < argc && argv[i][0] == '-')
		return usage(strcmp(argv[i], "--help") == 0);
	const char *const *paths = i < argc ? (const char *const *)argv + i : NULL;
	if (n_accept && paths) {
		fputs("moat apply: give either --accept or PATHs, not both\n", stderr);
		return MOAT_EXIT_USAGE;
	}
	if (n_accept)
		k = moat_review_apply_accept(run, accept, &text, &err);
	else
		k = moat_review_apply(run, paths, &text, &err);
	if (text)
		fputs(text, stdout);
	free(text);
	if (k < 0) {
		moat_cli_print_error(&err);
		return err.stage[0] && strcmp(err.stage, "usage") == 0 && n_accept ? MOAT_EXIT_USAGE
										   : 1;
	}
	return 0;
}
