/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A TLS-intercepted HTTP/1.x connection with credential injection. See
 * intercept.h. */
#include "proxy/intercept.h"

#include <errno.h>
#include <openssl/crypto.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "shared/macro.h"

#define REPORT_TARGET_MAX 512
#define ANSWER_DRAIN_MAX (1u << 20)

struct moat_intercept {
	struct moat_intercept_config cfg;
	char host[MOAT_TLS_MAX_NAME + 1];
	SSL *cs, *us;
	bool chs_done, uhs_done, uhs_failed;

	/* client -> upstream */
	struct moat_intercept_requests rq;
	char *in;
	size_t in_len, in_cap; /* in_cap: the head limit plus the body window */
	char *out; /* what goes upstream next; may hold real values: wiped */
	size_t out_len, out_off;
	bool client_eof, up_shut;

	/* upstream -> client */
	char down[MOAT_INTERCEPT_BUF];
	size_t down_len, down_off, down_ready; /* [off, ready) to write, [ready, len) held */
	bool upstream_eof;

	/* moat's own answer to the client (refusal, upstream failure) */
	char *answer;
	size_t answer_len, answer_off;
	bool answering, answered;
	size_t drained;

	char error[512];
};

/* ---- helpers ---------------------------------------------------------------------- */

static void wipe_free(char *p, size_t n)
{
	if (p) {
		OPENSSL_cleanse(p, n);
		free(p);
	}
}

static void out_clear(struct moat_intercept *x)
{
	wipe_free(x->out, x->out_len);
	x->out = NULL;
	x->out_len = x->out_off = 0;
}

static int out_set_copy(struct moat_intercept *x, const char *p, size_t n)
{
	out_clear(x);
	x->out = malloc(n ? n : 1);
	if (!x->out)
		return -ENOMEM;
	memcpy(x->out, p, n);
	x->out_len = n;
	return 0;
}

static void consume_in(struct moat_intercept *x, size_t n)
{
	memmove(x->in, x->in + n, x->in_len - n);
	OPENSSL_cleanse(x->in + x->in_len - n, n);
	x->in_len -= n;
}

/* Queue moat's own answer (moat_http1_build_error: X-Moat-Denied and the
 * body name the reason); the connection ends once it is written. */
static void answer(struct moat_intercept *x, int status, const char *reason, const char *what)
{
	char buf[2048];
	int n;

	if (x->answering)
		return;
	x->answering = true;
	out_clear(x);
	n = moat_http1_build_error(buf, sizeof(buf), status, reason, what, NULL);
	if (n < 0)
		return;
	x->answer = malloc((size_t)n);
	if (!x->answer)
		return;
	memcpy(x->answer, buf, (size_t)n);
	x->answer_len = (size_t)n;
	x->answer_off = 0;
}

static void report(const struct moat_intercept_config *cfg, const char *host, const char *method,
		   size_t mlen, const char *target, size_t tlen, bool allowed, int status,
		   bool alert, const char *secret, const char *reason, const char *warning)
{
	char m[33], t[REPORT_TARGET_MAX + 1];

	if (!cfg->report)
		return;
	snprintf(m, sizeof(m), "%.*s", (int)MIN(mlen, sizeof(m) - 1), method ? method : "");
	snprintf(t, sizeof(t), "%.*s", (int)MIN(tlen, sizeof(t) - 1), target ? target : "");
	struct moat_intercept_report r = {
		.host = host,
		.method = m,
		.target = t,
		.allowed = allowed,
		.status = status,
		.alert = alert,
		.secret = secret,
		.reason = reason && *reason ? reason : NULL,
		.warning = warning && *warning ? warning : NULL,
	};
	cfg->report(cfg->userdata, &r);
}

/* ---- the request side ------------------------------------------------------------- */

