/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A TLS-intercepted HTTP/1.x connection with credential injection. See
 * intercept.h. */
#include "proxy/intercept.h"

#include <ctype.h>
#include <errno.h>
#include <openssl/crypto.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "shared/macro.h"

/* Head plus the body window must fit: the window is scanned with the head. */
#define IN_CAP (MOAT_SECRETS_MAX_HEAD + MOAT_SECRETS_BODY_WINDOW)
#define CHUNK_LINE_MAX 1024
#define REPORT_TARGET_MAX 512
#define ANSWER_DRAIN_MAX (1u << 20)

enum chunk_st {
	CH_SIZE,
	CH_EXT,
	CH_SIZE_LF,
	CH_DATA,
	CH_DATA_CR,
	CH_DATA_LF,
	CH_TRAILER_START,
	CH_TRAILER,
	CH_TRAILER_LF,
	CH_FINAL_LF,
};

struct chunk {
	enum chunk_st st;
	uint64_t left;
	unsigned digits, line;
};

enum rq_state {
	RQ_HEAD,
	RQ_BODY_LENGTH,
	RQ_BODY_CHUNKED,
};

struct moat_intercept {
	struct moat_intercept_config cfg;
	char host[MOAT_TLS_MAX_NAME + 1];
	SSL *cs, *us;
	bool chs_done, uhs_done, uhs_failed;

