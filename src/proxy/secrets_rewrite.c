/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Rewriting one parsed request head (proxy/http1.c parsed it): placeholders
 * replaced where approved, Basic credentials via base64, refusals with reasons. */
#include "proxy/secrets_int.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proxy/tls.h"
#include "shared/macro.h"

/* ---- output buffer (wiped, never realloc'ed with a copy left behind) ------- */

struct obuf {
	char *p;
	size_t len, cap;
	bool too_big;
};

static void obuf_wipe(struct obuf *b)
{
	if (b->p) {
		OPENSSL_cleanse(b->p, b->cap);
		free(b->p);
	}
	*b = (struct obuf){0};
}

static int obuf_add(struct obuf *b, const void *data, size_t n)
{
	if (b->len + n > MOAT_SECRETS_MAX_OUT) {
		b->too_big = true;
		return -E2BIG;
	}
	if (b->len + n + 1 > b->cap) {
		size_t cap = MAX(b->cap * 2, b->len + n + 1);
		cap = MIN(cap, (size_t)MOAT_SECRETS_MAX_OUT + 1);
		char *np = malloc(cap);
		if (!np)
			return -ENOMEM;
		if (b->p) {
			memcpy(np, b->p, b->len);
			OPENSSL_cleanse(b->p, b->cap);
			free(b->p);
		}
		b->p = np;
		b->cap = cap;
	}
	memcpy(b->p + b->len, data, n);
	b->len += n;
	b->p[b->len] = '\0';
	return 0;
}

static int obuf_adds(struct obuf *b, const char *s)
{
	return obuf_add(b, s, strlen(s));
}

/* ---- base64 (strict, standard alphabet, padded) ---------------------------- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64val(char c)
{
	const char *p = c ? strchr(b64, c) : NULL;
	return p ? (int)(p - b64) : -1;
}

/* Decode into out (at least len/4*3 bytes). -EINVAL if not strict base64. */
static int b64_decode(const char *in, size_t len, unsigned char *out, size_t *ret_len)
{
	size_t o = 0;

	if (len == 0 || len % 4 != 0)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		int v[4];
		bool last = i + 4 == len;
		for (int k = 0; k < 4; k++) {
			if (in[i + k] == '=' && last && k >= 2)
				v[k] = -2;
			else if ((v[k] = b64val(in[i + k])) < 0)
				return -EINVAL;
		}
		if (v[0] < 0 || v[1] < 0 || (v[2] == -2 && v[3] != -2))
			return -EINVAL;
		out[o++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (v[2] >= 0)
			out[o++] = (unsigned char)((v[1] & 15) << 4 | v[2] >> 2);
		if (v[3] >= 0)
			out[o++] = (unsigned char)((v[2] & 3) << 6 | v[3]);
	}
	*ret_len = o;
	return 0;
}

