/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Finds where a value sits in JSON text, for error messages with line:column.
 * jansson parses the policy but keeps no positions; this scanner walks the
 * same text along a path of keys and indices. It never allocates and stops
 * at the first malformed byte, so it is safe on any input (fuzzed).
 */
#pragma once

#include <stddef.h>

struct moat_json_path_elem {
	const char *key; /* object member name, or NULL for an array index */
	size_t index;
};

/* Position of the value at `path` (or of its member name when want_key is
 * set and the last element is a key). Returns 0 and fills line/column
 * (1-based), or -ENOENT / -EINVAL. */
int moat_json_locate(const char *text, size_t len, const struct moat_json_path_elem *path,
		     size_t depth, int want_key, unsigned *ret_line, unsigned *ret_column);
