/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "network/net_env.h"

#include <errno.h>

#include "policy/errors.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "supervisor/run.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

int moat_net_proxy_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	/* the proxy's variables are the plan's (plan_parts.c) */
	const struct moat_plan_net *n = &r->plan->net;
	int k;

	for (unsigned i = 0; i < n->n_env; i++)
		if ((k = push(r, n->env[i][0], n->env[i][1])) < 0)
			return k;
	return 0;
}

bool moat_net_needs_credentials(const struct moat_policy *p)
{
	/* the same condition as the plan's CA bundle step (plan.c) */
	return p->net == MOAT_NET_ALLOW && (p->n_secrets || p->n_http_rules || p->inspect_tls_all);
}

int moat_net_check_rules(struct moat_run *r)
{
	/* converted once, by the plan (plan_parts.c) */
	int k = r->plan->net.rules_error;

	if (k < 0)
		return moat_error_set(r->err, "network", -k, "invalid network rule");
	return 0;
}
