/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What the first bytes of a connection allowed by name must be (see
 * moat_proxy_check_first() in proxy.h), and which names are intercepted.
 * Pure code: the proxy calls this before it dials, so a refusal never
 * contacts the upstream. Lives in the network plugin (it needs the SNI, HTTP
 * and secrets code), not in the decision core.
 */
#include <stdio.h>
#include <string.h>

#include "proxy/http1.h"
#include "proxy/proxy.h"
#include "proxy/secrets.h"
#include "proxy/sni.h"
#include "shared/macro.h"

bool moat_proxy_intercepts(const struct moat_proxy_config *c, const char *name)
{
	if (!c->ca || !c->upstream_tls)
		return false;
	/* What credentials need is never switched off by --no-inspect (the
	 * policy refuses the combination; this is the second line). */
	if (c->secrets && moat_secrets_host_bound(c->secrets, name))
		return true;
	for (unsigned i = 0; i < c->n_http_rules; i++)
		if (moat_secrets_host_match(c->http_rules[i].host, name))
			return true;
	if (!c->inspect_all)
		return false;
	for (unsigned i = 0; i < c->n_no_inspect; i++)
		if (moat_host_pattern_match(c->no_inspect[i].pattern, name))
			return false;
	return true;
}

static int deny(struct moat_proxy_first_info *ret, const char *reason)
{
	ret->reason = reason;
	return MOAT_PROXY_FIRST_DENY;
}

int moat_proxy_check_first(const struct moat_proxy_config *c, const char *name, uint16_t port,
			   const void *buf, size_t len, bool final,
			   struct moat_proxy_first_info *ret)
{
	struct moat_sni_info si;
	bool icpt = moat_proxy_intercepts(c, name);
	int s;

	memset(ret, 0, sizeof(*ret));
	if (len == 0)
		return final ? deny(ret, "no-first-bytes") : MOAT_PROXY_FIRST_MORE;
	s = moat_sni_parse(buf, len, &si);
	switch (s) {
	case MOAT_SNI_NEED_MORE:
		return final ? deny(ret, "tls-malformed") : MOAT_PROXY_FIRST_MORE;
	case MOAT_SNI_FOUND:
		snprintf(ret->sni, sizeof(ret->sni), "%s", si.host);
		/* Both sides went through moat_host_normalize(): case, one
		 * trailing dot, LDH labels (IDNA names only as xn--). */
		if (!streq(si.host, name))
			return deny(ret, "sni-mismatch");
		/* Terminated here, an ECH extension is ignored by the proxy's
		 * TLS server and the upstream sees only the proxy's hello. */
		if (icpt)
			return MOAT_PROXY_FIRST_INTERCEPT;
		if (si.ech)
			return deny(ret, "tls-ech");
		return MOAT_PROXY_FIRST_TLS;
	case MOAT_SNI_NO_SNI:
		return deny(ret, "no-sni");
	case MOAT_SNI_NOT_TLS:
		break;
	default:
		return deny(ret, "tls-malformed");
	}
	/* Not TLS (also an SSLv2-style hello, whose first byte is 0x80). Plain
	 * HTTP to an intercepted host is fine: every request on the connection
	 * then goes through the same checks as on the HTTP proxy port. */
	if (port == 443)
		return deny(ret, "not-tls");
	{
		struct moat_http1_limits lim = {.max_head = c->max_head};
		struct moat_http1_request r;
		int n = moat_http1_parse_request(buf, len, &lim, &r);
		if (n == 0)
			return final ? deny(ret, "not-tls-or-http") : MOAT_PROXY_FIRST_MORE;
		if (n < 0 || r.is_connect || r.form != MOAT_HTTP1_FORM_ORIGIN)
			return deny(ret, "not-tls-or-http");
		if (!r.has_host)
			return deny(ret, "no-host");
		if (r.host_kind != MOAT_HOST_NAME || !streq(r.host, name) ||
		    (r.port_explicit && r.port != port))
			return deny(ret, "host-mismatch");
	}
	return MOAT_PROXY_FIRST_HTTP;
}