int moat_intercept_requests_init(struct moat_intercept_requests *q,
				 const struct moat_intercept_config *cfg, const char *host)
{
	bool ip;

	memset(q, 0, sizeof(*q));
	if (!cfg || !host || moat_tls_normalize_host(host, q->host, &ip) < 0)
		return -EINVAL;
	q->cfg = cfg;
	q->max_head = cfg->limits.max_head ? cfg->limits.max_head : MOAT_HTTP1_DEFAULT_MAX_HEAD;
	q->max_head = MIN(q->max_head, (size_t)MOAT_HTTP1_HARD_MAX_HEAD);
	return 0;
}

void moat_intercept_piece_clear(struct moat_intercept_piece *p)
{
	if (!p)
		return;
	wipe_free(p->data, p->len);
	*p = (struct moat_intercept_piece){0};
}

_printf_(6, 7) static int refuse_piece(struct moat_intercept_requests *q,
				       const struct moat_http1_request *r, int status, bool alert,
				       struct moat_intercept_piece *ret, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(ret->reason, sizeof(ret->reason), fmt, ap);
	va_end(ap);
	ret->kind = MOAT_INTERCEPT_REFUSE;
	ret->status = status;
	ret->alert = alert;
	if (r && r->method.p)
		snprintf(ret->what, sizeof(ret->what), "%.*s %.*s", (int)MIN(r->method.len, 32u),
			 r->method.p, (int)MIN(r->target.len, 100u), r->target.p);
	q->refused = true;
	return 0;
}

/* A complete head of head_len bytes is at the start of in. */
static int next_head(struct moat_intercept_requests *q, const struct moat_http1_request *r,
		     const char *in, size_t len, size_t head_len, struct moat_intercept_piece *ret)
{
	const struct moat_intercept_config *cfg = q->cfg;
	struct moat_secrets_result res;
	struct moat_secrets_request rq = {
		.host = q->host,
		.tls = true, /* the upstream handshake verified the host */
		.http = r,
		.body = in + head_len,
		.body_len = MIN(len - head_len, (size_t)MOAT_SECRETS_BODY_WINDOW),
	};
	const char *m = r->method.p, *t = r->target.p;
	size_t ml = r->method.len, tl = r->target.len;
	uint16_t port = cfg->port ? cfg->port : 443;
	int e;

	/* One origin per connection, the one dialled: a Host (or absolute-form
	 * authority) that names a port names this one, as on the tunnel path. */
	if (r->has_host && r->port_explicit && r->port != port) {
		char why[160];
		snprintf(why, sizeof(why), "host-mismatch (port %u, connection is to port %u)",
			 r->port, port);
		report(cfg, q->host, m, ml, t, tl, false, 403, false, NULL, why, NULL);
		return refuse_piece(q, r, 403, false, ret, "%s", why);
	}
	e = moat_secrets_rewrite(cfg->secrets, &rq, &res);
	if (e == -ENOMEM)
		return e;
	if (e < 0) {
		const char *why =
			e == -E2BIG ? "rewritten-head-too-large" : "credential-check-failed";
		report(cfg, q->host, m, ml, t, tl, false, e == -E2BIG ? 431 : 400, false, NULL, why,
		       NULL);
		return refuse_piece(q, r, e == -E2BIG ? 431 : 400, false, ret, "%s", why);
	}
	const char *secret = res.secret >= 0 && cfg->secrets
		? moat_secrets_name(cfg->secrets, (unsigned)res.secret)
		: NULL;
	if (res.verdict == MOAT_SECRETS_REFUSED) {
		report(cfg, q->host, m, ml, t, tl, false, 403, res.secret >= 0, secret, res.reason,
		       NULL);
		refuse_piece(q, r, 403, res.secret >= 0, ret, "%s", res.reason);
		moat_secrets_result_clear(&res);
		return 0;
	}
	/* Method/path rules of the policy for this host. */
	e = moat_secrets_http_allowed_request(cfg->rules, cfg->n_rules, q->host, r);
	if (e != 1) {
		moat_secrets_result_clear(&res);
		if (e < 0)
			return e;
		char why[128];
		snprintf(why, sizeof(why), "method %.*s or path not allowed by the http rules",
			 (int)MIN(ml, 32u), m);
		report(cfg, q->host, m, ml, t, tl, false, 403, false, NULL, why, NULL);
		return refuse_piece(q, r, 403, false, ret, "%s", why);
	}

	report(cfg, q->host, m, ml, t, tl, true, 0, false, secret, NULL, res.warning);
	ret->kind = MOAT_INTERCEPT_HEAD;
	ret->consumed = head_len;
	ret->content_length = r->content_length;
	ret->chunked = r->chunked;
	if (res.verdict == MOAT_SECRETS_REWRITTEN) {
		ret->data = TAKE_PTR(res.head);
		ret->len = res.head_len;
	} else {
		/* As sent, from the request line (an empty line before it, RFC
		 * 9112 2.2, is not passed on). */
		size_t skip = (size_t)(r->request_line.p - in);
		ret->len = head_len - skip;
		ret->data = malloc(ret->len);
		if (!ret->data) {
			moat_secrets_result_clear(&res);
			*ret = (struct moat_intercept_piece){0};
			return -ENOMEM;
		}
		memcpy(ret->data, in + skip, ret->len);
	}
	moat_secrets_result_clear(&res);
	moat_http1_body_start(&q->body, r, 0);
	/* The window right after the head was scanned with it. */
	q->body_seen = q->body.active ? rq.body_len : 0;
	q->scanned = 0;
	return 0;
}

