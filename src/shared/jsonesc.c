/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/jsonesc.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Decode one UTF-8 character at p (left > 0 bytes). Returns its length and
 * sets *cp, or returns 0 for an invalid sequence (the caller consumes 1 byte). */
static size_t utf8_decode(const unsigned char *p, size_t left, uint32_t *cp)
{
	unsigned char c = p[0];
	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c >= 0xc2 && c <= 0xdf) {
		if (left < 2 || (p[1] & 0xc0) != 0x80)
			return 0;
		*cp = ((uint32_t)(c & 0x1f) << 6) | (p[1] & 0x3f);
		return 2;
	}
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = 0x80, hi = 0xbf;
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
		if (left < 3 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80)
			return 0;
		*cp = ((uint32_t)(c & 0x0f) << 12) | ((uint32_t)(p[1] & 0x3f) << 6) | (p[2] & 0x3f);
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = 0x80, hi = 0xbf;
		if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* > U+10FFFF */
		if (left < 4 || p[1] < lo || p[1] > hi || (p[2] & 0xc0) != 0x80 ||
		    (p[3] & 0xc0) != 0x80)
			return 0;
		*cp = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3f) << 12) |
			((uint32_t)(p[2] & 0x3f) << 6) | (p[3] & 0x3f);
		return 4;
	}
	return 0;
}

/* Code points (>= 0x80) that are valid but are written as \uXXXX because
 * terminals, log viewers or JavaScript treat them specially. */
static bool cp_needs_escape(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) ||
		(cp >= 0x2028 && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
}

/* The escaped form of the next character of p into tmp (>= 7 bytes, not
 * NUL-terminated). Returns the number of output bytes, sets *consumed. */
static size_t escape_next(const unsigned char *p, size_t left, char tmp[8], size_t *consumed)
{
	static const char hex[] = "0123456789abcdef";
	uint32_t cp = 0;
	size_t n = utf8_decode(p, left, &cp);

	if (n == 0) {
		*consumed = 1;
		memcpy(tmp, "\\ufffd", 6);
		return 6;
	}
	*consumed = n;
	if (n == 1) {
		switch (cp) {
		case '"':
			memcpy(tmp, "\\\"", 2);
			return 2;
		case '\\':
			memcpy(tmp, "\\\\", 2);
			return 2;
		case '\n':
			memcpy(tmp, "\\n", 2);
			return 2;
		case '\r':
			memcpy(tmp, "\\r", 2);
			return 2;
		case '\t':
			memcpy(tmp, "\\t", 2);
			return 2;
		case '\b':
			memcpy(tmp, "\\b", 2);
			return 2;
		case '\f':
			memcpy(tmp, "\\f", 2);
			return 2;
		default:
			break;
		}
		if (cp >= 0x20 && cp != 0x7f) {
			tmp[0] = (char)cp;
			return 1;
		}
	} else if (!cp_needs_escape(cp)) {
		memcpy(tmp, p, n);
		return n;
	}
	tmp[0] = '\\';
	tmp[1] = 'u';
	tmp[2] = hex[(cp >> 12) & 0xf];
	tmp[3] = hex[(cp >> 8) & 0xf];
	tmp[4] = hex[(cp >> 4) & 0xf];
	tmp[5] = hex[cp & 0xf];
	return 6;
}

size_t moat_json_escape(const char *in, size_t len, char *out, size_t outlen)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t need = 0, w = 0;
	bool full = false;

	while (len > 0) {
		char tmp[8];
		size_t used, n = escape_next(p, len, tmp, &used);
		if (!full && out && w + n < outlen) {
			memcpy(out + w, tmp, n);
			w += n;
		} else {
			full = true;
		}
		need += n;
		p += used;
		len -= used;
	}
	if (out && outlen > 0)
		out[w] = '\0';
	return need;
}

size_t moat_utf8_cut(const char *in, size_t len, size_t max)
{
	const unsigned char *p = (const unsigned char *)in;
	size_t off = 0;

	if (len <= max)
		return len;
	while (off < max) {
		uint32_t cp;
		size_t n = utf8_decode(p + off, len - off, &cp);
		if (n == 0)
			n = 1;
		if (off + n > max)
			break;
		off += n;
	}
	return off;
}

bool moat_json_is_clean(const char *in, size_t len)
{
	const unsigned char *p = (const unsigned char *)in;
	while (len > 0) {
		char tmp[8];
		size_t used, n = escape_next(p, len, tmp, &used);
		if (n != used || memcmp(tmp, p, n) != 0)
			return false;
		p += used;
		len -= used;
	}
	return true;
}

void moat_jbuf_init(struct moat_jbuf *b, size_t max)
{
	*b = (struct moat_jbuf){.max = max};
}

void moat_jbuf_done(struct moat_jbuf *b)
{
	free(b->data);
	moat_jbuf_init(b, b->max);
}

void moat_jbuf_reset(struct moat_jbuf *b)
{
	b->len = 0;
	b->overflow = false;
	if (b->data)
		b->data[0] = '\0';
}

static int jbuf_reserve(struct moat_jbuf *b, size_t n)
{
	if (b->overflow)
		return -ENOBUFS;
	if (n > b->max || b->len > b->max - n) {
		b->overflow = true;
		return -ENOBUFS;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n + 1)
			cap *= 2;
		char *d = realloc(b->data, cap);
		if (!d)
			return -ENOMEM;
		b->data = d;
		b->cap = cap;
	}
	return 0;
}

int moat_jbuf_putn(struct moat_jbuf *b, const char *s, size_t n)
{
	int r = jbuf_reserve(b, n);
	if (r < 0)
		return r;
	memcpy(b->data + b->len, s, n);
	b->len += n;
	b->data[b->len] = '\0';
	return 0;
}

int moat_jbuf_puts(struct moat_jbuf *b, const char *s)
{
	return moat_jbuf_putn(b, s, strlen(s));
}

int moat_jbuf_printf(struct moat_jbuf *b, const char *fmt, ...)
{
	char small[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof(small), fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EINVAL;
	if ((size_t)n < sizeof(small))
		return moat_jbuf_putn(b, small, (size_t)n);
	int r = jbuf_reserve(b, (size_t)n);
	if (r < 0)
		return r;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
	return 0;
}

int moat_jbuf_put_escaped(struct moat_jbuf *b, const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	while (n > 0) {
		char tmp[8];
		size_t used, k = escape_next(p, n, tmp, &used);
		int r = moat_jbuf_putn(b, tmp, k);
		if (r < 0)
			return r;
		p += used;
		n -= used;
	}
	return 0;
}

int moat_jbuf_put_jstr(struct moat_jbuf *b, const char *s, size_t n)
{
	int r;
	if (!s)
		return moat_jbuf_putn(b, "null", 4);
	r = moat_jbuf_putn(b, "\"", 1);
	if (r >= 0)
		r = moat_jbuf_put_escaped(b, s, n);
	if (r >= 0)
		r = moat_jbuf_putn(b, "\"", 1);
	return r;
}

char *moat_jbuf_steal(struct moat_jbuf *b)
{
	char *d;
	if (b->overflow) {
		moat_jbuf_done(b);
		return NULL;
	}
	if (!b->data && moat_jbuf_putn(b, "", 0) < 0)
		return NULL;
	d = b->data;
	b->data = NULL;
	b->len = b->cap = 0;
	return d;
}
