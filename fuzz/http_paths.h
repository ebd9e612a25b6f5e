/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The three consumers of moat's HTTP/1 grammar, driven on one byte stream
 * exactly as the proxy drives them, for the differential fuzz target
 * (fuzz_http_diff.c) and the unit tests that check every smuggling case gets
 * the same verdict everywhere (tests/unit/test_http1.c):
 *
 *   plain      the explicit proxy port (proxy_http.c http_head/http_process):
 *              moat_http1_parse_request(), absolute-form required, the head
 *              sent on by moat_http1_write_origin_head(), the body framed
 *              by moat_http1_body_feed();
 *   rewriter   the credential rewriter as both proxy paths call it:
 *              moat_http1_parse_request() then moat_secrets_rewrite() on
 *              that parse, the body framed by moat_http1_body_feed();
 *   intercept  the request side of a TLS interception
 *              (moat_intercept_requests_next()), fed in pieces of a given
 *              size as TLS records would arrive.
 *
 * Each run records, per accepted request, the head length, the body length
 * and chunk count, and how the stream ended (refused with which reason, or
 * out of bytes). A refusal is "policy" when its reason is not one of the
 * grammar's (moat_http1_strerror()): the paths legitimately differ there
 * (the proxy port wants absolute-form, the interceptor one host), never on
 * the grammar. Header-only: static functions, included where needed.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http1.h"
#include "proxy/intercept.h"
#include "proxy/secrets.h"

#define PATHS_MAX_MSGS 64

struct path_msg {
	size_t head_len;
	int64_t content_length;
	bool chunked;
	uint64_t body_len; /* body bytes framed (all of it once complete) */
	uint64_t chunks;
	bool body_done;
};

struct path_run {
	struct path_msg msg[PATHS_MAX_MSGS];
	unsigned n; /* requests whose head was accepted */
	bool refused;
	bool policy; /* refused for a path-specific rule, not the grammar */
	char reason[400];
	int status;
	bool oom;
	char *fwd; /* what goes upstream */
	size_t fwd_len, fwd_cap;
};

static inline void path_run_free(struct path_run *r)
{
	free(r->fwd);
	memset(r, 0, sizeof(*r));
}

static inline void path_fwd(struct path_run *r, const void *p, size_t n)
{
	if (r->fwd_len + n > r->fwd_cap) {
		size_t cap = (r->fwd_len + n) * 2 + 64;
		char *q = realloc(r->fwd, cap);
		if (!q) {
			r->oom = true;
			return;
		}
		r->fwd = q;
		r->fwd_cap = cap;
	}
	if (n)
		memcpy(r->fwd + r->fwd_len, p, n);
	r->fwd_len += n;
}

static inline bool path_grammar_reason(const char *reason)
{
	for (int e = 1; e < MOAT_HTTP1_E__MAX; e++)
		if (strcmp(moat_http1_strerror(e), reason) == 0)
			return true;
	return false;
}

static inline void path_refuse(struct path_run *r, int status, const char *reason)
{
	r->refused = true;
	r->status = status;
	snprintf(r->reason, sizeof(r->reason), "%s", reason);
	r->policy = !path_grammar_reason(reason);
}

static inline struct path_msg *path_msg_new(struct path_run *r, size_t head_len, int64_t cl,
					    bool chunked)
{
	if (r->n >= PATHS_MAX_MSGS)
		return NULL;
	struct path_msg *m = &r->msg[r->n++];
	*m = (struct path_msg){.head_len = head_len,
			       .content_length = cl,
			       .chunked = chunked,
			       .body_done = !chunked && cl <= 0};
	return m;
}

/* Frame body bytes at in[0..len) for message m; returns bytes used or -1 (refused). */
static inline long path_body(struct path_run *r, struct moat_http1_body *b, struct path_msg *m,
			     const char *in, size_t len)
{
	int k = moat_http1_body_feed(b, in, len);
	if (k < 0) {
		path_refuse(r, moat_http1_err_status(k), moat_http1_strerror(k));
		return -1;
	}
	path_fwd(r, in, (size_t)k);
	m->body_len = b->length;
	m->chunks = b->ch.chunks;
	m->body_done = !b->active;
	return k;
}

