/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat selftest [--json] [--only NAME[,NAME]] [--policy FILE] [RUN-OPTIONS...]
 *
 * The red-team battery (tests/redteam/), shipped in the installed program:
 * the probes of tests/redteam/probes/ are compiled into this binary
 * (probes.h) and run by `moat __probe NAME`; the battery itself (controls,
 * oracles, the judge) is in the library (moat_selftest_*, src/doctor/selftest.c).
 * This file parses the flags and prints the results.
 *
 * Exit: 0 nothing escaped and nothing inconclusive, 1 something escaped,
 * 3 something inconclusive (nothing escaped), 2 bad usage, 125 setup failure.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/probes.h"

/* `moat __probe NAME ARG...`: the only way a probe runs, chosen by argv
 * alone (no environment variable changes what moat does). A probe runs in the
 * calling process with the sandbox (or the control) it was started in; it
 * never sets up or removes a layer. A probe that starts itself again (rt031,
 * rt072) executes /proc/self/exe with `__probe NAME` in its argv. */
int moat_cli_probe(int argc, char **argv)
{
	if (argc < 2) {
		fprintf(stderr, "usage: moat __probe NAME [ARG...]\n");
		return MOAT_EXIT_USAGE;
	}
	for (const struct moat_probe_entry *e = moat_probes; e->name; e++)
		if (strcmp(e->name, argv[1]) == 0) {
			fflush(stdout);
			int r = e->main(argc - 1, argv + 1);
			fflush(stdout);
			return r;
		}
	fputs("moat: no probe '", stderr);
	moat_cli_put_safe(stderr, argv[1]);
	fputs("'\n", stderr);
	return MOAT_EXIT_USAGE;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(f, "\\%c", c);
		else if (c < 0x20 || c > 0x7e)
			fprintf(f, "\\u%04x", c);
		else
			fputc(c, f);
	}
	fputc('"', f);
}

/* ------------------------------------------------------------- the command */

static void usage(FILE *f)
{
	fprintf(f,
		"usage: moat selftest [--json] [--only NAME[,NAME...]] [--policy FILE] "
		"[RUN-OPTIONS...]\n"
		"Runs the red-team battery built into moat: each escape attempt first as a\n"
		"positive control without moat (never as root), then inside `moat run` with\n"
		"the given policy. Exit 0: everything held or was skipped (with a reason);\n"
		"1: something escaped; 3: something was inconclusive.\n"
		"With --isolation gvisor|vm: the level's filesystem and network probes (the\n"
		"others skipped, with the reason); a level that cannot start exits 125.\n"
		"NAME: a probe (rt005_userns) or an attempt family (RT-005).\n");
}

static bool selected(const char *only, unsigned i)
{
	const char *name = moat_selftest_probe(i), *title = moat_selftest_title(i);

	if (!only)
		return true;
	size_t tl = strcspn(title, " ");
	for (const char *p = only; *p;) {
		size_t n = strcspn(p, ",");
		if ((n == strlen(name) && strncmp(p, name, n) == 0) ||
		    (n == tl && strncmp(p, title, n) == 0))
			return true;
		p += n;
		if (*p == ',')
			p++;
	}
	return false;
}

static void print_text_result(const struct moat_selftest_result *r)
{
	printf("\n%s  [%s]: %s\n", r->title, r->probe, moat_selftest_verdict_name(r->verdict));
	for (unsigned i = 0; i < r->n_attempts; i++) {
		const struct moat_selftest_attempt *w = &r->attempts[i];
		printf("  %-44s %-12s %-12s %s\n", w->id, w->ctl, w->in, w->verdict);
	}
	if (r->verdict != MOAT_PROBE_HELD)
		printf("  -> %s\n", r->reason);
	fflush(stdout);
}

static void print_json(FILE *f, const struct moat_selftest *s,
		       const struct moat_selftest_result *res, unsigned n, const unsigned *count)
{
	fprintf(f, "{\"version\":");
	json_str(f, MOAT_VERSION);
	fprintf(f, ",\"as_root\":%s,\"control_uid\":%u,\"workdir\":",
		moat_selftest_as_root(s) ? "true" : "false", moat_selftest_control_uid(s));
	json_str(f, moat_selftest_workdir(s));
	fprintf(f, ",\"summary\":{");
	for (int v = 0; v <= MOAT_PROBE_ESCAPED; v++)
		fprintf(f, "%s\"%s\":%u", v ? "," : "", moat_selftest_verdict_name(v), count[v]);
	fprintf(f, "},\"probes\":[");
	for (unsigned i = 0; i < n; i++) {
		const struct moat_selftest_result *r = &res[i];
		fprintf(f, "%s{\"probe\":", i ? "," : "");
		json_str(f, r->probe);
		fprintf(f, ",\"title\":");
		json_str(f, r->title);
		fprintf(f,
			",\"verdict\":\"%s\",\"reason\":", moat_selftest_verdict_name(r->verdict));
		json_str(f, r->reason);
		fprintf(f, ",\"attempts\":[");
		for (unsigned k = 0; k < r->n_attempts; k++) {
			const struct moat_selftest_attempt *w = &r->attempts[k];
			fprintf(f, "%s{\"attempt\":", k ? "," : "");
			json_str(f, w->id);
			fprintf(f, ",\"control\":");
			json_str(f, w->ctl);
			fprintf(f, ",\"inside\":");
			json_str(f, w->in);
			fprintf(f, ",\"verdict\":");
			json_str(f, w->verdict);
			fprintf(f, ",\"detail\":");
			json_str(f, w->detail);
			fputc('}', f);
		}
		fprintf(f, "]}");
	}
	fprintf(f, "]}\n");
}

