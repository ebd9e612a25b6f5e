/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The namespace backend (backend.h): the sandbox is a tree of processes in
 * new user, mount, pid, ipc, uts, cgroup and net namespaces under moat's
 * init (sandbox.c, init_serve.c). Here: the user's paths resolved once, the
 * idmapped mounts of root mode, clone3, the id maps, the two-step release
 * of the init, and its setup result.
 */
#include <fcntl.h>
#include <grp.h>
#include <linux/openat2.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/pidfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "audit/audit.h"
#include "sandbox/backend.h"
#include "policy/errors.h"
#include "shared/hostroot.h"
#include "sandbox/paths.h"
#include "supervisor/run.h"
#include "supervisor/state.h"
#include "supervisor/supervise.h"
#include "shared/fdpass.h"
#include "shared/macro.h"

static int pipe_pair(int *ret_r, int *ret_w)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return negerrno();
	*ret_r = p[0];
	*ret_w = p[1];
	return 0;
}

/* Half of a /proc/sys/user limit of moat's own user namespace (at least 1),
 * or 0 if it cannot be read. */
static long half_of_sysctl(const char *path)
{
	char buf[32];
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	long v = strtol(buf, NULL, 10);
	return v <= 0 ? 0 : v / 2 > 0 ? v / 2 : 1;
}

/* ---- identity --------------------------------------------------------------- */

static int write_file(pid_t pid, const char *name, const char *data)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	ssize_t n = write(fd, data, strlen(data));
	int e = n < 0 ? errno : 0;
	close(fd);
	if (n < 0)
		return -e;
	return (size_t)n == strlen(data) ? 0 : -EIO;
}

static int write_maps(struct moat_run *r)
{
	char map[64];
	int k;
	/* Never host root in the map, whatever the sandbox's own uid is (0 too):
	 * root mode allocates an unprivileged host uid (spawn.c); unprivileged,
	 * the caller's own uid is not host root (moat_host_root is false) */
	if ((r->sb.host_uid == 0 || r->sb.host_gid == 0) && moat_host_root())
		return moat_error_set(r->err, "identity", EPERM,
				      "refusing to map host uid/gid 0 into the sandbox");
	if ((k = write_file(r->init_pid, "setgroups", "deny")) < 0)
		return moat_error_set(r->err, "identity", -k, "cannot deny setgroups: %s",
				      strerror(-k));
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)r->p->uid, (unsigned)r->sb.host_uid);
	if ((k = write_file(r->init_pid, "uid_map", map)) < 0)
		return moat_error_set(r->err, "identity", -k,
				      "cannot write uid_map (%u -> host %u): %s",
				      (unsigned)r->p->uid, (unsigned)r->sb.host_uid, strerror(-k));
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)r->p->gid, (unsigned)r->sb.host_gid);
	if ((k = write_file(r->init_pid, "gid_map", map)) < 0)
		return moat_error_set(r->err, "identity", -k,
				      "cannot write gid_map (%u -> host %u): %s",
				      (unsigned)r->p->gid, (unsigned)r->sb.host_gid, strerror(-k));
	return 0;
}

/* Root mode: the sandbox's uid is an unprivileged host uid that owns nothing,
 * so the user's own directories are bound through idmapped mounts in which
 * their owner appears as the sandbox user (and the sandbox's writes land as
 * that owner). Needs CAP_SYS_ADMIN in the initial namespace, so the
 * supervisor prepares these detached mounts before clone. */
