/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/proxy/: the egress and credential proxy (moat-net.so and moat __proxy): accept loop,
 * HTTP/SOCKS/transparent, TLS interception, DNS stub, secrets; rule parsers in the core
 */
/*
 * The egress proxy worker. It runs in its own process, forked by the
 * supervisor, and serves the listeners that moat_netns_setup() created inside
 * the sandbox's network namespace while it dials out from the host namespace:
 *
 *   HTTP proxy     absolute-form requests (one authority per client connection:
 *                  a keep-alive connection never switches hosts) and CONNECT;
 *   SOCKS5         CONNECT with names or addresses;
 *   transparent    every other TCP connection (nftables redirect): the
 *                  original destination (SO_ORIGINAL_DST) plus the name from
 *                  the TLS SNI or the HTTP Host header;
 *   DNS stub       UDP and TCP: allowlisted names get a synthetic IPv4 address
 *                  from MOAT_PROXY_SYNTH_NET that the proxy maps back to the
 *                  name; AAAA gets an empty answer; everything else NXDOMAIN;
 *                  nothing is ever forwarded;
 *   nflog          packets the sandbox's ruleset dropped (UDP, ICMP, ...).
 *
 * Decisions go by name first (deny-host wins, then the allow rules and their
 * ports), then by address: the proxy resolves the name itself (in a resolver
 * helper process: getaddrinfo blocks and needs /etc), refuses the whole answer
 * if any address is loopback/private/link-local/CGNAT/unspecified/multicast/
 * reserved/metadata unless a --resolve entry or a CIDR rule allows it
 * explicitly, and connects to exactly an address it checked.
 *
 * Every decision is one JSON line on the event fd.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "network/netns.h"
#include "proxy/addr.h"
#include "proxy/hostmatch.h"

struct moat_policy;
struct moat_tls_ca;
struct moat_secrets;
struct moat_http_rule;
struct ssl_ctx_st;

#define MOAT_PROXY_MAX_PORTS 32
#define MOAT_PROXY_MAX_ADDRS 16
#define MOAT_PROXY_RULE_MAX 320
/* Synthetic addresses handed out by the DNS stub: 198.18.128.0/17. */
#define MOAT_PROXY_SYNTH_NET 0xc6128000u
#define MOAT_PROXY_SYNTH_PREFIX 17
#define MOAT_PROXY_SYNTH_MAX 32766u

struct moat_proxy_host_rule {
	char pattern[MOAT_HOST_BUFSZ]; /* normalized: "api.example.com" or "*.example.com" */
	uint16_t ports[MOAT_PROXY_MAX_PORTS];
	unsigned n_ports; /* 0 = 80 and 443 */
};

struct moat_proxy_cidr_rule {
	struct moat_cidr cidr;
	char text[64];
	uint16_t ports[MOAT_PROXY_MAX_PORTS];
	unsigned n_ports; /* 0 = any port */
};

struct moat_proxy_resolve {
	char name[MOAT_HOST_BUFSZ]; /* normalized */
	struct sockaddr_storage addr;
};

struct moat_proxy_config {
	struct moat_proxy_host_rule *allow;
	unsigned n_allow;
	struct moat_proxy_host_rule *deny; /* ports ignored */
	unsigned n_deny;
	struct moat_proxy_cidr_rule *cidrs;
	unsigned n_cidrs;
	struct moat_proxy_resolve *resolve;
	unsigned n_resolve;

	unsigned max_conns; /* concurrent client connections; 0 = 1024 */
	unsigned max_head; /* HTTP request head bytes; 0 = 32 KiB */
	unsigned head_timeout_ms; /* until the request/handshake/SNI is complete; 0 = 10 s */
	unsigned connect_timeout_ms; /* name resolution + TCP connect; 0 = 10 s */
	unsigned idle_timeout_ms; /* no byte either way; 0 = 10 min */
	bool no_seccomp; /* tests under sanitizers only */
	bool no_resolver; /* names need a --resolve entry (tests: no DNS) */
	/* The exec'd helper (supervise_net.c) starts the resolver itself, before
	 * it reads any key material, and hands it over here (owned by
	 * moat_proxy_main from then on); it also asks for a first event that
	 * lists the descriptors the worker holds when it starts serving. */
	bool has_resolver;
	int resolver_fd;
	pid_t resolver_pid;
	bool report_fds;

	/* Credential proxy (docs/CREDENTIALS.md). With ca and upstream_tls set,
	 * TLS to a secret's host or to a host some http_rules entry names is
	 * terminated, checked and rewritten (proxy/intercept.h); plain HTTP and
	 * DNS are checked for placeholders. Owned by the caller. */
	struct moat_tls_ca *ca;
	struct ssl_ctx_st *upstream_tls; /* from moat_tls_client_ctx() */
	const struct moat_secrets *secrets;
	const struct moat_http_rule *http_rules;
	unsigned n_http_rules;

	/* --inspect-tls all / --no-inspect (docs/NETWORK.md "One set of TLS
	 * rules"): with inspect_all, every TLS connection allowed by name is
	 * terminated (needs ca and upstream_tls) except for hosts matching a
	 * no_inspect pattern (normalized; ports ignored). A host that has a
	 * secret or an http rule is intercepted whatever no_inspect says (the
	 * policy refuses such a combination before a run starts). Plain
	 * values: serialize as a bool and a list of patterns. */
	bool inspect_all;
	struct moat_proxy_host_rule *no_inspect;
	unsigned n_no_inspect;
};