/* Body bytes at the start of in. */
static int next_body(struct moat_intercept_requests *q, const char *in, size_t len,
		     struct moat_intercept_piece *ret)
{
	const struct moat_intercept_config *cfg = q->cfg;
	uint64_t before = q->body.length;
	int k = moat_http1_body_feed(&q->body, in, len);

	if (k < 0) {
		const char *why = moat_http1_strerror(k);
		report(cfg, q->host, "", 0, "", 0, false, moat_http1_err_status(k), false, NULL,
		       why, NULL);
		return refuse_piece(q, NULL, moat_http1_err_status(k), false, ret, "%s", why);
	}
	/* The tripwire keeps looking through the first bytes of every body. */
	if (cfg->secrets && q->body_seen < MOAT_SECRETS_BODY_WINDOW) {
		size_t off = q->body_seen > before ? (size_t)(q->body_seen - before) : 0;
		if (off < (size_t)k) {
			size_t w = MIN((size_t)k - off, MOAT_SECRETS_BODY_WINDOW - q->body_seen);
			int i = moat_secrets_scan(cfg->secrets, in + off, w);
			if (i >= 0) {
				const char *name = moat_secrets_name(cfg->secrets, (unsigned)i);
				char why[400];
				snprintf(why, sizeof(why),
					 "secret %s: placeholder in the request body (destination "
					 "%s)",
					 name, q->host);
				report(cfg, q->host, "", 0, "", 0, false, 403, true, name, why,
				       NULL);
				return refuse_piece(q, NULL, 403, true, ret, "%s", why);
			}
			q->body_seen += w;
		}
	}
	ret->kind = MOAT_INTERCEPT_BODY;
	ret->consumed = (size_t)k;
	return 0;
}

static bool any_ctl(const char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return true;
	return false;
}

int moat_intercept_requests_next(struct moat_intercept_requests *q, const char *in, size_t len,
				 struct moat_intercept_piece *ret)
{
	struct moat_http1_request *r;
	int n;

