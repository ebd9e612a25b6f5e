/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private to the cgroup files: a run directory, the per-version ops and the
 * file helpers they share. The interface to the rest of libmoat is cgroup.h. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "limits/cgroup.h"

/*
 *   cgroup_detect.c  which hierarchies there are, where groups go; doctor
 *   cgroup.c         a run's groups: create, open, attach, kill, stats, destroy
 *   cgroup_v1.c      the v1 files (limits, statistics, freezer)
 *   cgroup_v2.c      v2 placement, controllers, limits, statistics, freeze, kill
 *   cgroup_util.c    controller names, bounded file reads and writes, clocks
 *   rlimits.c        setrlimit: every run's limits and the no-cgroup fallback
 *
 * Every file of a group is opened relative to its directory's fd, so a rename
 * of a path component after creation cannot redirect our writes.
 */

#define MOAT_CGROUP_LINE_MAX 8192
#define MOAT_CGROUP_KILL_TIMEOUT_MS 5000
#define MOAT_CGROUP_RMDIR_TIMEOUT_MS 2000
#define MOAT_CGROUP_CPU_PERIOD_US 100000ull

/* One directory of a run, in one hierarchy. */
struct moat_cgroup_dir {
	int version;
	unsigned controllers;
	int fd;
	char path[MOAT_CGROUP_PATH];
	char parent[MOAT_CGROUP_PATH]; /* the shared moat/ dir, "" if none */
};

struct moat_cgroup {
	struct moat_cgroup_dir d[MOAT_CGROUP_MAX_HIER];
	unsigned n;
	unsigned limited;
	bool fake;
};

/* What differs between v1 and v2 for one run directory. Each writer sets
 * *ret_file to the file it writes, for the error message. */
struct moat_cgroup_ops {
	/* memory limit in bytes, swap off */
	int (*limit_memory)(const struct moat_cgroup_dir *d, uint64_t bytes, bool fake,
			    const char **ret_file);
	/* quota_us of CPU time per MOAT_CGROUP_CPU_PERIOD_US */
	int (*limit_cpu)(const struct moat_cgroup_dir *d, uint64_t quota_us, bool fake,
			 const char **ret_file);
	/* memory and CPU statistics into ret (the pids files are common) */
	void (*stats)(const struct moat_cgroup_dir *d, struct moat_cgroup_stats *ret);
	/* start (on) or end a freeze; nothing where the directory cannot freeze */
	void (*freeze)(const struct moat_cgroup_dir *d, bool on, bool fake);
	/* the freeze took (also true where it cannot be read) */
	bool (*frozen)(const struct moat_cgroup_dir *d);
	/* kill everything in one write; false where there is no such file */
	bool (*kill)(const struct moat_cgroup_dir *d, bool fake);
	/* OCI memory.disableOOMKiller: the group's tasks wait at its memory
	 * limit instead of being killed; -EOPNOTSUPP where the version has no
	 * such switch (v2: memory.oom.group is the opposite, no "disable") */
	int (*disable_oom_killer)(const struct moat_cgroup_dir *d, bool fake,
				  const char **ret_file);
};

extern const struct moat_cgroup_ops moat_cgroup_v1_ops;
extern const struct moat_cgroup_ops moat_cgroup_v2_ops;

static inline const struct moat_cgroup_ops *moat_cgroup_ops_of(const struct moat_cgroup_dir *d)
{
	return d->version == 2 ? &moat_cgroup_v2_ops : &moat_cgroup_v1_ops;
}

/* ---- cgroup_v2.c */
/* Where run groups go on v2 (sets h->base, h->writable, h->controllers). */
void moat_cgroup_v2_pick_base(struct moat_cgroup_hier *h, bool want_ctrls);
/* Enable the controllers of want in dir's cgroup.subtree_control. */
int moat_cgroup_v2_enable(const char *dir, unsigned want, bool fake);

/* ---- cgroup_util.c */
#define MOAT_CGROUP_N_CTRLS 5
struct moat_cgroup_ctrl_name {
	const char *name;
	unsigned bit;
};
extern const struct moat_cgroup_ctrl_name moat_cgroup_ctrls[MOAT_CGROUP_N_CTRLS];

/* Bits of the known controller names in a list separated by any of seps. */
unsigned moat_cgroup_ctrl_mask(const char *list, const char *seps);
/* snprintf into buf; -ENAMETOOLONG when it does not fit. */
int moat_cgroup_path_fmt(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void moat_cgroup_copy_str(char *dst, size_t size, const char *src, size_t n);
uint64_t moat_cgroup_now_ms(void);
void moat_cgroup_sleep_ms(unsigned ms);
int moat_cgroup_read_at(int dirfd, const char *name, char *buf, size_t size);
/* fake: a test tree, where files are created on write */
int moat_cgroup_write_at(int dirfd, const char *name, const char *val, bool fake);
int moat_cgroup_write_u64_at(int dirfd, const char *name, uint64_t v, bool fake);
/* write_u64_at of d's file name, with *ret_file = name */
int moat_cgroup_put(const struct moat_cgroup_dir *d, const char *name, uint64_t v, bool fake,
		    const char **ret_file);
bool moat_cgroup_exists_at(int dirfd, const char *name);
int moat_cgroup_read_u64_at(int dirfd, const char *name, uint64_t *ret);
int moat_cgroup_read_key_at(int dirfd, const char *name, const char *key, uint64_t *ret);
/* dir and its cgroup.procs writable by us */
bool moat_cgroup_writable_dir(const char *dir);
/* memory, pids, cpu named in dir/name (cgroup.controllers, cgroup.subtree_control) */
unsigned moat_cgroup_read_ctrl_file(const char *dir, const char *name);