/* Build the proxy's rules from a validated policy. Patterns, CIDRs and
 * addresses are parsed again here (the proxy trusts nothing it did not check
 * itself); a bad one is -EINVAL. Caller frees with moat_proxy_config_free(). */
int moat_proxy_config_from_policy(const struct moat_policy *p, struct moat_proxy_config **ret);
struct moat_proxy_config *moat_proxy_config_free(struct moat_proxy_config *c);

/* ---- decisions (pure; unit-tested without sockets) -------------------------- */

struct moat_proxy_decision {
	bool allow;
	/* allow: the rule ("--allow-host a.test:443"); deny: the narrow rule that
	 * would allow it, or "" when no rule should (metadata, deny-host). */
	char rule[MOAT_PROXY_RULE_MAX];
	const char *reason; /* static token: "allow-host", "not-allowed", "deny-host",
			     * "port-not-allowed", "ip-literal", "metadata", ... */
	/* Addresses to dial when already known (IP literal, --resolve entries);
	 * n_addrs == 0 with allow: resolve the name, then moat_proxy_check_addrs(). */
	struct sockaddr_storage addrs[MOAT_PROXY_MAX_ADDRS];
	unsigned n_addrs;
	/* deny by moat_proxy_check_addrs(): the answer that was refused
	 * (numeric, no port), for the event and the summary; "" otherwise */
	char refused_addr[MOAT_ADDR_STRLEN];
};

/* Step 1: decide on a destination as given (kind from moat_host_parse()). */
void moat_proxy_decide(const struct moat_proxy_config *c, enum moat_host_kind kind,
		       const char *host, uint16_t port, struct moat_proxy_decision *d);

/* Step 2, after resolving an allowed name: keep d->allow only if EVERY address
 * is public or explicitly allowed by a CIDR rule; fills d->addrs (ports set)
 * or turns d into a denial ("resolved-<class>", hint "--resolve NAME=ADDR"). */
void moat_proxy_check_addrs(const struct moat_proxy_config *c, const char *host, uint16_t port,
			    const struct sockaddr_storage *addrs, unsigned n,
			    struct moat_proxy_decision *d);

/* For the DNS stub: may @name (normalized) be answered at all, i.e. is it not
 * denied and allowed by some rule on some port? NULL if yes, else the reason. */
const char *moat_proxy_name_refused(const struct moat_proxy_config *c, const char *name);

/* Is TLS to @name (normalized) terminated by the proxy? A secret's host or an
 * http rule's host always (when cfg->ca and cfg->upstream_tls are set); with
 * cfg->inspect_all every other name too, unless a no_inspect pattern
 * matches it. */
bool moat_proxy_intercepts(const struct moat_proxy_config *c, const char *name);

/*
 * The first bytes of a connection allowed by NAME (CONNECT, SOCKS5 or a
 * transparent connection whose name is known), read before the upstream is
 * dialled. One rule for every path (docs/NETWORK.md):
 *   - a TLS ClientHello must carry exactly one host_name SNI equal to @name
 *     after normalisation ("no-sni", "sni-mismatch"); a malformed or
 *     over-long hello is "tls-malformed"; an ECH/ESNI extension on a host
 *     that is not intercepted is "tls-ech" (the outer SNI would not be the
 *     name served). An intercepted host gives INTERCEPT, others TLS;
 *   - anything else on port 443 is "not-tls";
 *   - elsewhere, plain bytes must be an HTTP/1 request whose Host names
 *     @name (and the port, if it has one): HTTP (every later request on the
 *     connection is parsed and checked the same way); no Host is "no-host",
 *     another one "host-mismatch", other bytes "not-tls-or-http".
 * Raw protocols and server-speaks-first protocols need an address rule
 * (--allow-cidr). @final: no more bytes will come (EOF or buffer full).
 * Returns an enum moat_proxy_first; ret->reason is set for DENY, ret->sni
 * whenever a ClientHello named a host.
 */
enum moat_proxy_first {
	MOAT_PROXY_FIRST_MORE = 0,
	MOAT_PROXY_FIRST_TLS,
	MOAT_PROXY_FIRST_INTERCEPT,
	MOAT_PROXY_FIRST_HTTP,
	MOAT_PROXY_FIRST_DENY,
};

struct moat_proxy_first_info {
	const char *reason; /* static token for DENY */
	char sni[MOAT_HOST_BUFSZ]; /* "" if none */
};

int moat_proxy_check_first(const struct moat_proxy_config *c, const char *name, uint16_t port,
			   const void *buf, size_t len, bool final,
			   struct moat_proxy_first_info *ret);

/* True if @sa (port ignored) is one of d->addrs. */
bool moat_proxy_decision_has_addr(const struct moat_proxy_decision *d, const struct sockaddr *sa);

/* ---- the worker ----------------------------------------------------------- */

/*
 * Run the proxy until the supervisor goes away (or SIGTERM). Takes ownership
 * of the descriptors in @fds (negative ones are skipped, so tests may run a
 * subset) and of @event_fd (JSON lines, one per decision; -1 = none). Sets
 * PR_SET_DUMPABLE 0 and PR_SET_PDEATHSIG SIGKILL, forks the resolver helper,
 * then (unless cfg->no_seccomp) installs its seccomp filter. Returns only on
 * error (-errno) or on stop (0); the caller should _exit() with it.
 */
int moat_proxy_main(const struct moat_proxy_config *cfg, const struct moat_netns_fds *fds,
		    int event_fd);
