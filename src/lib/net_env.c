/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "lib/net_env.h"

#include <errno.h>

#include "lib/errors.h"
#include "lib/policy.h"
#include "lib/run.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

int moat_net_proxy_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	static const char *const vars[][2] = {
		{"HTTP_PROXY", "http://127.0.0.1:3128"},
		{"http_proxy", "http://127.0.0.1:3128"},
		{"HTTPS_PROXY", "http://127.0.0.1:3128"},
		{"https_proxy", "http://127.0.0.1:3128"},
		{"ALL_PROXY", "socks5h://127.0.0.1:1080"},
		{"all_proxy", "socks5h://127.0.0.1:1080"},
		{"NO_PROXY", "localhost,127.0.0.1,::1"},
		{"no_proxy", "localhost,127.0.0.1,::1"},
	};
	int k;

	for (size_t i = 0; i < ELEMENTSOF(vars); i++)
		if ((k = push(r, vars[i][0], vars[i][1])) < 0)
			return k;
	return 0;
}

bool moat_net_needs_credentials(const struct moat_policy *p)
{
	return p->n_secrets || p->n_http_rules || p->inspect_tls_all;
}

int moat_net_check_rules(struct moat_run *r)
{
	struct moat_proxy_config *c = NULL;
	int k = moat_proxy_config_from_policy(r->p, &c);

	moat_proxy_config_free(c);
	if (k < 0)
		return moat_error_set(r->err, "network", -k, "invalid network rule");
	return 0;
}
