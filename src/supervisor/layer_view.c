/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The bounded text view of what a layer takes from the plan (layer.h):
 * a leaf every layer module uses. Pure code. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/layer.h"

int moat_layer_view_add(struct moat_layer_view *v, const char *fmt, ...)
{
	va_list ap;
	size_t room = sizeof(v->text) - v->len;

	va_start(ap, fmt);
	int n = vsnprintf(v->text + v->len, room, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n + 1 >= room) {
		v->text[v->len] = 0;
		v->truncated = true;
		return -ENOBUFS;
	}
	v->len += (size_t)n;
	v->text[v->len++] = '\n';
	v->text[v->len] = 0;
	v->n_lines++;
	return 0;
}

static bool line_at(const char *p, const char *end, const char *s, bool prefix)
{
	size_t ls = strlen(s);
	const char *nl = memchr(p, '\n', (size_t)(end - p));
	size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);
	return prefix ? ll >= ls && !memcmp(p, s, ls) : ll == ls && !memcmp(p, s, ls);
}

static unsigned count(const struct moat_layer_view *v, const char *s, bool prefix)
{
	const char *p = v->text, *end = v->text + v->len;
	unsigned n = 0;
	while (p < end) {
		n += line_at(p, end, s, prefix);
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		p = nl ? nl + 1 : end;
	}
	return n;
}

bool moat_layer_view_has(const struct moat_layer_view *v, const char *line)
{
	return count(v, line, false) > 0;
}

unsigned moat_layer_view_count(const struct moat_layer_view *v, const char *prefix)
{
	return count(v, prefix, true);
}
