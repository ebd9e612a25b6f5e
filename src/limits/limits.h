/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/limits/: the limits layer: cgroup v1/v2/hybrid behind one ops table, rlimits,
 * the supervisor's cgroup steps and the state record
 */
/*
 * The glue between a policy's limits and the cgroup/rlimit code, so spawn.c
 * needs only a few calls: setup before clone, attach/fd around clone, rlimits
 * in the child, finish (statistics and reasons) and teardown after the run.
 *
 * Fail-closed rule: a CPU, memory or pids limit the user asked for explicitly
 * (policy->limits_set) that cannot be enforced with cgroups stops the run
 * (exit 125) unless --allow-degraded cgroup; defaults that cannot be enforced
 * fall back to rlimits (RLIMIT_AS, RLIMIT_NPROC) and the status says "cgroup".
 */
#pragma once

#include <stdbool.h>

#include "limits/cgroup.h"
#include "policy/policy.h"

struct moat_limits {
	struct moat_cgroup *cg; /* NULL when degraded */
	bool degraded; /* no cgroup: rlimits only */
	int degraded_err; /* why (negative errno) */
	struct moat_rlimit_opts rl; /* for moat_rlimits_apply() in the sandbox */
	struct moat_cgroup_limits cl;
};

/* Create the run's cgroup with the plan's limits (plan.h). Returns 0 (possibly degraded) or the -errno of the
 * cgroup failure with ret_err filled (stage "cgroup"): the caller exits 125. */
struct moat_plan_limits;
int moat_limits_setup(const struct moat_plan_limits *pl, const char *run_id,
		      struct moat_limits *ret, struct moat_error *ret_err);

/* The v2 fd for CLONE_INTO_CGROUP, or < 0. */
int moat_limits_cgroup_fd(const struct moat_limits *l);
/* Put pid into the groups of the kinds in which (MOAT_CGROUP_ATTACH_V1/V2;
 * no-op when degraded). */
int moat_limits_attach(const struct moat_limits *l, pid_t pid, unsigned which);
/* Kill everything in the groups (timeout, Ctrl-C, end of run). */
int moat_limits_kill(struct moat_limits *l);

/* After the command ended: peak memory/pids, CPU time when the cgroup has it,
 * and the reason: "memory" (an OOM kill in the group, exit 137) or "pids" (the
 * pids limit was hit and the command failed) unless the reason is already
 * timeout/interrupted/setup-failed. Appends "cgroup" to st->degraded when
 * degraded. */
void moat_limits_finish(const struct moat_limits *l, struct moat_status *st);

/* Kill and remove the groups. */
int moat_limits_teardown(struct moat_limits *l);
