/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The credentials layer: the plan's credentials part (plan_parts.c). Before
 * clone the supervisor makes the per-run CA and the placeholders (env), then
 * the CA bundle's directory, named in the run's state record, and the bundle
 * (prepare; supervise_net.c, through moat-net.so); the CA bundle is one of the plan's
 * bind steps, its source written at run time; the secrets' values are loaded
 * into the proxy helper with the network layer's start and never enter the
 * sandbox. Inside, the init wipes moat's own argv and environment, which may
 * name secrets (sandbox.c, step "credentials").
 */
#include "supervisor/layer.h"
#include "policy/plan.h"
#include "network/supervise_net.h"

static int credentials_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	const struct moat_plan_creds *c = &pl->creds;
	int k = moat_layer_view_add(v, "intercept %s", c->intercept ? "yes" : "no");
	if (k >= 0 && c->ca_step >= 0 && (unsigned)c->ca_step < pl->n_steps)
		k = moat_layer_view_add(v, "bind %s (per-run CA bundle, step %d)",
					pl->steps[c->ca_step].dest, c->ca_step);
	for (unsigned i = 0; i < c->n_ca_env && k >= 0; i++)
		k = moat_layer_view_add(v, "env %s=%s", c->ca_env[i], c->ca_dest);
	for (unsigned i = 0; i < c->n_secrets && k >= 0; i++) {
		const struct moat_secret *s = &c->secrets[i];
		k = moat_layer_view_add(v, "placeholder %s", s->name);
		for (unsigned j = 0; j < s->n_hosts && k >= 0; j++)
			k = moat_layer_view_add(v, "secret %s host %s", s->name, s->hosts[j]);
	}
	for (unsigned i = 0; i < c->n_http_rules && k >= 0; i++)
		k = moat_layer_view_add(v, "http-rule %s", c->http_rules[i].host);
	return k;
}

const struct moat_layer_ops moat_layer_credentials = {
	.name = "credentials",
	.derive = credentials_derive,
	.env = moat_net_env_credentials,
	.prepare = moat_net_prepare_credentials,
};
