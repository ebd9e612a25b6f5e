/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Network attempts under --net none: describe, aggregate, record (netrec.h). */
#include "network/netrec.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "audit/audit.h"
#include "moat/moat.h"
#include "proxy/dns.h"
#include "shared/macro.h"

static void proto_of(const char *sock_proto, char *out, size_t cap)
{
	static const struct {
		const char *prefix, *proto;
	} map[] = {{"TCP", "tcp"},   {"MPTCP", "mptcp"}, {"UDPLITE", "udplite"}, {"UDP", "udp"},
		   {"PING", "icmp"}, {"RAW", "raw"},	 {"SCTP", "sctp"}};
	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (startswith(sock_proto, map[i].prefix)) {
			snprintf(out, cap, "%s", map[i].proto);
			return;
		}
	snprintf(out, cap, "unknown");
}

static void qtype_name(uint16_t t, char *out, size_t cap)
{
	static const struct {
		uint16_t t;
		const char *n;
	} map[] = {{1, "A"},	  {28, "AAAA"}, {5, "CNAME"}, {15, "MX"},
		   {16, "TXT"},	  {33, "SRV"},	{12, "PTR"},  {2, "NS"},
		   {65, "HTTPS"}, {64, "SVCB"}, {6, "SOA"},   {255, "ANY"}};
	for (size_t i = 0; i < ELEMENTSOF(map); i++)
		if (map[i].t == t) {
			snprintf(out, cap, "%s", map[i].n);
			return;
		}
	snprintf(out, cap, "%u", t);
}

int moat_netrec_describe(const struct moat_seccomp_event *ev, unsigned i,
			 struct moat_netrec_attempt *ret)
{
	if (!ev || !ret || ev->type != MOAT_SECCOMP_EVENT_NET || i >= ev->n_dests ||
	    i >= MOAT_SECCOMP_EV_NET_DESTS)
		return -EINVAL;
	const struct moat_seccomp_net_dest *d = &ev->dests[i];
	struct moat_dns_query q;
	bool dns = false;

	memset(ret, 0, sizeof(*ret));
	if (d->ignored)
		return -ENOENT;
	if (d->has_addr && d->family != AF_INET && d->family != AF_INET6)
		return -ENOENT;
	/* A DNS query (UDP: the whole message; the parser refuses anything else). */
	if (d->payload_len && moat_dns_parse_query(d->payload, d->payload_len, &q) == 0)
		dns = true;
	if (!dns && (!d->has_addr || d->local))
		return -ENOENT; /* stays inside: loopback, or a connected socket's data */
	proto_of(ev->sock_proto, ret->proto, sizeof(ret->proto));
	if (d->has_addr || d->peer) {
		const uint8_t *a = d->addr;
		int fam = d->family;
		static const uint8_t mapped[12] = {[10] = 0xff, [11] = 0xff};
		if (fam == AF_INET6 && memcmp(a, mapped, 12) == 0) {
			a += 12;
			fam = AF_INET;
		}
		if (!inet_ntop(fam, a, ret->addr, sizeof(ret->addr)))
			ret->addr[0] = 0;
		ret->port = d->port;
	}
	if (dns) {
		snprintf(ret->name, sizeof(ret->name), "%.*s", (int)sizeof(ret->name) - 1, q.name);
		qtype_name(q.qtype, ret->qtype, sizeof(ret->qtype));
		if (q.name_plain && q.name[0])
			snprintf(ret->suggest, sizeof(ret->suggest), "--allow-host %s", ret->name);
		else
			snprintf(ret->suggest, sizeof(ret->suggest), "--net allow");
		/* A and AAAA of one name, and the resolver's retries: one destination. */
		snprintf(ret->key, sizeof(ret->key), "dns %s", ret->name);
		return 0;
	}
	bool v6 = strchr(ret->addr, ':') != NULL;
	snprintf(ret->suggest, sizeof(ret->suggest), "--allow-cidr %s/%d", ret->addr,
		 v6 ? 128 : 32);
	snprintf(ret->key, sizeof(ret->key), "%s %s%s%s:%u", ret->proto, v6 ? "[" : "", ret->addr,
		 v6 ? "]" : "", ret->port);
	return 0;
}

struct netrec_dest {
	char key[300];
	char dest[300]; /* for the summary: "NAME (dns)" or "ADDR:PORT/proto" */
	char suggest[300];
	uint64_t count;
	struct moat_netrec_attempt t; /* the first attempt: the fields */
};

struct moat_netrec {
	struct netrec_dest dests[MOAT_NETREC_MAX_DESTS];
	unsigned n;
	uint64_t overflow; /* attempts to destinations past the cap */
	bool limit_written;
};

struct moat_netrec *moat_netrec_new(void)
{
	return calloc(1, sizeof(struct moat_netrec));
}

struct moat_netrec *moat_netrec_free(struct moat_netrec *n)
{
	free(n);
	return NULL;
}

static struct netrec_dest *find(struct moat_netrec *n, const char *key)
{
	for (unsigned i = 0; i < n->n; i++)
		if (streq(n->dests[i].key, key))
			return &n->dests[i];
	return NULL;
}

