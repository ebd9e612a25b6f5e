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
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "lib/policy.h"
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
