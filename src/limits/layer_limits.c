/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The limits layer: cgroups (v1, v2, hybrid: cgroup*.c behind limits.c),
 * rlimits, the wall-clock limit, disk and output. Supervisor side in
 * supervise_limits.c (the group made before clone, the init attached after
 * it, accounting and removal); inside, the init joins its v1 groups, caps
 * its share of per-user kernel objects and sets its rlimits (sandbox.c,
 * steps "limits").
 */
#include "supervisor/layer.h"
#include "policy/plan.h"
#include "limits/supervise_limits.h"
#include "limits/disk_watch.h"

static int limits_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	const struct moat_plan_limits *l = &pl->limits;
	int k = moat_layer_view_add(v, "cgroup cpus_milli=%llu memory=%llu pids=%llu",
				    (unsigned long long)l->cg.cpus_milli,
				    (unsigned long long)l->cg.memory,
				    (unsigned long long)l->cg.pids);
	if (k >= 0)
		k = moat_layer_view_add(v, "without-cgroup %s",
					l->may_degrade ? "rlimits (--allow-degraded cgroup)"
						       : "refused");
	if (k >= 0)
		k = moat_layer_view_add(v, "rlimit core=0 nofile=%llu fsize=%llu",
					(unsigned long long)l->rl.nofile,
					(unsigned long long)l->rl.fsize);
	if (k >= 0 && l->may_degrade)
		k = moat_layer_view_add(v, "rlimit-degraded as=%llu nproc=%llu",
					(unsigned long long)l->rl_degraded.as,
					(unsigned long long)l->rl_degraded.nproc);
	if (k >= 0)
		k = moat_layer_view_add(v, "timeout_ms %llu grace_ms %llu",
					(unsigned long long)l->timeout_ms,
					(unsigned long long)l->kill_grace_ms);
	if (k >= 0)
		k = moat_layer_view_add(v, "disk %llu", (unsigned long long)l->disk);
	if (k >= 0)
		k = moat_layer_view_add(v, "max_output %llu", (unsigned long long)l->max_output);
	return k;
}

static int limits_finish(struct moat_run *r, int k)
{
	moat_supervise_limits_finish(r);
	return k;
}

static int limits_watch(struct moat_run *r, int epfd, uint32_t tag)
{
	return moat_disk_watch_start(r, epfd, tag);
}

static void limits_dispatch(struct moat_run *r, uint32_t sub, uint32_t events)
{
	(void)sub;
	(void)events;
	moat_disk_watch_tick(r);
}

const struct moat_layer_ops moat_layer_limits = {
	.name = "limits",
	.derive = limits_derive,
	.prepare = moat_supervise_limits_prepare,
	.child = moat_supervise_limits_child,
	.take_fd = moat_disk_watch_take_fd,
	.watch = limits_watch,
	.dispatch = limits_dispatch,
	.finish = limits_finish,
	.teardown = moat_supervise_limits_teardown,
};
