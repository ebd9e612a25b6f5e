/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The egress proxy worker: listeners, per-connection state machines, relaying.
 *
 * Every client connection is a `struct conn` with two halves: `up` moves
 * client bytes to the upstream, `down` moves upstream bytes to the client.
 * A half first writes its userspace buffer (a rewritten request head, bytes
 * read while deciding, a CONNECT/SOCKS reply), then, in tunnel mode, splices
 * src -> pipe -> dst without copying through user space. Epoll is
 * level-triggered; after every event the interest masks are recomputed from
 * the state (conn_update), which keeps the state machine the only source of
 * truth.
 *
 *   HTTP:   HEAD -> (decide) -> RESOLVE -> CONNECT -> RELAY (absolute-form)
 *           CONNECT by name:    -> RESOLVE -> (200) FIRST -> CONNECT -> RELAY | TLS
 *           CONNECT by address: -> CONNECT -> (200) INSPECT -> RELAY
 *   SOCKS:  SOCKS_GREET -> SOCKS_REQ -> (decide) -> the same as CONNECT
 *   transparent: synthetic address (a name) -> RESOLVE -> FIRST -> CONNECT -> RELAY | TLS
 *                CIDR rule (an address) -> CONNECT -> INSPECT -> RELAY
 *                otherwise PEEK (SNI/Host, the same check as FIRST) -> RESOLVE
 *                -> CONNECT -> RELAY | TLS
 *   refusals:  FLUSH_CLOSE (reply) -> LINGER (drain until EOF) -> closed;
 *              transparent connections are reset instead.
 * A connection allowed by NAME is dialled only after its first bytes proved
 * the name (moat_proxy_check_first: SNI equal to the name, or plain HTTP
 * whose Host is the name, which then runs through the HTTP request checks);
 * an intercepted name goes to TLS (proxy/intercept.c). A refusal therefore
 * never contacts the upstream. A connection allowed by an ADDRESS rule is
 * dialled first and INSPECT only refuses what names a host that must not be
 * reached that way (port 443 without TLS, an intercepted or denied SNI); a
 * server that speaks first (SSH, SMTP) needs such an address rule.
 */
#include "proxy/proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_log.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip6.h>
#include <netinet/tcp.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proxy/dns.h"
#include "proxy/event.h"
#include "proxy/http1.h"
#include "proxy/intercept.h"
#include "proxy/loop.h"
#include "proxy/resolver.h"
#include "proxy/sni.h"
#include "proxy/socks5.h"
#include "shared/fdset.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define TICK_MS 200
#define LINGER_MS 2000
#define PIPE_SIZE (256 * 1024)
#define PUMP_ROUNDS 16
#define INSPECT_MAX (MOAT_SNI_MAX_HELLO + 2048)
#define ACCEPT_BATCH 64
#define NFLOG_EVENTS_PER_TICK 20

enum kind {
	K_HTTP,
	K_SOCKS,
	K_TRANS,
	K_DNS
};

enum state {
	S_HEAD,
	S_SOCKS_GREET,
	S_SOCKS_REQ,
	S_PEEK,
	S_RESOLVE,
	S_CONNECT,
	S_FIRST, /* by name, replied, not dialled: waiting for the first bytes */
	S_INSPECT,
	S_RELAY,
	S_TLS, /* TLS-intercepted (credential proxy): proxy/intercept.c drives it */
	S_FLUSH_CLOSE,
	S_LINGER,
	S_DNS,
};

struct half {
	int src, dst;
	int pipe[2];
	size_t in_pipe;
	char *buf;
	size_t len, off, cap;
	bool splice; /* read src by splice; else only buf is written */
	bool no_shut; /* do not shut dst down at src EOF (HTTP responses) */
	bool src_eof, dst_shut;
	uint64_t bytes;
};

struct proxy;

struct conn {
	struct proxy *p;
	unsigned slot;
	uint16_t gen;
	enum kind kind;
	enum state state;
	int cfd, ufd;
	char *in;
	size_t in_len;
	bool client_eof;

	const char *proto;
	char name[MOAT_HOST_BUFSZ];
	enum moat_host_kind hkind;
	uint16_t port;
	char raw[300];
	char method[24];
	char sni[MOAT_HOST_BUFSZ];
	struct sockaddr_storage odst;
	bool have_odst, peeked;
	bool by_name; /* allowed by a name rule: the first bytes decide before dialling */
	bool replied; /* CONNECT 200 / SOCKS success already sent (before dialling) */
	int first; /* enum moat_proxy_first once checked, else 0 */
	bool tunnel_http; /* plain HTTP in a tunnel: origin-form requests, Host checked */
	struct moat_proxy_decision d;
	unsigned addr_i;
	char dialed[MOAT_ADDR_STRLEN];
	uint64_t start_ms, deadline_ms;
	struct half up, down;

	/* HTTP forwarding after the first request */
	bool http; /* up half is fed by the HTTP request parser */
	struct moat_http1_body body; /* framing of the request body being relayed */
	uint64_t body_seen; /* body bytes the placeholder tripwire has scanned */
	bool http_stop; /* no more requests: a refusal waits in `final` */
	char *final; /* reply to send once the upstream response ended */
	size_t final_len;
	bool logged;
	struct moat_intercept *icpt; /* S_TLS */
};

struct proxy {
	const struct moat_proxy_config *cfg;
	struct moat_loop *loop;
	int event_fd;
	struct moat_netns_fds fds;
	int res_fd;
	pid_t res_pid;
	struct conn **conns;
	unsigned max_conns, n_conns;
	uint16_t gen;
	size_t in_cap;
	struct moat_http1_limits hlim;
	unsigned head_ms, connect_ms, idle_ms;
	uint64_t now;
	char (*synth)[MOAT_HOST_BUFSZ];
	unsigned n_synth;
	unsigned nflog_budget, nflog_suppressed;
};

static void conn_update(struct conn *c);
static void conn_close(struct conn *c);
static void enter_relay(struct conn *c);
static void http_process(struct conn *c);
static void dial(struct conn *c);
static void inspect_step(struct conn *c);
static void enter_tls(struct conn *c);
static void tls_step(struct conn *c);

/* ---- events ------------------------------------------------------------- */

static void conn_event(struct conn *c, bool allow, const char *reason, const char *rule)
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
static void req_event(struct conn *c, bool allow, const char *reason)
{
	bool logged = c->logged;
	uint64_t up = c->up.bytes, down = c->down.bytes;

	c->up.bytes = c->down.bytes = 0;
	conn_event(c, allow, reason, allow ? c->d.rule : NULL);
	c->up.bytes = up;
	c->down.bytes = down;
	c->logged = logged;
}

/* Is the connection at @slot still the one with @gen? Handlers call this
 * after a step that may have closed (and freed) it. */
