/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gVisor backend (backend.h, docs/ISOLATION.md): the sandbox is a runsc
 * container whose PID 1 is moat's own init (`moat __gvisor-init`, serving
 * the control channel of ctl.h exactly as at the process level). Measured on
 * runsc 0.0~20221219: a host unix socket given to the container as its stdin
 * stays a host socket inside gVisor, and SCM_RIGHTS over it carries host
 * descriptors in both directions, so proc.c's exec path (a sealed memfd with
 * argv and environment, the report pipe, the caller's stdio relays) works
 * unchanged across gVisor's boundary.
 *
 * Below runsc, a "holder" process (cloned like the process level's init,
 * into the run's cgroup) owns the host side: a new network namespace (with
 * --net allow the very capture rules, listeners and DNS stub of the process
 * level, then runsc --network=host inside it, so every connection of gVisor
 * passes moat's proxy; with --net none runsc --network=none), a private
 * mount namespace with the bind sources at fixed paths of the bundle
 * (re-walked there and checked to be the supervisor's files), the overlay
 * workspace and /output tmpfs (their fds handed to the supervisor for the
 * review and the collection), then it execs runsc. As root runsc runs
 * rootful (the user's directories through idmapped mounts that show their
 * owner as the sandbox user); unprivileged, the holder is in a new user
 * namespace where it is root and runsc runs with --rootless.
 */
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/prctl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "sandbox/backend.h"
#include "sandbox/backend_gvisor.h"
#include "sandbox/holder_wait.h"
#include "limits/supervise_limits.h"
#include "policy/errors.h"
#include "sandbox/hooks.h"
#include "supervisor/run.h"
#include "supervisor/supervise.h"
#include "shared/fdpass.h"
#include "shared/fdset.h"
#include "shared/macro.h"
#include "shared/openat2.h"
#include "shared/rmtree.h"

/* How long runsc may take to bring the init up (ptrace platform: ~0.3 s). */
#define GV_START_MS 60000

struct moat_gv_run {
	char dir[128]; /* the bundle directory */
	int dirfd;
	char runsc[64];
	char id[64]; /* runsc's container id */
	bool rootless;
	/* the supervisor's opened sources; [EXE]: moat, [LIB]: the loader's directory */
	int srcfd[MOAT_PLAN_MAX_STEPS + 2];
	char exe[MOAT_MAX_PATH]; /* moat's executable, resolved */
	char libdir[MOAT_MAX_PATH]; /* the host loader's directory (a sysroot only), resolved */
	int log_fd;
	struct moat_gv_bundle b;
	struct moat_gvt_sup *trace; /* exec records (backend_gvisor_trace.c), or NULL */
	char trace_conf[160]; /* its pod-init config, "" without */
	struct moat_holder_wait wait; /* for moat's init inside (gv_poll) */
};

/* The directory of the host's dynamic loader (moat's own PT_INTERP,
 * resolved: /usr/lib/x86_64-linux-gnu on Debian, where libc.so.6 is too)
 * and the loader's name in it. */
static int phdr_cb(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++)
		if (info->dlpi_phdr[i].p_type == PT_INTERP) {
			*(const char **)data =
				(const char *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
			break;
		}
	return 1; /* the first object is the executable */
}

static int host_loader(char *dir, size_t dirlen, char *name, size_t namelen)
{
	const char *interp = NULL;
	char real[PATH_MAX];
	dl_iterate_phdr(phdr_cb, &interp);
	if (!interp || interp[0] != '/')
		return -ENOENT;
	if (!realpath(interp, real))
		return negerrno();
	char *slash = strrchr(real, '/');
	if (!slash || slash == real || (size_t)(slash - real) >= dirlen ||
	    strlen(slash + 1) >= namelen)
		return -ENAMETOOLONG;
	snprintf(name, namelen, "%s", slash + 1);
	*slash = 0;
	snprintf(dir, dirlen, "%s", real);
	return 0;
}

static const char *find_runsc(void)
{
	static const char *const where[] = {"/usr/bin/runsc", "/usr/sbin/runsc",
					    "/usr/local/bin/runsc"};
	for (unsigned i = 0; i < ELEMENTSOF(where); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

static void gv_free(struct moat_gv_run *g)
{
	if (!g)
		return;
	for (unsigned i = 0; i <= MOAT_GV_LIB_STEP; i++)
		safe_close(g->srcfd[i]);
	safe_close(g->log_fd);
	moat_gvt_free(g->trace);
	if (g->dirfd >= 0) {
		close(g->dirfd);
		/* the holder's mounts went with its mount namespace */
		char *slash = strrchr(g->dir, '/');
		_cleanup_close_ int parent = -1;
		if (slash) {
			*slash = '\0';
			parent = open(g->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (parent >= 0)
				(void)moat_rmtree_at(parent, slash + 1, 64);
			*slash = '/';
		}
	}
	free(g);
}

static int gv_prepare(struct moat_run *r)
{
	const char *runsc = find_runsc();
	if (!runsc)
		return moat_error_set(r->err, "isolation", ENOENT,
				      "isolation gvisor: runsc not found in /usr/bin, /usr/sbin or "
				      "/usr/local/bin (Debian package runsc)");
	struct moat_gv_run *g = calloc(1, sizeof(*g));
	if (!g)
		return -ENOMEM;
	g->dirfd = g->log_fd = -1;
	for (unsigned i = 0; i <= MOAT_GV_LIB_STEP; i++)
		g->srcfd[i] = -1;
	r->gv = g;
	snprintf(g->runsc, sizeof(g->runsc), "%s", runsc);
	snprintf(g->id, sizeof(g->id), "moat-%s", r->run_id);
	g->rootless = !r->sb.root_mode;
	ssize_t n = readlink("/proc/self/exe", g->exe, sizeof(g->exe) - 1);
	if (n <= 0)
		return moat_error_set(r->err, "isolation", errno,
				      "isolation gvisor: cannot find moat's own executable");
	g->exe[n] = '\0';
	/* the user's paths, resolved once, as at the process level */
	int k = moat_backend_ns()->prepare(r);
	if (k < 0)
		return k;
	/* Root mode: the gofer (root) presents each file with its host owner;
	 * the idmapped mounts show the user's directories as owned by the
	 * sandbox user, who is the policy's uid inside gVisor. */
	if (r->sb.root_mode) {
		r->sb.host_uid = r->p->uid;
		r->sb.host_gid = r->p->gid;
		r->sb.idmap_root = true;
	}
	return 0;
}

/* ---- the holder (a clone of the supervisor) ------------------------------ */

static _Noreturn _printf_(4, 5) void hold_die(int fd, int stage, int step, const char *fmt, ...)
{
	struct moat_setup_error e = {.stage = stage, .err = errno ? errno : EIO, .step = step};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof(e.detail), fmt, ap);
	va_end(ap);
	(void)!write(fd, &e, sizeof(e));
	_exit(MOAT_EXIT_SETUP);
}

static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
		sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* The source of step i, opened again in this mount namespace (or the
 * supervisor's detached idmapped tree) as a mount tree to attach. */
static int hold_tree(struct moat_run *r, unsigned i, bool recursive)
{
	const struct moat_step *s = i < MOAT_PLAN_MAX_STEPS ? &r->plan->steps[i] : NULL;
	struct moat_gv_run *g = r->gv;
	int w = r->sb.setup_w;
	if (i < MOAT_PLAN_MAX_STEPS && r->sb.premounted[i] >= 0)
		return r->sb.premounted[i];
	int fd;
	if (i == MOAT_GV_EXE_STEP || i == MOAT_GV_LIB_STEP)
		fd = (int)moat_openat2(AT_FDCWD, i == MOAT_GV_EXE_STEP ? g->exe : g->libdir,
				       O_PATH | O_CLOEXEC, 0,
				       RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	else
		fd = moat_sandbox_open_source(s, r->sb.user_path[i], r->sb.rootfs_fd,
					      r->plan->sysroot);
	if (fd < 0 || !same_file(fd, g->srcfd[i])) {
		errno = fd < 0 ? -fd : EXDEV;
		hold_die(w, MOAT_STAGE_MOUNT, i < MOAT_PLAN_MAX_STEPS ? (int)i : -1,
			 "%s changed since moat resolved it",
			 i == MOAT_GV_EXE_STEP		 ? g->exe
				 : i == MOAT_GV_LIB_STEP ? g->libdir
							 : s->src);
	}
	int tree = (int)open_tree(fd, "",
				  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					  (recursive ? AT_RECURSIVE : 0));
	if (tree < 0)
		hold_die(w, MOAT_STAGE_MOUNT, i < MOAT_PLAN_MAX_STEPS ? (int)i : -1,
			 "cannot clone the mount of %s",
			 i == MOAT_GV_EXE_STEP		 ? g->exe
				 : i == MOAT_GV_LIB_STEP ? g->libdir
							 : s->src);
	close(fd);
	return tree;
}

static void hold_attach(struct moat_run *r, unsigned i, int tree, bool ro)
{
	char at[32];
	int w = r->sb.setup_w;
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
					(ro ? MOUNT_ATTR_RDONLY : 0)};
	snprintf(at, sizeof(at), MOAT_GV_MNT "/%u", i);
	/* MOAT_GV_ROOTBIND: onto root/<dest>, reached without a symlink
	 * (the bundle writer checked it; checked again here) */
	int to = r->gv->dirfd, mp = -1;
	const char *where = at;
	bool exe = i == MOAT_GV_EXE_STEP || i == MOAT_GV_LIB_STEP;
	const char *inside = i == MOAT_GV_LIB_STEP ? MOAT_GV_LIB : MOAT_GV_INIT;
	if (exe ? r->gv->b.exe_rootbind : r->gv->b.src[i] == MOAT_GV_ROOTBIND) {
		char rel[MOAT_MAX_PATH + 8];
		snprintf(rel, sizeof(rel), MOAT_GV_ROOT "%s",
			 exe ? inside : r->plan->steps[i].dest);
		mp = (int)moat_openat2(r->gv->dirfd, rel, O_PATH | O_CLOEXEC, 0,
				       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
					       RESOLVE_NO_MAGICLINKS);
		if (mp < 0) {
			errno = -mp;
			hold_die(w, MOAT_STAGE_MOUNT, exe ? -1 : (int)i,
				 "the mount point %s changed",
				 exe ? inside : r->plan->steps[i].dest);
		}
		to = mp;
		where = "";
	}
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0 ||
	    move_mount(tree, "", to, where,
		       MOVE_MOUNT_F_EMPTY_PATH | (mp >= 0 ? MOVE_MOUNT_T_EMPTY_PATH : 0)) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, exe ? -1 : (int)i, "cannot mount %s in the bundle",
			 exe ? (i == MOAT_GV_LIB_STEP ? r->gv->libdir : r->gv->exe)
				 : r->plan->steps[i].src ? r->plan->steps[i].src
							 : r->plan->steps[i].dest);
	if (mp >= 0)
		close(mp);
	close(tree);
}

static void hold_overlay(struct moat_run *r, unsigned i)
{
	const struct moat_step *s = &r->plan->steps[i];
	struct moat_gv_run *g = r->gv;
	int w = r->sb.setup_w;
	char base[192], opts[640], sz[96], at[192];
	snprintf(base, sizeof(base), "%s/" MOAT_GV_OVL, g->dir);
	uid_t u = g->rootless ? 0 : r->plan->id.uid;
	gid_t gg = g->rootless ? 0 : r->plan->id.gid;
	snprintf(sz, sizeof(sz), "mode=0755,size=%llu,uid=%u,gid=%u", (unsigned long long)s->size,
		 (unsigned)u, (unsigned)gg);
	if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, sz) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot mount the overlay's tmpfs");
	int ovl = open(base, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ovl < 0 || mkdirat(ovl, "upper", 0755) < 0 || mkdirat(ovl, "work", 0755) < 0 ||
	    mkdirat(ovl, "lower", 0755) < 0 || fchownat(ovl, "upper", u, gg, 0) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot create the overlay's directories");
	int tree = hold_tree(r, i, false);
	struct mount_attr ma = {.attr_set =
					MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (mount_setattr(tree, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0 ||
	    move_mount(tree, "", ovl, "lower", MOVE_MOUNT_F_EMPTY_PATH) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot attach the overlay's lower layer %s",
			 s->src);
	close(tree);
	snprintf(opts, sizeof(opts),
		 "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work,userxattr", base, base, base);
	snprintf(at, sizeof(at), "%s/" MOAT_GV_MNT "/%u", g->dir, i);
	if (mount("overlay", at, "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i, "cannot mount the overlay over %s", s->dest);
	int up = openat(ovl, "upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (up < 0 || moat_sandbox_send_fd(r->sb.sock_child, MOAT_FD_UPPER, up) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, (int)i,
			 "cannot hand the overlay's upper layer to moat");
	close(up);
	close(ovl);
}

static void hold_output(struct moat_run *r, unsigned i)
{
	const struct moat_step *s = &r->plan->steps[i];
	struct moat_gv_run *g = r->gv;
	char at[192], sz[96];
	snprintf(at, sizeof(at), "%s/" MOAT_GV_MNT "/%u", g->dir, i);
	snprintf(sz, sizeof(sz), "mode=%04o,size=%llu,uid=%u,gid=%u", s->mode & 07777,
		 (unsigned long long)s->size, g->rootless ? 0u : (unsigned)r->plan->id.uid,
		 g->rootless ? 0u : (unsigned)r->plan->id.gid);
	if (mount("tmpfs", at, "tmpfs", MS_NOSUID | MS_NODEV, sz) < 0)
		hold_die(r->sb.setup_w, MOAT_STAGE_MOUNT, (int)i, "cannot mount %s", s->dest);
	int fd = open(at, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || moat_sandbox_send_fd(r->sb.sock_child, MOAT_FD_OUTPUT, fd) < 0)
		hold_die(r->sb.setup_w, MOAT_STAGE_MOUNT, (int)i, "cannot hand /output to moat");
	close(fd);
}

static _Noreturn void holder(struct moat_run *r)
{
	struct moat_gv_run *g = r->gv;
	struct moat_init *sb = &r->sb;
	int w = sb->setup_w;
	char go;
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(MOAT_EXIT_SETUP);
	ssize_t n;
	while ((n = read(sb->go_r, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(MOAT_EXIT_SETUP);
	for (unsigned i = 0; i < sb->n_cgroup_self; i++)
		if (write(sb->cgroup_self[i], "0", 1) != 1)
			hold_die(w, MOAT_STAGE_CGROUP, -1, "cannot join the run's cgroup");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		hold_die(w, MOAT_STAGE_MOUNT, -1, "cannot make mounts private");
	/* the bundle as this mount namespace sees it (mounts attach here) */
	int dirfd = open(g->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dirfd < 0 || !same_file(dirfd, g->dirfd))
		hold_die(w, MOAT_STAGE_MOUNT, -1, "the bundle %s changed", g->dir);
	close(g->dirfd);
	g->dirfd = dirfd;
	/* --rootfs (or --image's tree) as this mount namespace sees it: a
	 * source opened beneath the supervisor's fd is a mount of the host's
	 * namespace, which open_tree(OPEN_TREE_CLONE) refuses (EINVAL) here;
	 * opened again by its symlink-free path, and the same directory, as
	 * the process level does (sandbox.c open_sources) */
	int rk = moat_sandbox_rootfs_here(sb);
	if (rk < 0) {
		errno = -rk;
		hold_die(w, MOAT_STAGE_MOUNT, -1, "--rootfs %s: %s", sb->rootfs_path,
			 rk == -EXDEV ? "changed while moat started (refused)" : "cannot open it");
	}
	/* the capture rules and listeners, as at the process level (hook_net.c) */
	if (moat_hook_network(sb) < 0 || moat_hook_network_join(sb) < 0)
		hold_die(w, MOAT_STAGE_NETWORK, -1, "network setup failed");
	for (unsigned i = 0; i < r->plan->n_steps; i++) {
		switch (g->b.src[i]) {
		case MOAT_GV_BIND:
		case MOAT_GV_ROOTBIND:
			hold_attach(r, i, hold_tree(r, i, true),
				    (r->plan->steps[i].flags & MOAT_STEPF_RO) != 0);
			break;
		case MOAT_GV_OVERLAY:
			hold_overlay(r, i);
			break;
		case MOAT_GV_OUTPUT:
			hold_output(r, i);
			break;
		default:
			break;
		}
	}
	hold_attach(r, MOAT_GV_EXE_STEP, hold_tree(r, MOAT_GV_EXE_STEP, false), true);
	if (g->libdir[0])
		hold_attach(r, MOAT_GV_LIB_STEP, hold_tree(r, MOAT_GV_LIB_STEP, false), true);

	/* runsc: its stdin is the control channel (the init's), stdout
	 * nothing, stderr its log; nothing else of the supervisor's */
	char state[192], bundle[160];
	snprintf(state, sizeof(state), "%s/" MOAT_GV_STATE, g->dir);
	snprintf(bundle, sizeof(bundle), "%s", g->dir);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (devnull < 0)
		hold_die(w, MOAT_STAGE_STDIO, -1, "cannot open /dev/null");
	int fds[4] = {sb->sock_child, devnull, g->log_fd, w};
	if (moat_fdset_compact(fds, 4) < 0 || fcntl(3, F_SETFD, FD_CLOEXEC) < 0)
		hold_die(w, MOAT_STAGE_STDIO, -1, "cannot arrange runsc's descriptors");
	/* fd 3 is the setup pipe (close-on-exec: EOF at the exec) */
	const char *argv[18];
	unsigned a = 0;
	argv[a++] = g->runsc;
	argv[a++] = "--root";
	argv[a++] = state;
	if (g->trace_conf[0]) {
		argv[a++] = "--pod-init-config";
		argv[a++] = g->trace_conf;
	}
	argv[a++] = "--platform";
	argv[a++] = "ptrace";
	argv[a++] = "--network";
	argv[a++] = r->plan->net.mode == MOAT_NET_ALLOW ? "host" : "none";
	argv[a++] = "--ignore-cgroups";
	if (g->rootless)
		argv[a++] = "--rootless";
	argv[a++] = "run";
	argv[a++] = "--bundle";
	argv[a++] = bundle;
	argv[a++] = g->id;
	argv[a] = NULL;
	static const char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
	execve(g->runsc, (char *const *)(uintptr_t)argv, (char *const *)(uintptr_t)envp);
	hold_die(3, MOAT_STAGE_EXEC, -1, "cannot execute %s", g->runsc);
}

/* ---- the supervisor's side ------------------------------------------------ */

static int write_maps(pid_t pid, uid_t uid, gid_t gid)
{
	char path[64], map[64];
	const char *what[3] = {"setgroups", "uid_map", "gid_map"};
	for (unsigned i = 0; i < 3; i++) {
		snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, what[i]);
		if (i == 0)
			snprintf(map, sizeof(map), "deny");
		else
			snprintf(map, sizeof(map), "0 %u 1\n",
				 i == 1 ? (unsigned)uid : (unsigned)gid);
		_cleanup_close_ int fd = open(path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || write(fd, map, strlen(map)) != (ssize_t)strlen(map))
			return negerrno();
	}
	return 0;
}

/* The end of runsc's log, for a message. */
static void log_tail(struct moat_gv_run *g, char *buf, size_t len)
{
	buf[0] = '\0';
	_cleanup_close_ int fd = openat(g->dirfd, MOAT_GV_LOG, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	off_t end = lseek(fd, 0, SEEK_END);
	off_t from = end > (off_t)len - 1 ? end - (off_t)len + 1 : 0;
	ssize_t n = pread(fd, buf, len - 1, from);
	if (n <= 0)
		return;
	buf[n] = '\0';
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = '\0';
	char *nl = strrchr(buf, '\n');
	if (nl)
		memmove(buf, nl + 1, strlen(nl + 1) + 1);
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20)
			*c = ' ';
}

/* The tail of runsc's log, for a start that failed (holder_wait.h). */
static void ended_detail(struct moat_run *r, char *buf, size_t len)
{
	log_tail(r->gv, buf, len);
}

/* Until moat's init inside gVisor says it serves the channel (holder_wait.h):
 * the holder's fds (overlay upper, /output, network listeners) and its
 * setup errors; never blocks. */
static int gv_poll(struct moat_run *r)
{
	return moat_holder_wait_poll(r, &r->gv->wait);
}

/* Where the bundle goes: /dev/shm when it is the usual tmpfs (root's,
 * sticky, world-writable, as /tmp), /tmp otherwise. Measured (bench/FINDINGS.md,
 * issue 17, s9): on an ext4 /tmp with many recently deleted inodes, creating
 * the bundle's ~60 mount points, files and symlinks (and runsc's state
 * files) cost the supervisor 15-25 ms of CPU in ext4's inode allocator. */
static const char *bundle_parent(void)
{
	struct statfs sf;
	struct stat st;
	if (statfs("/dev/shm", &sf) == 0 && sf.f_type == TMPFS_MAGIC &&
	    lstat("/dev/shm", &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
	    (st.st_mode & 01777) == 01777)
		return "/dev/shm";
	return "/tmp";
}

static int gv_start(struct moat_run *r)
{
	struct moat_gv_run *g = r->gv;
	const struct moat_plan *pl = r->plan;
	int k, step;
	char why[256];
	if (moat_plan_check_runtime(pl) < 0)
		return moat_error_set(r->err, "plan", EPROTO,
				      "a plan step's source was not made before clone");
	if (r->sb.root_mode && (k = moat_backend_ns_idmapped(r)) < 0)
		return k;
	/* the bundle: a fresh private directory */
	snprintf(g->dir, sizeof(g->dir), "%s/moat-gvisor-%s-XXXXXX", bundle_parent(), r->run_id);
	/* named in the run's state record before it exists: after a SIGKILL
	 * of the supervisor, moat gc or the next run removes it */
	if ((k = moat_supervise_state_mkdtemp(r, "isolation", g->dir)) < 0)
		return k;
	g->dirfd = open(g->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (g->dirfd < 0) {
		k = -errno;
		(void)rmdir(g->dir);
		return moat_error_set(r->err, "isolation", -k, "cannot open the bundle %s: %s",
				      g->dir, strerror(-k));
	}
	if (mkdirat(g->dirfd, MOAT_GV_STATE, 0700) < 0 || mkdirat(g->dirfd, MOAT_GV_OVL, 0700) < 0)
		return moat_error_set(r->err, "isolation", errno, "cannot prepare the bundle %s",
				      g->dir);
	/* rootless: the holder's user namespace maps its root to us; the
	 * container's files must be reachable by the sandbox user */
	if (fchmod(g->dirfd, 0711) < 0)
		return negerrno();
	/* every source, opened once here; the holder re-walks and compares */
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (s->op != MOAT_STEP_BIND && s->op != MOAT_STEP_OVERLAY)
			continue;
		int fd = r->sb.premounted[i] >= 0
			? (int)fcntl(r->sb.premounted[i], F_DUPFD_CLOEXEC, 3)
			: moat_sandbox_open_source(s, r->sb.user_path[i], r->sb.rootfs_fd,
						   pl->sysroot);
		if (fd == -ENOENT && (s->flags & MOAT_STEPF_OPTIONAL))
			continue;
		if (fd < 0)
			return moat_error_set(
				r->err, "mount", -fd,
				"mount step failed (plan step %u): cannot open %s: %s", i + 1,
				s->src, strerror(-fd));
		g->srcfd[i] = fd;
	}
	g->srcfd[MOAT_GV_EXE_STEP] = (int)moat_openat2(AT_FDCWD, g->exe, O_PATH | O_CLOEXEC, 0,
						       RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	if (g->srcfd[MOAT_GV_EXE_STEP] < 0)
		return moat_error_set(r->err, "isolation", errno,
				      "cannot open moat's executable %s", g->exe);
	if (pl->sysroot && pl->sysroot[0]) {
		if ((k = host_loader(g->libdir, sizeof(g->libdir), g->b.loader,
				     sizeof(g->b.loader))) < 0)
			return moat_error_set(
				r->err, "isolation", -k,
				"isolation gvisor with a system tree of its own "
				"(--rootfs, --image): cannot find the host's loader for "
				"moat's init: %s",
				strerror(-k));
		g->srcfd[MOAT_GV_LIB_STEP] =
			(int)moat_openat2(AT_FDCWD, g->libdir, O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
					  RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
		if (g->srcfd[MOAT_GV_LIB_STEP] < 0)
			return moat_error_set(r->err, "isolation", errno,
					      "cannot open the host loader's directory %s",
					      g->libdir);
	}
	/* the rlimits of the plan; without a cgroup (--allow-degraded cgroup)
	 * the memory and pids limits as RLIMIT_AS and RLIMIT_NPROC, as at the
	 * process level */
	struct moat_rlimit_opts rl = r->plan->limits.rl;
	rl.as = r->sb.rlimit_as;
	rl.nproc = r->sb.rlimit_nproc;
	/* system sources only: a user's directory keeps a mount of its own
	 * (its own file-access mode, shared: changes on the host are seen) */
	for (unsigned i = 0; i < pl->n_steps; i++)
		g->b.rootbind_ok[i] = !r->sb.user_path[i] && r->sb.premounted[i] < 0;
	k = moat_gv_bundle_write(g->dirfd, g->dir, pl, g->srcfd, &rl, &g->b, &step, why,
				 sizeof(why));
	if (k < 0) {
		char at[32] = "";
		if (step >= 0)
			snprintf(at, sizeof(at), " (plan step %d)", step + 1);
		return moat_error_set(r->err, "isolation", -k, "bundle%s: %s", at, why);
	}
	g->log_fd = openat(g->dirfd, MOAT_GV_LOG, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (g->log_fd < 0)
		return negerrno();
	/* exec records: gVisor's trace session to moat's confined receiver */
	if (r->p->record_exec &&
	    (k = moat_gvt_start(g->dirfd, g->dir, &g->trace, g->trace_conf, sizeof(g->trace_conf),
				why, sizeof(why))) < 0)
		return moat_error_set(r->err, "isolation", -k, "exec records: %s", why);

	int sp[2], p1[2], p2[2];
	if (pipe2(p1, O_CLOEXEC) < 0)
		return negerrno();
	r->sb.setup_r = p1[0];
	r->sb.setup_w = p1[1];
	if (pipe2(p2, O_CLOEXEC) < 0)
		return negerrno();
	r->sb.go_r = p2[0];
	r->sb.go_w = p2[1];
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0)
		return negerrno();
	r->sb.sock_sup = sp[0];
	r->sb.sock_child = sp[1];

	uint64_t flags =
		CLONE_NEWNS | CLONE_NEWNET | CLONE_PIDFD | (g->rootless ? CLONE_NEWUSER : 0);
	struct clone_args ca = {
		.flags = flags, .pidfd = (uint64_t)(uintptr_t)&r->pidfd, .exit_signal = SIGCHLD};
	moat_supervise_clone_args(r, &ca);
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		holder(r);
	}
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0)
		return moat_error_set(r->err, "namespaces", e,
				      "cannot create the gVisor holder's namespaces: %s",
				      strerror(e));
	r->init_pid = (pid_t)pid;
	r->sb.setup_w = safe_close(r->sb.setup_w);
	r->sb.go_r = safe_close(r->sb.go_r);
	r->sb.sock_child = safe_close(r->sb.sock_child);
	if (g->rootless && (k = write_maps(r->init_pid, geteuid(), getegid())) < 0)
		return moat_error_set(r->err, "identity", -k,
				      "cannot map the holder's user namespace: %s", strerror(-k));
	if ((k = moat_supervise_child(r)) < 0 || (k = moat_supervise_started(r)) < 0)
		return k;
	if (write(r->sb.go_w, "g", 1) != 1)
		return moat_error_set(r->err, "sync", errno, "the holder vanished during setup");
	r->sb.go_w = safe_close(r->sb.go_w);
	/* runsc starts from here: gv_poll() waits for the init's report */
	g->wait = (struct moat_holder_wait){.done_after_setup = true,
					    .ended = "runsc could not start the sandbox",
					    .ended_detail = ended_detail,
					    .trace = g->trace};
	return moat_holder_wait_start(r, &g->wait);
}

/* runsc delete --force (its sandbox and gofer), for a runsc that did not end
 * by itself; bounded: killed after 5 s. */
static void runsc_delete(struct moat_gv_run *g)
{
	pid_t pid = fork();
	if (pid == 0) {
		char state[192];
		snprintf(state, sizeof(state), "%s/" MOAT_GV_STATE, g->dir);
		int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null_fd < 0 || dup2(null_fd, 0) < 0 || dup2(null_fd, 1) < 0 ||
		    dup2(null_fd, 2) < 0 || syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
			_exit(1);
		const char *argv[9];
		unsigned a = 0;
		argv[a++] = g->runsc;
		argv[a++] = "--root";
		argv[a++] = state;
		argv[a++] = "--ignore-cgroups";
		if (g->rootless)
			argv[a++] = "--rootless";
		argv[a++] = "delete";
		argv[a++] = "--force";
		argv[a++] = g->id;
		argv[a] = NULL;
		static const char *const envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
		execve(g->runsc, (char *const *)(uintptr_t)argv, (char *const *)(uintptr_t)envp);
		_exit(1);
	}
	if (pid < 0)
		return;
	for (int i = 0; i < 500 && waitpid(pid, NULL, WNOHANG) == 0; i++)
		usleep(10000);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* The init inside gVisor ends when its channel closes; with it the
 * container's every process, and runsc run exits. If it does not within
 * 5 s: SIGKILL, runsc's own teardown, and the run's cgroup. */
static void gv_kill(struct moat_run *r)
{
	struct moat_gv_run *g = r->gv;
	if (r->pidfd < 0 || r->killed)
		return;
	if (r->sb.sock_sup >= 0)
		shutdown(r->sb.sock_sup, SHUT_RDWR);
	struct pollfd pf = {.fd = r->pidfd, .events = POLLIN};
	int k;
	while ((k = poll(&pf, 1, 5000)) < 0 && errno == EINTR)
		;
	if (k <= 0) {
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
		if (g && g->dirfd >= 0)
			runsc_delete(g);
		moat_supervise_kill_all(r);
	}
	siginfo_t si;
	while (waitid(P_PIDFD, (id_t)r->pidfd, &si, WEXITED) < 0 && errno == EINTR)
		;
	r->killed = true;
	/* runsc is gone, and with it the Sentry's end of the trace: the
	 * receiver's last frames (before the exit record) */
	if (g && g->trace)
		moat_gvt_finish(r, g->trace, 2000);
	moat_proc_init_died(r);
}

static void gv_dispatch(struct moat_run *r)
{
	/* a descriptor it closes leaves r->epfd with it */
	moat_gvt_dispatch(r, r->gv ? r->gv->trace : NULL);
}

static void gv_release(struct moat_run *r)
{
	moat_backend_ns()->release(r);
	gv_free(r->gv);
	r->gv = NULL;
}

static const struct moat_backend_ops gv_ops = {
	.name = "gvisor",
	.prepare = gv_prepare,
	.start = gv_start,
	.poll = gv_poll,
	.ready_ms = GV_START_MS,
	.kill = gv_kill,
	.release = gv_release,
	.dispatch = gv_dispatch,
};

const struct moat_backend_ops *moat_backend_gvisor(void)
{
	return &gv_ops;
}

/* ---- inside gVisor: `moat __gvisor-init` ---------------------------------- */

int moat_gvisor_init_main(struct moat_error *err)
{
	int type = 0;
	socklen_t len = sizeof(type);
	if (getsockopt(0, SOL_SOCKET, SO_TYPE, &type, &len) < 0 || type != SOCK_SEQPACKET)
		return moat_error_set(err, "usage", EINVAL,
				      "__gvisor-init is internal to moat run --isolation gvisor");
	int sock = fcntl(0, F_DUPFD_CLOEXEC, 3);
	int devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (sock < 0 || devnull < 0)
		_exit(MOAT_EXIT_SETUP);
	for (int i = 0; i < 3; i++)
		if (dup2(devnull, i) < 0)
			_exit(MOAT_EXIT_SETUP);
	close(devnull);
	if (moat_sandbox_send_fd(sock, MOAT_FD_DONE, -1) < 0)
		_exit(MOAT_EXIT_SETUP);
	/* the Sentry executed this as its container's first process: no
	 * disposition was inherited from anyone (the 64 resets cost ~2 ms of
	 * ptrace round trips on an idle machine, 10-16 ms on a loaded one) */
	moat_init_serve(sock, NULL, true);
}