static int b64_encode(struct obuf *b, const unsigned char *in, size_t len)
{
	for (size_t i = 0; i < len; i += 3) {
		unsigned v = (unsigned)in[i] << 16;
		char q[4];
		if (i + 1 < len)
			v |= (unsigned)in[i + 1] << 8;
		if (i + 2 < len)
			v |= in[i + 2];
		q[0] = b64[v >> 18 & 63];
		q[1] = b64[v >> 12 & 63];
		q[2] = i + 1 < len ? b64[v >> 6 & 63] : '=';
		q[3] = i + 2 < len ? b64[v & 63] : '=';
		int r = obuf_add(b, q, 4);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- rewriting ------------------------------------------------------------- */

typedef struct moat_http1_header hdr_t;

static bool name_is(const hdr_t *h, const char *name)
{
	return moat_http1_slice_eq(h->name, name);
}

/* The destination the head names (Host or the absolute-form authority, which
 * the parser checked agree) against the one the proxy resolved/verified. */
static bool same_host(const char *parsed, const char *host)
{
	char a[MOAT_TLS_MAX_NAME + 1], b[MOAT_TLS_MAX_NAME + 1];
	bool ip;

	return moat_tls_normalize_host(parsed, a, &ip) == 0 &&
		moat_tls_normalize_host(host, b, &ip) == 0 && streq(a, b);
}

enum why {
	WHY_HOST,
	WHY_PLAIN,
	WHY_METHOD,
	WHY_PATH,
};

struct ctx {
	const struct moat_secrets *s;
	const struct moat_secrets_request *rq;
	const struct moat_http1_request *q;
	const char *path; /* moat_secrets_request_path() */
	size_t plen;
	bool *bound, *approved;
	enum why *why;
	struct moat_secrets_result *res;
};

_printf_(3, 4) static int refuse(struct ctx *c, int secret, const char *fmt, ...)
{
	char what[200];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	c->res->verdict = MOAT_SECRETS_REFUSED;
	c->res->secret = secret;
	if (secret >= 0)
		snprintf(c->res->reason, sizeof(c->res->reason), "secret %s: %s (destination %s)",
			 c->s->v[secret].def->name, what, c->rq->host);
	else
		snprintf(c->res->reason, sizeof(c->res->reason), "%s (destination %s)", what,
			 c->rq->host);
	return 0;
}

static const char *why_text(enum why w)
{
	switch (w) {
	case WHY_HOST:
		return "placeholder sent to a host it is not approved for";
	case WHY_PLAIN:
		return "placeholder sent over plain HTTP; only verified HTTPS carries it";
	case WHY_METHOD:
		return "placeholder sent with a method it is not approved for";
	case WHY_PATH:
		return "placeholder sent to a path it is not approved for";
	}
	return "refused";
}

/* Replace approved placeholders in text into out. *ret_refused set when a
 * placeholder is not approved here; *ret_changed when something was
 * replaced; *ret_found when any placeholder was present. */
static int substitute(struct ctx *c, const char *text, size_t len, struct obuf *out,
		      bool *ret_changed, bool *ret_found)
{
	const struct moat_secrets *s = c->s;
	size_t i = 0;
	int r;

	while (i < len) {
		int hit = -1;
		for (unsigned k = 0; k < s->n; k++)
			if (len - i >= s->v[k].ph_len &&
			    memcmp(text + i, s->v[k].placeholder, s->v[k].ph_len) == 0) {
				hit = (int)k;
				break;
			}
		if (hit < 0) {
			const char *next =
				memmem(text + i + 1, len - i - 1, PH_PREFIX, sizeof(PH_PREFIX) - 1);
			size_t stop = next ? (size_t)(next - text) : len;
			r = obuf_add(out, text + i, stop - i);
			if (r < 0)
				return r;
			i = stop;
			continue;
		}
		*ret_found = true;
		if (!c->approved[hit])
			return refuse(c, hit, "%s", why_text(c->why[hit])), 1;
		r = obuf_add(out, s->v[hit].value, s->v[hit].value_len);
		if (r < 0)
			return r;
		*ret_changed = true;
		c->res->secret = hit;
		i += s->v[hit].ph_len;
	}
	/* Whatever is left that still looks like a placeholder (another case,
	 * a fragment) was not replaced: it goes nowhere. */
	int left = moat_secrets_detect(s, out->p ? out->p : "", out->len, true);
	if (left >= 0)
		return refuse(c, left, "a mangled or partial placeholder in a header"), 1;
	if (left != -ENOENT)
		return left;
	return 0;
}

/* One header's value: Basic credentials are decoded, substituted and
 * re-encoded; everything else is substituted as text. Writes the value into
 * out. */
static int rewrite_value(struct ctx *c, const hdr_t *hd, struct obuf *out, bool *ret_changed,
			 bool *ret_found)
{
	static const char basic[] = "Basic ";
	const char *value = hd->value.p;
	size_t vlen = hd->value.len;
	int r;

	if ((name_is(hd, "Authorization") || name_is(hd, "Proxy-Authorization")) &&
	    vlen > sizeof(basic) - 1 && strncasecmp(value, basic, sizeof(basic) - 1) == 0) {
		const char *enc = value + sizeof(basic) - 1;
		size_t elen = vlen - (sizeof(basic) - 1), dlen = 0;
		unsigned char *dec = malloc(elen / 4 * 3 + 1);
		struct obuf plain = {0};
		bool changed = false;

		if (!dec)
			return -ENOMEM;
		if (b64_decode(enc, elen, dec, &dlen) == 0) {
			r = substitute(c, (const char *)dec, dlen, &plain, &changed, ret_found);
			if (r == 0 && changed) {
				r = obuf_add(out, value, sizeof(basic) - 1);
				if (r == 0)
					r = b64_encode(out, (unsigned char *)plain.p, plain.len);
				*ret_changed = true;
			} else if (r == 0)
				r = obuf_add(out, value, vlen);
			OPENSSL_cleanse(dec, elen / 4 * 3 + 1);
			free(dec);
			obuf_wipe(&plain);
			if (r != 0 || changed)
				return r;
			/* Nothing inside: the encoded text itself must be clean too. */
			int i = moat_secrets_detect(c->s, value, vlen, true);
			if (i >= 0)
				return refuse(c, i, "a mangled or partial placeholder in a header"),
				       1;
			return i == -ENOENT ? 0 : i;
		}
		free(dec);
	}
	return substitute(c, value, vlen, out, ret_changed, ret_found);
}

static int do_rewrite(struct ctx *c, struct obuf *out)
{
	const struct moat_secrets *s = c->s;
	const struct moat_http1_request *q = c->q;
	const char *method = q->method.p;
	size_t mlen = q->method.len;
	bool any_bound = false, any_mp_ok = false, changed = false, host_seen = false;
	int first_bound = -1, i, r;

	/* Where a secret may go for this request. */
	for (unsigned k = 0; k < s->n; k++) {
		const struct moat_secret *d = s->v[k].def;
		bool m, p;
		c->bound[k] = false;
		for (unsigned j = 0; j < d->n_hosts && !c->bound[k]; j++)
			c->bound[k] = moat_secrets_host_match(d->hosts[j], c->rq->host);
		m = moat_secrets_method_ok(d->methods, d->n_methods, method, mlen);
		p = c->plen > 0 && moat_secrets_path_ok(d->paths, d->n_paths, c->path, c->plen);
		c->why[k] = !c->bound[k] ? WHY_HOST
			: !c->rq->tls	 ? WHY_PLAIN
			: !m		 ? WHY_METHOD
			: !p		 ? WHY_PATH
					 : WHY_HOST;
		c->approved[k] = c->bound[k] && c->rq->tls && m && p && s->v[k].value;
		if (c->bound[k]) {
			any_bound = true;
			if (first_bound < 0)
				first_bound = (int)k;
			if (m && p)
				any_mp_ok = true;
		}
	}

	/* A CONNECT inside a request stream would turn the rest of it into a
	 * tunnel the proxy no longer frames. */
	if (q->is_connect)
		return refuse(c, -1, "CONNECT inside a proxied request stream");
	/* One authority per request: the one the proxy resolved and verified
	 * (RT-062 b, c). The parser already refused a Host that differs from
	 * an absolute-form target. */
	if (q->has_host && !same_host(q->host, c->rq->host))
		return refuse(c, -1, "the Host header names another host");

	/* Never in the URL, never in the body, whatever the host. */
	i = moat_secrets_detect(s, q->target.p, q->target.len, true);
	if (i >= 0)
		return refuse(c, i, "placeholder in the request URL");
	if (i != -ENOENT)
		return i;
	if (c->rq->body && c->rq->body_len) {
		i = moat_secrets_detect(s, c->rq->body,
					MIN(c->rq->body_len, (size_t)MOAT_SECRETS_BODY_WINDOW),
					true);
		if (i >= 0)
			return refuse(c, i, "placeholder in the request body");
		if (i != -ENOENT)
			return i;
	}
	for (unsigned k = 0; k < q->n_headers; k++) {
		i = moat_secrets_detect(s, q->headers[k].name.p, q->headers[k].name.len, false);
		if (i >= 0)
			return refuse(c, i, "placeholder in a header name");
	}

	if (any_bound) {
		if ((mlen == 5 && memcmp(method, "TRACE", 5) == 0) ||
		    (mlen == 5 && memcmp(method, "TRACK", 5) == 0))
			return refuse(c, first_bound, "TRACE/TRACK to a credential host");
		if (!any_mp_ok)
			return refuse(c, first_bound,
				      "method %.*s or path not allowed on the credential host",
				      (int)MIN(mlen, (size_t)16), method);
	}

	/* The request line: as sent in origin-form; an absolute-form target
	 * goes on in origin-form (the upstream is the origin server). */
	if (q->form == MOAT_HTTP1_FORM_ORIGIN) {
		r = obuf_add(out, q->request_line.p, q->request_line.len);
	} else {
		char ver[16];
		snprintf(ver, sizeof(ver), " HTTP/1.%u", q->version_minor);
		r = obuf_add(out, method, mlen);
		if (r == 0)
			r = obuf_adds(out, " ");
		if (r == 0)
			r = obuf_adds(out, q->origin_prefix);
		if (r == 0)
			r = obuf_add(out, q->path.p, q->path.len);
		if (r == 0)
			r = obuf_adds(out, ver);
		changed = true;
	}
	if (r == 0)
		r = obuf_adds(out, "\r\n");
	if (r < 0)
		return r;

	for (unsigned k = 0; k < q->n_headers; k++) {
		const hdr_t *h = &q->headers[k];
		bool hchanged = false, found = false, dropped = false;
		size_t mark;

		if (name_is(h, "Host"))
			host_seen = true;
		/* A header moat adds itself replaces the client's. */
		for (unsigned x = 0; x < s->n; x++) {
			const struct moat_secret *d = s->v[x].def;
			if (d->header && c->bound[x] && name_is(h, d->header)) {
				dropped = true;
				if (!c->approved[x])
					return refuse(c, (int)x, "%s", why_text(c->why[x]));
				if (moat_secrets_detect(s, h->value.p, h->value.len, true) >= 0)
					break;
				snprintf(c->res->warning, sizeof(c->res->warning),
					 "secret %s: the client's own %s header was replaced "
					 "(destination %s)",
					 d->name, d->header, c->rq->host);
				break;
			}
		}
		if (dropped) {
			changed = true;
			continue;
		}

		mark = out->len;
		r = obuf_add(out, h->name.p, h->name.len);
		if (r == 0)
			r = obuf_adds(out, ": ");
		if (r < 0)
			return r;
		struct obuf val = {0};
		r = rewrite_value(c, h, &val, &hchanged, &found);
		if (r == 0 && c->res->verdict != MOAT_SECRETS_REFUSED)
			r = obuf_add(out, val.p ? val.p : "", val.len);
		obuf_wipe(&val);
		if (r != 0 || c->res->verdict == MOAT_SECRETS_REFUSED)
			return r < 0 ? r : 0;

		/* RT-063: on a credential host in placeholder mode, the client may
		 * not bring its own Authorization. */
		if (!found && name_is(h, "Authorization"))
			for (unsigned x = 0; x < s->n; x++)
				if (c->bound[x] && !s->v[x].def->header)
					return refuse(
						c, (int)x,
						"client-supplied Authorization to a credential "
						"host (use the placeholder)");

		if (hchanged) {
			changed = true;
			r = obuf_adds(out, "\r\n");
		} else {
			/* Unchanged: the original line, byte for byte. */
			out->len = mark;
			r = obuf_add(out, h->line.p, h->line.len);
			if (r == 0)
				r = obuf_adds(out, "\r\n");
		}
		if (r < 0)
			return r;
	}
	/* An absolute-form request without Host keeps its authority. */
	if (q->form != MOAT_HTTP1_FORM_ORIGIN && !host_seen) {
		r = obuf_adds(out, "Host: ");
		if (r == 0)
			r = obuf_add(out, q->authority.p, q->authority.len);
		if (r == 0)
			r = obuf_adds(out, "\r\n");
		if (r < 0)
			return r;
	}

	/* Headers moat adds. */
	for (unsigned x = 0; x < s->n; x++) {
		const struct moat_secret *d = s->v[x].def;
		const char *f, *pct;
		if (!d->header || !c->bound[x])
			continue;
		if (!c->approved[x]) {
			if (c->why[x] == WHY_PLAIN)
				return refuse(c, (int)x, "%s", why_text(WHY_PLAIN));
			continue; /* another secret of this host approves the request */
		}
		f = d->format ? d->format : "%s";
		pct = strstr(f, "%s");
		r = obuf_adds(out, d->header);
		if (r == 0)
			r = obuf_adds(out, ": ");
		if (r == 0)
			r = obuf_add(out, f, (size_t)(pct - f));
		if (r == 0)
			r = obuf_add(out, s->v[x].value, s->v[x].value_len);
		if (r == 0)
			r = obuf_adds(out, pct + 2);
		if (r == 0)
			r = obuf_adds(out, "\r\n");
		if (r < 0)
			return r;
		changed = true;
		c->res->secret = (int)x;
	}
	r = obuf_adds(out, "\r\n");
	if (r < 0)
		return r;
	c->res->verdict = changed ? MOAT_SECRETS_REWRITTEN : MOAT_SECRETS_PASS;
	return 0;
}

int moat_secrets_rewrite(const struct moat_secrets *s, const struct moat_secrets_request *req,
			 struct moat_secrets_result *ret)
{
	struct obuf out = {0};
	struct ctx c;
	bool bound[MOAT_MAX_SECRETS], approved[MOAT_MAX_SECRETS];
	enum why why[MOAT_MAX_SECRETS];
	char norm[MOAT_TLS_MAX_NAME + 1];
	bool ip;
	int r;

	*ret = (struct moat_secrets_result){.verdict = MOAT_SECRETS_REFUSED, .secret = -1};
	if (!s) {
		static const struct moat_secrets none = {0};
		s = &none;
	}
	if (!req || !req->host || !req->http || !req->http->method.p ||
	    moat_tls_normalize_host(req->host, norm, &ip) < 0)
		return -EINVAL;
	if (s->n > MOAT_MAX_SECRETS)
		return -E2BIG;
	ret->verdict = MOAT_SECRETS_PASS;
	c = (struct ctx){.s = s,
			 .rq = req,
			 .q = req->http,
			 .bound = bound,
			 .approved = approved,
			 .why = why,
			 .res = ret};
	moat_secrets_request_path(req->http, &c.path, &c.plen);
	r = do_rewrite(&c, &out);
	if (r < 0 || ret->verdict != MOAT_SECRETS_REWRITTEN) {
		obuf_wipe(&out);
		if (r < 0) {
			ret->verdict = MOAT_SECRETS_REFUSED;
			return r;
		}
		if (ret->verdict == MOAT_SECRETS_PASS)
			ret->secret = -1;
		return 0;
	}
	ret->head = out.p;
	ret->head_len = out.len;
	return 0;
}

void moat_secrets_result_clear(struct moat_secrets_result *r)
{
	if (!r)
		return;
	if (r->head) {
		OPENSSL_cleanse(r->head, r->head_len);
		free(r->head);
	}
	*r = (struct moat_secrets_result){.secret = -1};
}
