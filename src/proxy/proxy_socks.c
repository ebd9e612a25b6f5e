/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The SOCKS5 port's state machine: greeting and CONNECT request (proxy/socks5.c
 * parses them), then the decision; dialling is proxy_dial.c's. */
#include "proxy/proxy_int.h"

#include <stdio.h>

#include "proxy/socks5.h"
#include "shared/macro.h"

void moat_proxy_socks_step(struct conn *c)
{
	struct proxy *p = c->p;
	int n;

	/* An HTTP proxy request on the SOCKS port: Chromium reads
	 * ALL_PROXY=socks5h://... (a scheme it does not know) as an HTTP proxy
	 * and sends "GET http://..." here. SOCKS starts with its version (4,
	 * 5), HTTP with a method's upper-case letter: the same connection
	 * becomes one of the HTTP port's, with its parser and the same
	 * decisions, so nothing is reachable that 3128 would not reach. */
	if (c->state == S_SOCKS_GREET && c->in_len > 0 && c->in[0] >= 'A' && c->in[0] <= 'Z') {
		c->kind = K_HTTP;
		c->state = S_HEAD;
		c->proto = "http";
		moat_proxy_http_head(c);
		return;
	}
	if (c->state == S_SOCKS_GREET) {
		n = moat_socks5_parse_greeting((const uint8_t *)c->in, c->in_len, NULL);
		if (n == 0)
			goto more;
		if (n < 0) {
			uint8_t b[8];
			moat_proxy_conn_event(c, false, moat_socks5_strerror(n), NULL);
			if (n == -MOAT_SOCKS5_E_NO_ACCEPTABLE)
				moat_proxy_finish_with(c, MOAT_SOCKS5_METHOD_REPLY_NONE, 2);
			else if (n == -MOAT_SOCKS5_E_SOCKS4)
				moat_proxy_finish_with(c, b,
						       (size_t)moat_socks5_build_socks4_reject(b));
			else
				moat_proxy_conn_close(c);
			return;
		}
		moat_proxy_consume(c, (size_t)n);
		if (moat_proxy_buf_add(&c->down, MOAT_SOCKS5_METHOD_REPLY_OK, 2) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		c->state = S_SOCKS_REQ;
	}
	if (c->state == S_SOCKS_REQ) {
		struct moat_socks5_request r;
		n = moat_socks5_parse_request((const uint8_t *)c->in, c->in_len, &r);
		if (n == 0)
			goto more;
		if (n < 0) {
			uint8_t b[MOAT_SOCKS5_REPLY_MAX];
			int k = moat_socks5_build_reply(b, sizeof(b), moat_socks5_err_reply(n),
							NULL);
			if (n == -MOAT_SOCKS5_E_COMMAND)
				snprintf(c->method, sizeof(c->method), "cmd-%u", r.cmd);
			moat_proxy_conn_event(c, false, moat_socks5_strerror(n), NULL);
			moat_proxy_finish_with(c, b, k > 0 ? (size_t)k : 0);
			return;
		}
		moat_proxy_consume(c, (size_t)n);
		snprintf(c->name, sizeof(c->name), "%s", r.host);
		snprintf(c->raw, sizeof(c->raw), "%s", r.raw_name[0] ? r.raw_name : r.host);
		c->hkind = r.host_kind;
		c->port = r.port;
		snprintf(c->method, sizeof(c->method), "CONNECT");
		moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
		if (!c->d.allow) {
			moat_proxy_refuse(c, 403, c->d.reason, c->d.rule);
			return;
		}
		c->by_name = c->hkind == MOAT_HOST_NAME;
		moat_proxy_go(c);
		return;
	}
more:
	if (c->client_eof)
		moat_proxy_conn_close(c);
	else
		moat_proxy_conn_update(c);
}
