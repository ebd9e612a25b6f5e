/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy worker's connection core: events, the two halves of a connection
 * (buffer, then splice), interest masks, and closing or refusing one. */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/event.h"
#include "proxy/intercept.h"
#include "proxy/socks5.h"
#include "shared/macro.h"

#define LINGER_MS 2000
#define PIPE_SIZE (256 * 1024)
#define PUMP_ROUNDS 16

/* ---- events ------------------------------------------------------------- */

void moat_proxy_conn_event(struct conn *c, bool allow, const char *reason, const char *rule)
{
	struct moat_proxy_event e = {
		.proto = c->proto,
		.name = c->hkind == MOAT_HOST_NAME ? c->name : "",
		.raw = c->raw,
		.addr = c->dialed[0] ? c->dialed : (c->hkind != MOAT_HOST_NAME ? c->name : ""),
		.port = c->port,
		.method = c->method,
		.sni = c->sni,
		.allow = allow,
		.reason = reason,
		.rule = rule,
		.bytes_up = c->up.bytes,
		.bytes_down = c->down.bytes,
		.duration_ms = c->p->now - c->start_ms,
	};
	(void)moat_proxy_event_write(c->p->event_fd, &e);
	c->logged = true;
}

/* A later request on a kept-alive HTTP connection: its own event; the
 * connection's event (with the bytes) still comes at close. */
void moat_proxy_req_event(struct conn *c, bool allow, const char *reason)
{
	bool logged = c->logged;
	uint64_t up = c->up.bytes, down = c->down.bytes;

	c->up.bytes = c->down.bytes = 0;
	moat_proxy_conn_event(c, allow, reason, allow ? c->d.rule : NULL);
	c->up.bytes = up;
	c->down.bytes = down;
	c->logged = logged;
}

/* Is the connection at @slot still the one with @gen? Handlers call this
 * after a step that may have closed (and freed) it. */
bool moat_proxy_alive(struct proxy *p, unsigned slot, uint16_t gen)
{
	return p->conns[slot] && p->conns[slot]->gen == gen;
}

/* ---- buffers and halves ---------------------------------------------------- */

int moat_proxy_buf_add(struct half *h, const void *data, size_t n)
{
	if (h->off == h->len)
		h->off = h->len = 0;
	if (h->len + n > h->cap) {
		size_t cap = MAX(h->len + n, h->cap * 2);
		char *b = realloc(h->buf, cap);
		if (!b)
			return -ENOMEM;
		h->buf = b;
		h->cap = cap;
	}
	memcpy(h->buf + h->len, data, n);
	h->len += n;
	return 0;
}

static bool half_pending(const struct half *h)
{
	return h->off < h->len || h->in_pipe > 0;
}

int moat_proxy_half_open_pipe(struct half *h)
{
	if (h->pipe[0] >= 0)
		return 0;
	if (pipe2(h->pipe, O_NONBLOCK | O_CLOEXEC) < 0)
		return negerrno();
	/* A larger pipe moves more per splice; the kernel may refuse (per-user
	 * pipe quota), then the default 64 KiB does. */
	(void)fcntl(h->pipe[1], F_SETPIPE_SZ, PIPE_SIZE);
	return 0;
}

/* Move what can be moved without blocking. Returns >0 if bytes moved, 0 if
 * none, -errno on a socket error. */
