/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Landlock layer: the plan's rules (plan_parts.c). The supervisor checks
 * that the kernel has Landlock or that the user let it go (restrict.c); the
 * init builds the ruleset before its capability drop and enforces it after
 * (hook_restrict.c, sandbox.c steps "landlock").
 */
#include "supervisor/layer.h"
#include "policy/plan.h"
#include "kernel/restrict.h"

static int landlock_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	const struct moat_plan_landlock *l = &pl->landlock;
	if (!moat_plan_landlock_on(pl))
		return moat_layer_view_add(v, "off (test build)");
	int k = moat_layer_view_add(v, "min_abi %d", l->min_abi);
	for (unsigned i = 0; i < l->n_rules && k >= 0; i++) {
		const struct moat_plan_landlock_rule *r = &l->rules[i];
		k = moat_layer_view_add(v, "path %s %s%s", r->path, r->writable ? "rw" : "ro",
					r->optional ? " optional" : "");
	}
	if (k >= 0)
		k = moat_layer_view_add(v, "tcp %s", l->net_none ? "none" : "any");
	if (k >= 0)
		k = moat_layer_view_add(v, "scope %s", l->scope ? "signals,abstract-unix" : "none");
	return k;
}

const struct moat_layer_ops moat_layer_landlock = {
	.name = "landlock",
	.derive = landlock_derive,
	.prepare = moat_restrict_prepare_landlock,
};
