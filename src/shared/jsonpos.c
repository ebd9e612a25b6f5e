/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/jsonpos.h"

#include <errno.h>
#include <string.h>

#define MAX_NEST 64

struct scan {
	const char *s;
	size_t len, pos;
	unsigned nest;
};

static void skip_ws(struct scan *c)
{
	while (c->pos < c->len && strchr(" \t\r\n", c->s[c->pos]) && c->s[c->pos])
		c->pos++;
}

/* Skips a string starting at the quote; on success pos is past the closing quote.
 * If `cmp` is given, reports whether the raw contents equal it (escapes in the
 * key make it compare unequal unless they match literally; policy keys are ASCII). */
static int skip_string(struct scan *c, const char *cmp, int *ret_equal)
{
	if (c->pos >= c->len || c->s[c->pos] != '"')
		return -EINVAL;
	size_t start = ++c->pos;
	while (c->pos < c->len) {
		char ch = c->s[c->pos];
		if (ch == '\\') {
			c->pos += 2;
			continue;
		}
		if (ch == '"') {
			if (ret_equal)
				*ret_equal = cmp && strlen(cmp) == c->pos - start &&
					memcmp(cmp, c->s + start, c->pos - start) == 0;
			c->pos++;
			return 0;
		}
		c->pos++;
	}
	return -EINVAL;
}

static int skip_value(struct scan *c);

static int skip_container(struct scan *c, char close)
{
	if (++c->nest > MAX_NEST)
		return -EINVAL;
	c->pos++;
	skip_ws(c);
	if (c->pos < c->len && c->s[c->pos] == close) {
		c->pos++;
		c->nest--;
		return 0;
	}
	for (;;) {
		int r;
		if (close == '}') {
			r = skip_string(c, NULL, NULL);
			if (r < 0)
				return r;
			skip_ws(c);
			if (c->pos >= c->len || c->s[c->pos] != ':')
				return -EINVAL;
			c->pos++;
		}
		r = skip_value(c);
		if (r < 0)
			return r;
		skip_ws(c);
		if (c->pos >= c->len)
			return -EINVAL;
		if (c->s[c->pos] == ',') {
			c->pos++;
			skip_ws(c);
			continue;
		}
		if (c->s[c->pos] == close) {
			c->pos++;
			c->nest--;
			return 0;
		}
		return -EINVAL;
	}
}

static int skip_value(struct scan *c)
{
	skip_ws(c);
	if (c->pos >= c->len)
		return -EINVAL;
	switch (c->s[c->pos]) {
	case '{':
		return skip_container(c, '}');
	case '[':
		return skip_container(c, ']');
	case '"':
		return skip_string(c, NULL, NULL);
	default:
		/* number or literal: consume until a delimiter */
		while (c->pos < c->len && !strchr(",]} \t\r\n", c->s[c->pos]) && c->s[c->pos])
			c->pos++;
		return 0;
	}
}

/* Leaves pos at the start of the value found along path. */
static int descend(struct scan *c, const struct moat_json_path_elem *path, size_t depth,
		   int want_key)
{
	for (size_t d = 0; d < depth; d++) {
		skip_ws(c);
		if (c->pos >= c->len)
			return -EINVAL;
		if (path[d].key) {
			if (c->s[c->pos] != '{')
				return -ENOENT;
			c->pos++;
			for (;;) {
				int eq = 0, r;
				skip_ws(c);
				if (c->pos < c->len && c->s[c->pos] == '}')
					return -ENOENT;
				size_t key_pos = c->pos;
				r = skip_string(c, path[d].key, &eq);
				if (r < 0)
					return r;
				skip_ws(c);
				if (c->pos >= c->len || c->s[c->pos] != ':')
					return -EINVAL;
				c->pos++;
				if (eq) {
					if (want_key && d + 1 == depth) {
						c->pos = key_pos;
						return 0;
					}
					break;
				}
				r = skip_value(c);
				if (r < 0)
					return r;
				skip_ws(c);
				if (c->pos < c->len && c->s[c->pos] == ',')
					c->pos++;
				else
					return -ENOENT;
			}
		} else {
			if (c->s[c->pos] != '[')
				return -ENOENT;
			c->pos++;
			for (size_t i = 0;; i++) {
				skip_ws(c);
				if (c->pos < c->len && c->s[c->pos] == ']')
					return -ENOENT;
				if (i == path[d].index)
					break;
				int r = skip_value(c);
				if (r < 0)
					return r;
				skip_ws(c);
				if (c->pos < c->len && c->s[c->pos] == ',')
					c->pos++;
				else
					return -ENOENT;
			}
		}
	}
	skip_ws(c);
	return c->pos < c->len ? 0 : -EINVAL;
}

int moat_json_locate(const char *text, size_t len, const struct moat_json_path_elem *path,
		     size_t depth, int want_key, unsigned *ret_line, unsigned *ret_column)
{
	struct scan c = {.s = text, .len = len};
	int r = descend(&c, path, depth, want_key);
	if (r < 0)
		return r;
	unsigned line = 1, col = 1;
	for (size_t i = 0; i < c.pos; i++) {
		if (text[i] == '\n') {
			line++;
			col = 1;
		} else if (((unsigned char)text[i] & 0xC0) != 0x80) {
			col++; /* count characters, not UTF-8 continuation bytes */
		}
	}
	*ret_line = line;
	*ret_column = col;
	return 0;
}