static void write_attempt(struct moat_audit *a, const struct moat_seccomp_event *ev,
			  const struct moat_netrec_attempt *t)
{
	const char *addr = t->addr[0] ? t->addr : NULL;
	const char *name = t->name[0] ? t->name : NULL;
	MOAT_AUDIT(a, MOAT_EV_NET, MOAT_F_STR("proto", t->proto), MOAT_F_STR("host", name),
		   MOAT_F_STR("addr", addr), MOAT_F_UINT("port", t->port),
		   MOAT_F_STR("qtype", t->qtype[0] ? t->qtype : NULL), MOAT_F_STR("action", "deny"),
		   MOAT_F_STR("reason", "network-none"), MOAT_F_STR("suggest", t->suggest),
		   MOAT_F_STR("syscall", ev->syscall), MOAT_F_INT("pid", ev->pid),
		   MOAT_F_INT("ppid", ev->ppid), MOAT_F_STR("exe", ev->exe),
		   MOAT_F_STR("layer", "seccomp"), MOAT_F_DENIED);
	MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "net_denied"),
		   MOAT_F_STR("proto", t->proto), MOAT_F_STR("host", name ? name : addr),
		   MOAT_F_UINT("port", t->port), MOAT_F_STR("reason", "network-none"),
		   MOAT_F_STR("suggest", t->suggest));
}

unsigned moat_netrec_record(struct moat_netrec *n, struct moat_audit *a,
			    const struct moat_seccomp_event *ev)
{
	struct moat_netrec_attempt t;
	char seen[MOAT_SECCOMP_EV_NET_DESTS][sizeof(t.key)];
	unsigned attempts = 0, n_seen = 0;

	if (!n || !ev || ev->type != MOAT_SECCOMP_EVENT_NET)
		return 0;
	for (unsigned i = 0; i < ev->n_dests && i < MOAT_SECCOMP_EV_NET_DESTS; i++) {
		if (moat_netrec_describe(ev, i, &t) < 0)
			continue;
		/* one sendmmsg of A and AAAA for one name is one attempt */
		bool dup = false;
		for (unsigned j = 0; j < n_seen; j++)
			dup = dup || streq(seen[j], t.key);
		if (dup)
			continue;
		snprintf(seen[n_seen++], sizeof(seen[0]), "%s", t.key);
		attempts++;
		struct netrec_dest *d = find(n, t.key);
		if (d) {
			d->count++;
			continue;
		}
		if (n->n >= MOAT_NETREC_MAX_DESTS) {
			n->overflow++;
			if (!n->limit_written) {
				n->limit_written = true;
				MOAT_AUDIT(a, MOAT_EV_LIMIT, MOAT_F_STR("what", "net_records"),
					   MOAT_F_UINT("limit", MOAT_NETREC_MAX_DESTS));
			}
			continue;
		}
		d = &n->dests[n->n++];
		snprintf(d->key, sizeof(d->key), "%s", t.key);
		if (t.name[0])
			snprintf(d->dest, sizeof(d->dest), "%s (dns)", t.name);
		else if (strchr(t.addr, ':'))
			snprintf(d->dest, sizeof(d->dest), "[%s]:%u/%s", t.addr, t.port, t.proto);
		else
			snprintf(d->dest, sizeof(d->dest), "%s:%u/%s", t.addr, t.port, t.proto);
		snprintf(d->suggest, sizeof(d->suggest), "%s", t.suggest);
		d->t = t;
		d->count = 1;
		write_attempt(a, ev, &t);
	}
	return attempts;
}

static int by_count(const void *x, const void *y)
{
	const struct netrec_dest *a = x, *b = y;
	return a->count < b->count ? 1 : a->count > b->count ? -1 : 0;
}

unsigned moat_netrec_top(struct moat_netrec *n, struct moat_denied *out, unsigned max)
{
	unsigned i;
	if (!n || !n->n || !out)
		return 0;
	/* sorted in place: called once, at the end of the run */
	struct netrec_dest *sorted = n->dests;
	qsort(sorted, n->n, sizeof(sorted[0]), by_count);
	for (i = 0; i < n->n && i < max; i++) {
		out[i].count = sorted[i].count;
		snprintf(out[i].destination, sizeof(out[i].destination), "%s", sorted[i].dest);
		snprintf(out[i].rule, sizeof(out[i].rule), "%s", sorted[i].suggest);
		const struct moat_netrec_attempt *t = &sorted[i].t;
		out[i].dns = t->name[0] != 0;
		snprintf(out[i].host, sizeof(out[i].host), "%s", t->name);
		snprintf(out[i].addr, sizeof(out[i].addr), "%s", out[i].dns ? "" : t->addr);
		out[i].port = out[i].dns ? 0 : t->port;
		snprintf(out[i].proto, sizeof(out[i].proto), "%s", t->proto);
		snprintf(out[i].reason, sizeof(out[i].reason), "network-none");
	}
	return i;
}
