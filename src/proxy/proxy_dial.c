/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* From an allowed decision to a connected upstream: resolving, the first-bytes
 * check of a name, dialling only vetted addresses, and INSPECT on address rules. */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/resolver.h"
#include "proxy/socks5.h"
#include "shared/macro.h"

/* ---- dialing ----------------------------------------------------------- */

void moat_proxy_connected(struct conn *c)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int one = 1;

	(void)setsockopt(c->ufd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	moat_addr_format((struct sockaddr *)&c->d.addrs[c->addr_i], false, c->dialed,
			 sizeof(c->dialed));
	if (c->first) {
		/* By name: the first bytes were checked before dialling. */
		if (c->first == MOAT_PROXY_FIRST_INTERCEPT) {
			moat_proxy_enter_tls(c);
			return;
		}
		if (c->first == MOAT_PROXY_FIRST_HTTP) {
			c->http = true;
			c->tunnel_http = true;
		}
		moat_proxy_enter_relay(c);
		return;
	}
	switch (c->kind) {
	case K_HTTP:
		if (!c->http) {
			if (moat_proxy_buf_add(&c->down, MOAT_HTTP1_CONNECT_OK,
					       strlen(MOAT_HTTP1_CONNECT_OK)) < 0) {
				moat_proxy_conn_close(c);
				return;
			}
			c->state = S_INSPECT;
			moat_proxy_set_deadline(c, c->p->head_ms);
			break;
		}
		moat_proxy_enter_relay(c);
		return;
	case K_SOCKS: {
		uint8_t rep[MOAT_SOCKS5_REPLY_MAX];
		int n;
		if (getsockname(c->ufd, (struct sockaddr *)&ss, &len) < 0)
			memset(&ss, 0, sizeof(ss));
		n = moat_socks5_build_reply(rep, sizeof(rep), MOAT_SOCKS5_REP_SUCCEEDED,
					    (struct sockaddr *)&ss);
		if (n < 0 || moat_proxy_buf_add(&c->down, rep, (size_t)n) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		c->state = S_INSPECT;
		moat_proxy_set_deadline(c, c->p->head_ms);
		break;
	}
	default:
		c->state = S_INSPECT;
		moat_proxy_set_deadline(c, c->p->head_ms);
		break;
	}
	moat_proxy_conn_update(c);
	/* Bytes the client sent early (with the request) are inspected now. */
	if (c->in_len > 0)
		moat_proxy_inspect_step(c);
}

/* Try the vetted addresses in order; only ever an address in c->d.addrs. */
void moat_proxy_dial(struct conn *c)
{
	struct proxy *p = c->p;

	c->state = S_CONNECT;
	if (c->deadline_ms == 0 || c->d.n_addrs == 0 || c->addr_i == 0)
		moat_proxy_set_deadline(c, p->connect_ms);
	for (; c->addr_i < c->d.n_addrs; c->addr_i++) {
		const struct sockaddr_storage *a = &c->d.addrs[c->addr_i];
		socklen_t len = a->ss_family == AF_INET ? sizeof(struct sockaddr_in)
							: sizeof(struct sockaddr_in6);
		int fd = socket(a->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		if (connect(fd, (const struct sockaddr *)a, len) < 0 && errno != EINPROGRESS) {
			close(fd);
			continue;
		}
		if (moat_loop_add(p->loop, fd, EPOLLOUT, moat_proxy_on_upstream, c) < 0) {
			close(fd);
			continue;
		}
		c->ufd = fd;
		moat_proxy_conn_update(c);
		return;
	}
	moat_proxy_fail(c, 502, "connect-failed");
}

/* The first bytes of a connection allowed by name, before anything is
 * dialled: refuse, or dial and then relay/intercept as moat_proxy_check_first
 * said. */
void moat_proxy_first_step(struct conn *c)
{
	struct proxy *p = c->p;
	struct moat_proxy_first_info fi;
	bool final = c->client_eof || c->in_len >= p->in_cap;
	int r = moat_proxy_check_first(p->cfg, c->name, c->port, c->in, c->in_len, final, &fi);

	if (fi.sni[0])
		snprintf(c->sni, sizeof(c->sni), "%s", fi.sni);
	if (r == MOAT_PROXY_FIRST_MORE) {
		moat_proxy_conn_update(c);
		return;
	}
	if (r == MOAT_PROXY_FIRST_DENY) {
		moat_proxy_refuse(c, 403, fi.reason, NULL);
		return;
	}
	c->first = r;
	c->addr_i = 0;
	c->deadline_ms = 0;
	moat_proxy_dial(c);
}

/* The decision (and the addresses) are final: a connection allowed by name
 * first tells the client to go ahead and reads what it sends; everything
 * else dials now. */
static void ready(struct conn *c)
{
	struct proxy *p = c->p;

	if (!c->by_name || c->first) {
		c->addr_i = 0;
		c->deadline_ms = 0;
		moat_proxy_dial(c);
		return;
	}
	if (c->kind == K_HTTP) {
		if (moat_proxy_buf_add(&c->down, MOAT_HTTP1_CONNECT_OK,
				       strlen(MOAT_HTTP1_CONNECT_OK)) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		c->replied = true;
	} else if (c->kind == K_SOCKS) {
		/* Not connected yet: BND.ADDR is 0.0.0.0:0 (RFC 1928 allows it). */
		uint8_t rep[MOAT_SOCKS5_REPLY_MAX];
		int n = moat_socks5_build_reply(rep, sizeof(rep), MOAT_SOCKS5_REP_SUCCEEDED, NULL);
		if (n < 0 || moat_proxy_buf_add(&c->down, rep, (size_t)n) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		c->replied = true;
	}
	c->state = S_FIRST;
	moat_proxy_set_deadline(c, p->head_ms);
	if (c->in_len > 0) {
		/* Bytes the client sent together with its request. */
		unsigned slot = c->slot;
		uint16_t gen = c->gen;
		moat_proxy_first_step(c);
		if (!moat_proxy_alive(p, slot, gen) || c->state != S_FIRST)
			return;
	}
	moat_proxy_conn_update(c);
}

/* An allowed decision: dial the pinned addresses or resolve the name first. */
void moat_proxy_go(struct conn *c)
{
	struct proxy *p = c->p;
	uint32_t id = ((uint32_t)c->gen << 16) | c->slot;

	if (c->d.n_addrs > 0) {
		ready(c);
		return;
	}
	if (p->res_fd < 0 || moat_resolver_send(p->res_fd, id, c->name) < 0) {
		moat_proxy_fail(c, 502, "resolve-failed");
		return;
	}
	c->state = S_RESOLVE;
	moat_proxy_set_deadline(c, p->connect_ms);
	moat_proxy_conn_update(c);
}

static void on_resolved(struct conn *c, const struct moat_resolver_reply *rep)
{
	if (rep->err != 0) {
		moat_proxy_fail(c, 502, "resolve-failed");
		return;
	}
	moat_proxy_check_addrs(c->p->cfg, c->name, c->port, rep->addrs, rep->n, &c->d);
	if (!c->d.allow) {
		/* the event's addr is the answer looked at (event.h) */
		snprintf(c->dialed, sizeof(c->dialed), "%s", c->d.refused_addr);
		moat_proxy_refuse(c, 403, c->d.reason, c->d.rule);
		return;
	}
	if (c->have_odst && c->kind == K_TRANS && !c->d.n_addrs) {
		moat_proxy_fail(c, 502, "resolve-failed");
		return;
	}
	if (c->have_odst && c->kind == K_TRANS && c->peeked) {
		/* A hard-coded address: it must be one the name resolves to. */
		if (!moat_proxy_decision_has_addr(&c->d, (struct sockaddr *)&c->odst)) {
			moat_proxy_refuse(c, 403, "original-destination-mismatch", NULL);
			return;
		}
		moat_addr_unmap((struct sockaddr *)&c->odst, &c->d.addrs[0]);
		c->d.n_addrs = 1;
	}
	ready(c);
}

void moat_proxy_on_resolver(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct proxy *p = data;
	struct moat_resolver_reply rep;
	int r;

	while ((r = moat_resolver_recv(fd, &rep)) > 0) {
		unsigned slot = rep.id & 0xffff;
		struct conn *c = slot < p->max_conns ? p->conns[slot] : NULL;
		if (!c || c->gen != (rep.id >> 16) || c->state != S_RESOLVE)
			continue;
		on_resolved(c, &rep);
	}
	if (r < 0) {
		/* The helper died: nothing resolves any more (fail closed). */
		moat_loop_del(l, fd);
		p->res_fd = safe_close(p->res_fd);
	}
}

/* After connecting on an ADDRESS rule (CONNECT/SOCKS to an IP, a transparent
 * connection a CIDR rule allows): raw bytes and TLS without SNI may go, but a
 * ClientHello that names a host is held to that name's rules: a denied host
 * or an intercepted one (reaching it by address would skip interception) is
 * refused. */
void moat_proxy_inspect_step(struct conn *c)
{
	struct moat_sni_info si;
	int s;

	if (c->in_len == 0) {
		if (c->client_eof)
			moat_proxy_enter_relay(c);
		return;
	}
	s = moat_sni_parse((const uint8_t *)c->in, c->in_len, &si);
	switch (s) {
	case MOAT_SNI_NEED_MORE:
		if (c->client_eof || c->in_len >= INSPECT_MAX)
			moat_proxy_refuse(c, 403, "tls-malformed", NULL);
		return;
	case MOAT_SNI_FOUND: {
		struct moat_proxy_decision nd;
		snprintf(c->sni, sizeof(c->sni), "%s", si.host);
		if (c->hkind == MOAT_HOST_NAME && !streq(si.host, c->name)) {
			moat_proxy_refuse(c, 403, "sni-mismatch", NULL);
			return;
		}
		if (moat_proxy_intercepts(c->p->cfg, si.host)) {
			moat_proxy_refuse(c, 403, "sni-intercepted-host", NULL);
			return;
		}
		moat_proxy_decide(c->p->cfg, MOAT_HOST_NAME, si.host, c->port, &nd);
		if (!nd.allow && streq(nd.reason, "deny-host")) {
			moat_proxy_refuse(c, 403, "deny-host", NULL);
			return;
		}
		break;
	}
	case MOAT_SNI_NOT_TLS:
		if (c->port == 443) {
			moat_proxy_refuse(c, 403, "not-tls", NULL);
			return;
		}
		break;
	case MOAT_SNI_NO_SNI:
		break;
	default:
		moat_proxy_refuse(c, 403, "tls-malformed", NULL);
		return;
	}
	moat_proxy_enter_relay(c);
}
