/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal to the proxy worker's proxy_*.c files (the interface is
 * proxy/proxy.h): a connection's state, the worker's state, and the steps
 * one file calls in another. Not for other callers.
 *
 * Every client connection is a `struct conn` with two halves: `up` moves
 * client bytes to the upstream, `down` moves upstream bytes to the client.
 * A half first writes its userspace buffer (a rewritten request head, bytes
 * read while deciding, a CONNECT/SOCKS reply), then, in tunnel mode, splices
 * src -> pipe -> dst without copying through user space. Epoll is
 * level-triggered; after every event the interest masks are recomputed from
 * the state (moat_proxy_conn_update), which keeps the state machine the only source of
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
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "proxy/http1.h"
#include "proxy/loop.h"
#include "proxy/proxy.h"
#include "proxy/sni.h"

#define INSPECT_MAX (MOAT_SNI_MAX_HELLO + 2048)
#define ACCEPT_BATCH 64
#define NFLOG_EVENTS_PER_TICK 20

struct moat_intercept;

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

/* proxy_conn.c: events, the two halves, closing and refusing */
void moat_proxy_conn_event(struct conn *c, bool allow, const char *reason, const char *rule);
void moat_proxy_req_event(struct conn *c, bool allow, const char *reason);
bool moat_proxy_alive(struct proxy *p, unsigned slot, uint16_t gen);
int moat_proxy_buf_add(struct half *h, const void *data, size_t n);
int moat_proxy_half_open_pipe(struct half *h);
int moat_proxy_half_pump(struct half *h);
void moat_proxy_set_deadline(struct conn *c, unsigned ms);
void moat_proxy_conn_close(struct conn *c);
void moat_proxy_flush_close_step(struct conn *c);
void moat_proxy_finish_with(struct conn *c, const void *reply, size_t n);
void moat_proxy_refuse(struct conn *c, int status, const char *reason, const char *rule);
void moat_proxy_fail(struct conn *c, int status, const char *reason);
/* Recompute the epoll interest masks from the state. */
void moat_proxy_conn_update(struct conn *c);
ssize_t moat_proxy_client_read(struct conn *c);
void moat_proxy_consume(struct conn *c, size_t n);

/* proxy_dial.c: from an allowed decision to a connected upstream */
void moat_proxy_go(struct conn *c);
void moat_proxy_dial(struct conn *c);
void moat_proxy_connected(struct conn *c);
void moat_proxy_first_step(struct conn *c);
void moat_proxy_inspect_step(struct conn *c);
void moat_proxy_on_resolver(struct moat_loop *l, int fd, uint32_t events, void *data);

/* proxy_relay.c: moving bytes once connected (splice relay, TLS interception) */
void moat_proxy_enter_relay(struct conn *c);
void moat_proxy_relay_pump(struct conn *c);
void moat_proxy_enter_tls(struct conn *c);
void moat_proxy_tls_step(struct conn *c);

/* proxy_http.c, proxy_socks.c, proxy_trans.c: the protocols' first steps */
void moat_proxy_http_head(struct conn *c);
void moat_proxy_http_process(struct conn *c);
void moat_proxy_socks_step(struct conn *c);
void moat_proxy_trans_start(struct conn *c, bool v6);
void moat_proxy_peek_step(struct conn *c);

/* proxy_dns.c: the DNS stub and its table of synthetic addresses */
void moat_proxy_on_dns_udp(struct moat_loop *l, int fd, uint32_t events, void *data);
void moat_proxy_dns_tcp_step(struct conn *c);
bool moat_proxy_is_synth(const struct sockaddr_storage *ss);
/* The name behind a synthetic address: NULL if @ss is none, "" if unknown. */
const char *moat_proxy_synth_lookup(struct proxy *p, const struct sockaddr_storage *ss);

/* proxy_nflog.c: packets the sandbox's ruleset dropped */
void moat_proxy_on_nflog(struct moat_loop *l, int fd, uint32_t events, void *data);
/* Once per tick: a new event budget; what was over the last one is counted. */
void moat_proxy_nflog_tick(struct proxy *p);

/* proxy_accept.c: accepting and dispatching events */
void moat_proxy_on_listen(struct moat_loop *l, int fd, uint32_t events, void *data);
void moat_proxy_on_upstream(struct moat_loop *l, int fd, uint32_t events, void *data);
void moat_proxy_on_tick(struct moat_loop *l, uint64_t now, void *data);

/* proxy_seccomp.c: the worker's own system call filter */
int moat_proxy_install_seccomp(void);