	*ret = (struct moat_intercept_piece){0};
	if (q->refused || len == 0)
		return 0;
	if (q->body.active)
		return next_body(q, in, len, ret);
	/* Re-parse only when the new bytes could change the answer: a line
	 * end, a control byte (NUL, bare CR: refused early) or the cap. Bytes
	 * without any cannot complete or refuse a head, so the verdict is the
	 * one a parse after every read gives (the plain path's), at O(lines *
	 * head) cost whatever the client's write sizes. */
	if (q->scanned > len)
		q->scanned = 0;
	if (len < q->max_head && !any_ctl(in + q->scanned, len - q->scanned)) {
		q->scanned = len;
		return 0;
	}
	r = malloc(sizeof(*r));
	if (!r)
		return -ENOMEM;
	n = moat_http1_parse_request(in, len, &q->cfg->limits, r);
	if (n == 0) {
		/* A final CR is looked at again with the byte after it. */
		q->scanned = in[len - 1] == '\r' ? len - 1 : len;
		free(r);
		return 0;
	}
	if (n < 0) {
		const char *why = moat_http1_strerror(n);
		size_t ml = 0;
		while (ml < len && ml < 32 && in[ml] != ' ' && in[ml] != '\r')
			ml++;
		report(q->cfg, q->host, in, ml, NULL, 0, false, moat_http1_err_status(n), false,
		       NULL, why, NULL);
		refuse_piece(q, NULL, moat_http1_err_status(n), false, ret, "%s", why);
		free(r);
		return 0;
	}
	n = next_head(q, r, in, len, (size_t)n, ret);
	free(r);
	return n;
}

static int fail_tls(struct moat_intercept *x, SSL *ssl, const char *side, int r)
{
	char e[160];
	snprintf(x->error, sizeof(x->error), "%s: %s", side, moat_tls_error(ssl, e, sizeof(e)));
	return r < 0 ? r : -EPROTO;
}

/* ---- public ------------------------------------------------------------------------ */

int moat_intercept_new(const struct moat_intercept_config *cfg, const char *host, int client_fd,
		       int upstream_fd, struct moat_intercept **ret)
{
	return moat_intercept_new_prefixed(cfg, host, client_fd, NULL, 0, upstream_fd, ret);
}

int moat_intercept_new_prefixed(const struct moat_intercept_config *cfg, const char *host,
				int client_fd, const void *prefix, size_t prefix_len,
				int upstream_fd, struct moat_intercept **ret)
{
	struct moat_intercept *x;
	SSL_CTX *leaf = NULL;
	bool ip;
	int r;

	if (!cfg || !cfg->ca || !cfg->upstream_ctx)
		return -EINVAL;
	x = calloc(1, sizeof(*x));
	if (!x)
		return -ENOMEM;
	x->cfg = *cfg;
	r = moat_tls_normalize_host(host, x->host, &ip);
	if (r < 0)
		goto fail;
	r = moat_intercept_requests_init(&x->rq, &x->cfg, x->host);
	if (r < 0)
		goto fail;
	/* Head plus the body window must fit: the window is scanned with the head. */
	x->in_cap = x->rq.max_head + MOAT_SECRETS_BODY_WINDOW;
	x->in = malloc(x->in_cap);
	r = -ENOMEM;
	if (!x->in)
		goto fail;
	r = moat_tls_leaf_ctx(cfg->ca, x->host, &leaf);
	if (r < 0)
		goto fail;
	r = moat_tls_server_new_prefixed(leaf, client_fd, prefix, prefix_len, &x->cs);
	SSL_CTX_free(leaf);
	if (r < 0)
		goto fail;
	r = moat_tls_client_new(cfg->upstream_ctx, upstream_fd, x->host, &x->us);
	if (r < 0)
		goto fail;
	*ret = x;
	return 0;
fail:
	moat_intercept_free(x);
	return r;
}

struct moat_intercept *moat_intercept_free(struct moat_intercept *x)
{
	if (!x)
		return NULL;
	SSL_free(x->cs);
	SSL_free(x->us);
	wipe_free(x->in, x->in_cap);
	out_clear(x);
	free(x->answer);
	OPENSSL_cleanse(x->down, sizeof(x->down));
	free(x);
	return NULL;
}

