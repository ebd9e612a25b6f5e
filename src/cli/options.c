/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy options shared by `moat run` and `moat policy show`. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

/* Length of the valid UTF-8 sequence at s (1-4) that is not a C1 control,
 * or 0. */
static size_t utf8_printable(const unsigned char *s)
{
	size_t n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
	if (n == 0 || s[0] > 0xf4)
		return 0;
	for (size_t i = 1; i < n; i++)
		if ((s[i] & 0xc0) != 0x80)
			return 0;
	if (n == 2 && s[0] == 0xc2 && s[1] < 0xa0)
		return 0; /* U+0080..U+009F: C1 controls (0x9b is a CSI) */
	if (n == 3 && ((s[0] == 0xe0 && s[1] < 0xa0) || (s[0] == 0xed && s[1] >= 0xa0)))
		return 0; /* overlong, surrogates */
	if (n == 4 && ((s[0] == 0xf0 && s[1] < 0x90) || (s[0] == 0xf4 && s[1] >= 0x90)))
		return 0;
	return n;
}

void moat_cli_put_safe(FILE *f, const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	while (*s) {
		size_t n;
		if (*s >= 0x20 && *s < 0x7f) {
			fputc(*s++, f);
		} else if (*s >= 0x80 && (n = utf8_printable(s)) > 0) {
			fwrite(s, 1, n, f);
			s += n;
		} else {
			fprintf(f, "\\x%02x", *s++);
		}
	}
}

void moat_cli_print_error(const struct moat_error *e)
{
	fputs("moat: ", stderr);
	moat_cli_put_safe(stderr, e->message[0] ? e->message : "unknown error");
	fputc('\n', stderr);
}

void moat_cli_options_help_to(FILE *f)
{
	struct moat_option_info o;
	fprintf(f, "  %-34s %s\n", "--policy FILE",
		"load a JSON policy first (flags extend or override it)");
	for (size_t i = 0; moat_policy_option_info(i, &o) >= 0; i++) {
		char left[128];
		snprintf(left, sizeof(left), "%s%s%s", o.flag, o.arg ? " " : "",
			 o.arg ? o.arg : "");
		fprintf(f, "  %-34s %s\n", left, o.help);
	}
	fputs("\nHost paths may be relative (to the working directory; in a policy file,\n"
	      "to its directory), with '..' or '~/'. Sizes: K, M, G, T (1K = 1024, any case),\n"
	      "optionally with B or iB. Durations: ms, s, m, h, d. See docs/POLICY.md.\n",
	      f);
}

void moat_cli_options_help(void)
{
	moat_cli_options_help_to(stderr);
}

/* Edit distance of a and b (insertions, deletions, substitutions and
 * transpositions of neighbours: optimal string alignment), capped at 9. */
static unsigned edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned d[65][65];
	if (la > 64 || lb > 64)
		return 9;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (unsigned)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			if (d[i - 1][j] + 1 < best)
				best = d[i - 1][j] + 1;
			if (d[i][j - 1] + 1 < best)
				best = d[i][j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    d[i - 2][j - 2] + 1 < best)
				best = d[i - 2][j - 2] + 1;
			d[i][j] = best;
		}
	return d[la][lb] > 9 ? 9 : d[la][lb];
}

const char *moat_cli_suggest(const char *word, const char *const *names, size_t n)
{
	const char *best = NULL;
	unsigned bd = 9;
	for (size_t i = 0; i < n; i++) {
		unsigned d = edit_distance(word, names[i]);
		if (d < bd) {
			bd = d;
			best = names[i];
		}
	}
	/* close enough to be a typo: one edit, or two in a longer word (so
	 * "--x" does not suggest "--rw") */
	size_t len = strlen(word);
	return best && (bd == 1 || (bd == 2 && len >= 6)) ? best : NULL;
}

/* The policy option closest to name (the option table and --policy). */
static const char *suggest_option(const char *name)
{
	const char *names[160] = {"--policy", "--help"};
	struct moat_option_info o;
	size_t n = 2;
	for (size_t i = 0;
	     n < sizeof(names) / sizeof(names[0]) && moat_policy_option_info(i, &o) >= 0; i++)
		names[n++] = o.flag;
	return moat_cli_suggest(name, names, n);
}

struct moat_cli_knobs moat_cli_knobs;

void moat_cli_knobs_help(FILE *f)
{
	fprintf(f, "  %-34s %s\n", "--json-status FILE",
		"write the status record (JSON) to FILE at the end");
	fprintf(f, "  %-34s %s\n", "--quiet",
		"no summary on stderr (one line still says when changes were held back)");
}

/* 1 if name is one of `moat run`'s knobs (cmd "run"), with *ret_takes. */
static int is_knob(const char *cmd, const char *name, int *ret_takes)
{
	if (strcmp(cmd, "run") != 0)
		return 0;
	if (strcmp(name, "--quiet") == 0)
		*ret_takes = 0;
	else if (strcmp(name, "--json-status") == 0)
		*ret_takes = 1;
	else
		return 0;
	return 1;
}

