/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy limits -> cgroup + rlimits, and the limit-related status. See limits.h. */
#include "limits/limits.h"

#include <signal.h>
#include <unistd.h>

#include "policy/plan.h"
#include "shared/macro.h"

int moat_limits_setup(const struct moat_plan_limits *pl, const char *run_id,
		      struct moat_limits *ret, struct moat_error *ret_err)
{
	struct moat_error err;
	memset(ret, 0, sizeof(*ret));
	/* the values and both rlimit sets are the plan's (plan_parts.c) */
	ret->cl = pl->cg;

	unsigned asked = pl->asked & (MOAT_LIMIT_CPUS | MOAT_LIMIT_MEMORY | MOAT_LIMIT_PIDS);
	if (!asked && moat_host_root() && !pl->cg.path && !pl->cg.oom_kill_disable &&
	    !pl->cg.freezer) {
		/* Root mode with only the default limits: every sandbox has its own
		 * host uid, so RLIMIT_NPROC counts exactly this sandbox's processes and
		 * the default pids limit needs no cgroup. (Attaching a task to a v1
		 * cgroup costs an RCU grace period, ~10 ms, in the kernel.) */
		ret->rl = pl->rl;
		ret->rl.nproc = pl->cg.pids;
		return 0;
	}
	int r = moat_cgroup_create(&ret->cl, run_id, &ret->cg, &err);
	if (r >= 0) {
		ret->rl = pl->rl;
		return 0;
	}
	/* an engine's placement is never dropped for rlimits */
	if (pl->cg.path) {
		if (ret_err) {
			*ret_err = err;
			int n = snprintf(ret_err->message, sizeof(ret_err->message),
					 "linux.cgroupsPath %.200s: ", pl->cg.path);
			if (n > 0 && (size_t)n < sizeof(ret_err->message))
				memcpy(ret_err->message + n, err.message,
				       MIN(strlen(err.message) + 1,
					   sizeof(ret_err->message) - (size_t)n - 1));
			ret_err->message[sizeof(ret_err->message) - 1] = 0;
		}
		return r;
	}
	/* no OOM killer switch without the memory cgroup: never rlimits */
	if (pl->cg.oom_kill_disable) {
		if (ret_err) {
			*ret_err = err;
			static const char pre[] = "linux.resources.memory.disableOOMKiller: ";
			size_t n = MIN(strlen(err.message), sizeof(ret_err->message) - sizeof(pre));
			memcpy(ret_err->message, pre, sizeof(pre) - 1);
			memcpy(ret_err->message + sizeof(pre) - 1, err.message, n);
			ret_err->message[sizeof(pre) - 1 + n] = 0;
		}
		return r;
	}
	if (asked && !pl->may_degrade) {
		if (ret_err) {
			*ret_err = err;
			size_t n = strlen(ret_err->message);
			snprintf(ret_err->message + n, sizeof(ret_err->message) - n,
				 "; the requested limits cannot be enforced (use --allow-degraded "
				 "cgroup to fall back to rlimits)");
		}
		return r;
	}
	ret->cg = NULL;
	ret->degraded = true;
	ret->degraded_err = r;
	ret->rl = pl->rl_degraded;
	return 0;
}

int moat_limits_cgroup_fd(const struct moat_limits *l)
{
	return l->cg ? moat_cgroup_fd(l->cg) : -EOPNOTSUPP;
}

int moat_limits_attach(const struct moat_limits *l, pid_t pid, unsigned which)
{
	return l->cg && which ? moat_cgroup_attach_some(l->cg, pid, which) : 0;
}

int moat_limits_kill(struct moat_limits *l)
{
	return l->cg ? moat_cgroup_kill(l->cg) : 0;
}

static void add_degraded(struct moat_status *st, const char *what)
{
	size_t n = strlen(st->degraded);
	if (strstr(st->degraded, what))
		return;
	snprintf(st->degraded + n, sizeof(st->degraded) - n, "%s%s", n ? "," : "", what);
}

void moat_limits_finish(const struct moat_limits *l, struct moat_status *st)
{
	struct moat_cgroup_stats cs;
	if (l->degraded)
		add_degraded(st, "cgroup");
	if (!l->cg || moat_cgroup_stats(l->cg, &cs) < 0)
		return;
	if (cs.have_mem_peak)
		st->mem_peak = cs.mem_peak;
	if (cs.have_pids_peak)
		st->pids_peak = cs.pids_peak;
	if (l->cl.pids && cs.pids_max_hits) {
		st->pids_limit_hits = cs.pids_max_hits;
		st->pids_limit = l->cl.pids;
	}
	if (l->cl.memory && cs.oom_kills) {
		st->oom_kills = cs.oom_kills;
		st->memory_limit = l->cl.memory;
	}
	if (cs.have_cpu && cs.cpu_user_us + cs.cpu_sys_us > st->cpu_user_us + st->cpu_sys_us) {
		st->cpu_user_us = cs.cpu_user_us;
		st->cpu_sys_us = cs.cpu_sys_us;
	}
	if (st->reason != MOAT_REASON_EXITED && st->reason != MOAT_REASON_SIGNALED)
		return; /* timeout, interrupted, setup: already the better reason */
	if (cs.oom && st->exit_code != 0) {
		st->reason = MOAT_REASON_MEMORY;
		st->exit_code = 128 + SIGKILL;
	} else if (cs.pids_hit && st->exit_code != 0)
		st->reason = MOAT_REASON_PIDS;
}

int moat_limits_teardown(struct moat_limits *l)
{
	int r = moat_cgroup_destroy(l->cg);
	l->cg = NULL;
	return r;
}
