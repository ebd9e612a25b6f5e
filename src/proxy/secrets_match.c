/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Matching for the credential proxy: host patterns, method/path rules, and the
 * placeholder tripwire (detection, DNS names) and masking of real values. */
#include "proxy/secrets_int.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/tls.h"
#include "shared/macro.h"

/* ---- matching -------------------------------------------------------------- */

bool moat_secrets_host_match(const char *pattern, const char *host)
{
	char h[MOAT_TLS_MAX_NAME + 1], p[MOAT_TLS_MAX_NAME + 1];
	bool hip, pip, wild = false;

	if (!pattern || !host)
		return false;
	if (startswith(pattern, "*.")) {
		wild = true;
		pattern += 2;
	}
	if (moat_tls_normalize_host(host, h, &hip) < 0 ||
	    moat_tls_normalize_host(pattern, p, &pip) < 0)
		return false;
	if (!wild)
		return streq(h, p);
	if (hip || pip)
		return false;
	size_t hl = strlen(h), pl = strlen(p);
	return hl > pl + 1 && h[hl - pl - 1] == '.' && streq(h + hl - pl, p);
}

bool moat_secrets_method_ok(char *const *methods, unsigned n, const char *m, size_t mlen)
{
	if (n == 0)
		return true;
	for (unsigned i = 0; i < n; i++)
		if (strlen(methods[i]) == mlen && memcmp(methods[i], m, mlen) == 0)
			return true;
	return false;
}

/* Dot segments and encoded separators make prefix matching meaningless
 * ("/repos/acme/../evil", "/repos/acme/%2e%2e/evil", "..;"): such paths never
 * match a prefix rule. */
static bool path_is_plain(const char *p, size_t len)
{
	if (len == 0 || p[0] != '/')
		return false;
	for (size_t i = 0; i < len; i++) {
		if (p[i] == '\\')
			return false;
		if (p[i] == '%' && i + 2 < len) {
			char a = p[i + 1], b = (char)tolower((unsigned char)p[i + 2]);
			if ((a == '2' && (b == 'e' || b == 'f')) || (a == '5' && b == 'c'))
				return false;
		}
		if (p[i] == '/') {
			size_t j = i + 1, k = j;
			while (k < len && p[k] == '.')
				k++;
			if ((k - j == 1 || k - j == 2) && (k == len || p[k] == '/' || p[k] == ';'))
				return false;
		}
	}
	return true;
}

bool moat_secrets_path_ok(char *const *paths, unsigned n, const char *p, size_t plen)
{
	if (n == 0)
		return true;
	if (!path_is_plain(p, plen))
		return false;
	for (unsigned i = 0; i < n; i++) {
		size_t l = strlen(paths[i]);
		if (plen >= l && memcmp(paths[i], p, l) == 0)
			return true;
	}
	return false;
}

int moat_secrets_http_allowed(const struct moat_http_rule *rules, unsigned n_rules,
			      const char *host, const char *method, const char *path)
{
	bool named = false;
	size_t plen = strcspn(path, "?#");

	for (unsigned i = 0; i < n_rules; i++) {
		if (!moat_secrets_host_match(rules[i].host, host))
			continue;
		named = true;
		if (moat_secrets_method_ok(rules[i].methods, rules[i].n_methods, method,
					   strlen(method)) &&
		    moat_secrets_path_ok(rules[i].paths, rules[i].n_paths, path, plen))
			return 1;
	}
	return named ? 0 : 1;
}

bool moat_secrets_host_bound(const struct moat_secrets *s, const char *host)
{
	for (unsigned i = 0; i < s->n; i++)
		for (unsigned j = 0; j < s->v[i].def->n_hosts; j++)
			if (moat_secrets_host_match(s->v[i].def->hosts[j], host))
				return true;
	return false;
}

/* ---- detection -------------------------------------------------------------- */

/* lower is data lowercased. A placeholder, or any MOAT_SECRETS_FRAGMENT
 * consecutive characters of its random part. */
static int detect_lower(const struct moat_secrets *s, const char *lower, size_t len)
{
	for (unsigned i = 0; i < s->n; i++) {
		const struct secret *x = &s->v[i];
		if (memmem(lower, len, x->lower, x->ph_len))
			return (int)i;
		for (size_t k = 0; k + MOAT_SECRETS_FRAGMENT <= HEX_LEN; k++)
			if (memmem(lower, len, x->hex + k, MOAT_SECRETS_FRAGMENT))
				return (int)i;
	}
	return -ENOENT;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)tolower((unsigned char)c);
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	return -1;
}