static bool alive(struct proxy *p, unsigned slot, uint16_t gen)
{
	return p->conns[slot] && p->conns[slot]->gen == gen;
}

/* ---- buffers and halves ---------------------------------------------------- */

static int buf_add(struct half *h, const void *data, size_t n)
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

static int half_open_pipe(struct half *h)
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
static int half_pump(struct half *h)
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

static void set_deadline(struct conn *c, unsigned ms)
{
	c->deadline_ms = c->p->now + ms;
}

static void reset_close(struct conn *c)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};
	(void)setsockopt(c->cfd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	conn_close(c);
}

static void conn_close(struct conn *c)
{
	struct proxy *p = c->p;

	if (!c->logged)
		conn_event(c, true, c->d.reason, c->d.rule);
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
static void flush_close_step(struct conn *c)
{
	if (half_pump(&c->down) < 0) {
		conn_close(c);
		return;
	}
	if (!half_pending(&c->down)) {
		(void)shutdown(c->cfd, SHUT_WR);
		c->state = S_LINGER;
	}
	conn_update(c);
}

/* Refuse with a final reply (HTTP error, SOCKS reply), then drain and close. */
static void finish_with(struct conn *c, const void *reply, size_t n)
{
	if (c->ufd >= 0) {
		moat_loop_del(c->p->loop, c->ufd);
		c->ufd = safe_close(c->ufd);
	}
	c->up.splice = c->down.splice = false;
	c->down.dst = c->cfd;
	if (n > 0 && buf_add(&c->down, reply, n) < 0) {
		conn_close(c);
		return;
	}
	c->state = S_FLUSH_CLOSE;
	set_deadline(c, LINGER_MS);
	flush_close_step(c);
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
	finish_with(c, buf, n > 0 ? (size_t)n : 0);
}

static void socks_refuse(struct conn *c, uint8_t rep)
{
	uint8_t buf[MOAT_SOCKS5_REPLY_MAX];
	int n = moat_socks5_build_reply(buf, sizeof(buf), rep, NULL);
	finish_with(c, buf, n > 0 ? (size_t)n : 0);
}

/* A policy refusal: one deny event, then the protocol's way of saying no. */
static void refuse(struct conn *c, int status, const char *reason, const char *rule)
{
	conn_event(c, false, reason, rule);
	switch (c->kind) {
	case K_HTTP:
		if (c->replied || c->state == S_INSPECT || c->state == S_RELAY)
			conn_close(c); /* the 200 already went out */
		else
			http_refuse(c, status, reason, rule);
		break;
	case K_SOCKS:
		if (c->replied || c->state == S_INSPECT || c->state == S_RELAY)
			conn_close(c);
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
static void fail(struct conn *c, int status, const char *reason)
{
	conn_event(c, true, reason, c->d.rule);
	if (c->replied) {
		conn_close(c); /* the tunnel was promised: it just ends */
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

static void conn_update(struct conn *c)
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
		return; /* tls_step() sets the masks */
	}
	if (half_pending(&c->down))
		ce |= EPOLLOUT;
	(void)moat_loop_mod(p->loop, c->cfd, ce);
	if (c->ufd >= 0)
		(void)moat_loop_mod(p->loop, c->ufd, ue);
}

/* Read client bytes into c->in. Returns bytes read, 0 at EOF, -EAGAIN, -errno. */
static ssize_t client_read(struct conn *c)
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

static void consume(struct conn *c, size_t n)
{
	memmove(c->in, c->in + n, c->in_len - n);
	c->in_len -= n;
}

/* ---- dialing ----------------------------------------------------------- */

static void connected(struct conn *c)
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
			enter_tls(c);
			return;
		}
		if (c->first == MOAT_PROXY_FIRST_HTTP) {
			c->http = true;
			c->tunnel_http = true;
		}
		enter_relay(c);
		return;
	}
	switch (c->kind) {
	case K_HTTP:
		if (!c->http) {
			if (buf_add(&c->down, MOAT_HTTP1_CONNECT_OK,
				    strlen(MOAT_HTTP1_CONNECT_OK)) < 0) {
				conn_close(c);
				return;
			}
			c->state = S_INSPECT;
			set_deadline(c, c->p->head_ms);
			break;
		}
		enter_relay(c);
		return;
	case K_SOCKS: {
		uint8_t rep[MOAT_SOCKS5_REPLY_MAX];
		int n;
		if (getsockname(c->ufd, (struct sockaddr *)&ss, &len) < 0)
			memset(&ss, 0, sizeof(ss));
		n = moat_socks5_build_reply(rep, sizeof(rep), MOAT_SOCKS5_REP_SUCCEEDED,
					    (struct sockaddr *)&ss);
		if (n < 0 || buf_add(&c->down, rep, (size_t)n) < 0) {
			conn_close(c);
			return;
		}
		c->state = S_INSPECT;
		set_deadline(c, c->p->head_ms);
		break;
	}
	default:
		c->state = S_INSPECT;
		set_deadline(c, c->p->head_ms);
		break;
	}
	conn_update(c);
	/* Bytes the client sent early (with the request) are inspected now. */
	if (c->in_len > 0)
		inspect_step(c);
}

static void on_upstream(struct moat_loop *l, int fd, uint32_t events, void *data);

/* Try the vetted addresses in order; only ever an address in c->d.addrs. */
static void dial(struct conn *c)
{
	struct proxy *p = c->p;

	c->state = S_CONNECT;
	if (c->deadline_ms == 0 || c->d.n_addrs == 0 || c->addr_i == 0)
		set_deadline(c, p->connect_ms);
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
		if (moat_loop_add(p->loop, fd, EPOLLOUT, on_upstream, c) < 0) {
			close(fd);
			continue;
		}
		c->ufd = fd;
		conn_update(c);
		return;
	}
	fail(c, 502, "connect-failed");
}

/* The first bytes of a connection allowed by name, before anything is
 * dialled: refuse, or dial and then relay/intercept as moat_proxy_check_first
 * said. */
