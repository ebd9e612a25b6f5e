/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat policy check FILE | moat policy show [OPTIONS] | moat policy import --from srt FILE */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* moat policy import --from srt FILE [-o OUT] */
static int import(int argc, char **argv)
{
	const char *from = NULL, *file = NULL, *out = NULL;
	struct moat_error err = {0};
	char *policy = NULL, *notes = NULL;

	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "--from") == 0 && i + 1 < argc)
			from = argv[++i];
		else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (argv[i][0] != '-' && !file)
			file = argv[i];
		else
			from = NULL, file = NULL, i = argc;
	}
	if (!from || !file || strcmp(from, "srt") != 0) {
		fprintf(stderr, "usage: moat policy import --from srt FILE [-o OUT]\n");
		return MOAT_EXIT_USAGE;
	}
	int k = moat_policy_import_srt(file, &policy, &notes, &err);
	if (notes)
		fputs(notes, stderr);
	free(notes);
	if (k < 0) {
		moat_cli_print_error(&err);
		return MOAT_EXIT_USAGE;
	}
	FILE *f = out ? fopen(out, "wxe") : stdout;
	if (!f) {
		fprintf(stderr, "moat policy import: cannot create ");
		moat_cli_put_safe(stderr, out);
		fprintf(stderr, " (it must not exist): %s\n", strerror(errno));
		free(policy);
		return 1;
	}
	fprintf(f, "%s\n", policy);
	free(policy);
	if (out && fclose(f) != 0) {
		fprintf(stderr, "moat policy import: write error\n");
		return 1;
	}
	return 0;
}

/* `moat policy show --bundle DIR [OPTIONS]`: the policy and plan an OCI
 * bundle's config.json gives (docs/OCI.md), the options on top. No run.moat.log
 * (no log directory here). */
static int show_bundle(struct moat_policy *p, int argc, char **argv, int *i)
{
	if (*i + 1 >= argc || strcmp(argv[*i], "--bundle") != 0)
		return 0;
	struct moat_oci_process pr;
	struct moat_error e = {0};
	int k = moat_oci_config_load(p, argv[*i + 1], NULL, &pr, &e);
	moat_oci_process_done(&pr);
	if (k < 0) {
		moat_cli_print_error(&e);
		return k;
	}
	*i += 2;
	return 0;
}

int moat_cli_policy(int argc, char **argv)
{
	struct moat_error err = {0};
	if (argc < 2) {
		fprintf(stderr,
			"usage: moat policy check FILE | moat policy show [--bundle DIR] [OPTIONS]\n");
		return MOAT_EXIT_USAGE;
	}
	struct moat_policy *p = moat_policy_new();
	if (!p)
		return MOAT_EXIT_SETUP;
	int rc = 0;
	if (strcmp(argv[1], "check") == 0) {
		if (argc != 3) {
			fprintf(stderr, "usage: moat policy check FILE\n");
			rc = MOAT_EXIT_USAGE;
		} else if (moat_policy_load_file(p, argv[2], &err) < 0 ||
			   moat_policy_validate(p, &err) < 0) {
			moat_cli_print_error(&err);
			rc = MOAT_EXIT_USAGE;
		} else {
			printf("%s: ok\n", argv[2]);
		}
	} else if (strcmp(argv[1], "show") == 0) {
		int i = 2, ik = 0;
		char *json = NULL, *plan = NULL;
		struct moat_image *img = NULL;
		if (show_bundle(p, argc, argv, &i) < 0)
			rc = MOAT_EXIT_USAGE;
		else if (moat_cli_parse_policy_options(p, argc, argv, &i, "policy show") < 0 ||
			 moat_policy_validate(p, &err) < 0) {
			if (err.message[0])
				moat_cli_print_error(&err);
			rc = MOAT_EXIT_USAGE;
		} else if ((ik = moat_cli_image_prepare(&p, argc, argv, 2, "policy show", &img)) <
			   0) {
			/* the image's digest is shown: it is opened (and cached) */
			rc = ik == -1 ? MOAT_EXIT_USAGE : MOAT_EXIT_SETUP;
		} else if (i < argc) {
			fputs("moat policy show: unexpected argument '", stderr);
			moat_cli_put_safe(stderr, argv[i]);
			fputs("'\n", stderr);
			rc = MOAT_EXIT_USAGE;
		} else if (moat_policy_to_json(p, &json) < 0 ||
			   moat_policy_plan_text(p, &plan) < 0) {
			fprintf(stderr, "moat: out of memory\n");
			rc = MOAT_EXIT_SETUP;
		} else {
			printf("%s\n\n# setup plan\n%s", json, plan);
		}
		free(json);
		free(plan);
		moat_image_free(img);
	} else if (strcmp(argv[1], "import") == 0) {
		rc = import(argc, argv);
	} else {
		static const char *const subs[] = {"check", "show", "import"};
		const char *hint = moat_cli_suggest(argv[1], subs, 3);
		fputs("moat policy: unknown subcommand '", stderr);
		moat_cli_put_safe(stderr, argv[1]);
		fputs("'", stderr);
		if (hint)
			fprintf(stderr, " (did you mean %s?)", hint);
		fputs(" (check, show, import)\n", stderr);
		rc = MOAT_EXIT_USAGE;
	}
	moat_policy_free(p);
	return rc;
}
