/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The workspace layer: the workspace's step (an overlay whose upper layer
 * the init hands over, or a writable bind), /output, and after the run the
 * change manifest, its review against the flag rules (built-in and the
 * policy's) and what is applied to the workspace (observe.c, fsdiff*.c,
 * review.c). It finishes just before the audit layer writes the exit record.
 */
#include "workspace/fsdiff.h"
#include "supervisor/layer.h"
#include "audit/observe.h"
#include "policy/plan.h"

static const char *apply_name(enum moat_apply_mode m)
{
	return m == MOAT_APPLY_NEVER ? "never" : m == MOAT_APPLY_ALL ? "all" : "safe";
}

static int workspace_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	const struct moat_plan_audit *a = &pl->audit;
	int k = 0;
	for (unsigned i = 0; i < pl->n_steps && k >= 0; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (s->flags & MOAT_STEPF_WORKSPACE)
			k = moat_layer_view_add(v, "workspace %s %s %s", s->dest,
						s->op == MOAT_STEP_OVERLAY ? "overlay" : "bind",
						s->op == MOAT_STEP_OVERLAY ? "reviewed"
							: (s->flags & MOAT_STEPF_RO)
							? "read-only"
							: "written directly");
		else if (s->flags & MOAT_STEPF_OUTPUT)
			k = moat_layer_view_add(v, "output %s", s->dest);
	}
	if (k >= 0)
		k = moat_layer_view_add(v, "apply %s", apply_name(a->apply));
	if (k >= 0)
		k = moat_layer_view_add(v, "held_max %llu", (unsigned long long)a->held_max);
	for (size_t i = 0; i < moat_flag_builtin_count && k >= 0; i++)
		k = moat_layer_view_add(v, "flag %s (built in)", moat_flag_builtin[i].pattern);
	for (unsigned i = 0; i < a->n_flag_patterns && k >= 0; i++)
		k = moat_layer_view_add(v, "flag %s (policy)", a->flag_patterns[i]);
	return k;
}

const struct moat_layer_ops moat_layer_workspace = {
	.name = "workspace",
	.derive = workspace_derive,
	.finish = moat_observe_finish_workspace,
};
