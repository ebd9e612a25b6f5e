/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy worker's event handlers: accepting on the listeners, dispatching
 * client and upstream events to the state machines, and the timeout tick. */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/event.h"
#include "shared/macro.h"

static void on_client(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct conn *c = data;
	ssize_t n;

	switch (c->state) {
	case S_TLS:
		moat_proxy_tls_step(c);
		return;
	case S_RELAY:
		if (c->http && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
		    c->up.off == c->up.len && !c->client_eof && !c->http_stop) {
			n = moat_proxy_client_read(c);
			if (n < 0 && n != -EAGAIN) {
				moat_proxy_conn_close(c);
				return;
			}
			struct proxy *p = c->p;
			unsigned slot = c->slot;
			uint16_t gen = c->gen;
			moat_proxy_http_process(c);
			if (!moat_proxy_alive(p, slot, gen))
				return;
		}
		moat_proxy_relay_pump(c);
		return;
	case S_FLUSH_CLOSE:
		moat_proxy_flush_close_step(c);
		return;
	case S_LINGER: {
		char junk[4096];
		n = recv(c->cfd, junk, sizeof(junk), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			moat_proxy_conn_close(c);
		return;
	}
	case S_RESOLVE:
	case S_CONNECT:
		if (events & (EPOLLHUP | EPOLLERR))
			moat_proxy_conn_close(c);
		return;
	default:
		break;
	}

	/* Flush small replies (SOCKS method choice, CONNECT 200) first. */
	if (events & EPOLLOUT) {
		if (moat_proxy_half_pump(&c->down) < 0) {
			moat_proxy_conn_close(c);
			return;
		}
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		moat_proxy_conn_update(c);
		return;
	}
	n = moat_proxy_client_read(c);
	if (n < 0 && n != -EAGAIN) {
		moat_proxy_conn_close(c);
		return;
	}
	switch (c->state) {
	case S_HEAD:
		moat_proxy_http_head(c);
		break;
	case S_SOCKS_GREET:
	case S_SOCKS_REQ:
		moat_proxy_socks_step(c);
		break;
	case S_PEEK:
		moat_proxy_peek_step(c);
		break;
	case S_FIRST:
		moat_proxy_first_step(c);
		break;
	case S_INSPECT: {
		struct proxy *p = c->p;
		unsigned slot = c->slot;
		uint16_t gen = c->gen;
		moat_proxy_inspect_step(c);
		if (moat_proxy_alive(p, slot, gen) && c->state == S_INSPECT)
			moat_proxy_conn_update(c);
		break;
	}
	case S_DNS:
		moat_proxy_dns_tcp_step(c);
		break;
	default:
		break;
	}
}

void moat_proxy_on_upstream(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct conn *c = data;

	switch (c->state) {
	case S_CONNECT: {
		int err = 0;
		socklen_t len = sizeof(err);
		if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) < 0)
			err = errno;
		if (err == 0) {
			struct sockaddr_storage peer;
			socklen_t plen = sizeof(peer);
			/* A stale wakeup (the fd number was reused within one
			 * epoll batch) must not pass for a finished connect. */
			if (getpeername(fd, (struct sockaddr *)&peer, &plen) < 0 &&
			    errno == ENOTCONN)
				return;
			moat_proxy_connected(c);
			return;
		}
		moat_loop_del(l, fd);
		c->ufd = safe_close(c->ufd);
		c->addr_i++;
		moat_proxy_dial(c);
		return;
	}
	case S_INSPECT:
		/* The server speaks first: nothing to inspect. */
		moat_proxy_enter_relay(c);
		return;
	case S_RELAY:
		moat_proxy_relay_pump(c);
		return;
	case S_TLS:
		moat_proxy_tls_step(c);
		return;
	default:
		moat_proxy_conn_update(c);
		return;
	}
}

void moat_proxy_on_listen(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct proxy *p = data;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		struct conn *c;
		unsigned slot;

		if (cfd < 0)
			return;
		if (p->n_conns >= p->max_conns) {
			/* Over the cap: refuse at once rather than let it hang. */
			struct linger lg = {.l_onoff = 1, .l_linger = 0};
			struct moat_proxy_event e = {.proto = "tcp", .reason = "connection-limit"};
			(void)setsockopt(cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(cfd);
			(void)moat_proxy_event_write(p->event_fd, &e);
			continue;
		}
		for (slot = 0; slot < p->max_conns && p->conns[slot]; slot++)
			;
		c = calloc(1, sizeof(*c));
		if (!c) {
			close(cfd);
			return;
		}
		c->p = p;
		c->slot = slot;
		c->gen = ++p->gen;
		c->cfd = cfd;
		c->ufd = -1;
		c->up.pipe[0] = c->up.pipe[1] = c->down.pipe[0] = c->down.pipe[1] = -1;
		c->up.src = c->up.dst = c->down.src = -1;
		c->down.dst = cfd;
		c->start_ms = p->now;
		c->d.reason = "";
		moat_proxy_set_deadline(c, p->head_ms);
		if (fd == p->fds.http) {
			c->kind = K_HTTP;
			c->state = S_HEAD;
			c->proto = "http";
		} else if (fd == p->fds.socks) {
			c->kind = K_SOCKS;
			c->state = S_SOCKS_GREET;
			c->proto = "socks";
		} else if (fd == p->fds.dns_tcp) {
			c->kind = K_DNS;
			c->state = S_DNS;
			c->proto = "dns";
			c->logged = true; /* every query is its own event */
		} else {
			c->kind = K_TRANS;
			c->state = S_PEEK;
			c->proto = "transparent";
		}
		if (fd != p->fds.dns_tcp) {
			/* Small writes (replies, response heads) go out at once. */
			int one = 1;
			(void)setsockopt(cfd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		}
		if (moat_loop_add(l, cfd, EPOLLIN, on_client, c) < 0) {
			close(cfd);
			free(c);
			continue;
		}
		p->conns[slot] = c;
		p->n_conns++;
		if (c->kind == K_TRANS)
			moat_proxy_trans_start(c, fd == p->fds.transparent6);
	}
}

void moat_proxy_on_tick(struct moat_loop *l, uint64_t now, void *data)
{
	struct proxy *p = data;

	p->now = now;
	moat_proxy_nflog_tick(p);
	for (unsigned i = 0; i < p->max_conns; i++) {
		struct conn *c = p->conns[i];
		if (!c || !c->deadline_ms || now < c->deadline_ms)
			continue;
		switch (c->state) {
		case S_HEAD:
			moat_proxy_refuse(c, 408, "timeout", NULL);
			break;
		case S_SOCKS_GREET:
		case S_SOCKS_REQ:
		case S_PEEK:
		case S_INSPECT:
			moat_proxy_refuse(c, 408, "timeout", NULL);
			break;
		case S_FIRST:
			/* A client that waits for the server (SSH, SMTP) never
			 * proves the name: such protocols need an address rule. */
			moat_proxy_refuse(c, 408, c->in_len ? "timeout" : "no-first-bytes", NULL);
			break;
		case S_RESOLVE:
		case S_CONNECT:
			moat_proxy_fail(c, 504, "connect-timeout");
			break;
		default:
			moat_proxy_conn_close(c);
			break;
		}
	}
}
