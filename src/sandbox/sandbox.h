/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One sandbox: what the supervisor prepares before clone, and what the
 * sandbox's init (PID 1 inside) reads to set itself up. Everything the init
 * needs is computed here first so that between clone and exec nothing is
 * allocated and nothing is printed: a failure is one fixed-size record on the
 * setup pipe, then _exit.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "policy/plan.h"
#include "policy/policy.h"

struct moat_seccomp_prog;

enum moat_setup_stage {
	MOAT_STAGE_NONE = 0,
	MOAT_STAGE_SYNC,
	MOAT_STAGE_IDENTITY,
	MOAT_STAGE_HOSTNAME,
	MOAT_STAGE_NETWORK,
	MOAT_STAGE_MOUNT,
	MOAT_STAGE_PIVOT,
	MOAT_STAGE_CHDIR,
	MOAT_STAGE_CAPS,
	MOAT_STAGE_RLIMIT,
	MOAT_STAGE_LANDLOCK,
	MOAT_STAGE_SECCOMP,
	MOAT_STAGE_PTY,
	MOAT_STAGE_FORK,
	MOAT_STAGE_EXEC,
	MOAT_STAGE_CGROUP,
	MOAT_STAGE_STDIO,
};

/* Written by the sandbox on the setup pipe when a step fails. */
struct moat_setup_error {
	int32_t stage;
	int32_t err;
	int32_t step; /* plan step index, or -1 */
	char detail[244];
};

/* Kinds of file descriptors the init hands to the supervisor. */
enum moat_fd_kind {
	MOAT_FD_OUTPUT = 1, /* the /output tmpfs root, collected after the run */
	MOAT_FD_PTMX = 2, /* O_PATH of the ptmx of the sandbox's own devpts */
	MOAT_FD_NOTIFY = 3, /* the seccomp user-notification listener */
	MOAT_FD_UPPER = 4, /* the overlay upper dir of the workspace */
	/* the seccomp listener, taken by moat with pidfd_getfd: the next kind
	 * of the same message is its fd number in the init; moat's first record
	 * on the channel says it is taken */
	MOAT_FD_NOTIFY_TAKE = 5,
	MOAT_FD_LOWER = 6, /* O_PATH of the workspace overlay's lower tree (snapshots) */
	/* the sandbox's user and mount namespaces (snapshots: setns; the init's
	 * own /proc/PID/ns is closed to an unprivileged moat, the init being
	 * non-dumpable) */
	MOAT_FD_USERNS = 7,
	MOAT_FD_MNTNS = 8,
	MOAT_FD_NET = 16, /* 16..22: the network listeners, struct moat_netns_fds order */
	/* MOAT_FD_DISK + the plan step's index: O_PATH of the root of a
	 * writable tmpfs the init mounted (/tmp, /dev/shm, home, --tmpfs), so
	 * that the supervisor sees it fill (fstatfs: limits/disk_watch.h).
	 * /output and the overlay's upper layer come as OUTPUT and UPPER. */
	MOAT_FD_DISK = 1024,
	MOAT_FD_DONE = 99, /* no more fds follow */
};

struct moat_init {
	const struct moat_policy *p;
	struct moat_plan *plan;

	pid_t supervisor_pid;
	uid_t host_uid; /* what the sandbox's uid maps to on the host */
	gid_t host_gid;
	bool root_mode; /* moat runs as root: maps to an allocated unprivileged uid */
	/* the gvisor level's idmapped mounts also show root (backend_ns.c) */
	bool idmap_root;

	int setup_w, setup_r; /* sandbox -> supervisor: error record or EOF at exec */
	int go_r, go_w; /* supervisor -> sandbox: maps written, proceed */
	bool go_seen; /* the init read the first byte (identity/maps) */
	/* fd passing during setup, sandbox -> supervisor; then the control
	 * channel (ctl.h) */
	int sock_child, sock_sup;

	/* --allow-degraded cgroup: RLIMIT_AS / RLIMIT_NPROC instead (0 = not set) */
	uint64_t rlimit_as, rlimit_nproc;

	/* prepared by the supervisor (root mode): idmapped detached mounts, per step */
	int premounted[MOAT_PLAN_MAX_STEPS];
	/* The user's host paths, resolved once by the supervisor (paths.h): per
	 * step of MOAT_STEPF_USER, an O_PATH fd (-1 for none) and the path it
	 * reached, with no symlink left in it; the same for --rootfs. The init
	 * walks that path again in its own mount namespace, following no symlink
	 * at all, and refuses unless it reaches the very same file. */
	int user_fd[MOAT_PLAN_MAX_STEPS];
	char *user_path[MOAT_PLAN_MAX_STEPS];
	int rootfs_fd;
	char *rootfs_path;

	/* the compiled seccomp filter (restrict.c), NULL when seccomp is off */
	struct moat_seccomp_prog *seccomp_prog;

	/* RT-070: per-user kernel objects are charged (ucounts) to the host user
	 * who owns the sandbox's user namespace; the init caps the sandbox's
	 * share at these values (half of the host's limits, 0 = leave alone) */
	long ucount_inotify_instances, ucount_inotify_watches;

	/* The `tasks` files of the run's cgroup v1 groups, opened by the
	 * supervisor: the init writes "0" to each as its first step, moving
	 * itself without the RCU grace period of a cgroup.procs write by the
	 * supervisor (cgroup.h). n_cgroup_self = 0: the supervisor attaches. */
	int cgroup_self[8];
	unsigned n_cgroup_self;

