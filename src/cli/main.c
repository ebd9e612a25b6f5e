/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat — command-line entry point: dispatches to one file per subcommand. */
#include <stdio.h>
#include <string.h>

#include "moat/moat.h"

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--version") == 0) {
		printf("moat %s\n", MOAT_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: moat run [OPTIONS] -- COMMAND [ARG...]\n");
	return 2;
}
