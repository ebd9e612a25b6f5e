/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-run cgroups: detect what the machine offers (cgroup v2, v1 or the hybrid
 * of both), create one group per run with CPU, memory and process limits, put
 * the sandbox into it, kill everything in it, read its statistics and remove it.
 *
 * Placement rule: groups are created only below the cgroup moat already sits in
 * (or, where that is a hierarchy's root, below a `moat/` directory of our own);
 * on cgroup v2 without root the nearest writable ancestor inside the user's
 * delegated subtree (e.g. user@UID.service) is used when the cgroup we sit in
 * cannot have controllers (the "no internal processes" rule).
 *
 * On a hybrid machine (v1 controllers plus a controller-less v2 mount) the v2
 * mount is still used, when writable, as a "tracking" group: it gives
 * cgroup.kill and CLONE_INTO_CGROUP even though the limits live on v1.
 *
 * Everything takes a root prefix (`""` = the real system) so the v2 logic can
 * be tested against a fake cgroupfs tree in a temporary directory.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "moat/moat.h"

enum moat_cgroup_ctrl {
	MOAT_CG_MEMORY = 1u << 0,
	MOAT_CG_PIDS = 1u << 1,
	MOAT_CG_CPU = 1u << 2,
	MOAT_CG_CPUACCT = 1u << 3,
	MOAT_CG_FREEZER = 1u << 4,
};

#define MOAT_CGROUP_MAX_HIER 8
#define MOAT_CGROUP_PATH 1024
#define MOAT_CGROUP_RUN_ID_MAX 64

struct moat_cgroup_hier {
	int version; /* 1 or 2 */
	unsigned
		controllers; /* MOAT_CG_* this hierarchy carries (v2: enabled or enablable at base) */
	char mount[MOAT_CGROUP_PATH]; /* mount point, including the root prefix */
	char self[MOAT_CGROUP_PATH]; /* the directory of the cgroup we sit in */
	char base[MOAT_CGROUP_PATH]; /* the directory below which `moat/<run>` is made */
	bool writable; /* base looks writable to us (final word: mkdir) */
};

struct moat_cgroup_info {
	int mode; /* 0: no cgroups, 1: v1 controllers (hybrid or pure v1), 2: unified v2 */
	unsigned available; /* controllers present on some hierarchy */
	unsigned usable; /* controllers on a hierarchy whose base is writable */
	bool v2_tracking; /* mode 1 with a writable v2 mount: cgroup.kill, CLONE_INTO_CGROUP */
	struct moat_cgroup_hier hier[MOAT_CGROUP_MAX_HIER];
	unsigned n_hier;
	char root[MOAT_CGROUP_PATH]; /* root prefix; "" for the real system */
	bool fake; /* tests: files in a fake tree are created on write */
};

/* Probe /proc/self/mountinfo, /proc/self/cgroup and the hierarchies. Pure
 * reading; never creates anything. */
int moat_cgroup_detect(struct moat_cgroup_info *ret);
/* The same below a root prefix (tests: a fake tree holding proc/self/mountinfo,
 * proc/self/cgroup and the mounted directories). */
int moat_cgroup_detect_at(const char *root, struct moat_cgroup_info *ret);
/* A comma-separated list of controller names ("memory,pids") into buf. */
const char *moat_cgroup_ctrl_names(unsigned mask, char *buf, size_t len);

/* A readable report for `moat doctor`: mode, controllers, where groups go and
 * whether we may write there. Returns the length or -ENOBUFS. */
int moat_cgroup_describe(const struct moat_cgroup_info *info, char *buf, size_t len);

/* Limits; 0 = no limit (the group is still made, for accounting and kill). */
struct moat_cgroup_limits {
	uint64_t cpus_milli; /* 1500 = 1.5 CPUs */
	uint64_t memory; /* bytes, swap off */
	uint64_t pids;
	/* an engine's placement (OCI linux.cgroupsPath): the run's directory in
	 * every hierarchy, absolute from the hierarchy's root or relative to the
	 * cgroup we sit in; NULL: BASE/moat/RUN_ID */
	const char *path;
	/* OCI linux.resources.memory.disableOOMKiller: needs the memory
	 * controller (cgroup v1 only; v2 fails) */
	bool oom_kill_disable;
	/* OCI: the container's groups are made even when only defaults are in
	 * play (limits.c), so that `pause` has a freezer */
	bool freezer;
};

struct moat_cgroup;

/* Create the run's groups (one directory per hierarchy) and set the limits.
 * run_id: [A-Za-z0-9_.-], 1..64 characters, not starting with '.'. A hierarchy
 * that carries a requested limit must work, else this fails with its errno
 * (-EACCES/-EPERM unprivileged, -EOPNOTSUPP when the controller is missing, so
 * the caller fails closed); optional ones (freezer, cpuacct, v2 tracking,
 * controllers without a limit) are skipped when they cannot be made. Caller
 * owns *ret and frees it with moat_cgroup_destroy(). */
int moat_cgroup_create(const struct moat_cgroup_limits *l, const char *run_id,
		       struct moat_cgroup **ret, struct moat_error *ret_err);
int moat_cgroup_create_with(const struct moat_cgroup_info *info, const struct moat_cgroup_limits *l,
			    const char *run_id, struct moat_cgroup **ret,
			    struct moat_error *ret_err);

/* Re-open groups from their directories (moat gc after a crash). Only
 * directories on a cgroup filesystem are accepted (-EINVAL otherwise). */
int moat_cgroup_open(char *const *dirs, unsigned n, struct moat_cgroup **ret);

/* The v2 directory fd for clone3(CLONE_INTO_CGROUP); owned by cg, -EOPNOTSUPP
 * when there is no v2 group. */
int moat_cgroup_fd(const struct moat_cgroup *cg);
/* Move pid into every group (cgroup.procs of each hierarchy). */
int moat_cgroup_attach(const struct moat_cgroup *cg, pid_t pid);
/* Which groups moat_cgroup_attach_some moves pid into. */
enum {
	MOAT_CGROUP_ATTACH_V1 = 1 << 0,
	MOAT_CGROUP_ATTACH_V2 = 1 << 1,
};
int moat_cgroup_attach_some(const struct moat_cgroup *cg, pid_t pid, unsigned which);
/* A self-attach for the sandbox's init: the `tasks` file of every v1 group,
 * opened for writing by the caller (the supervisor) into fds[] (at most max;
 * *ret_n of them, 0 when there is no v1 group; -EOPNOTSUPP for a test tree). A task
 * that writes "0" there moves itself; unlike a write of a pid to
 * cgroup.procs, which takes the global threadgroup lock and waits for an RCU
 * grace period (6-15 ms on the machines we measure), that needs no lock. The
 * permission is checked against the opener's credentials. */
int moat_cgroup_open_self_attach(const struct moat_cgroup *cg, int *fds, unsigned max,
				 unsigned *ret_n);
/* Number of directories and each one's path (owned by cg), for run.json. */
unsigned moat_cgroup_n_dirs(const struct moat_cgroup *cg);
const char *moat_cgroup_dir(const struct moat_cgroup *cg, unsigned i);
/* Controllers with a limit actually set. */
unsigned moat_cgroup_limited(const struct moat_cgroup *cg);

/* Kill every process in the groups: cgroup.kill (v2, 5.14+) when present,
 * else freeze (v1 freezer or cgroup.freeze) + SIGKILL each pid + thaw, in a
 * loop until every group is empty, so forking and double-forked daemons die.
 * Returns 0 when empty, -ETIMEDOUT if something survived ~5 s. */
int moat_cgroup_kill(struct moat_cgroup *cg);
/* Freezes (on) or thaws every process of the group (v2 cgroup.freeze, v1
 * freezer.state); -EOPNOTSUPP when no directory of it has a freezer. */
int moat_cgroup_freeze(struct moat_cgroup *cg, bool on);

struct moat_cgroup_stats {
	uint64_t mem_peak; /* bytes, 0 if unknown */
	uint64_t mem_current; /* bytes */
	uint64_t oom_kills; /* OOM kills inside the group */
	uint64_t mem_failcnt; /* v1: times the limit was hit */
	uint64_t pids_current;
	uint64_t pids_peak; /* 0 if the kernel has no pids.peak */
	uint64_t pids_max_hits; /* forks refused at pids.max */
	uint64_t cpu_usage_us, cpu_user_us, cpu_sys_us;
	bool have_mem_peak, have_pids_peak, have_cpu;
	bool oom; /* an OOM kill happened */
	bool pids_hit; /* the pids limit was hit */
};
int moat_cgroup_stats(const struct moat_cgroup *cg, struct moat_cgroup_stats *ret);

/* Kill, remove every directory (retrying briefly on EBUSY, also the shared
 * `moat/` parent when it is empty), free. Accepts NULL. Returns the first
 * error; cg is freed in every case. */
int moat_cgroup_destroy(struct moat_cgroup *cg);

/* ---- rlimits ---------------------------------------------------------------- */

/* 0 = leave that limit as it is. RLIMIT_CORE is always set to 0. */
struct moat_rlimit_opts {
	uint64_t nofile;
	uint64_t fsize;
	uint64_t as; /* degraded only: address space from the memory limit */
	uint64_t nproc; /* degraded only: processes from the pids limit */
};

/* Pure: the rlimits for a run. With degraded (no cgroup) the memory and pids
 * limits become RLIMIT_AS and RLIMIT_NPROC. Weaknesses: RLIMIT_AS bounds address
 * space, not resident memory (big mappings fail early, tmpfs and page cache are
 * not counted); RLIMIT_NPROC counts processes of the real uid: inside the
 * sandbox's own user namespace it is charged per (namespace, uid), but a run
 * whose uid is global root is exempt, and without a user namespace it is shared
 * with every process of that uid. */
void moat_rlimits_plan(const struct moat_cgroup_limits *l, uint64_t nofile, uint64_t fsize,
		       bool degraded, struct moat_rlimit_opts *ret);
/* Apply inside the sandbox before exec: async-signal-safe (no malloc, no
 * stdio). Soft = hard = min(wanted, current hard): never raises. */
int moat_rlimits_apply(const struct moat_rlimit_opts *o);