	/* client -> upstream */
	char *in;
	size_t in_len;
	enum rq_state rq;
	uint64_t body_left;
	struct chunk ch;
	size_t body_seen;
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

/* ---- chunked request bodies ---------------------------------------------------- */

/* Consume bytes of a chunked body: returns how many of p[0..n) belong to it
 * (all of them unless it ends inside), sets *done at its end; -EBADMSG for
 * malformed framing. Chunk data itself is not inspected here. */
static ssize_t chunk_feed(struct chunk *c, const char *p, size_t n, bool *done)
{
	size_t i = 0;

	*done = false;
	while (i < n) {
		char b = p[i];
		switch (c->st) {
		case CH_SIZE:
			if (isxdigit((unsigned char)b)) {
				if (++c->digits > 15)
					return -EBADMSG;
				c->left = c->left * 16 +
					(uint64_t)(isdigit((unsigned char)b)
							   ? b - '0'
							   : tolower((unsigned char)b) - 'a' + 10);
			} else if (c->digits == 0)
				return -EBADMSG;
			else if (b == ';')
				c->st = CH_EXT;
			else if (b == '\r')
				c->st = CH_SIZE_LF;
			else
				return -EBADMSG;
			i++;
			break;
		case CH_EXT:
			if (b == '\n' || ++c->line > CHUNK_LINE_MAX)
				return -EBADMSG;
			if (b == '\r')
				c->st = CH_SIZE_LF;
			i++;
			break;
		case CH_SIZE_LF:
			if (b != '\n')
				return -EBADMSG;
			c->st = c->left == 0 ? CH_TRAILER_START : CH_DATA;
			c->line = 0;
			i++;
			break;
		case CH_DATA: {
			size_t k = (size_t)MIN((uint64_t)(n - i), c->left);
			c->left -= k;
			i += k;
			if (c->left == 0)
				c->st = CH_DATA_CR;
			break;
		}
		case CH_DATA_CR:
			if (b != '\r')
				return -EBADMSG;
			c->st = CH_DATA_LF;
			i++;
			break;
		case CH_DATA_LF:
			if (b != '\n')
				return -EBADMSG;
			*c = (struct chunk){.st = CH_SIZE};
			i++;
			break;
		case CH_TRAILER_START:
			c->line = 0;
			c->st = b == '\r' ? CH_FINAL_LF : CH_TRAILER;
			if (b == '\n')
				return -EBADMSG;
			i++;
			break;
		case CH_TRAILER:
			if (b == '\n' || ++c->line > CHUNK_LINE_MAX)
				return -EBADMSG;
			if (b == '\r')
				c->st = CH_TRAILER_LF;
			i++;
			break;
		case CH_TRAILER_LF:
			if (b != '\n')
				return -EBADMSG;
			c->st = CH_TRAILER_START;
			i++;
			break;
		case CH_FINAL_LF:
			if (b != '\n')
				return -EBADMSG;
			*c = (struct chunk){.st = CH_SIZE};
			*done = true;
			return (ssize_t)(i + 1);
		}
	}
	return (ssize_t)i;
}

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

static const char *status_text(int status)
{
	switch (status) {
	case 400:
		return "Bad Request";
	case 403:
		return "Forbidden";
	case 431:
		return "Request Header Fields Too Large";
	case 502:
		return "Bad Gateway";
	default:
		return "Error";
	}
}

/* Queue moat's own answer; the connection ends once it is written. */
static void answer(struct moat_intercept *x, int status, const char *reason)
{
	char body[512], *a = NULL;
	int blen, alen;

	if (x->answering)
		return;
	x->answering = true;
	out_clear(x);
	blen = snprintf(body, sizeof(body), "moat: %s\n", reason);
	if (blen < 0)
		return;
	blen = MIN(blen, (int)sizeof(body) - 1);
	alen = asprintf(&a,
			"HTTP/1.1 %d %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
			"X-Moat-Denied: %d\r\nContent-Length: %d\r\n\r\n%.*s",
			status, status_text(status), status, blen, blen, body);
	if (alen < 0)
		return;
	x->answer = a;
	x->answer_len = (size_t)alen;
	x->answer_off = 0;
}

static void report(struct moat_intercept *x, const char *method, size_t mlen, const char *target,
		   size_t tlen, bool allowed, int status, bool alert, const char *secret,
		   const char *reason, const char *warning)
{
	char m[33], t[REPORT_TARGET_MAX + 1];

	if (!x->cfg.report)
		return;
	snprintf(m, sizeof(m), "%.*s", (int)MIN(mlen, sizeof(m) - 1), method ? method : "");
	snprintf(t, sizeof(t), "%.*s", (int)MIN(tlen, sizeof(t) - 1), target ? target : "");
	struct moat_intercept_report r = {
		.host = x->host,
		.method = m,
		.target = t,
		.allowed = allowed,
		.status = status,
		.alert = alert,
		.secret = secret,
		.reason = reason && *reason ? reason : NULL,
		.warning = warning && *warning ? warning : NULL,
	};
	x->cfg.report(x->cfg.userdata, &r);
}

/* A complete head is at the start of in: decide and queue it. */
static int process_head(struct moat_intercept *x, size_t head_len)
{
	struct moat_secrets_result res;
	struct moat_secrets_request rq = {
		.host = x->host,
		.tls = true, /* the upstream handshake verified x->host */
		.head = x->in,
		.head_len = head_len,
		.body = x->in + head_len,
		.body_len = MIN(x->in_len - head_len, (size_t)MOAT_SECRETS_BODY_WINDOW),
	};
	int r;

	r = moat_secrets_rewrite(x->cfg.secrets, &rq, &res);
	if (r < 0) {
		const char *why = r == -E2BIG ? "request head too large"
			: r == -EBADMSG	      ? "malformed or ambiguous request head"
					      : "request refused";
		size_t mlen = 0;
		while (mlen < head_len && mlen < 32 && x->in[mlen] != ' ' && x->in[mlen] != '\r')
			mlen++;
		report(x, x->in, mlen, NULL, 0, false, r == -E2BIG ? 431 : 400, false, NULL, why,
		       NULL);
		answer(x, r == -E2BIG ? 431 : 400, why);
		return 0;
	}

	const char *method = x->in, *target = x->in + res.target_off;
	const char *secret = res.secret >= 0 && x->cfg.secrets
		? moat_secrets_name(x->cfg.secrets, (unsigned)res.secret)
		: NULL;

	if (res.verdict == MOAT_SECRETS_REFUSED) {
		report(x, method, res.method_len, target, res.target_len, false, 403,
		       res.secret >= 0, secret, res.reason, NULL);
		answer(x, 403, res.reason);
		moat_secrets_result_clear(&res);
		return 0;
	}

	/* Method/path rules of the policy for this host. */
	if (x->cfg.n_rules) {
		char m[33];
		_cleanup_free_ char *t = strndup(target, res.target_len);
		snprintf(m, sizeof(m), "%.*s", (int)MIN(res.method_len, sizeof(m) - 1), method);
		if (!t) {
			moat_secrets_result_clear(&res);
			return -ENOMEM;
		}
		/* Absolute-form targets carry the path after the authority. */
		const char *path = t;
		if (*t != '/' && strstr(t, "://")) {
			path = strchr(strstr(t, "://") + 3, '/');
			if (!path)
				path = "/";
		}
		if (moat_secrets_http_allowed(x->cfg.rules, x->cfg.n_rules, x->host, m, path) !=
		    1) {
			char why[128];
			snprintf(why, sizeof(why),
				 "method %s or path not allowed by the http rules", m);
			report(x, method, res.method_len, target, res.target_len, false, 403, false,
			       NULL, why, NULL);
			answer(x, 403, why);
			moat_secrets_result_clear(&res);
			return 0;
		}
	}

	report(x, method, res.method_len, target, res.target_len, true, 0, false, secret, NULL,
	       res.warning);

	if (res.verdict == MOAT_SECRETS_REWRITTEN) {
		out_clear(x);
		x->out = TAKE_PTR(res.head);
		x->out_len = res.head_len;
		r = 0;
	} else
		r = out_set_copy(x, x->in, head_len);
	if (res.chunked) {
		x->rq = RQ_BODY_CHUNKED;
		x->ch = (struct chunk){.st = CH_SIZE};
	} else if (res.content_length > 0) {
		x->rq = RQ_BODY_LENGTH;
		x->body_left = (uint64_t)res.content_length;
	} else
		x->rq = RQ_HEAD;
	/* The window right after the head was scanned with it. */
	x->body_seen = rq.body_len;
	moat_secrets_result_clear(&res);
	consume_in(x, head_len);
	return r;
}

/* Move body bytes from in to out. */
static int process_body(struct moat_intercept *x)
{
	size_t k;
	bool done = false;

	if (x->rq == RQ_BODY_LENGTH) {
		k = (size_t)MIN((uint64_t)x->in_len, x->body_left);
		x->body_left -= k;
		done = x->body_left == 0;
	} else {
		ssize_t n = chunk_feed(&x->ch, x->in, x->in_len, &done);
		if (n < 0) {
			snprintf(x->error, sizeof(x->error), "malformed chunked request body");
			return -EBADMSG;
		}
		k = (size_t)n;
	}
	/* The tripwire keeps looking through the first bytes of every body. */
	if (x->cfg.secrets && x->body_seen < MOAT_SECRETS_BODY_WINDOW) {
		size_t w = MIN(k, MOAT_SECRETS_BODY_WINDOW - x->body_seen);
		int i = moat_secrets_scan(x->cfg.secrets, x->in, w);
		if (i >= 0) {
			char why[400];
			snprintf(why, sizeof(why),
				 "secret %s: placeholder in the request body (destination %s)",
				 moat_secrets_name(x->cfg.secrets, (unsigned)i), x->host);
			report(x, "", 0, "", 0, false, 403, true,
			       moat_secrets_name(x->cfg.secrets, (unsigned)i), why, NULL);
			snprintf(x->error, sizeof(x->error), "%s", why);
			return -EACCES;
		}
		x->body_seen += w;
	}
	int r = out_set_copy(x, x->in, k);
	if (r < 0)
		return r;
	consume_in(x, k);
	if (done) {
		x->rq = RQ_HEAD;
		x->body_seen = 0;
	}
	return 0;
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
	x->in = malloc(IN_CAP);
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
	wipe_free(x->in, IN_CAP);
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
			report(x, "", 0, "", 0, false, 502, false, NULL, x->error, NULL);
			answer(x, 502, x->error);
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
		if (!x->client_eof && x->in_len < IN_CAP) {
			n = moat_tls_read(x->cs, x->in + x->in_len, IN_CAP - x->in_len, &w);
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
			if (x->rq == RQ_HEAD) {
				const char *end = memmem(x->in, x->in_len, "\r\n\r\n", 4);
				if (end) {
					r = process_head(x, (size_t)(end - x->in) + 4);
					if (r < 0)
						return r;
					progress = true;
					continue;
				}
				if (x->in_len >= MOAT_SECRETS_MAX_HEAD) {
					report(x, "", 0, "", 0, false, 431, false, NULL,
					       "request head too large", NULL);
					answer(x, 431, "request head too large");
					progress = true;
					continue;
				}
			} else {
				r = process_body(x);
				if (r < 0)
					return r;
				progress = true;
			}
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
		} else if (x->client_eof && x->in_len > 0 && x->rq == RQ_HEAD &&
			   !memmem(x->in, x->in_len, "\r\n\r\n", 4)) {
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