static void first_step(struct conn *c)
{
	struct proxy *p = c->p;
	struct moat_proxy_first_info fi;
	bool final = c->client_eof || c->in_len >= p->in_cap;
	int r = moat_proxy_check_first(p->cfg, c->name, c->port, c->in, c->in_len, final, &fi);

	if (fi.sni[0])
		snprintf(c->sni, sizeof(c->sni), "%s", fi.sni);
	if (r == MOAT_PROXY_FIRST_MORE) {
		conn_update(c);
		return;
	}
	if (r == MOAT_PROXY_FIRST_DENY) {
		refuse(c, 403, fi.reason, NULL);
		return;
	}
	c->first = r;
	c->addr_i = 0;
	c->deadline_ms = 0;
	dial(c);
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
		dial(c);
		return;
	}
	if (c->kind == K_HTTP) {
		if (buf_add(&c->down, MOAT_HTTP1_CONNECT_OK, strlen(MOAT_HTTP1_CONNECT_OK)) < 0) {
			conn_close(c);
			return;
		}
		c->replied = true;
	} else if (c->kind == K_SOCKS) {
		/* Not connected yet: BND.ADDR is 0.0.0.0:0 (RFC 1928 allows it). */
		uint8_t rep[MOAT_SOCKS5_REPLY_MAX];
		int n = moat_socks5_build_reply(rep, sizeof(rep), MOAT_SOCKS5_REP_SUCCEEDED, NULL);
		if (n < 0 || buf_add(&c->down, rep, (size_t)n) < 0) {
			conn_close(c);
			return;
		}
		c->replied = true;
	}
	c->state = S_FIRST;
	set_deadline(c, p->head_ms);
	if (c->in_len > 0) {
		/* Bytes the client sent together with its request. */
		unsigned slot = c->slot;
		uint16_t gen = c->gen;
		first_step(c);
		if (!alive(p, slot, gen) || c->state != S_FIRST)
			return;
	}
	conn_update(c);
}

/* An allowed decision: dial the pinned addresses or resolve the name first. */
static void go(struct conn *c)
{
	struct proxy *p = c->p;
	uint32_t id = ((uint32_t)c->gen << 16) | c->slot;

	if (c->d.n_addrs > 0) {
		ready(c);
		return;
	}
	if (p->res_fd < 0 || moat_resolver_send(p->res_fd, id, c->name) < 0) {
		fail(c, 502, "resolve-failed");
		return;
	}
	c->state = S_RESOLVE;
	set_deadline(c, p->connect_ms);
	conn_update(c);
}

static void on_resolved(struct conn *c, const struct moat_resolver_reply *rep)
{
	if (rep->err != 0) {
		fail(c, 502, "resolve-failed");
		return;
	}
	moat_proxy_check_addrs(c->p->cfg, c->name, c->port, rep->addrs, rep->n, &c->d);
	if (!c->d.allow) {
		refuse(c, 403, c->d.reason, c->d.rule);
		return;
	}
	if (c->have_odst && c->kind == K_TRANS && !c->d.n_addrs) {
		fail(c, 502, "resolve-failed");
		return;
	}
	if (c->have_odst && c->kind == K_TRANS && c->peeked) {
		/* A hard-coded address: it must be one the name resolves to. */
		if (!moat_proxy_decision_has_addr(&c->d, (struct sockaddr *)&c->odst)) {
			refuse(c, 403, "original-destination-mismatch", NULL);
			return;
		}
		moat_addr_unmap((struct sockaddr *)&c->odst, &c->d.addrs[0]);
		c->d.n_addrs = 1;
	}
	ready(c);
}

static void on_resolver(struct moat_loop *l, int fd, uint32_t events, void *data)
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

/* ---- relaying ---------------------------------------------------------------- */

static void enter_relay(struct conn *c)
{
	struct proxy *p = c->p;

	c->up.src = c->cfd;
	c->up.dst = c->ufd;
	c->down.src = c->ufd;
	c->down.dst = c->cfd;
	c->down.splice = true;
	if (half_open_pipe(&c->down) < 0) {
		conn_close(c);
		return;
	}
	if (c->http) {
		c->down.no_shut = true;
	} else {
		c->up.splice = true;
		if (half_open_pipe(&c->up) < 0 || buf_add(&c->up, c->in, c->in_len) < 0) {
			conn_close(c);
			return;
		}
		c->in_len = 0;
		free(c->in);
		c->in = NULL;
	}
	c->state = S_RELAY;
	set_deadline(c, p->idle_ms);
	if (c->http) {
		unsigned slot = c->slot;
		uint16_t gen = c->gen;
		http_process(c);
		if (!alive(p, slot, gen))
			return;
	}
	conn_update(c);
}

static void relay_pump(struct conn *c)
{
	int a = half_pump(&c->up), b;

	if (a < 0) {
		conn_close(c);
		return;
	}
	b = half_pump(&c->down);
	if (b < 0) {
		conn_close(c);
		return;
	}
	if (a > 0 || b > 0)
		set_deadline(c, c->p->idle_ms);
	if (c->http) {
		/* The client finished: pass the EOF on once its bytes are out. */
		if ((c->client_eof || c->http_stop) && c->up.off == c->up.len && !c->up.dst_shut) {
			(void)shutdown(c->ufd, SHUT_WR);
			c->up.dst_shut = true;
		}
		/* The response ended: send a pending refusal, then close. */
		if (c->down.src_eof && c->down.in_pipe == 0 && c->down.off == c->down.len) {
			char *f = TAKE_PTR(c->final);
			finish_with(c, f, f ? c->final_len : 0);
			free(f);
			return;
		}
	} else if (c->up.dst_shut && c->down.dst_shut) {
		conn_close(c);
		return;
	}
	conn_update(c);
}

/* ---- HTTP ------------------------------------------------------------------- */

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
	if (n < 0 || buf_add(&c->up, head, (size_t)n) < 0)
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
	/* relay_pump() shuts the upstream's write side once the requests
	 * before this one are out. */
}

/* Feed client bytes of an established HTTP connection to the upstream. */
static void http_process(struct conn *c)
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
				req_event(c, false, moat_http1_strerror(k));
				http_stop(c, moat_http1_err_status(k), moat_http1_strerror(k),
					  NULL);
				return;
			}
			why = http_body_check(c, before, (size_t)k, why_buf, sizeof(why_buf));
			if (why) {
				req_event(c, false, why);
				http_stop(c, 403, why, NULL);
				return;
			}
			if (buf_add(&c->up, c->in, (size_t)k) < 0) {
				conn_close(c);
				return;
			}
			consume(c, (size_t)k);
			continue;
		}
		n = moat_http1_parse_request(c->in, c->in_len, &p->hlim, &r);
		if (n == 0)
			return;
		moat_http1_slice_copy(r.method, c->method, sizeof(c->method));
		if (n < 0) {
			req_event(c, false, moat_http1_strerror(n));
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
			req_event(c, false, "host-switch");
			http_stop(c, 403, "host-switch", rule);
			return;
		}
		char why_buf[400];
		const char *why = http_cred_check(c, &r, (size_t)n, why_buf, sizeof(why_buf));
		if (why) {
			req_event(c, false, why);
			http_stop(c, 403, why, NULL);
			return;
		}
		req_event(c, true, c->tunnel_http ? "http-in-tunnel" : "keep-alive");
		if (http_rewrite(c, &r, (size_t)n) < 0) {
			conn_close(c);
			return;
		}
		consume(c, (size_t)n);
	}
}