/* The explicit proxy port (proxy_http.c: http_head, then http_process). */
static inline void path_plain(const char *in, size_t len, struct path_run *r)
{
	static struct moat_http1_request q;
	struct moat_http1_body b = {0};
	struct path_msg *m = NULL;
	char name[MOAT_HOST_BUFSZ] = "";
	uint16_t port = 0;
	size_t pos = 0;

	while (pos < len && !r->refused) {
		if (b.active) {
			long k = path_body(r, &b, m, in + pos, len - pos);
			if (k < 0)
				return;
			pos += (size_t)k;
			continue;
		}
		if (r->n >= PATHS_MAX_MSGS)
			return;
		int n = moat_http1_parse_request(in + pos, len - pos, NULL, &q);
		if (n == 0)
			return;
		if (n < 0) {
			path_refuse(r, moat_http1_err_status(n), moat_http1_strerror(n));
			return;
		}
		if (r->n == 0) {
			if (q.is_connect) {
				path_refuse(r, 200, "connect-tunnel"); /* raw relay from here */
				return;
			}
			if (q.form != MOAT_HTTP1_FORM_ABSOLUTE) {
				path_refuse(r, 400, "not-a-proxy-request");
				return;
			}
			snprintf(name, sizeof(name), "%s", q.host);
			port = q.port;
		} else if (q.is_connect || q.form != MOAT_HTTP1_FORM_ABSOLUTE ||
			   strcmp(q.host, name) != 0 || q.port != port) {
			path_refuse(r, 403, "host-switch");
			return;
		}
		size_t cap = MOAT_HTTP1_ORIGIN_HEAD_MAX(&q, (size_t)n);
		char *head = malloc(cap);
		int k = head ? moat_http1_write_origin_head(&q, head, cap) : -1;
		if (k < 0) {
			free(head);
			r->oom = true;
			return;
		}
		path_fwd(r, head, (size_t)k);
		free(head);
		m = path_msg_new(r, (size_t)n, q.content_length, q.chunked);
		moat_http1_body_start(&b, &q, 0);
		pos += (size_t)n;
	}
}

/* Parse, then the credential rewriter on that parse (as both proxy paths call it). */
static inline void path_rewriter(const struct moat_secrets *s, const char *in, size_t len,
				 const char *host, struct path_run *r)
{
	static struct moat_http1_request q;
	struct moat_http1_body b = {0};
	struct path_msg *m = NULL;
	size_t pos = 0;

	while (pos < len && !r->refused) {
		if (b.active) {
			long k = path_body(r, &b, m, in + pos, len - pos);
			if (k < 0)
				return;
			pos += (size_t)k;
			continue;
		}
		if (r->n >= PATHS_MAX_MSGS)
			return;
		int n = moat_http1_parse_request(in + pos, len - pos, NULL, &q);
		if (n == 0)
			return;
		if (n < 0) {
			path_refuse(r, moat_http1_err_status(n), moat_http1_strerror(n));
			return;
		}
		struct moat_secrets_result res;
		struct moat_secrets_request rq = {.host = host, .tls = true, .http = &q};
		int e = moat_secrets_rewrite(s, &rq, &res);
		if (e < 0 || res.verdict == MOAT_SECRETS_REFUSED) {
			path_refuse(r, 403, e < 0 ? "credential-check-failed" : res.reason);
			moat_secrets_result_clear(&res);
			return;
		}
		if (res.verdict == MOAT_SECRETS_REWRITTEN)
			path_fwd(r, res.head, res.head_len);
		else
			path_fwd(r, q.request_line.p,
				 (size_t)n - (size_t)(q.request_line.p - (in + pos)));
		moat_secrets_result_clear(&res);
		m = path_msg_new(r, (size_t)n, q.content_length, q.chunked);
		moat_http1_body_start(&b, &q, 0);
		pos += (size_t)n;
	}
}

