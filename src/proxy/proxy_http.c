/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The HTTP proxy port's state machine: the first request head, then every
 * later request on the connection (host binding, credential checks, origin-form). */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/secrets.h"
#include "shared/macro.h"

/* Append the request head in origin-form (moat_http1_write_origin_head: the
 * proxy headers go, Host stays - the parser checked it equals the target - or
 * is added) and start framing its body. */
static int http_rewrite(struct conn *c, const struct moat_http1_request *r, size_t head_len)
{
	size_t cap = MOAT_HTTP1_ORIGIN_HEAD_MAX(r, head_len);
	_cleanup_free_ char *head = malloc(cap);
	int n;

	if (!head)
		return -ENOMEM;
	n = moat_http1_write_origin_head(r, head, cap);
	if (n < 0 || moat_proxy_buf_add(&c->up, head, (size_t)n) < 0)
		return -ENOMEM;
	moat_http1_body_start(&c->body, r, 0);
	/* The window right after the head was scanned with it. */
	c->body_seen =
		c->body.active ? MIN(c->in_len - head_len, (size_t)MOAT_SECRETS_BODY_WINDOW) : 0;
	return 0;
}

/* The placeholder tripwire on body bytes that come after the head (as the
 * interceptor does): the verdict must not depend on how the client splits its
 * writes. @before: body.length before these @k bytes at the start of c->in
 * were framed. NULL, or the refusal reason (in buf). */
static const char *http_body_check(struct conn *c, uint64_t before, size_t k, char *buf, size_t len)
{
	const struct moat_secrets *s = c->p->cfg->secrets;
	size_t off, w;
	int i;

	if (!s || c->body_seen >= MOAT_SECRETS_BODY_WINDOW)
		return NULL;
	off = c->body_seen > before ? (size_t)(c->body_seen - before) : 0;
	if (off >= k)
		return NULL;
	w = MIN(k - off, (size_t)(MOAT_SECRETS_BODY_WINDOW - c->body_seen));
	i = moat_secrets_scan(s, c->in + off, w);
	c->body_seen += w;
	if (i == -ENOENT)
		return NULL;
	if (i < 0)
		snprintf(buf, len, "request not understood by the credential check");
	else
		snprintf(buf, len,
			 "alert: secret %s: placeholder in the request body (destination %s)",
			 moat_secrets_name(s, (unsigned)i), c->name);
	return buf;
}

/* Credential proxy on plain HTTP: a placeholder never travels in clear (the
 * rewrite refuses any when tls is false), and the http_rules apply. NULL if
 * the request may go, else the refusal reason (in buf). */
static const char *http_cred_check(struct conn *c, const struct moat_http1_request *r,
				   size_t head_len, char *buf, size_t len)
{
	const struct moat_proxy_config *cfg = c->p->cfg;
	char method[24];
	int ok;

	if (cfg->secrets && moat_secrets_count(cfg->secrets) > 0) {
		struct moat_secrets_result res;
		struct moat_secrets_request rq = {
			.host = c->name,
			.tls = false,
			.http = r,
			.body = c->in + head_len,
			.body_len = MIN(c->in_len - head_len, (size_t)MOAT_SECRETS_BODY_WINDOW),
		};
		int rr = moat_secrets_rewrite(cfg->secrets, &rq, &res);
		if (rr < 0 || res.verdict == MOAT_SECRETS_REFUSED) {
			snprintf(buf, len, "%s%s", res.secret >= 0 ? "alert: " : "",
				 rr < 0 ? "request not understood by the credential check"
					: res.reason);
			moat_secrets_result_clear(&res);
			return buf;
		}
		moat_secrets_result_clear(&res);
	}
	if (cfg->n_http_rules == 0)
		return NULL;
	moat_http1_slice_copy(r->method, method, sizeof(method));
	ok = moat_secrets_http_allowed_request(cfg->http_rules, cfg->n_http_rules, c->name, r);
	if (ok == 1)
		return NULL;
	snprintf(buf, len, "method %s or path not allowed by the http rules", method);
	return buf;
}

/* A later request on a kept-alive connection cannot be served: stop reading,
 * let the upstream finish the previous response, then send this reply. */
static void http_stop(struct conn *c, int status, const char *reason, const char *rule)
{
	char what[400], buf[2048];
	int n;

	snprintf(what, sizeof(what), "%s (connection is bound to %s:%u)", c->method, c->name,
		 c->port);
	n = moat_http1_build_error(buf, sizeof(buf), status, reason, what, rule);
	c->final = n > 0 ? malloc((size_t)n) : NULL;
	if (c->final) {
		memcpy(c->final, buf, (size_t)n);
		c->final_len = (size_t)n;
	}
	c->http_stop = true;
	c->in_len = 0;
	/* moat_proxy_relay_pump() shuts the upstream's write side once the requests
	 * before this one are out. */
}