/* The first request on the HTTP proxy port. */
static void http_head(struct conn *c)
{
	struct proxy *p = c->p;
	struct moat_http1_request r;
	int n = moat_http1_parse_request(c->in, c->in_len, &p->hlim, &r);

	if (n == 0) {
		if (c->client_eof)
			conn_close(c);
		return;
	}
	if (n < 0) {
		int st = moat_http1_err_status(n);
		snprintf(c->raw, sizeof(c->raw), "(unparsable request)");
		refuse(c, st, moat_http1_strerror(n), NULL);
		return;
	}
	moat_http1_slice_copy(r.method, c->method, sizeof(c->method));
	moat_http1_slice_copy(r.authority, c->raw, sizeof(c->raw));
	snprintf(c->name, sizeof(c->name), "%s", r.host);
	c->hkind = r.host_kind;
	c->port = r.port;
	c->proto = r.is_connect ? "connect" : "http";
	if (!r.is_connect && r.form != MOAT_HTTP1_FORM_ABSOLUTE) {
		refuse(c, 400, "not-a-proxy-request", NULL);
		return;
	}
	moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
	if (!c->d.allow) {
		refuse(c, 403, c->d.reason, c->d.rule);
		return;
	}
	c->by_name = r.is_connect && c->hkind == MOAT_HOST_NAME;
	if (!r.is_connect) {
		char why_buf[400];
		const char *why = http_cred_check(c, &r, (size_t)n, why_buf, sizeof(why_buf));
		if (why) {
			refuse(c, 403, why, NULL);
			return;
		}
		c->http = true;
		if (http_rewrite(c, &r, (size_t)n) < 0) {
			conn_close(c);
			return;
		}
	}
	consume(c, (size_t)n);
	go(c);
}

/* ---- SOCKS5 ------------------------------------------------------------------ */

static void socks_step(struct conn *c)
{
	struct proxy *p = c->p;
	int n;

	if (c->state == S_SOCKS_GREET) {
		n = moat_socks5_parse_greeting((const uint8_t *)c->in, c->in_len, NULL);
		if (n == 0)
			goto more;
		if (n < 0) {
			uint8_t b[8];
			conn_event(c, false, moat_socks5_strerror(n), NULL);
			if (n == -MOAT_SOCKS5_E_NO_ACCEPTABLE)
				finish_with(c, MOAT_SOCKS5_METHOD_REPLY_NONE, 2);
			else if (n == -MOAT_SOCKS5_E_SOCKS4)
				finish_with(c, b, (size_t)moat_socks5_build_socks4_reject(b));
			else
				conn_close(c);
			return;
		}
		consume(c, (size_t)n);
		if (buf_add(&c->down, MOAT_SOCKS5_METHOD_REPLY_OK, 2) < 0) {
			conn_close(c);
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
			conn_event(c, false, moat_socks5_strerror(n), NULL);
			finish_with(c, b, k > 0 ? (size_t)k : 0);
			return;
		}
		consume(c, (size_t)n);
		snprintf(c->name, sizeof(c->name), "%s", r.host);
		snprintf(c->raw, sizeof(c->raw), "%s", r.raw_name[0] ? r.raw_name : r.host);
		c->hkind = r.host_kind;
		c->port = r.port;
		snprintf(c->method, sizeof(c->method), "CONNECT");
		moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
		if (!c->d.allow) {
			refuse(c, 403, c->d.reason, c->d.rule);
			return;
		}
		c->by_name = c->hkind == MOAT_HOST_NAME;
		go(c);
		return;
	}
more:
	if (c->client_eof)
		conn_close(c);
	else
		conn_update(c);
}

/* ---- transparent ------------------------------------------------------------- */

static const char *synth_lookup(struct proxy *p, const struct sockaddr_storage *ss)
{
	uint32_t a, i;

	if (ss->ss_family != AF_INET)
		return NULL;
	a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
	if ((a >> (32 - MOAT_PROXY_SYNTH_PREFIX)) !=
	    (MOAT_PROXY_SYNTH_NET >> (32 - MOAT_PROXY_SYNTH_PREFIX)))
		return NULL;
	i = (a & ((1u << (32 - MOAT_PROXY_SYNTH_PREFIX)) - 1)) - 1;
	return i < p->n_synth ? p->synth[i] : "";
}

static bool is_synth(const struct sockaddr_storage *ss)
{
	uint32_t a;
	if (ss->ss_family != AF_INET)
		return false;
	a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
	return (a >> (32 - MOAT_PROXY_SYNTH_PREFIX)) ==
		(MOAT_PROXY_SYNTH_NET >> (32 - MOAT_PROXY_SYNTH_PREFIX));
}

static void trans_start(struct conn *c, bool v6)
{
	struct proxy *p = c->p;
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int r;

	c->proto = "transparent";
	if (v6)
		r = getsockopt(c->cfd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &len);
	else
		r = getsockopt(c->cfd, SOL_IP, SO_ORIGINAL_DST, &ss, &len);
	if (r < 0) {
		refuse(c, 403, "no-original-destination", NULL);
		return;
	}
	moat_addr_unmap((struct sockaddr *)&ss, &c->odst);
	c->have_odst = true;
	c->port =
		ntohs(c->odst.ss_family == AF_INET ? ((struct sockaddr_in *)&c->odst)->sin_port
						   : ((struct sockaddr_in6 *)&c->odst)->sin6_port);
	moat_addr_format((struct sockaddr *)&c->odst, true, c->raw, sizeof(c->raw));
	if (is_synth(&c->odst)) {
		const char *name = synth_lookup(p, &c->odst);
		if (!name || !*name) {
			refuse(c, 403, "unknown-synthetic-address", NULL);
			return;
		}
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->hkind = MOAT_HOST_NAME;
		moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
		if (!c->d.allow) {
			refuse(c, 403, c->d.reason, c->d.rule);
			return;
		}
		c->by_name = true;
		go(c);
		return;
	}
	/* An address a CIDR rule allows needs no name. */
	moat_addr_format((struct sockaddr *)&c->odst, false, c->name, sizeof(c->name));
	c->hkind = c->odst.ss_family == AF_INET ? MOAT_HOST_IPV4 : MOAT_HOST_IPV6;
	moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
	if (c->d.allow) {
		go(c);
		return;
	}
	/* Otherwise the name comes from the first bytes (SNI or Host). */
	c->state = S_PEEK;
	set_deadline(c, p->head_ms);
	conn_update(c);
}