static int idmap_userns(struct moat_run *r, uid_t owner, gid_t group, int *ret_fd)
{
	int pfd[2];
	char map[64], path[64];
	if (pipe2(pfd, O_CLOEXEC) < 0)
		return negerrno();
	/* Born in its new user namespace (clone3 with CLONE_NEWUSER): the maps
	 * can be written as soon as clone returns, with no waiting for the child
	 * to unshare. Kernels without clone3: fork, then unshare in the child. */
	struct clone_args ca = {.flags = CLONE_NEWUSER, .exit_signal = SIGCHLD};
	bool born_in_ns = true;
	pid_t pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && errno == ENOSYS) {
		born_in_ns = false;
		pid = fork();
	}
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return negerrno();
	}
	if (pid == 0) {
		char c;
		/* only its end of the pipe: none of the supervisor's descriptors */
		if (dup2(pfd[0], 0) < 0 || syscall(SYS_close_range, 1u, ~0u, 0u) < 0)
			_exit(1);
		pfd[0] = 0;
		if (!born_in_ns && unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		/* wait until the parent has opened our namespace, then leave */
		(void)!read(pfd[0], &c, 1);
		_exit(0);
	}
	close(pfd[0]);
	int k = 0;
	/* after fork the child unshares asynchronously: wait until its ns
	 * differs from ours */
	for (int tries = 0; !born_in_ns && tries < 1000; tries++) {
		struct stat a, b;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 &&
		    a.st_ino != b.st_ino)
			break;
		usleep(50);
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)owner, (unsigned)r->sb.host_uid);
	/* the gvisor level: its gofer creates files as root, then gives them
	 * to the sandbox user; root is shown for on-disk nobody (65534, or
	 * 65533 when that is the owner) so that creation can map back */
	if (r->sb.idmap_root && r->sb.host_uid != 0)
		snprintf(map + strlen(map), sizeof(map) - strlen(map), "%u 0 1\n",
			 owner == 65534 ? 65533u : 65534u);
	if ((k = write_file(pid, "uid_map", map)) >= 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)group, (unsigned)r->sb.host_gid);
		if (r->sb.idmap_root && r->sb.host_gid != 0)
			snprintf(map + strlen(map), sizeof(map) - strlen(map), "%u 0 1\n",
				 group == 65534 ? 65533u : 65534u);
		k = write_file(pid, "gid_map", map);
	}
	if (k >= 0) {
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		*ret_fd = open(path, O_RDONLY | O_CLOEXEC);
		if (*ret_fd < 0)
			k = negerrno();
	}
	close(pfd[1]);
	waitpid(pid, NULL, 0);
	return k;
}

/* The option a plan step comes from, for messages. */
static const char *step_option(const struct moat_run *r, const struct moat_step *s)
{
	if (s->flags & MOAT_STEPF_WORKSPACE)
		return "--workspace";
	if (r->p->input && streq(s->dest, "/data") && streq(s->src, r->p->input))
		return "--input";
	return s->flags & MOAT_STEPF_RO ? "--ro" : "--rw";
}

/* The error stage for a failed resolution of a path the user named: "usage"
 * (exit 2, nothing started) if it does not exist or is not a directory where
 * one is needed, "mount" (exit 125) for anything else, such as a refused
 * symlink (ELOOP) or a permission error. */
static const char *missing_stage(int k)
{
	return k == -ENOENT || k == -ENOTDIR ? "usage" : "mount";
}

/* moat's own state (the run records gc and ps read, the logs, manifests and
 * held-back changes that log, diff and apply read) must not be writable in the
 * sandbox: a record planted there would make a later `moat gc` remove, or
 * `moat apply` write, wherever it names. A writable bind (rw workspace, --rw)
 * that holds a state directory, or lies inside one, is refused. */
static int check_state_dirs(struct moat_run *r, const char *opt, const char *src, int fd,
			    const char *resolved)
{
	char live[MOAT_STATE_PATH];
	_cleanup_free_ char *runs = NULL;
	const char *dirs[2] = {NULL, NULL};
	if (moat_runs_dir(&runs) >= 0)
		dirs[0] = runs;
	if (moat_state_default_dir(live, sizeof(live)) >= 0)
		dirs[1] = live;
	for (unsigned j = 0; j < ELEMENTSOF(dirs); j++) {
		if (!dirs[j])
			continue;
		int k = moat_path_overlaps(fd, resolved, dirs[j]);
		if (k < 0)
			return moat_error_set(
				r->err, "mount", -k,
				"%s %s: cannot compare it with moat's state directory "
				"%s: %s",
				opt, src, dirs[j], strerror(-k));
		if (k > 0)
			return moat_error_set(
				r->err, "mount", EPERM,
				"%s %s: holds or lies in moat's state directory %s, which cannot "
				"be writable in the sandbox (a record planted there would direct "
				"a later moat gc or apply); use an overlay workspace, a narrower "
				"directory, or another XDG_STATE_HOME",
				opt, src, dirs[j]);
	}
	return 0;
}

