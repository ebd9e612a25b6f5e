/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The DNS stub glue (UDP and TCP; proxy/dns.c parses and builds messages) and
 * the table of synthetic addresses it hands out and proxy_trans.c maps back. */
#include "proxy/proxy_int.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "proxy/dns.h"
#include "proxy/event.h"
#include "proxy/secrets.h"
#include "shared/macro.h"

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
	/* only a name no rule matched has a flag that would allow it */
	char rule[MOAT_PROXY_RULE_MAX];
	if (streq(why, "not-allowed")) {
		snprintf(rule, sizeof(rule), "--allow-host %s", name);
		e.rule = rule;
	}
	(void)moat_proxy_event_write(p->event_fd, &e);
	return moat_dns_build_rcode_response(&q, MOAT_DNS_RCODE_NXDOMAIN, out, outlen);
}

void moat_proxy_on_dns_udp(struct moat_loop *l, int fd, uint32_t events, void *data)
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

void moat_proxy_dns_tcp_step(struct conn *c)
{
	for (;;) {
		const uint8_t *msg;
		size_t mlen;
		uint8_t out[2 + 1024];
		int n = moat_dns_tcp_unframe((const uint8_t *)c->in, c->in_len, &msg, &mlen);
		int k;

		if (n < 0) {
			moat_proxy_conn_close(c);
			return;
		}
		if (n == 0)
			break;
		k = dns_answer(c->p, msg, mlen, out + 2, sizeof(out) - 2, true);
		if (k > 0 &&
		    (moat_dns_tcp_prefix(out, (size_t)k) != 2 ||
		     moat_proxy_buf_add(&c->down, out, (size_t)k + 2) < 0)) {
			moat_proxy_conn_close(c);
			return;
		}
		moat_proxy_consume(c, (size_t)n);
	}
	if (c->client_eof) {
		moat_proxy_finish_with(c, NULL, 0);
		return;
	}
	moat_proxy_set_deadline(c, c->p->head_ms);
	moat_proxy_conn_update(c);
}

const char *moat_proxy_synth_lookup(struct proxy *p, const struct sockaddr_storage *ss)
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

bool moat_proxy_is_synth(const struct sockaddr_storage *ss)
{
	uint32_t a;
	if (ss->ss_family != AF_INET)
		return false;
	a = ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr);
	return (a >> (32 - MOAT_PROXY_SYNTH_PREFIX)) ==
		(MOAT_PROXY_SYNTH_NET >> (32 - MOAT_PROXY_SYNTH_PREFIX));
}
