/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy options shared by `moat run` and `moat policy show`. */
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

void moat_cli_options_help(void)
{
	const char *const *h = moat_policy_option_help();
	fprintf(stderr,
		"  --policy FILE\tload a JSON policy first (flags extend or override it)\n");
	for (; *h; h++) {
		const char *tab = strchr(*h, '\t');
		if (tab)
			fprintf(stderr, "  %-34.*s %s\n", (int)(tab - *h), *h, tab + 1);
	}
}

int moat_cli_parse_policy_options(struct moat_policy *p, int argc, char **argv, int *i,
				  const char *cmd)
{
	struct moat_error err = {0};
	const char *policy_file = NULL;
	int start = *i;

	/* --policy is loaded first wherever it appears: flags override the file. */
	for (int j = start; j < argc && strcmp(argv[j], "--") != 0; j++) {
		if (strcmp(argv[j], "--policy") == 0 && j + 1 < argc)
			policy_file = argv[j + 1];
		else if (strncmp(argv[j], "--policy=", 9) == 0)
			policy_file = argv[j] + 9;
		if (argv[j][0] != '-')
			break;
	}
	if (policy_file && moat_policy_load_file(p, policy_file, &err) < 0) {
		moat_cli_print_error(&err);
		return -1;
	}
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
		if (strcmp(name, "--policy") == 0) {
			*i += value ? 1 : 2;
			continue;
		}
		int takes = moat_policy_option_takes_value(name);
		if (takes < 0) {
			fprintf(stderr, "moat %s: unknown option ", cmd);
			moat_cli_put_safe(stderr, name);
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
		if (moat_policy_set_option(p, name, value, &err) < 0) {
			moat_cli_print_error(&err);
			return -1;
		}
		(*i)++;
	}
	return 0;
}
