/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* cgroup v2 (the unified hierarchy): where run groups go, enabling controllers
 * on the way, and the v2 files for limits, statistics, freezing and cgroup.kill. */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>

#include "limits/cgroup_int.h"
#include "shared/macro.h"

static bool has_procs(const char *dir)
{
	char buf[64];
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || moat_cgroup_read_at(fd, "cgroup.procs", buf, sizeof(buf)) < 0)
		return false;
	return buf[0] != 0;
}

/*
 * Where to put run groups on v2. The cgroup we sit in can hold a child with
 * controllers only if it is the hierarchy root (no "no internal processes" rule
 * there); otherwise the nearest writable ancestor (still inside our delegated
 * subtree, e.g. the user's user@UID.service) is used. A controller-less
 * (tracking) group can live right below us.
 */
void moat_cgroup_v2_pick_base(struct moat_cgroup_hier *h, bool want_ctrls)
{
	char a[MOAT_CGROUP_PATH];
	size_t mlen = strlen(h->mount);

	moat_cgroup_copy_str(h->base, sizeof(h->base), h->self, strlen(h->self));
	h->writable = moat_cgroup_writable_dir(h->self);
	h->controllers = 0;
	if (!h->writable)
		return;
	snprintf(a, sizeof(a), "%s", h->self);
	for (;;) {
		bool is_root = strlen(a) <= mlen;
		bool is_self = streq(a, h->self);
		if (!want_ctrls || is_root || !is_self) {
			snprintf(h->base, sizeof(h->base), "%s", a);
			break;
		}
		char *slash = strrchr(a, '/');
		if (!slash || (size_t)(slash - a) < mlen)
			break;
		*slash = 0;
		if (strlen(a) < mlen)
			snprintf(a, sizeof(a), "%s", h->mount);
		if (!moat_cgroup_writable_dir(a))
			break; /* stay at self: tracking only */
	}
	bool is_root = strlen(h->base) <= mlen;
	unsigned enabled = moat_cgroup_read_ctrl_file(h->base, "cgroup.subtree_control");
	unsigned avail = moat_cgroup_read_ctrl_file(h->base, "cgroup.controllers");
	/* A non-root cgroup with processes cannot enable more controllers. */
	if (!is_root && has_procs(h->base))
		h->controllers = enabled;
	else
		h->controllers = avail | enabled;
}

int moat_cgroup_v2_enable(const char *dir, unsigned want, bool fake)
{
	char buf[128] = "";
	size_t off = 0;
	unsigned have = moat_cgroup_read_ctrl_file(dir, "cgroup.subtree_control");
	want &= ~have;
	if (!want)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(moat_cgroup_ctrls); i++)
		if (want & moat_cgroup_ctrls[i].bit)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s+%s",
						off ? " " : "", moat_cgroup_ctrls[i].name);
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	return moat_cgroup_write_at(fd, "cgroup.subtree_control", buf, fake);
}

static int v2_limit_memory(const struct moat_cgroup_dir *d, uint64_t bytes, bool fake,
			   const char **ret_file)
{
	int r = moat_cgroup_put(d, "memory.max", bytes, fake, ret_file);
	/* No swap: absent without swap accounting, then nothing swaps into it. */
	if (r >= 0 && (fake || moat_cgroup_exists_at(d->fd, "memory.swap.max")))
		r = moat_cgroup_put(d, "memory.swap.max", 0, fake, ret_file);
	/* One OOM kills the whole group: the run ends, clearly "memory". */
	if (r >= 0 && (fake || moat_cgroup_exists_at(d->fd, "memory.oom.group")))
		r = moat_cgroup_put(d, "memory.oom.group", 1, fake, ret_file);
	return r;
}

static int v2_limit_cpu(const struct moat_cgroup_dir *d, uint64_t quota_us, bool fake,
			const char **ret_file)
{
	char buf[64];
	snprintf(buf, sizeof(buf), "%" PRIu64 " %llu\n", quota_us, MOAT_CGROUP_CPU_PERIOD_US);
	*ret_file = "cpu.max";
	return moat_cgroup_write_at(d->fd, "cpu.max", buf, fake);
}

static void v2_stats(const struct moat_cgroup_dir *d, struct moat_cgroup_stats *ret)
{
	uint64_t v;
	if (d->controllers & MOAT_CG_MEMORY) {
		if (moat_cgroup_read_u64_at(d->fd, "memory.peak", &ret->mem_peak) >= 0)
			ret->have_mem_peak = true;
		(void)moat_cgroup_read_u64_at(d->fd, "memory.current", &ret->mem_current);
		if (moat_cgroup_read_key_at(d->fd, "memory.events", "oom_kill", &v) >= 0)
			ret->oom_kills = v;
	}
	/* CPU time: v2 cpu.stat exists even without the cpu controller. */
	if (!ret->have_cpu &&
	    moat_cgroup_read_key_at(d->fd, "cpu.stat", "usage_usec", &ret->cpu_usage_us) >= 0) {
		(void)moat_cgroup_read_key_at(d->fd, "cpu.stat", "user_usec", &ret->cpu_user_us);
		(void)moat_cgroup_read_key_at(d->fd, "cpu.stat", "system_usec", &ret->cpu_sys_us);
		ret->have_cpu = true;
	}
}

static void v2_freeze(const struct moat_cgroup_dir *d, bool on, bool fake)
{
	if (moat_cgroup_exists_at(d->fd, "cgroup.freeze"))
		(void)moat_cgroup_write_at(d->fd, "cgroup.freeze", on ? "1" : "0", fake);
}

static bool v2_frozen(const struct moat_cgroup_dir *d)
{
	uint64_t v;
	if (!moat_cgroup_exists_at(d->fd, "cgroup.freeze"))
		return true;
	return moat_cgroup_read_key_at(d->fd, "cgroup.events", "frozen", &v) < 0 || v == 1;
}

/* cgroup.kill (5.14+): atomic, also catches a fork in flight. */
static bool v2_kill(const struct moat_cgroup_dir *d, bool fake)
{
	return moat_cgroup_exists_at(d->fd, "cgroup.kill") &&
		moat_cgroup_write_at(d->fd, "cgroup.kill", "1", fake) >= 0;
}

/* cgroup v2 has no per-group switch that turns the OOM killer off */
static int v2_disable_oom_killer(const struct moat_cgroup_dir *d, bool fake, const char **ret_file)
{
	*ret_file = "memory.oom_control (cgroup v2 has none)";
	return -EOPNOTSUPP;
}

const struct moat_cgroup_ops moat_cgroup_v2_ops = {
	.limit_memory = v2_limit_memory,
	.limit_cpu = v2_limit_cpu,
	.stats = v2_stats,
	.freeze = v2_freeze,
	.frozen = v2_frozen,
	.kill = v2_kill,
	.disable_oom_killer = v2_disable_oom_killer,
};