static void peek_step(struct conn *c)
{
	struct proxy *p = c->p;
	struct moat_sni_info si;
	struct moat_http1_request r;
	int s = moat_sni_parse((const uint8_t *)c->in, c->in_len, &si);
	char addr[MOAT_HOST_BUFSZ];

	snprintf(addr, sizeof(addr), "%s", c->name); /* the original address, for logs */
	if (s == MOAT_SNI_NEED_MORE)
		goto more;
	if (s == MOAT_SNI_FOUND) {
		snprintf(c->name, sizeof(c->name), "%s", si.host);
		snprintf(c->sni, sizeof(c->sni), "%s", si.host);
	} else if (s == MOAT_SNI_NOT_TLS) {
		int n = moat_http1_parse_request(c->in, c->in_len, &p->hlim, &r);
		if (n == 0)
			goto more;
		if (n < 0 || !r.has_host || r.host_kind != MOAT_HOST_NAME) {
			/* No name: the decision on the original address stands. */
			refuse(c, 403, n < 0 ? moat_http1_strerror(n) : c->d.reason, c->d.rule);
			return;
		}
		moat_http1_slice_copy(r.method, c->method, sizeof(c->method));
		snprintf(c->name, sizeof(c->name), "%s", r.host);
	} else if (s == MOAT_SNI_NO_SNI) {
		/* Only an address rule allows TLS without a name. */
		refuse(c, 403, "no-sni", c->d.rule);
		return;
	} else {
		refuse(c, 403, "tls-malformed", NULL);
		return;
	}
	c->hkind = MOAT_HOST_NAME;
	c->peeked = true;
	moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
	if (!c->d.allow) {
		refuse(c, 403, c->d.reason, c->d.rule);
		return;
	}
	/* The same rule as for every connection allowed by name. */
	{
		struct moat_proxy_first_info fi;
		int f = moat_proxy_check_first(p->cfg, c->name, c->port, c->in, c->in_len,
					       c->client_eof || c->in_len >= p->in_cap, &fi);
		if (f == MOAT_PROXY_FIRST_MORE)
			goto more;
		if (f == MOAT_PROXY_FIRST_DENY) {
			refuse(c, 403, fi.reason, NULL);
			return;
		}
		c->by_name = true;
		c->first = f;
	}
	if (c->d.n_addrs > 0) {
		/* --resolve pins the name: the original address must be it. */
		if (!moat_proxy_decision_has_addr(&c->d, (struct sockaddr *)&c->odst)) {
			refuse(c, 403, "original-destination-mismatch", NULL);
			return;
		}
		c->d.addrs[0] = c->odst;
		c->d.n_addrs = 1;
	}
	go(c);
	return;
more:
	if (c->client_eof || c->in_len >= p->in_cap)
		refuse(c, 403, "no-name", NULL);
	else
		conn_update(c);
}

/* ---- credential proxy: TLS interception --------------------------------------- */

/* One event per request inside an intercepted connection; refusals that
 * involve a secret carry "alert" in the reason's prefix. */
static void tls_report(void *userdata, const struct moat_intercept_report *r)
{
	struct conn *c = userdata;
	char reason[400];

	moat_http1_slice_copy((struct moat_http1_slice){r->method, strlen(r->method)}, c->method,
			      sizeof(c->method));
	if (r->allowed)
		snprintf(reason, sizeof(reason), "%s%s%s%s", r->secret ? "secret-injected " : "",
			 r->secret ? r->secret : "", r->warning ? "; warning: " : "",
			 r->warning ? r->warning : "");
	else
		snprintf(reason, sizeof(reason), "%s%s", r->alert ? "alert: " : "",
			 r->reason ? r->reason : "refused");
	req_event(c, r->allowed, r->allowed && !r->secret && !r->warning ? "intercepted" : reason);
}

static void tls_step(struct conn *c)
{
	struct proxy *p = c->p;
	uint32_t ce = 0, ue = 0;
	int r = moat_intercept_step(c->icpt, &ce, &ue);

	if (r != 0) {
		if (r < 0 && !c->logged)
			conn_event(c, false,
				   moat_intercept_error(c->icpt)[0] ? moat_intercept_error(c->icpt)
								    : "tls-failed",
				   NULL);
		conn_close(c);
		return;
	}
	set_deadline(c, p->idle_ms);
	(void)moat_loop_mod(p->loop, c->cfd, ce);
	(void)moat_loop_mod(p->loop, c->ufd, ue);
}

static void enter_tls(struct conn *c)
{
	const struct moat_proxy_config *cfg = c->p->cfg;
	struct moat_intercept_config ic = {
		.ca = cfg->ca,
		.upstream_ctx = cfg->upstream_tls,
		.secrets = cfg->secrets,
		.rules = cfg->http_rules,
		.n_rules = cfg->n_http_rules,
		.limits = c->p->hlim, /* one grammar, one set of limits */
		.port = c->port,
		.report = tls_report,
		.userdata = c,
	};

	/* The ClientHello the proxy read to check the SNI is replayed to the
	 * TLS server side. */
	if (moat_intercept_new_prefixed(&ic, c->name, c->cfd, c->in, c->in_len, c->ufd, &c->icpt) <
	    0) {
		conn_event(c, false, "tls-intercept-failed", NULL);
		conn_close(c);
		return;
	}
	free(c->in);
	c->in = NULL;
	c->in_len = 0;
	c->proto = "https";
	c->state = S_TLS;
	tls_step(c);
}

/* After connecting on an ADDRESS rule (CONNECT/SOCKS to an IP, a transparent
 * connection a CIDR rule allows): raw bytes and TLS without SNI may go, but a
 * ClientHello that names a host is held to that name's rules: a denied host
 * or an intercepted one (reaching it by address would skip interception) is
 * refused. */
static void inspect_step(struct conn *c)
{
	struct moat_sni_info si;
	int s;

	if (c->in_len == 0) {
		if (c->client_eof)
			enter_relay(c);
		return;
	}
	s = moat_sni_parse((const uint8_t *)c->in, c->in_len, &si);
	switch (s) {
	case MOAT_SNI_NEED_MORE:
		if (c->client_eof || c->in_len >= INSPECT_MAX)
			refuse(c, 403, "tls-malformed", NULL);
		return;
	case MOAT_SNI_FOUND: {
		struct moat_proxy_decision nd;
		snprintf(c->sni, sizeof(c->sni), "%s", si.host);
		if (c->hkind == MOAT_HOST_NAME && !streq(si.host, c->name)) {
			refuse(c, 403, "sni-mismatch", NULL);
			return;
		}
		if (moat_proxy_intercepts(c->p->cfg, si.host)) {
			refuse(c, 403, "sni-intercepted-host", NULL);
			return;
		}
		moat_proxy_decide(c->p->cfg, MOAT_HOST_NAME, si.host, c->port, &nd);
		if (!nd.allow && streq(nd.reason, "deny-host")) {
			refuse(c, 403, "deny-host", NULL);
			return;
		}
		break;
	}
	case MOAT_SNI_NOT_TLS:
		if (c->port == 443) {
			refuse(c, 403, "not-tls", NULL);
			return;
		}
		break;
	case MOAT_SNI_NO_SNI:
		break;
	default:
		refuse(c, 403, "tls-malformed", NULL);
		return;
	}
	enter_relay(c);
}

/* ---- DNS stub ------------------------------------------------------------ */

