/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit layer: the run's audit stream and its sinks (the log file, the
 * --on-alert hook), the start, limit and exit records (observe.c, audit.c).
 * Last in the table: it opens even when a layer before it failed and writes
 * the exit record after every other layer finished, so that each failure
 * and each statistic is recorded.
 */
#include "supervisor/layer.h"
#include "audit/observe.h"
#include "policy/plan.h"

static int audit_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	const struct moat_plan_audit *a = &pl->audit;
	int k = moat_layer_view_add(v, "log %s%s", a->log_path ? a->log_path : "none",
				    a->log_path && a->log_sync ? " (synced before exit)" : "");
	if (k >= 0)
		k = moat_layer_view_add(v, "on-alert %s", a->on_alert ? a->on_alert : "none");
	if (k >= 0)
		k = moat_layer_view_add(v, "record-exec %s", a->record_exec ? "yes" : "no");
	return k;
}

const struct moat_layer_ops moat_layer_audit = {
	.name = "audit",
	.derive = audit_derive,
	.prepare = moat_observe_prepare,
	.started = moat_observe_start,
	.finish = moat_observe_finish,
	.teardown = moat_observe_teardown,
};