/* Every host path the user named, resolved once (paths.h) and held as an fd
 * before anything else touches it: the bind sources (workspace, --input,
 * --ro, --rw), --rootfs and every source below it, and --json-status (checked
 * here so that a refused one stops the run before it starts). */
static int resolve_user_paths(struct moat_run *r)
{
	const struct moat_plan *pl = r->plan;
	struct moat_path_info *why = malloc(sizeof(*why));
	int k = 0;
	if (!why)
		return -ENOMEM;
	if (pl->sysroot && *pl->sysroot) {
		r->sb.rootfs_fd = k = moat_path_open(pl->sysroot, MOAT_PATH_DIR, 0, why);
		if (k < 0) {
			k = moat_path_error(r->err, missing_stage(k), "--rootfs", pl->sysroot, k,
					    why);
			goto out;
		}
		if (!(r->sb.rootfs_path = strdup(why->resolved))) {
			k = -ENOMEM;
			goto out;
		}
	}
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if ((s->op != MOAT_STEP_BIND && s->op != MOAT_STEP_OVERLAY) || !s->src)
			continue;
		if (s->flags & MOAT_STEPF_SYSROOT) {
			/* inside --rootfs: no symlink on the way to what is mounted */
			_cleanup_close_ int fd =
				moat_sandbox_open_source(s, NULL, r->sb.rootfs_fd, pl->sysroot);
			if (fd == -ENOENT && (s->flags & MOAT_STEPF_OPTIONAL))
				continue;
			if (fd < 0) {
				k = moat_error_set(
					r->err, "mount", -fd, "--rootfs %s: cannot open %s%s: %s",
					pl->sysroot, s->src + strlen(pl->sysroot),
					fd == -ELOOP ? " (a symlink on the way: moat mounts only "
						       "real directories of the tree)"
						     : "",
					strerror(-fd));
				goto out;
			}
			continue;
		}
		if (!(s->flags & MOAT_STEPF_USER))
			continue;
		char opt[64];
		snprintf(opt, sizeof(opt), "mount step failed (plan step %u): %s", i + 1,
			 step_option(r, s));
		k = moat_path_open(s->src, (s->flags & MOAT_STEPF_WORKSPACE) ? MOAT_PATH_DIR : 0, 0,
				   why);
		if (k < 0) {
			/* a path that is not there is the user's mistake (exit 2);
			 * one refused for safety (a symlink) stays a setup failure */
			k = moat_path_error(r->err, missing_stage(k),
					    k == -ENOENT || k == -ENOTDIR ? step_option(r, s) : opt,
					    s->src, k, why);
			goto out;
		}
		r->sb.user_fd[i] = k;
		/* A writable bind of / or of /usr or /var (where a root-owned
		 * symlink is trusted) would let the sandbox plant trusted links */
		if ((s->flags & MOAT_STEPF_WRITABLE) &&
		    (streq(why->resolved, "/") || streq(why->resolved, "/usr") ||
		     streq(why->resolved, "/var"))) {
			k = moat_error_set(r->err, "mount", EPERM,
					   "%s %s: %s cannot be writable in the sandbox (moat "
					   "trusts root's symlinks directly in it)",
					   opt, s->src, why->resolved);
			goto out;
		}
		if (s->op == MOAT_STEP_BIND && (s->flags & MOAT_STEPF_WRITABLE) &&
		    (k = check_state_dirs(r, opt, s->src, r->sb.user_fd[i], why->resolved)) < 0)
			goto out;
		if (!(r->sb.user_path[i] = strdup(why->resolved))) {
			k = -ENOMEM;
			goto out;
		}
	}
	k = 0;
out:
	free(why);
	return k;
}

/* Plan step i's source src as an idmapped clone (of its whole tree when
 * recursive is AT_RECURSIVE) through the user namespace uns, kept in
 * premounted[i] for the init to attach. */
static int idmapped_clone(struct moat_run *r, unsigned i, int src, int uns, unsigned recursive,
			  uid_t owner)
{
	const struct moat_step *s = &r->plan->steps[i];
	int tree = (int)open_tree(src, "",
				  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH | recursive);
	if (tree < 0)
		return moat_error_set(r->err, "mount", errno, "cannot clone mount of %s: %s",
				      s->src, strerror(errno));
	r->sb.premounted[i] = tree;
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)uns};
	if (mount_setattr(tree, "", AT_EMPTY_PATH | recursive, &ma, sizeof(ma)) < 0)
		return moat_error_set(
			r->err, "mount", errno,
			"cannot make an idmapped mount of %s (owner %u shown as the sandbox user): %s",
			s->src, (unsigned)owner, strerror(errno));
	return 0;
}