int moat_cli_parse_policy_options(struct moat_policy *p, int argc, char **argv, int *i,
				  const char *cmd)
{
	struct moat_error err = {0};
	const char *policy_file = NULL;
	int start = *i;

	/* --policy is loaded first wherever it appears: flags override the file. */
	for (int j = start; j < argc && strcmp(argv[j], "--") != 0; j++) {
		const char *f = NULL;
		if (strcmp(argv[j], "--policy") == 0 && j + 1 < argc)
			f = argv[j + 1];
		else if (strncmp(argv[j], "--policy=", 9) == 0)
			f = argv[j] + 9;
		if (f && policy_file) {
			fprintf(stderr, "moat %s: --policy given twice (", cmd);
			moat_cli_put_safe(stderr, policy_file);
			fputs(", then ", stderr);
			moat_cli_put_safe(stderr, f);
			fputs("): it takes one value, give it once\n", stderr);
			return -1;
		}
		if (f)
			policy_file = f;
		if (argv[j][0] != '-')
			break;
		/* skip the value of "--opt VALUE" (it may start with anything),
		 * so that --policy after it is still seen */
		int knob_takes = 0;
		if (!strchr(argv[j], '=') &&
		    (f || moat_policy_option_takes_value(argv[j]) == 1 ||
		     (is_knob(cmd, argv[j], &knob_takes) && knob_takes)) &&
		    j + 1 < argc)
			j++;
	}
	if (policy_file && moat_policy_load_file(p, policy_file, &err) < 0) {
		moat_cli_print_error(&err);
		return -1;
	}
	/* single-value options seen (a second one is refused) and the network
	 * options that contradict each other in either order */
	char seen[64][64], net_opt[64] = "";
	const char *seen_val[64], *net_val = NULL;
	size_t n_seen = 0;
	bool net_none = false;
	while (*i < argc) {
		char *a = argv[*i];
		if (strcmp(a, "--") == 0) {
			(*i)++;
			return 0;
		}
		if (a[0] != '-')
			return 0;
		char name[64];
		const char *value = NULL;
		const char *eq = strchr(a, '=');
		if (eq && (size_t)(eq - a) < sizeof(name)) {
			memcpy(name, a, (size_t)(eq - a));
			name[eq - a] = 0;
			value = eq + 1;
		} else {
			snprintf(name, sizeof(name), "%s", a);
		}
		bool is_policy = strcmp(name, "--policy") == 0;
		int knob_takes = 0;
		bool knob = is_knob(cmd, name, &knob_takes);
		int takes = is_policy ? 1
			: knob	      ? knob_takes
				      : moat_policy_option_takes_value(name);
		if (takes < 0) {
			const char *hint = suggest_option(name);
			fprintf(stderr, "moat %s: unknown option ", cmd);
			moat_cli_put_safe(stderr, name);
			if (hint)
				fprintf(stderr, " (did you mean %s?)", hint);
			fprintf(stderr, " (see moat %s --help)\n", cmd);
			return -1;
		}
		if (takes && !value) {
			if (*i + 1 >= argc) {
				fprintf(stderr, "moat %s: %s needs a value\n", cmd, name);
				return -1;
			}
			value = argv[++*i];
		} else if (!takes && value) {
			fprintf(stderr, "moat %s: %s takes no value\n", cmd, name);
			return -1;
		}
		if (is_policy || (knob && takes) ||
		    (!knob && moat_policy_option_single(name) == 1)) {
			for (size_t j = 0; j < n_seen; j++)
				if (strcmp(seen[j], name) == 0) {
					fprintf(stderr, "moat %s: %s given twice (", cmd, name);
					moat_cli_put_safe(stderr, seen_val[j]);
					fputs(", then ", stderr);
					moat_cli_put_safe(stderr, value);
					fputs("): it takes one value, give it once\n", stderr);
					return -1;
				}
			if (n_seen < 64) {
				snprintf(seen[n_seen], sizeof(seen[n_seen]), "%s", name);
				seen_val[n_seen++] = value;
			}
		}
		if (strcmp(name, "--net") == 0 && strcmp(value, "none") == 0)
			net_none = true;
		else if (!net_opt[0] &&
			 (strcmp(name, "--allow-host") == 0 || strcmp(name, "--allow-cidr") == 0 ||
			  strcmp(name, "--secret") == 0)) {
			snprintf(net_opt, sizeof(net_opt), "%s", name);
			net_val = value;
		}
		if (net_none && net_opt[0]) {
			fprintf(stderr, "moat %s: --net none conflicts with %s ", cmd, net_opt);
			moat_cli_put_safe(stderr, net_val);
			fputs(" (which needs the network): give one of them\n", stderr);
			return -1;
		}
		if (is_policy) {
			(*i)++;
			continue;
		}
		if (knob) {
			if (takes)
				moat_cli_knobs.status_path = value;
			else
				moat_cli_knobs.quiet = true;
			(*i)++;
			continue;
		}
		if (moat_policy_set_option(p, name, value, &err) < 0) {
			moat_cli_print_error(&err);
			return -1;
		}
		(*i)++;
	}
	return 0;
}
