/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy's decisions (pure) and its configuration from the policy. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

static bool ports_have(const uint16_t *ports, unsigned n, uint16_t port, bool empty_is_web)
{
	if (n == 0)
		return empty_is_web ? (port == 80 || port == 443) : true;
	for (unsigned i = 0; i < n; i++)
		if (ports[i] == port)
			return true;
	return false;
}

static void deny(struct moat_proxy_decision *d, const char *reason)
{
	d->allow = false;
	d->reason = reason;
	d->n_addrs = 0;
}

static const struct moat_proxy_cidr_rule *cidr_match(const struct moat_proxy_config *c,
						     const struct sockaddr *sa, uint16_t port)
{
	for (unsigned i = 0; i < c->n_cidrs; i++) {
		const struct moat_proxy_cidr_rule *r = &c->cidrs[i];
		if (!moat_cidr_contains(&r->cidr, sa) ||
		    !ports_have(r->ports, r->n_ports, port, false))
			continue;
		/* A metadata address needs a rule naming exactly it: a broad
		 * range rule must not open the cloud's credential service. */
		if ((moat_addr_classify(sa) & MOAT_ADDR_METADATA) &&
		    r->cidr.prefix != (r->cidr.family == AF_INET ? 32u : 128u))
			continue;
		return r;
	}
	return NULL;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = htons(port);
	else if (ss->ss_family == AF_INET6)
		((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

void moat_proxy_decide(const struct moat_proxy_config *c, enum moat_host_kind kind,
		       const char *host, uint16_t port, struct moat_proxy_decision *d)
{
	const struct moat_proxy_host_rule *name_hit = NULL;
	bool resolved = false;

	memset(d, 0, sizeof(*d));
	d->reason = "not-allowed";
	if (port == 0) {
		deny(d, "bad-port");
		return;
	}

	if (kind != MOAT_HOST_NAME) {
		struct sockaddr_storage ss;
		const struct moat_proxy_cidr_rule *r;
		/* An IP literal never matches a name rule (RT-046), only a CIDR. */
		if (moat_addr_parse(host, &ss) < 0) {
			deny(d, "bad-address");
			return;
		}
		set_port(&ss, port);
		r = cidr_match(c, (struct sockaddr *)&ss, port);
		if (!r) {
			unsigned flags = moat_addr_classify((struct sockaddr *)&ss);
			deny(d,
			     (flags & MOAT_ADDR_DENY_MASK) ? moat_addr_flags_reason(flags)
							   : "ip-literal");
			if (!(flags & MOAT_ADDR_METADATA))
				snprintf(d->rule, sizeof(d->rule), "--allow-cidr %s/%u:%u", host,
					 kind == MOAT_HOST_IPV4 ? 32u : 128u, port);
			return;
		}
		d->allow = true;
		d->reason = "allow-cidr";
		snprintf(d->rule, sizeof(d->rule), "--allow-cidr %s", r->text);
		d->addrs[0] = ss;
		d->n_addrs = 1;
		return;
	}

	for (unsigned i = 0; i < c->n_deny; i++)
		if (moat_host_pattern_match(c->deny[i].pattern, host)) {
			deny(d, "deny-host");
			return;
		}
	for (unsigned i = 0; i < c->n_resolve; i++)
		if (streq(c->resolve[i].name, host))
			resolved = true;
	/* Metadata and site-local names are refused before any lookup unless
	 * the operator mapped the exact name. */
	if (!resolved) {
		const char *special = moat_host_special_reason(host);
		if (special) {
			deny(d, special);
			if (!streq(special, "metadata"))
				snprintf(d->rule, sizeof(d->rule),
					 "--allow-host %s:%u --resolve %s=ADDR", host, port, host);
			return;
		}
	}
	for (unsigned i = 0; i < c->n_allow; i++) {
		const struct moat_proxy_host_rule *r = &c->allow[i];
		if (!moat_host_pattern_match(r->pattern, host))
			continue;
		name_hit = r;
		if (ports_have(r->ports, r->n_ports, port, true)) {
			d->allow = true;
			d->reason = "allow-host";
			if (r->n_ports == 0)
				snprintf(d->rule, sizeof(d->rule), "--allow-host %s", r->pattern);
			else
				snprintf(d->rule, sizeof(d->rule), "--allow-host %s:%u", r->pattern,
					 port);
			break;
		}
	}
	if (!d->allow) {
		deny(d, name_hit ? "port-not-allowed" : "not-allowed");
		snprintf(d->rule, sizeof(d->rule), "--allow-host %s:%u", host, port);
		return;
	}
	if (resolved) {
		for (unsigned i = 0; i < c->n_resolve && d->n_addrs < MOAT_PROXY_MAX_ADDRS; i++)
			if (streq(c->resolve[i].name, host)) {
				d->addrs[d->n_addrs] = c->resolve[i].addr;
				set_port(&d->addrs[d->n_addrs], port);
				d->n_addrs++;
			}
	}
}

void moat_proxy_check_addrs(const struct moat_proxy_config *c, const char *host, uint16_t port,
			    const struct sockaddr_storage *addrs, unsigned n,
			    struct moat_proxy_decision *d)
{
	static const char *const reasons[] = {
		"resolved-loopback",  "resolved-private",     "resolved-link-local",
		"resolved-cgnat",     "resolved-unspecified", "resolved-multicast",
		"resolved-broadcast", "resolved-reserved",    "resolved-metadata",
	};
	unsigned k = 0;

	if (!d->allow)
		return;
	if (n == 0) {
		deny(d, "no-address");
		d->rule[0] = 0;
		return;
	}
	for (unsigned i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		unsigned flags;

		moat_addr_unmap((const struct sockaddr *)&addrs[i], &ss);
		set_port(&ss, port);
		flags = moat_addr_classify((struct sockaddr *)&ss) & MOAT_ADDR_DENY_MASK;
		if (flags && !cidr_match(c, (struct sockaddr *)&ss, port)) {
			/* One bad answer taints the whole name (rebinding). */
			const char *why = moat_addr_flags_reason(flags);
			d->reason = "resolved-reserved";
			for (unsigned j = 0; j < ELEMENTSOF(reasons); j++)
				if (streq(reasons[j] + strlen("resolved-"), why))
					d->reason = reasons[j];
			d->allow = false;
			d->n_addrs = 0;
			if (moat_addr_format((struct sockaddr *)&ss, false, d->refused_addr,
					     sizeof(d->refused_addr)) < 0)
				d->refused_addr[0] = 0;
			if (flags & MOAT_ADDR_METADATA)
				d->rule[0] = 0;
			else
				snprintf(d->rule, sizeof(d->rule), "--resolve %s=ADDR", host);
			return;
		}
		if (k < MOAT_PROXY_MAX_ADDRS)
			d->addrs[k++] = ss;
	}
	d->n_addrs = k;
}

const char *moat_proxy_name_refused(const struct moat_proxy_config *c, const char *name)
{
	bool resolved = false;

	for (unsigned i = 0; i < c->n_deny; i++)
		if (moat_host_pattern_match(c->deny[i].pattern, name))
			return "deny-host";
	for (unsigned i = 0; i < c->n_resolve; i++)
		if (streq(c->resolve[i].name, name))
			resolved = true;
	if (!resolved) {
		const char *special = moat_host_special_reason(name);
		if (special)
			return special;
	}
	for (unsigned i = 0; i < c->n_allow; i++)
		if (moat_host_pattern_match(c->allow[i].pattern, name))
			return NULL;
	return "not-allowed";
}

bool moat_proxy_decision_has_addr(const struct moat_proxy_decision *d, const struct sockaddr *sa)
{
	struct sockaddr_storage a;

	moat_addr_unmap(sa, &a);
	for (unsigned i = 0; i < d->n_addrs; i++) {
		const struct sockaddr_storage *b = &d->addrs[i];
		if (a.ss_family != b->ss_family)
			continue;
		if (a.ss_family == AF_INET &&
		    ((struct sockaddr_in *)&a)->sin_addr.s_addr ==
			    ((const struct sockaddr_in *)b)->sin_addr.s_addr)
			return true;
		if (a.ss_family == AF_INET6 &&
		    memcmp(&((struct sockaddr_in6 *)&a)->sin6_addr,
			   &((const struct sockaddr_in6 *)b)->sin6_addr, 16) == 0)
			return true;
	}
	return false;
}

/* ---- configuration from the policy ---------------------------------------- */

struct moat_proxy_config *moat_proxy_config_free(struct moat_proxy_config *c)
{
	if (!c)
		return NULL;
	free(c->allow);
	free(c->deny);
	free(c->cidrs);
	free(c->resolve);
	free(c->no_inspect);
	free(c);
	return NULL;
}

static int host_rules(const struct moat_host_rule *in, unsigned n,
		      struct moat_proxy_host_rule **ret)
{
	struct moat_proxy_host_rule *out;

	*ret = NULL;
	if (n == 0)
		return 0;
	if (n > MOAT_MAX_RULES)
		return -E2BIG;
	out = calloc(n, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		if (!in[i].pattern ||
		    moat_host_pattern_normalize(in[i].pattern, out[i].pattern,
						sizeof(out[i].pattern)) < 0 ||
		    in[i].n_ports > MOAT_PROXY_MAX_PORTS) {
			free(out);
			return -EINVAL;
		}
		memcpy(out[i].ports, in[i].ports, sizeof(uint16_t) * in[i].n_ports);
		out[i].n_ports = in[i].n_ports;
	}
	*ret = out;
	return 0;
}

int moat_proxy_config_from_policy(const struct moat_policy *p, struct moat_proxy_config **ret)
{
	struct moat_proxy_config *c = calloc(1, sizeof(*c));
	int r;

	if (!c)
		return -ENOMEM;
	r = host_rules(p->allow_hosts, p->n_allow_hosts, &c->allow);
	if (r >= 0) {
		c->n_allow = p->n_allow_hosts;
		r = host_rules(p->deny_hosts, p->n_deny_hosts, &c->deny);
	}
	if (r >= 0) {
		c->n_deny = p->n_deny_hosts;
		if (p->n_allow_cidrs > MOAT_MAX_RULES || p->n_resolve > MOAT_MAX_RULES)
			r = -E2BIG;
	}
	if (r >= 0 && p->n_allow_cidrs) {
		c->cidrs = calloc(p->n_allow_cidrs, sizeof(*c->cidrs));
		if (!c->cidrs)
			r = -ENOMEM;
		for (unsigned i = 0; r >= 0 && i < p->n_allow_cidrs; i++) {
			const struct moat_host_rule *h = &p->allow_cidrs[i];
			struct moat_proxy_cidr_rule *o = &c->cidrs[i];
			if (!h->pattern || moat_cidr_parse(h->pattern, &o->cidr) < 0 ||
			    h->n_ports > MOAT_PROXY_MAX_PORTS) {
				r = -EINVAL;
				break;
			}
			moat_cidr_format(&o->cidr, o->text, sizeof(o->text));
			memcpy(o->ports, h->ports, sizeof(uint16_t) * h->n_ports);
			o->n_ports = h->n_ports;
			c->n_cidrs++;
		}
	}
	if (r >= 0 && p->n_resolve) {
		c->resolve = calloc(p->n_resolve, sizeof(*c->resolve));
		if (!c->resolve)
			r = -ENOMEM;
		for (unsigned i = 0; r >= 0 && i < p->n_resolve; i++) {
			struct moat_proxy_resolve *o = &c->resolve[i];
			if (!p->resolve[i].name || !p->resolve[i].addr ||
			    moat_host_normalize(p->resolve[i].name, o->name, sizeof(o->name)) < 0 ||
			    moat_addr_parse(p->resolve[i].addr, &o->addr) < 0) {
				r = -EINVAL;
				break;
			}
			c->n_resolve++;
		}
	}
	if (r >= 0 && p->n_no_inspect) {
		if (p->n_no_inspect > MOAT_MAX_RULES)
			r = -E2BIG;
		else if (!(c->no_inspect = calloc(p->n_no_inspect, sizeof(*c->no_inspect))))
			r = -ENOMEM;
		for (unsigned i = 0; r >= 0 && i < p->n_no_inspect; i++) {
			if (!p->no_inspect[i] ||
			    moat_host_pattern_normalize(p->no_inspect[i], c->no_inspect[i].pattern,
							sizeof(c->no_inspect[i].pattern)) < 0) {
				r = -EINVAL;
				break;
			}
			c->n_no_inspect++;
		}
	}
	c->inspect_all = p->inspect_tls_all;
	if (r < 0) {
		moat_proxy_config_free(c);
		return r;
	}
	*ret = c;
	return 0;
}
