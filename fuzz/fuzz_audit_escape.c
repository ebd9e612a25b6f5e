/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON escaper on arbitrary bytes: the output must always be a valid JSON
 * string body with no raw control byte, no raw U+2028/U+2029, must respect the
 * output size exactly, and a full escape must decode back to the input when
 * the input is clean UTF-8.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "shared/jsonesc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *in = (const char *)data;
	size_t need = moat_json_escape(in, size, NULL, 0);
	char *out = malloc(need + 3);
	json_error_t err;

	if (!out)
		return 0;
	out[0] = '"';
	if (moat_json_escape(in, size, out + 1, need + 1) != need)
		abort();
	if (strlen(out + 1) != need)
		abort();
	for (size_t i = 1; i <= need; i++) {
		unsigned char c = (unsigned char)out[i];
		if (c < 0x20 || c == 0x7f)
			abort();
		if (c == 0xe2 && i + 2 <= need && (unsigned char)out[i + 1] == 0x80 &&
		    ((unsigned char)out[i + 2] == 0xa8 || (unsigned char)out[i + 2] == 0xa9))
			abort();
	}
	out[need + 1] = '"';
	out[need + 2] = '\0';
	json_t *j = json_loadb(out, need + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
	if (!j || !json_is_string(j))
		abort();
	if (moat_json_is_clean(in, size) &&
	    (json_string_length(j) != size || memcmp(json_string_value(j), in, size) != 0))
		abort();
	json_decref(j);

	/* truncated output: a prefix of the full one, never split, NUL-terminated */
	size_t small = size % 17;
	char part[17];
	moat_json_escape(in, size, part, small);
	if (small > 0) {
		size_t pl = strlen(part);
		if (pl >= small || memcmp(part, out + 1, pl) != 0)
			abort();
		memcpy(out + 1 + pl, "\"", 2);
		j = json_loadb(out, pl + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, &err);
		if (!j)
			abort();
		json_decref(j);
	}
	free(out);
	return 0;
}