/* Scan data as is and, when it has '%' escapes, percent-decoded. */
int moat_secrets_detect(const struct moat_secrets *s, const void *data, size_t len, bool pct)
{
	const char *p = data;
	char *low;
	int r;

	if (s->n == 0 || len == 0)
		return -ENOENT;
	low = malloc(len);
	if (!low)
		return -ENOMEM;
	for (size_t i = 0; i < len; i++)
		low[i] = (char)tolower((unsigned char)p[i]);
	r = detect_lower(s, low, len);
	if (r == -ENOENT && pct && memchr(p, '%', len)) {
		size_t o = 0;
		for (size_t i = 0; i < len; i++) {
			int a, b;
			if (p[i] == '%' && i + 2 < len && (a = hexval(p[i + 1])) >= 0 &&
			    (b = hexval(p[i + 2])) >= 0) {
				low[o++] = (char)tolower(a << 4 | b);
				i += 2;
			} else
				low[o++] = (char)tolower((unsigned char)p[i]);
		}
		r = detect_lower(s, low, o);
	}
	/* The scanned bytes may hold a real value (after replacement). */
	OPENSSL_cleanse(low, len);
	free(low);
	return r;
}

int moat_secrets_scan(const struct moat_secrets *s, const void *data, size_t len)
{
	return moat_secrets_detect(s, data, len, true);
}

int moat_secrets_scan_dns(const struct moat_secrets *s, const char *qname)
{
	char joined[1024];
	size_t o = 0;

	/* Labels are joined so a placeholder split across labels is seen; the
	 * name is scanned as sent as well (dots are not in placeholders). */
	for (const char *p = qname; *p && o < sizeof(joined); p++)
		if (*p != '.')
			joined[o++] = *p;
	return moat_secrets_detect(s, joined, o, false);
}

unsigned moat_secrets_scrub(const struct moat_secrets *s, char *buf, size_t len)
{
	unsigned count = 0;

	for (unsigned i = 0; i < s->n; i++) {
		const struct secret *x = &s->v[i];
		char *p = buf, *end = buf + len;
		if (!x->value)
			continue;
		while ((p = memmem(p, (size_t)(end - p), x->value, x->value_len))) {
			memset(p, '*', x->value_len);
			p += x->value_len;
			count++;
		}
	}
	return count;
}

size_t moat_secrets_scrub_hold(const struct moat_secrets *s, const char *buf, size_t len)
{
	size_t hold = 0;

	for (unsigned i = 0; s && i < s->n; i++) {
		const struct secret *x = &s->v[i];
		size_t max;
		if (!x->value || x->value_len < 2)
			continue;
		max = MIN(MIN(x->value_len - 1, len), (size_t)MOAT_SECRETS_SCRUB_HOLD_MAX);
		for (size_t k = max; k > hold; k--)
			if (buf[len - k] == x->value[0] &&
			    memcmp(buf + len - k, x->value, k) == 0) {
				hold = k;
				break;
			}
	}
	return hold;
}

/* The origin-form path without query: origin_prefix + path up to '?'. */
void moat_secrets_request_path(const struct moat_http1_request *r, const char **ret_p,
			       size_t *ret_len)
{
	const char *q = r->path.p ? memchr(r->path.p, '?', r->path.len) : NULL;
	size_t n = !r->path.p ? 0 : q ? (size_t)(q - r->path.p) : r->path.len;

	if (r->is_connect) {
		*ret_p = "";
		*ret_len = 0;
	} else if (n == 0) {
		*ret_p = "/";
		*ret_len = 1;
	} else {
		*ret_p = r->path.p;
		*ret_len = n;
	}
}

int moat_secrets_http_allowed_request(const struct moat_http_rule *rules, unsigned n_rules,
				      const char *host, const struct moat_http1_request *r)
{
	char method[33], *path;
	const char *p;
	size_t plen;
	int ok;

	if (!r || !r->method.p)
		return 0;
	if (n_rules == 0)
		return 1;
	moat_secrets_request_path(r, &p, &plen);
	moat_http1_slice_copy(r->method, method, sizeof(method));
	if (r->method.len >= sizeof(method))
		return 0;
	path = strndup(p, plen);
	if (!path)
		return -ENOMEM;
	ok = moat_secrets_http_allowed(rules, n_rules, host, method, path);
	free(path);
	return ok;
}