static const char *qtype_name(uint16_t t)
{
	switch (t) {
	case MOAT_DNS_TYPE_A:
		return "A";
	case MOAT_DNS_TYPE_AAAA:
		return "AAAA";
	case MOAT_DNS_TYPE_HTTPS:
		return "HTTPS";
	case MOAT_DNS_TYPE_TXT:
		return "TXT";
	case MOAT_DNS_TYPE_MX:
		return "MX";
	case MOAT_DNS_TYPE_PTR:
		return "PTR";
	case MOAT_DNS_TYPE_CNAME:
		return "CNAME";
	default:
		return "other";
	}
}

/* The synthetic address of an allowed name, allocating one if new. */
static int synth_addr(struct proxy *p, const char *name, struct sockaddr_storage *ret)
{
	struct sockaddr_in *in = (struct sockaddr_in *)ret;
	unsigned i;

	for (i = 0; i < p->n_synth; i++)
		if (streq(p->synth[i], name))
			break;
	if (i == p->n_synth) {
		if (i >= MOAT_PROXY_SYNTH_MAX)
			return -ENOSPC;
		if (i % 256 == 0) {
			void *n = realloc(p->synth, (i + 256) * sizeof(*p->synth));
			if (!n)
				return -ENOMEM;
			p->synth = n;
		}
		snprintf(p->synth[i], sizeof(p->synth[i]), "%s", name);
		p->n_synth++;
	}
	memset(ret, 0, sizeof(*ret));
	in->sin_family = AF_INET;
	in->sin_addr.s_addr = htonl(MOAT_PROXY_SYNTH_NET + i + 1);
	return 0;
}

/* Answer one query; returns the reply length or <0 for "no reply". */
static int dns_answer(struct proxy *p, const uint8_t *msg, size_t len, uint8_t *out, size_t outlen,
		      bool tcp)
{
	struct moat_dns_query q;
	struct moat_proxy_event e = {.proto = "dns"};
	char name[MOAT_HOST_BUFSZ], dns_why[160];
	const char *why = NULL;
	int r = moat_dns_parse_query(msg, len, &q);

	if (r < 0) {
		int rc = moat_dns_err_rcode(r);
		e.reason = moat_dns_strerror(r);
		(void)moat_proxy_event_write(p->event_fd, &e);
		return rc < 0 ? -1
			      : moat_dns_build_header_response(msg, len, (uint8_t)rc, out, outlen);
	}
	e.raw = q.name;
	e.method = qtype_name(q.qtype);
	if (p->cfg->secrets && (r = moat_secrets_scan_dns(p->cfg->secrets, q.name)) >= 0) {
		/* A placeholder in a DNS name: exfiltration attempt (never forwarded
		 * anyway), an alert naming the secret. */
		snprintf(dns_why, sizeof(dns_why), "alert: secret %s: placeholder in a DNS query",
			 moat_secrets_name(p->cfg->secrets, (unsigned)r));
		why = dns_why;
	} else if (!q.name_plain || moat_host_normalize(q.name, name, sizeof(name)) < 0)
		why = "bad-name";
	if (!why)
		why = moat_proxy_name_refused(p->cfg, name);
	if (!why && q.qclass == MOAT_DNS_CLASS_IN && q.qtype == MOAT_DNS_TYPE_A) {
		struct sockaddr_storage ss;
		char a[MOAT_ADDR_STRLEN];
		if (synth_addr(p, name, &ss) < 0) {
			e.reason = "synthetic-range-full";
			(void)moat_proxy_event_write(p->event_fd, &e);
			return moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_SERVFAIL, out,
							     outlen);
		}
		moat_addr_format((struct sockaddr *)&ss, false, a, sizeof(a));
		e.name = name;
		e.addr = a;
		e.allow = true;
		e.reason = "allow-host";
		(void)moat_proxy_event_write(p->event_fd, &e);
		return moat_dns_build_addr_response(&q, &ss, 1, 5, out,
						    tcp ? outlen : MIN(outlen, MOAT_DNS_UDP_MAX));
	}
	if (!why) {
		/* Allowed name, other type (AAAA, HTTPS, ...): no data, so
		 * clients fall back to the synthetic IPv4 address. */
		e.name = name;
		e.allow = true;
		e.reason = "no-data";
		(void)moat_proxy_event_write(p->event_fd, &e);
		return moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_NOERROR, out, outlen);
	}
	e.reason = why;
	(void)moat_proxy_event_write(p->event_fd, &e);
	return moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_NXDOMAIN, out, outlen);
}

static void on_dns_udp(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct proxy *p = data;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		uint8_t q[1500], out[MOAT_DNS_UDP_MAX];
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from, &flen);
		int k;

		if (n < 0)
			return;
		k = dns_answer(p, q, (size_t)n, out, sizeof(out), false);
		if (k > 0)
			(void)sendto(fd, out, (size_t)k, MSG_DONTWAIT, (struct sockaddr *)&from,
				     flen);
	}
}

static void dns_tcp_step(struct conn *c)
{
	for (;;) {
		const uint8_t *msg;
		size_t mlen;
		uint8_t out[2 + 1024];
		int n = moat_dns_tcp_unframe((const uint8_t *)c->in, c->in_len, &msg, &mlen);
		int k;

		if (n < 0) {
			conn_close(c);
			return;
		}
		if (n == 0)
			break;
		k = dns_answer(c->p, msg, mlen, out + 2, sizeof(out) - 2, true);
		if (k > 0 &&
		    (moat_dns_tcp_prefix(out, (size_t)k) != 2 ||
		     buf_add(&c->down, out, (size_t)k + 2) < 0)) {
			conn_close(c);
			return;
		}
		consume(c, (size_t)n);
	}
	if (c->client_eof) {
		finish_with(c, NULL, 0);
		return;
	}
	set_deadline(c, c->p->head_ms);
	conn_update(c);
}

/* ---- nflog: packets the sandbox's ruleset dropped ---------------------------- */