/* The policy options are checked here exactly as `moat run` would: 0, or
 * the message printed and -1. */
static int check_options(char **opts, int n_opts)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error err = {0};
	int i = 0, r;

	if (!p)
		return -1;
	char **v = calloc((size_t)n_opts + 2, sizeof(char *));
	if (!v) {
		moat_policy_free(p);
		return -1;
	}
	for (int k = 0; k < n_opts; k++)
		v[k] = opts[k];
	r = moat_cli_parse_policy_options(p, n_opts, v, &i, "selftest");
	if (r == 0 && i < n_opts) {
		fputs("moat selftest: unexpected argument '", stderr);
		moat_cli_put_safe(stderr, v[i]);
		fputs("'\n", stderr);
		r = -1;
	}
	if (r == 0 && moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		r = -1;
	}
	free(v);
	moat_policy_free(p);
	return r < 0 ? -1 : 0;
}

static int selftest(char **opts, int n_opts, const char *only, bool json)
{
	unsigned count[MOAT_PROBE_ESCAPED + 1] = {0}, n = 0, total = moat_selftest_count();
	struct moat_selftest_result *res = calloc(total, sizeof(*res));
	struct moat_selftest *s = NULL;
	struct moat_error err = {0};

	if (!res)
		return MOAT_EXIT_SETUP;
	if (moat_selftest_new(opts, n_opts, &s, &err) < 0) {
		fputs("moat selftest: ", stderr);
		moat_cli_put_safe(stderr, err.message);
		fputs("\n", stderr);
		free(res);
		return MOAT_EXIT_SETUP;
	}
	if (!json) {
		printf("moat selftest: %s, control as uid %u%s\n",
		       moat_selftest_as_root(s) ? "as root" : "unprivileged",
		       moat_selftest_control_uid(s),
		       moat_selftest_as_root(s) ? " (a throw-away uid, never host root)" : "");
		printf("  %-44s %-12s %-12s %s\n", "ATTEMPT", "CONTROL", "INSIDE", "VERDICT");
	}
	for (unsigned i = 0; i < total; i++) {
		if (!selected(only, i))
			continue;
		moat_selftest_run(s, i, &res[n]);
		count[res[n].verdict]++;
		if (!json)
			print_text_result(&res[n]);
		n++;
	}
	if (json)
		print_json(stdout, s, res, n, count);
	else
		printf("\nmoat selftest: %u probe(s): %u held, %u skipped, %u inconclusive, %u "
		       "ESCAPED\n",
		       n, count[MOAT_PROBE_HELD], count[MOAT_PROBE_SKIPPED],
		       count[MOAT_PROBE_INCONCLUSIVE], count[MOAT_PROBE_ESCAPED]);
	moat_selftest_free(s);
	free(res);
	if (n == 0) {
		fprintf(stderr, "moat selftest: --only selected no probe\n");
		return MOAT_EXIT_USAGE;
	}
	return count[MOAT_PROBE_ESCAPED] ? 1 : count[MOAT_PROBE_INCONCLUSIVE] ? 3 : 0;
}

int moat_cli_selftest(int argc, char **argv)
{
	const char *only = NULL;
	bool json = false;
	char **opts = calloc((size_t)argc + 1, sizeof(char *));
	int n_opts = 0, r;

	if (!opts)
		return MOAT_EXIT_SETUP;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			only = argv[++i];
		else if (strncmp(argv[i], "--only=", 7) == 0)
			only = argv[i] + 7;
		else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage(stdout);
			free(opts);
			return 0;
		} else if (strcmp(argv[i], "--") == 0) {
			fprintf(stderr, "moat selftest: takes no command\n");
			free(opts);
			return MOAT_EXIT_USAGE;
		} else
			opts[n_opts++] = argv[i];
	}
	if (check_options(opts, n_opts) < 0) {
		free(opts);
		return MOAT_EXIT_USAGE;
	}
	r = selftest(opts, n_opts, only, json);
	free(opts);
	return r;
}
