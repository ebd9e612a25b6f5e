/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat serve [--e2b] [--socket PATH] [--listen ADDR:PORT --token-file FILE
 *            [--tls-cert F --tls-key F]] [--pool N[:POLICY]]... [--policy FILE] [OPTIONS] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

#define MAX_POOLS 16

static void ready(const char *sock, const char *tcp, void *userdata)
{
	fprintf(stderr, "moat serve: listening on unix:%s", sock);
	if (tcp)
		fprintf(stderr, " and tcp:%s", tcp);
	fputc('\n', stderr);
	fflush(stderr);
}

int moat_cli_serve(int argc, char **argv)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error err = {0};
	struct moat_serve_opts o = {.on_ready = ready};
	const char *pools[MAX_POOLS];
	char **rest = calloc((size_t)argc + 1, sizeof(*rest));
	int nrest = 0, i;

	if (!p || !rest) {
		fprintf(stderr, "moat: out of memory\n");
		return MOAT_EXIT_SETUP;
	}
	rest[nrest++] = argv[0];
	for (i = 1; i < argc; i++) {
		const char **slot = NULL;
		const char *a = argv[i];
		if (strcmp(a, "--e2b") == 0) {
			o.e2b = true;
			continue;
		}
		if (strcmp(a, "--socket") == 0)
			slot = &o.socket_path;
		else if (strcmp(a, "--listen") == 0)
			slot = &o.listen;
		else if (strcmp(a, "--token-file") == 0)
			slot = &o.token_file;
		else if (strcmp(a, "--tls-cert") == 0)
			slot = &o.tls_cert;
		else if (strcmp(a, "--tls-key") == 0)
			slot = &o.tls_key;
		else if (strcmp(a, "--pool") == 0) {
			if (o.n_pools >= MAX_POOLS) {
				fprintf(stderr, "moat serve: at most %d --pool\n", MAX_POOLS);
				goto usage;
			}
			slot = &pools[o.n_pools++];
		}
		if (!slot) {
			rest[nrest++] = argv[i];
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "moat serve: %s needs a value\n", a);
			goto usage;
		}
		*slot = argv[++i];
	}
	o.pools = pools;
	int j = 1;
	if (moat_cli_parse_policy_options(p, nrest, rest, &j, "serve") < 0)
		goto usage;
	if (j < nrest) {
		fputs("moat serve: takes no command: '", stderr);
		moat_cli_put_safe(stderr, rest[j]);
		fputs("'\n", stderr);
		goto usage;
	}
	if (moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		goto usage;
	}
	/* --image: opened here and held (locked) while moat serve runs */
	struct moat_image *img = NULL;
	int ik = moat_cli_image_prepare(&p, nrest, rest, 1, "serve", &img);
	if (ik < 0) {
		moat_policy_free(p);
		free(rest);
		return ik == -1 ? MOAT_EXIT_USAGE : MOAT_EXIT_SETUP;
	}
	int k = moat_serve(p, &o, &err);
	moat_policy_free(p);
	moat_image_free(img);
	free(rest);
	if (k < 0) {
		fprintf(stderr, "moat serve: not started: %s step: ", err.stage);
		moat_cli_put_safe(stderr, err.message);
		fputc('\n', stderr);
		return MOAT_EXIT_SETUP;
	}
	return 0;
usage:
	moat_policy_free(p);
	free(rest);
	return MOAT_EXIT_USAGE;
}