/* Feed client bytes of an established HTTP connection to the upstream. */
void moat_proxy_http_process(struct conn *c)
{
	struct proxy *p = c->p;

	while (c->in_len > 0 && !c->http_stop) {
		struct moat_http1_request r;
		int n;

		if (c->body.active) {
			/* Frame the body so the next request is found; the
			 * bytes go on unchanged. */
			uint64_t before = c->body.length;
			int k = moat_http1_body_feed(&c->body, c->in, c->in_len);
			char why_buf[400];
			const char *why;
			if (k < 0) {
				moat_proxy_req_event(c, false, moat_http1_strerror(k));
				http_stop(c, moat_http1_err_status(k), moat_http1_strerror(k),
					  NULL);
				return;
			}
			why = http_body_check(c, before, (size_t)k, why_buf, sizeof(why_buf));
			if (why) {
				moat_proxy_req_event(c, false, why);
				http_stop(c, 403, why, NULL);
				return;
			}
			if (moat_proxy_buf_add(&c->up, c->in, (size_t)k) < 0) {
				moat_proxy_conn_close(c);
				return;
			}
			moat_proxy_consume(c, (size_t)k);
			continue;
		}
		n = moat_http1_parse_request(c->in, c->in_len, &p->hlim, &r);
		if (n == 0)
			return;
		moat_http1_slice_copy(r.method, c->method, sizeof(c->method));
		if (n < 0) {
			moat_proxy_req_event(c, false, moat_http1_strerror(n));
			http_stop(c, moat_http1_err_status(n), moat_http1_strerror(n), NULL);
			return;
		}
		/* On the proxy port: absolute-form for this connection's
		 * authority. In a tunnel (CONNECT, SOCKS, transparent): origin-form
		 * whose Host names the tunnel's host (and port, if it has one). */
		bool other = c->tunnel_http
			? r.form != MOAT_HTTP1_FORM_ORIGIN || !r.has_host ||
				r.host_kind != MOAT_HOST_NAME ||
				(r.port_explicit && r.port != c->port)
			: r.form != MOAT_HTTP1_FORM_ABSOLUTE || r.port != c->port;
		if (r.is_connect || other || !streq(r.host, c->name)) {
			char rule[MOAT_PROXY_RULE_MAX];
			snprintf(rule, sizeof(rule), "a new connection for %s:%u", r.host, r.port);
			moat_proxy_req_event(c, false, "host-switch");
			http_stop(c, 403, "host-switch", rule);
			return;
		}
		char why_buf[400];
		const char *why = http_cred_check(c, &r, (size_t)n, why_buf, sizeof(why_buf));
		if (why) {
			moat_proxy_req_event(c, false, why);
			http_stop(c, 403, why, NULL);
			return;
		}
		moat_proxy_req_event(c, true, c->tunnel_http ? "http-in-tunnel" : "keep-alive");
		if (http_rewrite(c, &r, (size_t)n) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		moat_proxy_consume(c, (size_t)n);
	}
}

/* The first request on the HTTP proxy port. */
void moat_proxy_http_head(struct conn *c)
{
	struct proxy *p = c->p;
	struct moat_http1_request r;
	int n = moat_http1_parse_request(c->in, c->in_len, &p->hlim, &r);

	if (n == 0) {
		if (c->client_eof)
			moat_proxy_conn_close(c);
		return;
	}
	if (n < 0) {
		int st = moat_http1_err_status(n);
		snprintf(c->raw, sizeof(c->raw), "(unparsable request)");
		moat_proxy_refuse(c, st, moat_http1_strerror(n), NULL);
		return;
	}
	moat_http1_slice_copy(r.method, c->method, sizeof(c->method));
	moat_http1_slice_copy(r.authority, c->raw, sizeof(c->raw));
	snprintf(c->name, sizeof(c->name), "%s", r.host);
	c->hkind = r.host_kind;
	c->port = r.port;
	c->proto = r.is_connect ? "connect" : "http";
	if (!r.is_connect && r.form != MOAT_HTTP1_FORM_ABSOLUTE) {
		moat_proxy_refuse(c, 400, "not-a-proxy-request", NULL);
		return;
	}
	moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
	if (!c->d.allow) {
		moat_proxy_refuse(c, 403, c->d.reason, c->d.rule);
		return;
	}
	c->by_name = r.is_connect && c->hkind == MOAT_HOST_NAME;
	if (!r.is_connect) {
		char why_buf[400];
		const char *why = http_cred_check(c, &r, (size_t)n, why_buf, sizeof(why_buf));
		if (why) {
			moat_proxy_refuse(c, 403, why, NULL);
			return;
		}
		c->http = true;
		if (http_rewrite(c, &r, (size_t)n) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
	}
	moat_proxy_consume(c, (size_t)n);
	moat_proxy_go(c);
}
