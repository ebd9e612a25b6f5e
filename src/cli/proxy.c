/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat __proxy`: the exec'd egress proxy helper of a --net allow run
 * (moat_proxy_helper_main); not a user command. It serves only what it was
 * given, so running it by hand grants nothing. */
#include <stdio.h>

#include "cli/cli.h"

int moat_cli_proxy_helper(int argc, char **argv)
{
	struct moat_error e = {0};
	int k;

	(void)argv;
	if (argc != 1) {
		fputs("moat: __proxy is internal to moat run --net allow\n", stderr);
		return MOAT_EXIT_USAGE;
	}
	k = moat_proxy_helper_main(&e);
	if (k < 0) {
		fputs("moat: ", stderr);
		moat_cli_put_safe(stderr, e.message);
		fputs("\n", stderr);
		return MOAT_EXIT_USAGE;
	}
	return k;
}

int moat_cli_gvisor_init(int argc, char **argv)
{
	struct moat_error e = {0};

	(void)argv;
	if (argc != 1 || moat_gvisor_init_main(&e) < 0) {
		fputs("moat: ", stderr);
		moat_cli_put_safe(
			stderr,
			e.message[0] ? e.message
				     : "__gvisor-init is internal to moat run --isolation gvisor");
		fputs("\n", stderr);
		return MOAT_EXIT_USAGE;
	}
	return MOAT_EXIT_SETUP;
}
