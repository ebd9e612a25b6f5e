/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * JSON string escaping for bytes we do not trust (names, argv, hosts from the
 * sandbox) and a small bounded growable buffer to build JSON lines in.
 *
 * Escaping rules (docs/AUDIT.md, "Escaping"):
 *   - '"' and '\\' are escaped; \n \r \t \b \f use the short forms;
 *   - every other C0 control, DEL (0x7f) and ESC become \u00XX;
 *   - C1 controls (U+0080..U+009F), U+2028/U+2029, bidi controls
 *     (U+200B..U+200F, U+202A..U+202E, U+2066..U+2069) and U+FEFF become \uXXXX;
 *   - every byte that is not part of a well-formed UTF-8 sequence (overlong,
 *     surrogate, > U+10FFFF, truncated) becomes \ufffd, one per byte;
 *   - NUL bytes inside a length-delimited input become \u0000.
 * The output is therefore always valid UTF-8 JSON without raw control bytes.
 */
#pragma once

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* Escape in[0..len) into out (no surrounding quotes), NUL-terminated when
 * outlen > 0. Never writes more than outlen bytes and never splits an escape
 * sequence or a UTF-8 character. Returns the length the full escaping needs
 * (excluding the NUL), like snprintf: truncated when the result >= outlen. */
size_t moat_json_escape(const char *in, size_t len, char *out, size_t outlen);

/* Largest prefix of in[0..len) that is <= max bytes and does not end inside a
 * UTF-8 sequence. */
size_t moat_utf8_cut(const char *in, size_t len, size_t max);

/* True if in[0..len) is well-formed UTF-8 with no character the escaper
 * would rewrite as \uXXXX or \ufffd (i.e. it round-trips through JSON as is and
 * is safe to print on a terminal). */
bool moat_json_is_clean(const char *in, size_t len);

/* A growable buffer with a hard maximum. Once an append would pass `max` the
 * buffer is marked overflowed, keeps what it has, and every later append
 * returns -ENOBUFS. data is always NUL-terminated (when non-NULL). */
struct moat_jbuf {
	char *data;
	size_t len, cap, max;
	bool overflow;
};

void moat_jbuf_init(struct moat_jbuf *b, size_t max);
void moat_jbuf_done(struct moat_jbuf *b); /* frees data, resets */
void moat_jbuf_reset(struct moat_jbuf *b); /* len = 0, overflow cleared, keeps memory */
int moat_jbuf_putn(struct moat_jbuf *b, const char *s, size_t n);
int moat_jbuf_puts(struct moat_jbuf *b, const char *s);
int moat_jbuf_printf(struct moat_jbuf *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
/* Escaped, without quotes. */
int moat_jbuf_put_escaped(struct moat_jbuf *b, const char *s, size_t n);
/* A JSON string: quotes + escaped content. s == NULL writes null. */
int moat_jbuf_put_jstr(struct moat_jbuf *b, const char *s, size_t n);
/* Hand the data over (caller frees); the buffer is reset. NULL if overflowed. */
char *moat_jbuf_steal(struct moat_jbuf *b);
