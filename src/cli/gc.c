/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat gc [--state-dir DIR]: remove what crashed runs left (cgroups, temporary
 * directories, state records). Runs that are alive are left alone. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int moat_cli_gc(int argc, char **argv)
{
	const char *dir = NULL;
	struct moat_gc_result g;
	struct moat_error err;
	bool quiet = false;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--state-dir") == 0 && i + 1 < argc)
			dir = argv[++i];
		else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
			quiet = true;
		else {
			fprintf(stderr, "usage: moat gc [--quiet] [--state-dir DIR]\n");
			return MOAT_EXIT_USAGE;
		}
	}
	int r = moat_gc(dir, &g, &err);
	if (!quiet || r < 0)
		fprintf(stderr,
			"moat gc: %u dead run(s) cleaned (%u cgroup(s), %u temporary dir(s)), %u live, "
			"%u failed\n",
			g.removed, g.cgroups, g.tmpdirs, g.live, g.failed);
	if (r < 0) {
		moat_cli_print_error(&err);
		return 1;
	}
	return 0;
}
