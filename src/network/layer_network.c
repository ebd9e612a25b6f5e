/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The network layer: the plan's network part (plan_parts.c). --net none:
 * the sandbox's own namespace with loopback only; --net allow: the egress
 * proxy's listeners and capture rules in that namespace, set up by a child
 * of the init (hook_net.c, sandbox.c steps "network"), the proxy helper
 * started and served by the supervisor (supervise_net.c).
 */
#include <sched.h>
#include <stdio.h>
#include <string.h>

#include "supervisor/layer.h"
#include "policy/plan.h"
#include "network/supervise_net.h"

static const char *mode_name(enum moat_net_mode m)
{
	return m == MOAT_NET_ALLOW ? "allow" : m == MOAT_NET_HOST ? "host" : "none";
}

static int put_rules(struct moat_layer_view *v, const char *what, const struct moat_host_rule *r,
		     unsigned n)
{
	int k = 0;
	for (unsigned i = 0; i < n && k >= 0; i++) {
		char ports[8 * MOAT_MAX_PORTS] = "default";
		size_t used = 0;
		for (unsigned j = 0; j < r[i].n_ports && used + 8 < sizeof(ports); j++)
			used += (size_t)snprintf(ports + used, sizeof(ports) - used, "%s%u",
						 j ? "," : "", r[i].ports[j]);
		k = moat_layer_view_add(v, "%s %s %s", what, r[i].pattern, ports);
	}
	return k;
}

static int network_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	const struct moat_plan_net *n = &pl->net;
	int k = moat_layer_view_add(v, "mode %s", mode_name(n->mode));
	if (k >= 0)
		k = moat_layer_view_add(v, "namespace %s",
					(pl->id.clone_flags & CLONE_NEWNET) ? "own, lo up"
									    : "host's");
	if (k >= 0 && n->record_attempts)
		k = moat_layer_view_add(v, "record attempts (seccomp)");
	if (n->mode != MOAT_NET_ALLOW || k < 0)
		return k;
	for (unsigned i = 0; i < n->n_listeners && k >= 0; i++)
		k = moat_layer_view_add(v, "listener %s %s:%u %s", n->listeners[i].what,
					n->listeners[i].addr, n->listeners[i].port,
					n->listeners[i].proto);
	for (unsigned i = 0; i < n->n_env && k >= 0; i++)
		k = moat_layer_view_add(v, "env %s=%s", n->env[i][0], n->env[i][1]);
	/* the capture rules, line by line, as netns.c loads them */
	for (const char *p = n->nft; *p && k >= 0;) {
		const char *nl = strchr(p, '\n');
		int len = nl ? (int)(nl - p) : (int)strlen(p);
		while (len > 0 && *p == ' ')
			p++, len--;
		k = moat_layer_view_add(v, "nft %.*s", len, p);
		p = nl ? nl + 1 : p + len;
	}
	if (k >= 0)
		k = put_rules(v, "allow", n->allow, n->n_allow);
	if (k >= 0)
		k = put_rules(v, "deny", n->deny, n->n_deny);
	if (k >= 0)
		k = put_rules(v, "cidr", n->cidrs, n->n_cidrs);
	for (unsigned i = 0; i < n->n_resolve && k >= 0; i++)
		k = moat_layer_view_add(v, "resolve %s %s", n->resolve[i].name, n->resolve[i].addr);
	if (k >= 0)
		k = moat_layer_view_add(v, "rules %s", n->rules_error ? "invalid" : "valid");
	return k;
}

static int network_finish(struct moat_run *r, int k)
{
	moat_net_finish(r);
	return k;
}

static void network_dispatch(struct moat_run *r, uint32_t sub, uint32_t events)
{
	moat_net_dispatch(r);
}

const struct moat_layer_ops moat_layer_network = {
	.name = "network",
	.derive = network_derive,
	.env = moat_net_env_proxy,
	.prepare = moat_net_prepare,
	.started = moat_net_started,
	.take_fd = moat_net_take_fd,
	.watch = moat_net_start,
	.dispatch = network_dispatch,
	.finish = network_finish,
	.teardown = moat_net_teardown,
};
