/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat doctor [--json]: the kernel features found and what moat will enforce. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

int moat_cli_doctor(int argc, char **argv)
{
	bool json = argc > 1 && strcmp(argv[1], "--json") == 0;
	char *j = NULL, *t = NULL;
	if (argc > 2 || (argc == 2 && !json)) {
		fprintf(stderr, "usage: moat doctor [--json]\n");
		return MOAT_EXIT_USAGE;
	}
	int r = moat_doctor(&j, &t);
	if (r < 0) {
		fprintf(stderr, "moat doctor: probing failed\n");
		return 1;
	}
	fputs(json ? j : t, stdout);
	if (json)
		fputc('\n', stdout);
	free(j);
	free(t);
	return r > 0 ? 1 : 0;
}