int moat_proxy_half_pump(struct half *h)
{
	bool moved = false;

	while (h->off < h->len) {
		ssize_t n = send(h->dst, h->buf + h->off, h->len - h->off, MSG_NOSIGNAL);
		if (n < 0)
			return errno == EAGAIN ? 0 : negerrno();
		h->off += (size_t)n;
		h->bytes += (uint64_t)n;
		moved = true;
	}
	if (!h->splice)
		return moved;
	for (int round = 0; round < PUMP_ROUNDS; round++) {
		ssize_t n;
		if (h->in_pipe > 0) {
			n = splice(h->pipe[0], NULL, h->dst, NULL, h->in_pipe,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n < 0)
				return errno == EAGAIN ? moved : negerrno();
			h->in_pipe -= (size_t)n;
			h->bytes += (uint64_t)n;
			moved = true;
			continue;
		}
		if (h->src_eof) {
			if (!h->dst_shut && !h->no_shut)
				(void)shutdown(h->dst, SHUT_WR);
			h->dst_shut = true;
			return moved;
		}
		n = splice(h->src, NULL, h->pipe[1], NULL, PIPE_SIZE,
			   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
		if (n == 0) {
			h->src_eof = true;
			continue;
		}
		if (n < 0)
			return errno == EAGAIN ? moved : negerrno();
		h->in_pipe += (size_t)n;
		moved = true;
	}
	return moved;
}

static void half_free(struct half *h)
{
	h->pipe[0] = safe_close(h->pipe[0]);
	h->pipe[1] = safe_close(h->pipe[1]);
	free(h->buf);
	h->buf = NULL;
}

/* ---- connections ---------------------------------------------------------- */

void moat_proxy_set_deadline(struct conn *c, unsigned ms)
{
	c->deadline_ms = c->p->now + ms;
}

static void reset_close(struct conn *c)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	(void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	moat_proxy_conn_close(c);
}

void moat_proxy_conn_close(struct conn *c)
{
	struct proxy *p = c->p;

	if (!c->logged)
		moat_proxy_conn_event(c, true, c->d.reason, c->d.rule);
	moat_loop_del(p->loop, c->cfd);
	safe_close(c->cfd);
	if (c->ufd >= 0) {
		moat_loop_del(p->loop, c->ufd);
		safe_close(c->ufd);
	}
	half_free(&c->up);
	half_free(&c->down);
	moat_intercept_free(c->icpt);
	free(c->in);
	free(c->final);
	p->conns[c->slot] = NULL;
	p->n_conns--;
	free(c);
}

/* Write the final reply; once it is out, half-close and drain until EOF so the
 * client reads the reply instead of a reset. */
void moat_proxy_flush_close_step(struct conn *c)
{
	if (moat_proxy_half_pump(&c->down) < 0) {
		moat_proxy_conn_close(c);
		return;
	}
	if (!half_pending(&c->down)) {
		(void)shutdown(c->cfd, SHUT_WR);
		c->state = S_LINGER;
	}
	moat_proxy_conn_update(c);
}

/* Refuse with a final reply (HTTP error, SOCKS reply), then drain and close. */
void moat_proxy_finish_with(struct conn *c, const void *reply, size_t n)
{
	if (c->ufd >= 0) {
		moat_loop_del(c->p->loop, c->ufd);
		c->ufd = safe_close(c->ufd);
	}
	c->up.splice = c->down.splice = false;
	c->down.dst = c->cfd;
	if (n > 0 && moat_proxy_buf_add(&c->down, reply, n) < 0) {
		moat_proxy_conn_close(c);
		return;
	}
	c->state = S_FLUSH_CLOSE;
	moat_proxy_set_deadline(c, LINGER_MS);
	moat_proxy_flush_close_step(c);
}

static void http_refuse(struct conn *c, int status, const char *reason, const char *rule)
{
	char what[400], buf[2048];
	int n;

	if (c->method[0] && !streq(c->method, "CONNECT"))
		snprintf(what, sizeof(what), "%s http://%s", c->method, c->raw);
	else
		snprintf(what, sizeof(what), "%s %s", c->method[0] ? c->method : "request", c->raw);
	n = moat_http1_build_error(buf, sizeof(buf), status, reason, what, rule);
	moat_proxy_finish_with(c, buf, n > 0 ? (size_t)n : 0);
}

static void socks_refuse(struct conn *c, uint8_t rep)
{
	uint8_t buf[MOAT_SOCKS5_REPLY_MAX];
	int n = moat_socks5_build_reply(buf, sizeof(buf), rep, NULL);
	moat_proxy_finish_with(c, buf, n > 0 ? (size_t)n : 0);
}

/* A policy refusal: one deny event, then the protocol's way of saying no. */
void moat_proxy_refuse(struct conn *c, int status, const char *reason, const char *rule)
{
	moat_proxy_conn_event(c, false, reason, rule);
	switch (c->kind) {
	case K_HTTP:
		if (c->replied || c->state == S_INSPECT || c->state == S_RELAY)
			moat_proxy_conn_close(c); /* the 200 already went out */
		else
			http_refuse(c, status, reason, rule);
		break;
	case K_SOCKS:
		if (c->replied || c->state == S_INSPECT || c->state == S_RELAY)
			moat_proxy_conn_close(c);
		else
			socks_refuse(c,
				     status == 403 ? MOAT_SOCKS5_REP_NOT_ALLOWED
						   : MOAT_SOCKS5_REP_GENERAL_FAILURE);
		break;
	default:
		reset_close(c);
		break;
	}
}

/* The destination was allowed but could not be reached. */
void moat_proxy_fail(struct conn *c, int status, const char *reason)
{
	moat_proxy_conn_event(c, true, reason, c->d.rule);
	if (c->replied) {
		moat_proxy_conn_close(c); /* the tunnel was promised: it just ends */
		return;
	}
	switch (c->kind) {
	case K_HTTP:
		http_refuse(c, status, reason, NULL);
		break;
	case K_SOCKS:
		socks_refuse(c,
			     status == 504 ? MOAT_SOCKS5_REP_TTL_EXPIRED
					   : MOAT_SOCKS5_REP_CONN_REFUSED);
		break;
	default:
		reset_close(c);
		break;
	}
}

void moat_proxy_conn_update(struct conn *c)
{
	struct proxy *p = c->p;
	uint32_t ce = 0, ue = 0;
	bool room = c->in_len < p->in_cap;

	switch (c->state) {
	case S_HEAD:
	case S_SOCKS_GREET:
	case S_SOCKS_REQ:
	case S_PEEK:
	case S_FIRST:
	case S_DNS:
		ce = room ? EPOLLIN : 0;
		break;
	case S_INSPECT:
		ce = room ? EPOLLIN : 0;
		ue = EPOLLIN;
		break;
	case S_CONNECT:
		ue = EPOLLOUT;
		break;
	case S_RELAY:
		if (c->http) {
			if (!c->client_eof && !c->http_stop && c->up.off == c->up.len && room)
				ce |= EPOLLIN;
		} else if (!c->up.src_eof && c->up.in_pipe == 0) {
			ce |= EPOLLIN;
		}
		if (!c->down.src_eof && c->down.in_pipe == 0)
			ue |= EPOLLIN;
		if (half_pending(&c->up))
			ue |= EPOLLOUT;
		break;
	case S_LINGER:
		ce = EPOLLIN;
		break;
	case S_RESOLVE:
	case S_FLUSH_CLOSE:
		break;
	case S_TLS:
		return; /* moat_proxy_tls_step() sets the masks */
	}
	if (half_pending(&c->down))
		ce |= EPOLLOUT;
	(void)moat_loop_mod(p->loop, c->cfd, ce);
	if (c->ufd >= 0)
		(void)moat_loop_mod(p->loop, c->ufd, ue);
}

/* Read client bytes into c->in. Returns bytes read, 0 at EOF, -EAGAIN, -errno. */
ssize_t moat_proxy_client_read(struct conn *c)
{
	struct proxy *p = c->p;
	ssize_t n;

	if (!c->in) {
		c->in = malloc(p->in_cap);
		if (!c->in)
			return -ENOMEM;
	}
	if (c->in_len >= p->in_cap)
		return -ENOBUFS;
	n = recv(c->cfd, c->in + c->in_len, p->in_cap - c->in_len, 0);
	if (n < 0)
		return negerrno();
	if (n == 0)
		c->client_eof = true;
	c->in_len += (size_t)n;
	return n;
}

void moat_proxy_consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
}