static void nflog_packet(struct proxy *p, const uint8_t *pl, size_t len)
{
	struct moat_proxy_event e = {.reason = "dropped", .proto = "ip"};
	struct sockaddr_storage ss;
	char a[MOAT_ADDR_STRLEN];
	uint8_t proto = 0;
	size_t hl = 0;

	memset(&ss, 0, sizeof(ss));
	if (len >= sizeof(struct iphdr) && (pl[0] >> 4) == 4) {
		const struct iphdr *ip = (const void *)pl;
		ss.ss_family = AF_INET;
		memcpy(&((struct sockaddr_in *)&ss)->sin_addr, &ip->daddr, 4);
		proto = ip->protocol;
		hl = (size_t)ip->ihl * 4;
	} else if (len >= sizeof(struct ip6_hdr) && (pl[0] >> 4) == 6) {
		const struct ip6_hdr *ip6 = (const void *)pl;
		ss.ss_family = AF_INET6;
		memcpy(&((struct sockaddr_in6 *)&ss)->sin6_addr, &ip6->ip6_dst, 16);
		proto = ip6->ip6_nxt; /* extension headers are not followed */
		hl = sizeof(struct ip6_hdr);
	} else {
		return;
	}
	if (moat_addr_format((struct sockaddr *)&ss, false, a, sizeof(a)) > 0)
		e.addr = a;
	if (proto == IPPROTO_UDP || proto == IPPROTO_TCP) {
		e.proto = proto == IPPROTO_UDP ? "udp" : "tcp";
		if (hl + 4 <= len)
			e.port = (uint16_t)(pl[hl + 2] << 8 | pl[hl + 3]);
	} else if (proto == IPPROTO_ICMP || proto == IPPROTO_ICMPV6) {
		e.proto = "icmp";
	}
	(void)moat_proxy_event_write(p->event_fd, &e);
}

static void on_nflog(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct proxy *p = data;
	uint8_t buf[8192] __attribute__((aligned(NLMSG_ALIGNTO)));

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		if (n <= 0)
			return;
		for (struct nlmsghdr *h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)n);
		     h = NLMSG_NEXT(h, n)) {
			size_t off = NLMSG_LENGTH(sizeof(struct nfgenmsg));
			if (h->nlmsg_type != ((NFNL_SUBSYS_ULOG << 8) | NFULNL_MSG_PACKET))
				continue;
			if (p->nflog_budget == 0) {
				p->nflog_suppressed++;
				continue;
			}
			p->nflog_budget--;
			while (off + sizeof(struct nlattr) <= h->nlmsg_len) {
				const struct nlattr *a = (const void *)((const uint8_t *)h + off);
				if (a->nla_len < sizeof(*a) || off + a->nla_len > h->nlmsg_len)
					break;
				if ((a->nla_type & NLA_TYPE_MASK) == NFULA_PAYLOAD)
					nflog_packet(p, (const uint8_t *)a + NLA_HDRLEN,
						     a->nla_len - NLA_HDRLEN);
				off += NLA_ALIGN(a->nla_len);
			}
		}
	}
}

/* ---- event handlers --------------------------------------------------------- */

static void on_client(struct moat_loop *l, int fd, uint32_t events, void *data)
{
	struct conn *c = data;
	ssize_t n;

	switch (c->state) {
	case S_TLS:
		tls_step(c);
		return;
	case S_RELAY:
		if (c->http && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)) &&
		    c->up.off == c->up.len && !c->client_eof && !c->http_stop) {
			n = client_read(c);
			if (n < 0 && n != -EAGAIN) {
				conn_close(c);
				return;
			}
			struct proxy *p = c->p;
			unsigned slot = c->slot;
			uint16_t gen = c->gen;
			http_process(c);
			if (!alive(p, slot, gen))
				return;
		}
		relay_pump(c);
		return;
	case S_FLUSH_CLOSE:
		flush_close_step(c);
		return;
	case S_LINGER: {
		char junk[4096];
		n = recv(c->cfd, junk, sizeof(junk), 0);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			conn_close(c);
		return;
	}
	case S_RESOLVE:
	case S_CONNECT:
		if (events & (EPOLLHUP | EPOLLERR))
			conn_close(c);
		return;
	default:
		break;
	}

	/* Flush small replies (SOCKS method choice, CONNECT 200) first. */
	if (events & EPOLLOUT) {
		if (half_pump(&c->down) < 0) {
			conn_close(c);
			return;
		}
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		conn_update(c);
		return;
	}
	n = client_read(c);
	if (n < 0 && n != -EAGAIN) {
		conn_close(c);
		return;
	}
	switch (c->state) {
	case S_HEAD:
		http_head(c);
		break;
	case S_SOCKS_GREET:
	case S_SOCKS_REQ:
		socks_step(c);
		break;
	case S_PEEK:
		peek_step(c);
		break;
	case S_FIRST:
		first_step(c);
		break;
	case S_INSPECT: {
		struct proxy *p = c->p;
		unsigned slot = c->slot;
		uint16_t gen = c->gen;
		inspect_step(c);
		if (alive(p, slot, gen) && c->state == S_INSPECT)
			conn_update(c);
		break;
	}
	case S_DNS:
		dns_tcp_step(c);
		break;
	default:
		break;
	}
}

static void on_upstream(struct moat_loop *l, int fd, uint32_t events, void *data)
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
			connected(c);
			return;
		}
		moat_loop_del(l, fd);
		c->ufd = safe_close(c->ufd);
		c->addr_i++;
		dial(c);
		return;
	}
	case S_INSPECT:
		/* The server speaks first: nothing to inspect. */
		enter_relay(c);
		return;
	case S_RELAY:
		relay_pump(c);
		return;
	case S_TLS:
		tls_step(c);
		return;
	default:
		conn_update(c);
		return;
	}
}

static void on_listen(struct moat_loop *l, int fd, uint32_t events, void *data)
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
		set_deadline(c, p->head_ms);
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
			trans_start(c, fd == p->fds.transparent6);
	}
}

static void on_tick(struct moat_loop *l, uint64_t now, void *data)
{
	struct proxy *p = data;

	p->now = now;
	p->nflog_budget = NFLOG_EVENTS_PER_TICK;
	if (p->nflog_suppressed) {
		struct moat_proxy_event e = {.proto = "ip", .reason = "dropped"};
		char m[64];
		snprintf(m, sizeof(m), "%u more not logged", p->nflog_suppressed);
		e.rule = m;
		(void)moat_proxy_event_write(p->event_fd, &e);
		p->nflog_suppressed = 0;
	}
	for (unsigned i = 0; i < p->max_conns; i++) {
		struct conn *c = p->conns[i];
		if (!c || !c->deadline_ms || now < c->deadline_ms)
			continue;
		switch (c->state) {
		case S_HEAD:
			refuse(c, 408, "timeout", NULL);
			break;
		case S_SOCKS_GREET:
		case S_SOCKS_REQ:
		case S_PEEK:
		case S_INSPECT:
			refuse(c, 408, "timeout", NULL);
			break;
		case S_FIRST:
			/* A client that waits for the server (SSH, SMTP) never
			 * proves the name: such protocols need an address rule. */
			refuse(c, 408, c->in_len ? "timeout" : "no-first-bytes", NULL);
			break;
		case S_RESOLVE:
		case S_CONNECT:
			fail(c, 504, "connect-timeout");
			break;
		default:
			conn_close(c);
			break;
		}
	}
}

/* ---- start-up -------------------------------------------------------------- */

static volatile int terminate;

static void on_term(int sig)
{
	terminate = 1;
}

