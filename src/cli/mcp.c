/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat mcp [--policy FILE] [OPTIONS]: an MCP server on stdin/stdout. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int moat_cli_mcp(int argc, char **argv)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error err = {0};
	int i = 1;

	if (!p) {
		fprintf(stderr, "moat: out of memory\n");
		return MOAT_EXIT_SETUP;
	}
	if (moat_cli_parse_policy_options(p, argc, argv, &i, "mcp") < 0) {
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	if (i < argc) {
		fputs("moat mcp: takes no command (the client runs commands through the run "
		      "tool): '",
		      stderr);
		moat_cli_put_safe(stderr, argv[i]);
		fputs("'\n", stderr);
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	if (moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	/* --image: opened here and held (locked) while the server runs */
	struct moat_image *img = NULL;
	int ik = moat_cli_image_prepare(&p, argc, argv, 1, "mcp", &img);
	if (ik < 0) {
		moat_policy_free(p);
		return ik == -1 ? MOAT_EXIT_USAGE : MOAT_EXIT_SETUP;
	}
	const char *note = moat_workspace_note(p);
	if (note)
		fprintf(stderr, "moat mcp: %s\n", note);
	int k = moat_mcp_serve(p, &err);
	moat_policy_free(p);
	moat_image_free(img);
	if (k < 0) {
		fprintf(stderr, "moat mcp: not started: %s step: ", err.stage);
		moat_cli_put_safe(stderr, err.message);
		fputc('\n', stderr);
		return MOAT_EXIT_SETUP;
	}
	return 0;
}

int moat_cli_mcp_front(int argc, char **argv)
{
	(void)argv;
	if (argc != 1) {
		fputs("moat: __mcp-front is internal to moat mcp\n", stderr);
		return MOAT_EXIT_USAGE;
	}
	return moat_mcp_front_main();
}
