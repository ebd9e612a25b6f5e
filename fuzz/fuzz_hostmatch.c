/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz host normalization, host parsing and pattern validation/matching.
 * Input: "pattern\nhost" (no newline: the input is both). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/hostmatch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char out[MOAT_HOST_BUFSZ], why[128];
	enum moat_host_kind kind;
	bool loose;
	char *s;

	if (size > 4096)
		return 0;
	s = malloc(size + 1);
	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';

	(void)moat_host_normalize_n(s, size, out, sizeof(out));
	if (moat_host_parse(s, size, true, out, sizeof(out), &kind, &loose) == 0 &&
	    kind == MOAT_HOST_NAME) {
		/* a normalized name is a fixed point */
		char again[MOAT_HOST_BUFSZ];
		if (moat_host_normalize(out, again, sizeof(again)) != 0 || strcmp(out, again) != 0)
			abort();
	}

	char *nl = strchr(s, '\n');
	const char *pattern = s, *host = s;
	if (nl) {
		*nl = '\0';
		host = nl + 1;
	}
	int v = moat_host_pattern_validate(pattern, why, sizeof(why));
	bool m = moat_host_pattern_match(pattern, host);
	if (m && v != 0)
		abort(); /* an invalid pattern must never match */
	if (m && moat_host_normalize(host, out, sizeof(out)) != 0)
		abort(); /* an invalid host must never match */
	free(s);
	return 0;
}
