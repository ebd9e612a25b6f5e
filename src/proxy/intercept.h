/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One TLS-intercepted connection of the egress proxy: TLS toward the sandbox
 * with a leaf minted by the per-run CA, verified TLS toward the real
 * upstream, and HTTP/1.x in between, where every request head is checked
 * (method/path rules, placeholders) and rewritten (secrets injected) before
 * it is forwarded. Request bodies are relayed by their framing
 * (Content-Length or chunked), so the next head on a keep-alive connection
 * is always found and inspected; pipelining works. Responses are relayed as
 * they come, with real values masked (moat_secrets_scrub).
 *
 * The proxy's event loop uses it when a connection it has already decided
 * to allow (by name and checked address: CONNECT, SOCKS or transparent with
 * SNI) goes to a host that needs inspection (moat_secrets_host_bound() or a
 * method/path rule names it), and after it has connected the upstream TCP
 * socket:
 *
 *   moat_intercept_new(&cfg, host, client_fd, upstream_fd, &x);
 *   on any event of either fd (and once at the start):
 *       r = moat_intercept_step(x, &cev, &uev);
 *       r == 0: wait for cev on client_fd and uev on upstream_fd (EPOLLIN /
 *               EPOLLOUT bits; 0 = nothing needed from that fd now);
 *       r != 0: finished (1) or failed (< 0): moat_intercept_free(), close
 *               both fds.
 *
 * Both fds must be non-blocking; they stay owned by the caller. Every request
 * decision is reported through cfg.report (for the event log / alerts).
 *
 * The request side has no HTTP grammar of its own: heads are parsed by
 * moat_http1_parse_request() (with cfg.limits, the same limits as the plain
 * proxy path), rewritten by moat_secrets_rewrite() from that parse, and
 * bodies are framed by moat_http1_body_*(). That half is pure code
 * (moat_intercept_requests_*() below), so tests and the differential fuzz
 * target drive exactly what the TLS connection runs. A refusal is answered
 * with moat_http1_build_error(): X-Moat-Denied and the body name the reason
 * (the same reason token the plain path logs for the same bytes), and the
 * connection ends.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "policy/policy.h"
#include "proxy/http1.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"

#define MOAT_INTERCEPT_BUF (16u << 10) /* response relay buffer */

struct moat_intercept_report {
	const char *host; /* the destination (normalised) */
	const char *method; /* "" when the head did not parse */
	const char *target; /* request-target as sent, truncated to 512 bytes */
	bool allowed; /* forwarded */
	int status; /* 0 when forwarded, else the status moat answered */
	bool alert; /* a secret was involved in a refusal */
	const char *secret; /* the secret injected or refused, or NULL */
	const char *reason; /* refusal reason, or NULL */
	const char *warning; /* e.g. a client header was replaced, or NULL */
};

struct moat_intercept_config {
	struct moat_tls_ca *ca;
	SSL_CTX *upstream_ctx; /* from moat_tls_client_ctx() */
	const struct moat_secrets *secrets; /* may be NULL */
	const struct moat_http_rule *rules; /* policy http_rules, may be NULL */
	unsigned n_rules;
	struct moat_http1_limits limits; /* request heads; zero = the parser's defaults */
	/* The port dialled: a Host (or absolute-form authority) naming a port
	 * must name this one. 0 means 443. */
	uint16_t port;
	void (*report)(void *userdata, const struct moat_intercept_report *r);
	void *userdata;
};

struct moat_intercept;

/* host: the name the proxy decided on and dialed (it is what the leaf
 * names, what the upstream certificate is verified against and what every
 * Host header must name). cfg is copied; what it points to must outlive x. */
int moat_intercept_new(const struct moat_intercept_config *cfg, const char *host, int client_fd,
		       int upstream_fd, struct moat_intercept **ret);
/* The same when the client's first bytes (its ClientHello, read to check
 * the SNI) were already taken off client_fd: they are replayed first. */
int moat_intercept_new_prefixed(const struct moat_intercept_config *cfg, const char *host,
				int client_fd, const void *prefix, size_t prefix_len,
				int upstream_fd, struct moat_intercept **ret);
struct moat_intercept *moat_intercept_free(struct moat_intercept *x);

/* Make all progress possible now. 0: wait for *ret_client_events /
 * *ret_upstream_events; 1: finished; < 0: failed (-EPROTO TLS, -EBADMSG bad
 * request framing, -ECONNRESET...). A short description of a failure is
 * available from moat_intercept_error(). */
int moat_intercept_step(struct moat_intercept *x, uint32_t *ret_client_events,
			uint32_t *ret_upstream_events);
const char *moat_intercept_error(const struct moat_intercept *x);

/* ---- the request side, pure ---------------------------------------------------- */

enum moat_intercept_piece_kind {
	MOAT_INTERCEPT_MORE = 0, /* nothing can be decided yet: read more */
	MOAT_INTERCEPT_HEAD, /* a request head: forward data[0..len) */
	MOAT_INTERCEPT_BODY, /* body bytes: forward in[0..consumed) unchanged */
	MOAT_INTERCEPT_REFUSE, /* answer status/reason, forward nothing more */
};

struct moat_intercept_piece {
	enum moat_intercept_piece_kind kind;
	size_t consumed; /* HEAD, BODY: bytes of in this piece covers */
	char *data; /* HEAD: the head to send (may hold real values) */
	size_t len;
	int status; /* REFUSE: 400, 403, 413, 431, 501, 505 */
	char reason[400]; /* REFUSE: the reason (event, X-Moat-Denied, body) */
	char what[160]; /* REFUSE: "METHOD target" of the refused request, or "" */
	bool alert; /* REFUSE: a secret was involved */
	/* HEAD: the framing the parser found (for tests and the fuzz target) */
	int64_t content_length;
	bool chunked;
};

struct moat_intercept_requests {
	const struct moat_intercept_config *cfg; /* private */
	char host[MOAT_TLS_MAX_NAME + 1]; /* private */
	struct moat_http1_body body; /* the body being framed */
	size_t body_seen; /* private: body bytes the tripwire has scanned */
	size_t scanned; /* private: head bytes known to hold no '\n' */
	size_t max_head; /* the effective head limit */
	bool refused; /* a REFUSE was returned: nothing more is decided */
};

/* host is normalised like moat_intercept_new()'s; cfg must outlive q.
 * Returns 0 or -EINVAL. */
int moat_intercept_requests_init(struct moat_intercept_requests *q,
				 const struct moat_intercept_config *cfg, const char *host);
/*
 * Decide the next piece of the client bytes in[0..len) (what earlier pieces
 * consumed is no longer in it). A head needs at most max_head bytes plus the
 * body window after it in @in to be decided. Returns 0 with *ret filled
 * (release with moat_intercept_piece_clear()), or -ENOMEM. Every HEAD and
 * REFUSE is reported through cfg->report.
 */
int moat_intercept_requests_next(struct moat_intercept_requests *q, const char *in, size_t len,
				 struct moat_intercept_piece *ret);
void moat_intercept_piece_clear(struct moat_intercept_piece *p);