static int install_seccomp(void)
{
	static const int allow[] = {
		SCMP_SYS(read),
		SCMP_SYS(write),
		SCMP_SYS(close),
		SCMP_SYS(recvfrom),
		SCMP_SYS(sendto),
		SCMP_SYS(recvmsg),
		SCMP_SYS(sendmsg),
		SCMP_SYS(connect),
		SCMP_SYS(accept4),
		SCMP_SYS(shutdown),
		SCMP_SYS(setsockopt),
		SCMP_SYS(getsockopt),
		SCMP_SYS(getsockname),
		SCMP_SYS(getpeername),
		SCMP_SYS(epoll_wait),
		SCMP_SYS(epoll_pwait),
		SCMP_SYS(epoll_ctl),
		SCMP_SYS(splice),
		SCMP_SYS(pipe2),
		SCMP_SYS(fcntl),
		SCMP_SYS(clock_gettime),
		SCMP_SYS(brk),
		SCMP_SYS(munmap),
		SCMP_SYS(mremap),
		SCMP_SYS(madvise),
		SCMP_SYS(rt_sigreturn),
		SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(exit),
		SCMP_SYS(exit_group),
		SCMP_SYS(restart_syscall),
		SCMP_SYS(getpid),
		SCMP_SYS(gettid),
		SCMP_SYS(tgkill),
		SCMP_SYS(futex),
		SCMP_SYS(getrandom),
		/* the calling thread's own signal stack: harmless, and queried by
		 * AddressSanitizer before every noreturn call (the sanitizer build) */
		SCMP_SYS(sigaltstack),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(allow); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0);
	/* New sockets: only TCP/IP streams, exactly as dial() makes them (the
	 * exec'd helper has every other socket it needs before the filter). */
	if (r >= 0)
		r = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_INET),
			SCMP_A1(SCMP_CMP_EQ, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
	if (r >= 0)
		r = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_INET6),
			SCMP_A1(SCMP_CMP_EQ, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
	/* Memory may be mapped or change protection, never become executable
	 * (everything it runs was loaded before the filter). */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return r;
}

static int listen_add(struct proxy *p, int fd, moat_loop_fd_fn fn)
{
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return negerrno();
	return moat_loop_add(p->loop, fd, EPOLLIN, fn, p);
}

int moat_proxy_main(const struct moat_proxy_config *cfg, const struct moat_netns_fds *fds,
		    int event_fd)
{
	struct proxy p = {.cfg = cfg, .event_fd = event_fd, .fds = *fds, .res_fd = -1};
	struct rlimit rl;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return negerrno();
	if (getppid() == 1)
		return -ESRCH; /* the supervisor is already gone */
	signal(SIGPIPE, SIG_IGN);
	/* SIGTERM: close every connection (each writes its event), then exit. */
	{
		struct sigaction sa = {.sa_handler = on_term};
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTERM, &sa, NULL) < 0)
			return negerrno();
	}
	/* Two sockets and up to four pipe ends per connection. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)1 << 16);
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	p.max_conns = cfg->max_conns ? cfg->max_conns : 1024;
	if (p.max_conns > 65535)
		p.max_conns = 65535;
	p.hlim.max_head = cfg->max_head ? cfg->max_head : MOAT_HTTP1_DEFAULT_MAX_HEAD;
	p.in_cap = MAX((size_t)p.hlim.max_head, (size_t)INSPECT_MAX);
	p.head_ms = cfg->head_timeout_ms ? cfg->head_timeout_ms : 10000;
	p.connect_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
	p.idle_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : 600000;
	p.now = moat_loop_now_ms();
	p.nflog_budget = NFLOG_EVENTS_PER_TICK;
	p.conns = calloc(p.max_conns, sizeof(*p.conns));
	if (!p.conns)
		return -ENOMEM;
	r = moat_loop_new(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1u << 16
				  ? (unsigned)rl.rlim_cur
				  : 1u << 16,
			  &p.loop);
	if (r < 0)
		return r;
	if (cfg->has_resolver) {
		p.res_pid = cfg->resolver_pid;
		p.res_fd = cfg->resolver_fd;
		if (fcntl(p.res_fd, F_SETFL, O_NONBLOCK) < 0)
			return negerrno();
		r = moat_loop_add(p.loop, p.res_fd, EPOLLIN, on_resolver, &p);
		if (r < 0)
			return r;
	} else if (!cfg->no_resolver) {
		r = moat_resolver_start(&p.res_pid, &p.res_fd);
		if (r < 0)
			return r;
		r = moat_loop_add(p.loop, p.res_fd, EPOLLIN, on_resolver, &p);
		if (r < 0)
			return r;
	}
	if ((r = listen_add(&p, fds->http, on_listen)) < 0 ||
	    (r = listen_add(&p, fds->socks, on_listen)) < 0 ||
	    (r = listen_add(&p, fds->transparent4, on_listen)) < 0 ||
	    (r = listen_add(&p, fds->transparent6, on_listen)) < 0 ||
	    (r = listen_add(&p, fds->dns_tcp, on_listen)) < 0 ||
	    (r = listen_add(&p, fds->dns_udp, on_dns_udp)) < 0 ||
	    (r = listen_add(&p, fds->nflog, on_nflog)) < 0)
		return r;
	moat_loop_set_tick(p.loop, TICK_MS, on_tick, &p);
	/* What the worker holds as it starts serving, for the audit log (the
	 * table is read from /proc, so before the filter). */
	if (cfg->report_fds && event_fd >= 0) {
		char fds_text[1024], esc[2048], line[2100];
		if ((r = moat_fdset_describe(fds_text, sizeof(fds_text))) < 0)
			return r;
		moat_json_escape(fds_text, strlen(fds_text), esc, sizeof(esc));
		int w = snprintf(line, sizeof(line), "{\"proto\":\"helper\",\"fds\":\"%s\"}\n",
				 esc);
		if (w > 0 && (size_t)w < sizeof(line))
			(void)!write(event_fd, line, (size_t)w);
	}
	/* From here on: no new files, no exec, only the sockets we have. The
	 * worker cannot chroot (unprivileged); it simply never opens a path. */
	if (!cfg->no_seccomp) {
		r = install_seccomp();
		if (r < 0)
			return r;
	}
	moat_loop_set_stop_flag(p.loop, &terminate);
	/* The caller may have forked us with signals blocked; a SIGTERM that
	 * is already pending lands here and ends the loop after one pass. */
	{
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	r = moat_loop_run(p.loop);
	p.now = moat_loop_now_ms();
	/* Packets dropped just before the end are already queued: record them. */
	p.nflog_budget = NFLOG_EVENTS_PER_TICK;
	if (fds->nflog >= 0)
		on_nflog(p.loop, fds->nflog, EPOLLIN, &p);
	for (unsigned i = 0; i < p.max_conns; i++)
		if (p.conns[i])
			conn_close(p.conns[i]);
	return r;
}