/* The interceptor's request side, fed @piece bytes at a time (0 = all). */
static inline void path_intercept(const struct moat_intercept_config *cfg, const char *in,
				  size_t len, const char *host, size_t piece, struct path_run *r)
{
	struct moat_intercept_requests q;
	struct path_msg *m = NULL;
	size_t done = 0, fed = 0, cap;

	if (moat_intercept_requests_init(&q, cfg, host) < 0) {
		path_refuse(r, 400, "bad-host");
		return;
	}
	cap = q.max_head + MOAT_SECRETS_BODY_WINDOW; /* the connection's buffer */
	if (piece == 0)
		piece = len;
	fed = piece < len ? piece : len;
	while (!r->refused) {
		struct moat_intercept_piece pc;
		size_t avail = fed - done;
		if (!q.body.active && r->n >= PATHS_MAX_MSGS)
			return;
		if (avail > cap)
			avail = cap;
		if (moat_intercept_requests_next(&q, in + done, avail, &pc) < 0) {
			r->oom = true;
			return;
		}
		switch (pc.kind) {
		case MOAT_INTERCEPT_MORE:
			if (fed == len) {
				moat_intercept_piece_clear(&pc);
				return;
			}
			fed = len - fed > piece ? fed + piece : len;
			break;
		case MOAT_INTERCEPT_HEAD:
			if (r->n >= PATHS_MAX_MSGS) {
				moat_intercept_piece_clear(&pc);
				return;
			}
			m = path_msg_new(r, pc.consumed, pc.content_length, pc.chunked);
			path_fwd(r, pc.data, pc.len);
			done += pc.consumed;
			if (!m) {
				moat_intercept_piece_clear(&pc);
				return;
			}
			break;
		case MOAT_INTERCEPT_BODY:
			path_fwd(r, in + done, pc.consumed);
			done += pc.consumed;
			if (m) {
				m->body_len = q.body.length;
				m->chunks = q.body.ch.chunks;
				m->body_done = !q.body.active;
			}
			break;
		case MOAT_INTERCEPT_REFUSE:
			path_refuse(r, pc.status, pc.reason);
			break;
		}
		moat_intercept_piece_clear(&pc);
		if (done == len && !q.body.active)
			return;
	}
}

/* The framing an upstream reads from the forwarded bytes: the same
 * messages (head count, body lengths) the path recorded, or false. */
static inline bool path_fwd_reframes(const struct path_run *r)
{
	static struct moat_http1_request q;
	const struct moat_http1_limits big = {.max_head = MOAT_HTTP1_HARD_MAX_HEAD,
					      .max_headers = MOAT_HTTP1_HARD_MAX_HEADERS};
	struct moat_http1_body b = {0};
	size_t pos = 0;
	unsigned i = 0;

	while (pos < r->fwd_len) {
		if (b.active) {
			int k = moat_http1_body_feed(&b, r->fwd + pos, r->fwd_len - pos);
			if (k <= 0)
				return false;
			pos += (size_t)k;
			continue;
		}
		if (i > 0 && (r->msg[i - 1].body_len != b.length))
			return false;
		int n = moat_http1_parse_request(r->fwd + pos, r->fwd_len - pos, &big, &q);
		if (n <= 0 || i >= r->n || q.form != MOAT_HTTP1_FORM_ORIGIN ||
		    q.content_length != r->msg[i].content_length || q.chunked != r->msg[i].chunked)
			return false;
		moat_http1_body_start(&b, &q, 0);
		i++;
		pos += (size_t)n;
	}
	return i == r->n && (i == 0 || r->msg[i - 1].body_len == b.length);
}

static inline bool path_same_msg(const struct path_msg *a, const struct path_msg *b, bool body)
{
	if (a->head_len != b->head_len || a->content_length != b->content_length ||
	    a->chunked != b->chunked)
		return false;
	return !body ||
		(a->body_len == b->body_len && a->chunks == b->chunks &&
		 a->body_done == b->body_done);
}

/*
 * Does b agree with a? On every request both accepted (all of its framing;
 * of the last one only the head when a grammar refusal cut it); a stream a
 * refuses by the grammar is refused by b at the same request with the same
 * reason and status, unless b stopped earlier by a rule of its own; with
 * neither refused, the same number of requests.
 */
static inline bool path_agree(const struct path_run *a, const struct path_run *b)
{
	unsigned n = a->n < b->n ? a->n : b->n;
	bool a_gram = a->refused && !a->policy, b_gram = b->refused && !b->policy;

	for (unsigned i = 0; i < n; i++)
		if (!path_same_msg(&a->msg[i], &b->msg[i], !(i + 1 == n && (a_gram || b_gram))))
			return false;
	if (a_gram) {
		if (b->n > a->n)
			return false; /* b accepted a request the grammar refuses */
		if (b->n == a->n &&
		    (!b_gram || strcmp(a->reason, b->reason) != 0 || a->status != b->status))
			return false;
		if (b->n < a->n && !(b->refused && b->policy))
			return false;
	}
	if (!a->refused && !b->refused && a->n != b->n)
		return false;
	if (a->refused && a->policy && !b->refused && b->n < a->n)
		return false;
	return true;
}
