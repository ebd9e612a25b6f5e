/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Transparent connections (nftables redirect): the original destination, a
 * synthetic address's name, or the name the first bytes give (SNI or Host). */
#include "proxy/proxy_int.h"

#include <arpa/inet.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>

#include "shared/macro.h"

void moat_proxy_trans_start(struct conn *c, bool v6)
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
		moat_proxy_refuse(c, 403, "no-original-destination", NULL);
		return;
	}
	moat_addr_unmap((struct sockaddr *)&ss, &c->odst);
	c->have_odst = true;
	c->port =
		ntohs(c->odst.ss_family == AF_INET ? ((struct sockaddr_in *)&c->odst)->sin_port
						   : ((struct sockaddr_in6 *)&c->odst)->sin6_port);
	moat_addr_format((struct sockaddr *)&c->odst, true, c->raw, sizeof(c->raw));
	if (moat_proxy_is_synth(&c->odst)) {
		const char *name = moat_proxy_synth_lookup(p, &c->odst);
		if (!name || !*name) {
			moat_proxy_refuse(c, 403, "unknown-synthetic-address", NULL);
			return;
		}
		snprintf(c->name, sizeof(c->name), "%s", name);
		c->hkind = MOAT_HOST_NAME;
		moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
		if (!c->d.allow) {
			moat_proxy_refuse(c, 403, c->d.reason, c->d.rule);
			return;
		}
		c->by_name = true;
		moat_proxy_go(c);
		return;
	}
	/* An address a CIDR rule allows needs no name. */
	moat_addr_format((struct sockaddr *)&c->odst, false, c->name, sizeof(c->name));
	c->hkind = c->odst.ss_family == AF_INET ? MOAT_HOST_IPV4 : MOAT_HOST_IPV6;
	moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
	if (c->d.allow) {
		moat_proxy_go(c);
		return;
	}
	/* Otherwise the name comes from the first bytes (SNI or Host). */
	c->state = S_PEEK;
	moat_proxy_set_deadline(c, p->head_ms);
	moat_proxy_conn_update(c);
}

void moat_proxy_peek_step(struct conn *c)
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
			moat_proxy_refuse(c, 403, n < 0 ? moat_http1_strerror(n) : c->d.reason,
					  c->d.rule);
			return;
		}
		moat_http1_slice_copy(r.method, c->method, sizeof(c->method));
		snprintf(c->name, sizeof(c->name), "%s", r.host);
	} else if (s == MOAT_SNI_NO_SNI) {
		/* Only an address rule allows TLS without a name. */
		moat_proxy_refuse(c, 403, "no-sni", c->d.rule);
		return;
	} else {
		moat_proxy_refuse(c, 403, "tls-malformed", NULL);
		return;
	}
	c->hkind = MOAT_HOST_NAME;
	c->peeked = true;
	moat_proxy_decide(p->cfg, c->hkind, c->name, c->port, &c->d);
	if (!c->d.allow) {
		moat_proxy_refuse(c, 403, c->d.reason, c->d.rule);
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
			moat_proxy_refuse(c, 403, fi.reason, NULL);
			return;
		}
		c->by_name = true;
		c->first = f;
	}
	if (c->d.n_addrs > 0) {
		/* --resolve pins the name: the original address must be it. */
		if (!moat_proxy_decision_has_addr(&c->d, (struct sockaddr *)&c->odst)) {
			moat_proxy_refuse(c, 403, "original-destination-mismatch", NULL);
			return;
		}
		c->d.addrs[0] = c->odst;
		c->d.n_addrs = 1;
	}
	moat_proxy_go(c);
	return;
more:
	if (c->client_eof || c->in_len >= p->in_cap)
		moat_proxy_refuse(c, 403, "no-name", NULL);
	else
		moat_proxy_conn_update(c);
}