	/* Written by the init as it applies the plan (its own copy): the S_IFMT
	 * type of what each step put at its destination, 0 for nothing. The
	 * Landlock rules use it instead of an fstat per path. */
	uint16_t step_type[MOAT_PLAN_MAX_STEPS];
	/* The init's Landlock ruleset, built before the capability drop and
	 * enforced after it (hook_restrict.c); -1 without Landlock. */
	int landlock_ruleset;
	bool landlock_ready;
	/* The init's own steps (sandbox.c, moat_init_steps): /dev/null for its
	 * fds 0..2 at the end, opened while /dev is there; -1 before. */
	int init_devnull;
	int init_notify_fd; /* the seccomp listener until moat took it */
	int init_ptmx; /* init/terminal's ptmx until init/namespaces hands it over */
	/* O_PATH of the root of each writable tmpfs the init mounted (but
	 * /output), with its step index: handed over with the namespaces
	 * (init/namespaces) as MOAT_FD_DISK + step */
	int disk_fd[MOAT_PLAN_MAX_STEPS];
	int32_t disk_step[MOAT_PLAN_MAX_STEPS];
	unsigned n_disk;
};

/* The sandbox's init: runs in the cloned child, never returns. */
_Noreturn void moat_sandbox_init(struct moat_init *sb);
/* Its last part: serves the control channel (init_serve.c, ctl.h).
 * fresh_signals: the init was just executed as the first process of a
 * kernel of its own (gVisor's Sentry), so every signal disposition is
 * already the default and the reset is skipped. */
/* The limits each new process sets just before it execs (not the init:
 * its address space, under ASan terabytes of shadow, may exceed them);
 * rlim_max 0: not set. */
struct moat_init_late_rlimits {
	struct rlimit as; /* RLIMIT_AS: the degraded memory limit, OCI's */
	struct rlimit data; /* RLIMIT_DATA: OCI's */
};
_Noreturn void moat_init_serve(int sock, const struct moat_init_late_rlimits *late,
			       bool fresh_signals);

/* Test build only (-DMOAT_TESTING, the moat-testing binary that
 * tests/integration/faults.sh runs): with MOAT_TEST_LAYERS=1 and
 * MOAT_TEST_STALL_AT=<stage> in its environment, the supervisor or the
 * sandbox's init announces "moat: test stall at <stage>" on stderr and waits
 * there until killed, so a test can SIGKILL moat at that stage of setup.
 * With MOAT_TEST_STALL_FILE=<path> too, only a sandbox created while that
 * file exists stalls (a server's one create among others: serve.sh).
 * moat_test_stall_arm() reads the environment (supervisor, before the clone);
 * moat_test_stall() is a no-op unless armed for that stage. In the shipped
 * build the calls compile to nothing: no code, no environment variable. */
#ifdef MOAT_TESTING
void moat_test_stall_arm(void);
void moat_test_stall(const char *stage);
#else
#define moat_test_stall_arm() ((void)0)
#define moat_test_stall(stage) ((void)0)
#endif

/* Opens the bind source of step s as O_PATH and returns it, or -errno. A user's
 * path (MOAT_STEPF_USER) is path, walked with no symlink at all (the supervisor
 * resolved it: paths.h); a source below --rootfs is resolved beneath rootfs_fd
 * with no symlink on the way (its last component is kept if MIRROR_LINK); the
 * host's own system paths are opened as they are. */
int moat_sandbox_open_source(const struct moat_step *s, const char *path, int rootfs_fd,
			     const char *sysroot);
const char *moat_open_source_hint(int err);
/* The --rootfs (or --image) tree as the caller's mount namespace sees it:
 * sb->rootfs_path opened again with no symlink and checked to be the same
 * directory as sb->rootfs_fd, which it replaces. A source opened beneath an
 * fd of another mount namespace is a mount open_tree(OPEN_TREE_CLONE)
 * refuses (EINVAL): each backend's holder calls this once it has its own
 * namespace. 0 (also without a rootfs), -EXDEV when it changed, -errno. */
int moat_sandbox_rootfs_here(struct moat_init *sb);

const char *moat_setup_stage_name(enum moat_setup_stage s);

/* Send / receive one fd with a kind tag over a unix socket. */
int moat_sandbox_send_fd(int sock, int kind, int fd);
/* Several in one message (one wake-up of the supervisor instead of one per
 * fd): n kinds (n <= MOAT_SANDBOX_BATCH_MAX), the n_fds fds belonging to the
 * first n_fds of them. Without fds a plain write(), as above. The receiver
 * gets every kind with its fd (-1 for none) and *ret_n; a message that does
 * not fit is refused (-EBADMSG) with its fds closed. moat_sandbox_recv_fd
 * takes single-kind messages only. */
#define MOAT_SANDBOX_BATCH_MAX 16
int moat_sandbox_send_fds(int sock, const int32_t *kinds, unsigned n, const int *fds,
			  unsigned n_fds);
int moat_sandbox_recv_fds(int sock, int32_t *ret_kinds, int *ret_fds, unsigned *ret_n);
int moat_sandbox_recv_fd(int sock, int *ret_kind, int *ret_fd);
/* The init's side of MOAT_FD_NOTIFY_TAKE: announce fd, wait until moat took it. */
int moat_sandbox_offer_fd(int sock, int kind, int fd);