static int prepare_idmapped(struct moat_run *r)
{
	const struct moat_plan *pl = r->plan;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if ((s->op != MOAT_STEP_BIND && s->op != MOAT_STEP_OVERLAY) ||
		    !(s->flags & MOAT_STEPF_USER))
			continue;
		/* the supervisor's own resolution (resolve_user_paths) */
		int src = r->sb.user_fd[i];
		struct stat st;
		if (src < 0 || fstat(src, &st) < 0)
			return moat_error_set(r->err, "mount", src < 0 ? EBADF : errno,
					      "mount step failed (plan step %u): cannot open %s",
					      i + 1, s->src);
		_cleanup_close_ int uns = -1;
		int k = idmap_userns(r, st.st_uid, st.st_gid, &uns);
		if (k < 0)
			return moat_error_set(r->err, "mount", -k,
					      "cannot create the id mapping for %s: %s", s->src,
					      strerror(-k));
		if ((k = idmapped_clone(r, i, src, uns, AT_RECURSIVE, st.st_uid)) < 0)
			return k;
	}
	return 0;
}

/* Root mode with a writable root (OCI root.readonly false): each tree's
 * lower layer is an idmapped clone in which the tree's owner (the bundle's,
 * host root for an engine's) is the sandbox user, as the invoker's own
 * files are when moat runs unprivileged. Without it the tree shows as
 * nobody's: the sandbox user can add names only at the overlay's top and
 * copy-up cannot give a file its owner (measured: docs/OCI.md). Files of
 * other owners stay nobody's. One id mapping per owner. */
static int prepare_root_idmapped(struct moat_run *r)
{
	const struct moat_plan *pl = r->plan;
	_cleanup_close_ int uns = -1;
	uid_t uns_uid = 0;
	gid_t uns_gid = 0;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (s->op != MOAT_STEP_OVERLAY || !(s->flags & MOAT_STEPF_ROOT_LAYER))
			continue;
		_cleanup_close_ int src =
			moat_sandbox_open_source(s, NULL, r->sb.rootfs_fd, pl->sysroot);
		struct stat st;
		if (src == -ENOENT && (s->flags & MOAT_STEPF_OPTIONAL))
			continue;
		if (src < 0 || fstat(src, &st) < 0)
			return moat_error_set(r->err, "mount", src < 0 ? -src : errno,
					      "root.path: cannot open %s", s->src);
		if (!S_ISDIR(st.st_mode))
			continue; /* a symlink made again, a file bound read-only */
		if (uns < 0 || uns_uid != st.st_uid || uns_gid != st.st_gid) {
			uns = safe_close(uns);
			int k = idmap_userns(r, st.st_uid, st.st_gid, &uns);
			if (k < 0)
				return moat_error_set(r->err, "mount", -k,
						      "cannot create the id mapping for %s: %s",
						      s->src, strerror(-k));
			uns_uid = st.st_uid;
			uns_gid = st.st_gid;
		}
		int k = idmapped_clone(r, i, src, uns, 0, st.st_uid);
		if (k < 0)
			return k;
	}
	return 0;
}

int moat_backend_ns_idmapped(struct moat_run *r)
{
	return prepare_idmapped(r);
}

/* ---- clone ------------------------------------------------------------------ */

static pid_t clone_sandbox(struct moat_run *r, int *ret_pidfd)
{
	/* the namespaces are the plan's (identity part) */
	uint64_t flags = r->plan->id.clone_flags | CLONE_PIDFD;
	struct clone_args ca = {
		.flags = flags, .pidfd = (uint64_t)(uintptr_t)ret_pidfd, .exit_signal = SIGCHLD};
	moat_supervise_clone_args(r, &ca);
	long pid = syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0 && errno == ENOSYS) {
		/* kernels before 5.3: clone with a pidfd through the parent_tid slot */
		pid = syscall(SYS_clone, (unsigned long)(flags | SIGCHLD), NULL, ret_pidfd, NULL,
			      0);
	}
	return (pid_t)pid;
}

