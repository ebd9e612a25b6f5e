/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: the JSON position scanner on arbitrary bytes and paths. */
#include <stdint.h>
#include <string.h>

#include "shared/jsonpos.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct moat_json_path_elem paths[][3] = {
		{{"version", 0}},
		{{"filesystem", 0}, {"mounts", 0}, {NULL, 1}},
		{{"a", 0}, {NULL, 0}, {"b", 0}},
	};
	static const size_t depth[] = {1, 3, 3};
	unsigned l, c;
	for (size_t i = 0; i < 3; i++) {
		moat_json_locate((const char *)data, size, paths[i], depth[i], 0, &l, &c);
		moat_json_locate((const char *)data, size, paths[i], depth[i], 1, &l, &c);
	}
	return 0;
}
