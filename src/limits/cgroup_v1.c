/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup v1 (one hierarchy per controller, also the limits of a hybrid
 * machine): the v1 files for limits, statistics and the freezer. */
#include "limits/cgroup_int.h"
#include "shared/macro.h"

static int v1_limit_memory(const struct moat_cgroup_dir *d, uint64_t bytes, bool fake,
			   const char **ret_file)
{
	int r = moat_cgroup_put(d, "memory.limit_in_bytes", bytes, fake, ret_file);
	if (r < 0)
		return r;
	if (!fake && moat_cgroup_exists_at(d->fd, "memory.memsw.limit_in_bytes"))
		return moat_cgroup_put(d, "memory.memsw.limit_in_bytes", bytes, fake, ret_file);
	return moat_cgroup_put(d, "memory.swappiness", 0, fake, ret_file);
}

static int v1_limit_cpu(const struct moat_cgroup_dir *d, uint64_t quota_us, bool fake,
			const char **ret_file)
{
	int r = moat_cgroup_put(d, "cpu.cfs_period_us", MOAT_CGROUP_CPU_PERIOD_US, fake, ret_file);
	return r < 0 ? r : moat_cgroup_put(d, "cpu.cfs_quota_us", quota_us, fake, ret_file);
}

static void v1_stats(const struct moat_cgroup_dir *d, struct moat_cgroup_stats *ret)
{
	uint64_t v;
	if (d->controllers & MOAT_CG_MEMORY) {
		if (moat_cgroup_read_u64_at(d->fd, "memory.max_usage_in_bytes", &ret->mem_peak) >=
		    0)
			ret->have_mem_peak = true;
		(void)moat_cgroup_read_u64_at(d->fd, "memory.usage_in_bytes", &ret->mem_current);
		if (moat_cgroup_read_key_at(d->fd, "memory.oom_control", "oom_kill", &v) >= 0)
			ret->oom_kills = v;
		(void)moat_cgroup_read_u64_at(d->fd, "memory.failcnt", &ret->mem_failcnt);
	}
	if ((d->controllers & MOAT_CG_CPUACCT) &&
	    moat_cgroup_read_u64_at(d->fd, "cpuacct.usage", &v) >= 0) {
		ret->cpu_usage_us = v / 1000;
		if (moat_cgroup_read_u64_at(d->fd, "cpuacct.usage_user", &v) >= 0)
			ret->cpu_user_us = v / 1000;
		if (moat_cgroup_read_u64_at(d->fd, "cpuacct.usage_sys", &v) >= 0)
			ret->cpu_sys_us = v / 1000;
		ret->have_cpu = true;
	}
}

static void v1_freeze(const struct moat_cgroup_dir *d, bool on, bool fake)
{
	if (d->controllers & MOAT_CG_FREEZER)
		(void)moat_cgroup_write_at(d->fd, "freezer.state", on ? "FROZEN" : "THAWED", fake);
}

/* FREEZING -> FROZEN */
static bool v1_frozen(const struct moat_cgroup_dir *d)
{
	char buf[64];
	if (!(d->controllers & MOAT_CG_FREEZER))
		return true;
	return moat_cgroup_read_at(d->fd, "freezer.state", buf, sizeof(buf)) < 0 ||
		startswith(buf, "FROZEN");
}

/* v1 has no cgroup.kill: cgroup.c freezes and signals each pid. */
static bool v1_kill(const struct moat_cgroup_dir *d, bool fake)
{
	return false;
}

/* memory.oom_control: writing 1 sets oom_kill_disable (v1 only) */
static int v1_disable_oom_killer(const struct moat_cgroup_dir *d, bool fake, const char **ret_file)
{
	return moat_cgroup_put(d, "memory.oom_control", 1, fake, ret_file);
}

const struct moat_cgroup_ops moat_cgroup_v1_ops = {
	.limit_memory = v1_limit_memory,
	.limit_cpu = v1_limit_cpu,
	.stats = v1_stats,
	.freeze = v1_freeze,
	.frozen = v1_frozen,
	.kill = v1_kill,
	.disable_oom_killer = v1_disable_oom_killer,
};