/* ---- setup result ------------------------------------------------------------ */

/* A failed step's record (sandbox.c: die) as the run's error. */
static int setup_record_error(struct moat_run *r, struct moat_setup_error *e)
{
	char step[32] = "";
	e->detail[sizeof(e->detail) - 1] = 0;
	if (e->step >= 0)
		snprintf(step, sizeof(step), " (plan step %d)", e->step + 1);
	return moat_error_set(r->err, moat_setup_stage_name(e->stage), e->err,
			      "%s step failed%s: %s: %s", moat_setup_stage_name(e->stage), step,
			      e->detail, strerror(e->err));
}

/* One step of the wait for the init's set-up report, without blocking
 * (0: not yet; the channels are on r->epfd meanwhile). The init sends the
 * fds it hands over before it is ready, DONE last; then, while it finishes
 * (its last steps may be recorded), the seccomp listener is served until it
 * closes the setup pipe: EOF after DONE means the sandbox is ready; a record
 * means a step failed; EOF without DONE, that the init died during set-up. */
static int setup_step(struct moat_run *r)
{
	struct moat_setup_error e;
	ssize_t n;

	/* fds first. A message may carry several kinds (sandbox.h:
	 * moat_sandbox_send_fds). */
	while (!r->setup_fds_over) {
		struct pollfd pf = {.fd = r->sb.sock_sup, .events = POLLIN};
		if (poll(&pf, 1, 0) <= 0)
			return 0;
		int32_t kinds[MOAT_SANDBOX_BATCH_MAX];
		int fds[MOAT_SANDBOX_BATCH_MAX];
		unsigned nk = 0;
		int k = moat_sandbox_recv_fds(r->sb.sock_sup, kinds, fds, &nk);
		if (k < 0) {
			r->setup_fds_over = true; /* the init died: the pipe says why */
			break;
		}
		for (unsigned j = 0; j < nk; j++) {
			int fd = fds[j];
			if (r->setup_done) { /* nothing follows DONE */
				safe_close(fd);
				continue;
			}
			switch (kinds[j]) {
			case MOAT_FD_DONE:
				r->setup_done = r->setup_fds_over = true;
				safe_close(fd);
				break;
			case MOAT_FD_OUTPUT:
				r->output_fd = fd;
				break;
			case MOAT_FD_UPPER:
				r->upper_fd = fd;
				break;
			case MOAT_FD_LOWER:
				r->lower_fd = fd;
				break;
			case MOAT_FD_USERNS:
				r->userns_fd = fd;
				break;
			case MOAT_FD_MNTNS:
				r->mntns_fd = fd;
				break;
			case MOAT_FD_PTMX:
				r->ptmx_fd = fd;
				break;
			case MOAT_FD_NOTIFY:
				r->notify_fd = fd;
				break;
			case MOAT_FD_NOTIFY_TAKE: {
				/* The init's listener, by its number there (the next
				 * kind, sandbox.c); the init goes on without waiting and
				 * keeps it (dumpable) until our first record: a failure
				 * here fails the setup. */
				safe_close(fd);
				int num = j + 1 < nk ? kinds[++j] : -1;
				if (j < nk)
					safe_close(fds[j]);
				if (num >= 0 && r->notify_fd < 0) {
					r->notify_fd =
						(int)syscall(SYS_pidfd_getfd, r->pidfd, num, 0);
					if (r->notify_fd < 0) /* pidfd_getfd sets O_CLOEXEC */
						r->setup_take_err = errno;
					/* a record that does nothing (the init ignores the
					 * type): taken, the init is non-dumpable again
					 * before any request, even in a sandbox left idle */
					struct moat_ctl_req none = {0};
					if (r->notify_fd >= 0)
						(void)moat_msg_send(r->sb.sock_sup, &none,
								    sizeof(none), NULL, 0);
				} else
					r->setup_take_err = EPROTO;
				break;
			}
			default:
				if (moat_supervise_take_fd(r, kinds[j], fd) <= 0)
					safe_close(fd);
			}
		}
	}
	/* the control channel is the sandbox's, not the set-up's, from here */
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.sock_sup, NULL);
	if (r->notify_fd >= 0 && !r->setup_notify_watched && !r->setup_notify_over) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = MOAT_TAG_CREATE};
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->notify_fd, &ev) < 0)
			return moat_error_set(r->err, "setup", errno, "epoll: %s", strerror(errno));
		r->setup_notify_watched = true;
	}
	/* Serve the seccomp listener until the init closed the setup pipe. */
	for (;;) {
		bool listen = r->notify_fd >= 0 && !r->setup_notify_over;
		struct pollfd pf[2] = {{.fd = r->sb.setup_r, .events = POLLIN},
				       {.fd = r->notify_fd, .events = POLLIN}};
		if (poll(pf, listen ? 2 : 1, 0) <= 0)
			return 0;
		if (pf[0].revents)
			break;
		if (pf[1].revents & POLLIN) {
			moat_supervise_pending(r);
		} else if (pf[1].revents) {
			/* the listener failed: the pipe's end decides */
			epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->notify_fd, NULL);
			r->setup_notify_watched = false;
			r->setup_notify_over = true;
		}
	}
	if (r->setup_notify_watched)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->notify_fd, NULL);
	r->setup_notify_watched = false;
	epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.setup_r, NULL);
	while ((n = read(r->sb.setup_r, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	if (n == 0 && r->setup_done && r->setup_take_err)
		return moat_error_set(
			r->err, "seccomp", r->setup_take_err,
			"seccomp step failed: moat could not take the seccomp listener "
			"(pidfd_getfd): %s",
			strerror(r->setup_take_err));
	if (n == 0 && r->setup_done) {
		r->sb.setup_r = safe_close(r->sb.setup_r);
		return 1;
	}
	if (n != sizeof(e))
		return moat_error_set(r->err, "setup", EPROTO,
				      "the sandbox died during setup without saying why");
	return setup_record_error(r, &e);
}

/* The same wait, blocking (a step already failed: the init is ending). */
static int wait_setup(struct moat_run *r)
{
	int k;
	while ((k = setup_step(r)) == 0) {
		struct pollfd pf = {.fd = r->epfd, .events = POLLIN};
		(void)poll(&pf, 1, -1);
	}
	return k < 0 ? k : 0;
}

/* The supervisor failed before the init's first release (the maps, the go
 * byte), while the init ran its first steps (sandbox.c, identity/maps): if one
 * of those failed, its record names the cause, not the vanished sandbox. The
 * go pipe is closed first, so that an init still waiting at identity/maps
 * leaves and the setup pipe ends; without a record, k stands. */
static int early_failure(struct moat_run *r, int k)
{
	struct moat_setup_error e;
	ssize_t n;
	r->sb.go_w = safe_close(r->sb.go_w);
	while ((n = read(r->sb.setup_r, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	return n == (ssize_t)sizeof(e) ? setup_record_error(r, &e) : k;
}

/* Kills the sandbox's init (and so every process) and waits until it is gone. */
static void ns_kill(struct moat_run *r)
{
	if (r->pidfd >= 0 && !r->killed) {
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
		siginfo_t si;
		while (waitid(P_PIDFD, (id_t)r->pidfd, &si, WEXITED) < 0 && errno == EINTR)
			;
		r->killed = true;
		moat_proc_init_died(r);
	}
}

static int ns_prepare(struct moat_run *r)
{
	r->sb.p = r->p;
	r->sb.plan = r->plan;
	r->sb.ucount_inotify_instances = half_of_sysctl("/proc/sys/user/max_inotify_instances");
	r->sb.ucount_inotify_watches = half_of_sysctl("/proc/sys/user/max_inotify_watches");
	r->sb.supervisor_pid = getpid();
	return resolve_user_paths(r);
}

/* From the layers' prepared state to a ready init serving the control
 * channel; the layers' supervisor steps run at their points meanwhile. */
static int ns_start(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	int k;
	/* every source the plan left to the run (the CA bundle) is there */
	if (moat_plan_check_runtime(r->plan) < 0)
		return moat_error_set(r->err, "plan", EPROTO,
				      "a plan step's source was not made before clone");
	if (r->sb.root_mode &&
	    ((k = prepare_idmapped(r)) < 0 || (k = prepare_root_idmapped(r)) < 0))
		return k;
	moat_test_stall("prepared");

	int sp[2];
	if ((k = pipe_pair(&r->sb.setup_r, &r->sb.setup_w)) < 0 ||
	    (k = pipe_pair(&r->sb.go_r, &r->sb.go_w)) < 0) {
		k = moat_error_set(r->err, "setup", -k, "cannot create pipes: %s", strerror(-k));
		return k;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		k = moat_error_set(r->err, "setup", errno, "cannot create socketpair: %s",
				   strerror(errno));
		return k;
	}
	r->sb.sock_sup = sp[0];
	r->sb.sock_child = sp[1];

	/* The init resets its signal mask; meanwhile none of ours reaches it. */
	sigset_t all, old;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pid_t pid = clone_sandbox(r, &r->pidfd);
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		moat_sandbox_init(&r->sb);
	}
	int e = errno;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (pid < 0) {
		k = moat_error_set(
			r->err, "namespaces", e,
			"cannot create the sandbox's namespaces (clone3 with user, mount, pid, "
			"ipc, uts%s namespaces): %s%s",
			p->net == MOAT_NET_HOST ? "" : ", net", strerror(e),
			e == EPERM || e == ENOSPC
				? " (are unprivileged user namespaces enabled? see `moat doctor`)"
				: "");
		return k;
	}
	r->init_pid = pid;
	/* the set-up's channels, watched through the sandbox's fd (ns_poll) */
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = MOAT_TAG_CREATE};
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sb.sock_sup, &ev) < 0 ||
	    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sb.setup_r, &ev) < 0)
		return moat_error_set(r->err, "setup", errno, "epoll: %s", strerror(errno));
	moat_test_stall("cloned");
	r->sb.setup_w = safe_close(r->sb.setup_w);
	r->sb.go_r = safe_close(r->sb.go_r);
	r->sb.sock_child = safe_close(r->sb.sock_child);

	if ((k = write_maps(r)) < 0)
		return early_failure(r, k);
	moat_test_stall("child");
	if (write(r->sb.go_w, "g", 1) != 1)
		return early_failure(
			r,
			moat_error_set(r->err, "sync", errno, "the sandbox vanished during setup"));
	/* While the sandbox assembles its root: the work it needs only before its
	 * command runs (the cgroup attach, which on cgroup v1 waits for an RCU
	 * grace period; the seccomp filter's compilation; the secrets), and the
	 * audit log's start record. */
	if ((k = moat_supervise_child(r)) < 0 || (k = moat_supervise_started(r)) < 0)
		return k;
	if (write(r->sb.go_w, "f", 1) != 1) {
		/* EPIPE (SIGPIPE is blocked): the sandbox failed a step meanwhile */
		k = wait_setup(r);
		if (k >= 0)
			k = moat_error_set(r->err, "sync", EPIPE,
					   "the sandbox vanished during setup");
		return k;
	}
	r->sb.go_w = safe_close(r->sb.go_w);
	/* the rest is the init's: ns_poll() waits for its report */
	return 0;
}

static int ns_poll(struct moat_run *r)
{
	return setup_step(r);
}

static void ns_release(struct moat_run *r)
{
	safe_close(r->sb.setup_r);
	safe_close(r->sb.setup_w);
	safe_close(r->sb.go_r);
	safe_close(r->sb.go_w);
	safe_close(r->sb.sock_child);
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++) {
		safe_close(r->sb.premounted[i]);
		safe_close(r->sb.user_fd[i]);
		free(r->sb.user_path[i]);
		r->sb.premounted[i] = r->sb.user_fd[i] = -1;
		r->sb.user_path[i] = NULL;
	}
	safe_close(r->sb.rootfs_fd);
	free(r->sb.rootfs_path);
	r->sb.rootfs_path = NULL;
	r->sb.setup_r = r->sb.setup_w = r->sb.go_r = r->sb.go_w = r->sb.sock_child = -1;
	r->sb.rootfs_fd = -1;
}

static const struct moat_backend_ops ns_ops = {
	.name = "process",
	.prepare = ns_prepare,
	.start = ns_start,
	.poll = ns_poll,
	.kill = ns_kill,
	.release = ns_release,
};

const struct moat_backend_ops *moat_backend_ns(void)
{
	return &ns_ops;
}