const char *moat_intercept_error(const struct moat_intercept *x)
{
	return x->error;
}

static uint32_t ev(unsigned want)
{
	return (want & MOAT_TLS_WANT_READ ? EPOLLIN : 0) |
		(want & MOAT_TLS_WANT_WRITE ? EPOLLOUT : 0);
}

int moat_intercept_step(struct moat_intercept *x, uint32_t *ret_client_events,
			uint32_t *ret_upstream_events)
{
	unsigned cwant, uwant, w;
	bool progress = true;
	ssize_t n;
	int r;

	while (progress) {
		progress = false;
		cwant = uwant = 0;

		if (!x->chs_done) {
			r = moat_tls_handshake(x->cs, &w);
			if (r == 0)
				x->chs_done = progress = true;
			else if (r == -EAGAIN)
				cwant |= w;
			else
				return fail_tls(x, x->cs, "client handshake", r);
		}
		if (!x->uhs_done && !x->uhs_failed) {
			r = moat_tls_handshake(x->us, &w);
			if (r == 0)
				x->uhs_done = progress = true;
			else if (r == -EAGAIN)
				uwant |= w;
			else {
				char e[160];
				x->uhs_failed = progress = true;
				snprintf(x->error, sizeof(x->error), "upstream %s: %s", x->host,
					 moat_tls_error(x->us, e, sizeof(e)));
			}
		}
		if (!x->chs_done)
			break;
		if (x->uhs_failed && !x->answering) {
			report(&x->cfg, x->host, "", 0, "", 0, false, 502, false, NULL, x->error,
			       NULL);
			answer(x, 502, x->error, NULL);
			progress = true;
		}

		if (x->answering) {
			/* Drain what the upstream already sent (not a held tail),
			 * then our answer. */
			if (x->down_off < x->down_ready) {
				n = moat_tls_write(x->cs, x->down + x->down_off,
						   x->down_ready - x->down_off, &w);
				if (n > 0) {
					x->down_off += (size_t)n;
					progress = true;
				} else if (n == -EAGAIN)
					cwant |= w;
				else
					return -EPIPE;
				continue;
			}
			if (!x->answer)
				return -ENOMEM;
			if (x->answer_off < x->answer_len) {
				n = moat_tls_write(x->cs, x->answer + x->answer_off,
						   x->answer_len - x->answer_off, &w);
				if (n > 0) {
					x->answer_off += (size_t)n;
					progress = true;
				} else if (n == -EAGAIN)
					cwant |= w;
				else
					return -EPIPE;
				continue;
			}
			if (!x->answered) {
				(void)moat_tls_shutdown(x->cs, &w);
				x->answered = true;
			}
			/* Read (and drop) what the client still sends until it closes:
			 * closing with unread data would reset the connection and
			 * could destroy our answer before the client reads it. */
			n = moat_tls_read(x->cs, x->down, sizeof(x->down), &w);
			if (n > 0 && x->drained < ANSWER_DRAIN_MAX) {
				x->drained += (size_t)n;
				progress = true;
			} else if (n == -EAGAIN)
				cwant |= w;
			else
				return 1;
			continue;
		}
		if (!x->uhs_done)
			break;

		/* client -> in */
		if (!x->client_eof && x->in_len < x->in_cap) {
			n = moat_tls_read(x->cs, x->in + x->in_len, x->in_cap - x->in_len, &w);
			if (n > 0) {
				x->in_len += (size_t)n;
				progress = true;
			} else if (n == 0 || n == -ECONNRESET) {
				x->client_eof = progress = true;
			} else if (n == -EAGAIN)
				cwant |= w;
			else
				return fail_tls(x, x->cs, "client", (int)n);
		}

		/* in -> out, one piece at a time */
		if (x->out_off == x->out_len && x->in_len > 0) {
			struct moat_intercept_piece pc;
			r = moat_intercept_requests_next(&x->rq, x->in, x->in_len, &pc);
			if (r < 0)
				return r;
			switch (pc.kind) {
			case MOAT_INTERCEPT_HEAD:
				out_clear(x);
				x->out = TAKE_PTR(pc.data);
				x->out_len = pc.len;
				consume_in(x, pc.consumed);
				progress = true;
				break;
			case MOAT_INTERCEPT_BODY:
				r = out_set_copy(x, x->in, pc.consumed);
				if (r < 0)
					return r;
				consume_in(x, pc.consumed);
				progress = true;
				break;
			case MOAT_INTERCEPT_REFUSE:
				snprintf(x->error, sizeof(x->error), "%s", pc.reason);
				answer(x, pc.status, pc.reason, pc.what[0] ? pc.what : NULL);
				progress = true;
				break;
			case MOAT_INTERCEPT_MORE:
				break;
			}
			moat_intercept_piece_clear(&pc);
			if (x->answering)
				continue;
		}

		/* out -> upstream */
		if (x->out_off < x->out_len) {
			n = moat_tls_write(x->us, x->out + x->out_off, x->out_len - x->out_off, &w);
			if (n > 0) {
				x->out_off += (size_t)n;
				if (x->out_off == x->out_len)
					out_clear(x);
				progress = true;
			} else if (n == -EAGAIN)
				uwant |= w;
			else
				return fail_tls(x, x->us, "upstream", (int)n);
		} else if (x->client_eof && x->in_len == 0 && !x->up_shut) {
			r = moat_tls_shutdown(x->us, &w);
			if (r == -EAGAIN)
				uwant |= w;
			else
				x->up_shut = progress = true;
		} else if (x->client_eof && x->in_len > 0 && !x->rq.body.active) {
			/* A truncated head at EOF: nothing to forward. */
			x->in_len = 0;
			progress = true;
		}

		/* upstream -> down -> client. A tail that could be the start of a
		 * real value is held back until the next read completes or masks
		 * it, so a value split across reads is masked too. */
		if (x->down_off == x->down_ready && !x->upstream_eof) {
			size_t held = x->down_len - x->down_ready;
			memmove(x->down, x->down + x->down_ready, held);
			x->down_off = x->down_ready = 0;
			x->down_len = held;
			n = moat_tls_read(x->us, x->down + held, sizeof(x->down) - held, &w);
			if (n > 0) {
				x->down_len += (size_t)n;
				x->down_ready = x->down_len;
				if (x->cfg.secrets) {
					(void)moat_secrets_scrub(x->cfg.secrets, x->down,
								 x->down_len);
					x->down_ready -= moat_secrets_scrub_hold(
						x->cfg.secrets, x->down, x->down_len);
				}
				progress = true;
			} else if (n == 0 || n == -ECONNRESET) {
				/* The held tail was not a value after all. */
				x->down_ready = x->down_len;
				x->upstream_eof = progress = true;
			} else if (n == -EAGAIN)
				uwant |= w;
			else
				return fail_tls(x, x->us, "upstream", (int)n);
		}
		if (x->down_off < x->down_ready) {
			n = moat_tls_write(x->cs, x->down + x->down_off,
					   x->down_ready - x->down_off, &w);
			if (n > 0) {
				x->down_off += (size_t)n;
				progress = true;
			} else if (n == -EAGAIN)
				cwant |= w;
			else
				return fail_tls(x, x->cs, "client", (int)n);
		}
		if (x->upstream_eof && x->down_off == x->down_len) {
			(void)moat_tls_shutdown(x->cs, &w);
			return 1;
		}
		if (x->client_eof && x->up_shut && x->in_len == 0 && x->out_off == x->out_len &&
		    x->upstream_eof)
			return 1;
	}
	*ret_client_events = ev(cwant);
	*ret_upstream_events = ev(uwant);
	return 0;
}
