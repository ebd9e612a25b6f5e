/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor: policy -> plan -> clone -> wait -> teardown. It is the only
 * privileged part, never parses network bytes, and owns every resource of
 * the run until it is gone. The loop is a small epoll over the init's pidfd,
 * a signalfd, a timerfd, (when a pty is used) the terminal relay and the
 * relay of the other standard streams (stdio_relay.c).
 */
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/pidfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "lib/audit.h"
#include "lib/errors.h"
#include "lib/paths.h"
#include "lib/restrict.h"
#include "lib/run.h"
#include "lib/state.h"
#include "lib/stdio_relay.h"
#include "lib/supervise.h"
#include "shared/macro.h"

/* root mode: sandbox uids on the host, as the plan states them (plan.h) */
#define ROOT_UID_BASE MOAT_PLAN_ROOT_UID_BASE
#define ROOT_UID_SLOTS MOAT_PLAN_ROOT_UID_SLOTS
#define MOAT_MAX_ARGS 65536

uint64_t moat_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static int random_hex(char *out, size_t nbytes)
{
	unsigned char b[32];
	if (nbytes > sizeof(b))
		return -EINVAL;
	if (getrandom(b, nbytes, 0) != (ssize_t)nbytes)
		return negerrno();
	for (size_t i = 0; i < nbytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	return 0;
}

/* ---- environment ---------------------------------------------------------- */

static int env_push(struct moat_run *r, const char *name, const char *value)
{
	char *s;
	for (unsigned i = 0; i < r->n_envp; i++) {
		size_t n = strlen(name);
		if (strncmp(r->envp[i], name, n) == 0 && r->envp[i][n] == '=') {
			if (asprintf(&s, "%s=%s", name, value) < 0)
				return -ENOMEM;
			free(r->envp[i]);
			r->envp[i] = s;
			return 0;
		}
	}
	char **nv = realloc(r->envp, sizeof(char *) * (r->n_envp + 2));
	if (!nv)
		return -ENOMEM;
	r->envp = nv;
	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -ENOMEM;
	nv[r->n_envp++] = s;
	nv[r->n_envp] = NULL;
	return 0;
}

/* A clean environment: nothing of moat's own is inherited except what the
 * policy names. */
static int build_env(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	char home[128];
	int k;
	snprintf(home, sizeof(home), "/home/%s", p->user);
	const char *term = getenv("TERM");
	const char *lang = getenv("LANG");
	if ((k = env_push(r, "PATH",
			  "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")) < 0 ||
	    (k = env_push(r, "HOME", home)) < 0 || (k = env_push(r, "USER", p->user)) < 0 ||
	    (k = env_push(r, "LOGNAME", p->user)) < 0 ||
	    (k = env_push(r, "TERM", term && *term && strlen(term) < 64 ? term : "dumb")) < 0 ||
	    (k = env_push(r, "LANG", lang && *lang && strlen(lang) < 64 ? lang : "C.UTF-8")) < 0 ||
	    (k = env_push(r, "MOAT_SANDBOX", "1")) < 0)
		return k;
	for (unsigned i = 0; i < p->n_env; i++) {
		const char *v = p->env[i].value;
		if (!v) {
			v = getenv(p->env[i].name);
			if (!v)
				return moat_error_set(r->err, "environment", ENOENT,
						      "--env %s: not set in moat's environment",
						      p->env[i].name);
		}
		if ((k = env_push(r, p->env[i].name, v)) < 0)
			return k;
	}
	return moat_supervise_env(r, env_push);
}

/* ---- identity --------------------------------------------------------------- */

/* Root mode: every concurrent sandbox gets its own unprivileged host uid,
 * held by a lock for the run's lifetime. */
static int alloc_uid_slot(struct moat_run *r)
{
	if (mkdir("/run/moat", 0700) < 0 && errno != EEXIST)
		return moat_error_set(r->err, "identity", errno, "cannot create /run/moat: %s",
				      strerror(errno));
	if (mkdir("/run/moat/uids", 0700) < 0 && errno != EEXIST)
		return moat_error_set(r->err, "identity", errno, "cannot create /run/moat/uids: %s",
				      strerror(errno));
	uint32_t start;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint32_t)getpid();
	for (uint32_t i = 0; i < ROOT_UID_SLOTS; i++) {
		uint32_t slot = (start + i) % ROOT_UID_SLOTS;
		char path[64];
		snprintf(path, sizeof(path), "/run/moat/uids/%u", slot);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return moat_error_set(r->err, "identity", errno, "cannot open %s: %s", path,
					      strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			r->uid_slot_fd = fd;
			r->sb.host_uid = ROOT_UID_BASE + slot;
			r->sb.host_gid = ROOT_UID_BASE + slot;
			return 0;
		}
		close(fd);
	}
	return moat_error_set(r->err, "identity", EAGAIN, "no free sandbox uid (all %u in use)",
			      ROOT_UID_SLOTS);
}

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
	pid_t pid = fork();
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
		if (unshare(CLONE_NEWUSER) < 0)
			_exit(1);
		/* wait until the parent has opened our namespace, then leave */
		(void)!read(pfd[0], &c, 1);
		_exit(0);
	}
	close(pfd[0]);
	int k = 0;
	/* the child unshares asynchronously: wait until its ns differs from ours */
	for (int tries = 0; tries < 1000; tries++) {
		struct stat a, b;
		snprintf(path, sizeof(path), "/proc/%d/ns/user", (int)pid);
		if (stat(path, &a) == 0 && stat("/proc/self/ns/user", &b) == 0 &&
		    a.st_ino != b.st_ino)
			break;
		usleep(50);
	}
	snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)owner, (unsigned)r->sb.host_uid);
	if ((k = write_file(pid, "uid_map", map)) >= 0) {
		snprintf(map, sizeof(map), "%u %u 1\n", (unsigned)group, (unsigned)r->sb.host_gid);
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
	const char *status = moat_policy_status_path(r->p);
	if (status && (k = moat_path_check_writable(status, MOAT_PATH_AS_INVOKER, why)) < 0) {
		k = moat_path_error(r->err, "status", "--json-status", status, k, why);
		goto out;
	}
	k = 0;
out:
	free(why);
	return k;
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
		int tree = (int)open_tree(src, "",
					  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
						  AT_RECURSIVE);
		if (tree < 0)
			return moat_error_set(r->err, "mount", errno,
					      "cannot clone mount of %s: %s", s->src,
					      strerror(errno));
		r->sb.premounted[i] = tree;
		struct mount_attr ma = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)uns};
		if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0)
			return moat_error_set(
				r->err, "mount", errno,
				"cannot make an idmapped mount of %s (owner %u shown as the sandbox user): %s",
				s->src, (unsigned)st.st_uid, strerror(errno));
	}
	return 0;
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

/* ---- terminal relay --------------------------------------------------------- */

static void tty_restore(struct moat_run *r)
{
	if (r->tty_raw && r->saved_tty) {
		tcsetattr(STDIN_FILENO, TCSADRAIN, r->saved_tty);
		r->tty_raw = false;
	}
}

static void tty_winsize(struct moat_run *r)
{
	struct winsize ws;
	int src = isatty(STDIN_FILENO) ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
	if (r->pty_fd >= 0 && src >= 0 && ioctl(src, TIOCGWINSZ, &ws) == 0)
		ioctl(r->pty_fd, TIOCSWINSZ, &ws);
}

/* Copies what is readable from `from` to `to` (to < 0: discards it). Returns
 * bytes, 0 at EOF, -1 on a read error, -2 on a write error.
 * At most one page per call: after POLLOUT a pipe takes that without blocking. */
static ssize_t relay_once(int from, int to)
{
	char buf[4096];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EINTR) ? 1 : n;
	if (to < 0)
		return n; /* discarded */
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = to, .events = POLLOUT};
			poll(&pfd, 1, 1000);
			continue;
		}
		if (w <= 0)
			return -2; /* the writing side failed */
		off += w;
	}
	return n;
}

/* ---- the loop --------------------------------------------------------------- */

enum {
	EV_PIDFD = 1,
	EV_SIGNAL,
	EV_TIMER,
	EV_TTY_IN,
	EV_PTY,
	EV_TTY_OUT,
	EV_STDIO, /* EV_STDIO + 0..2: the relay of stdin, stdout, stderr */
	EV_EXTRA = EV_STDIO + 3
};

static int ep_add(int epfd, int fd, uint32_t tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? negerrno() : 0;
}

static void arm_timer(int tfd, uint64_t ms)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ms / 1000),
					      .tv_nsec = (long)(ms % 1000) * 1000000L}};
	if (ms == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime(tfd, 0, &its, NULL);
}

static void on_signal(struct moat_run *r)
{
	struct signalfd_siginfo si;
	while (read(r->sigfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;
		if (sig == SIGCHLD)
			continue;
		if (sig == SIGWINCH) {
			tty_winsize(r);
			continue;
		}
		if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP || sig == SIGQUIT)
			r->interrupted = true;
		/* init forwards: SIGTERM to every process, others to the command */
		pidfd_send_signal(r->pidfd, sig, NULL, 0);
		if (sig == SIGTERM && !r->grace_armed && r->timerfd >= 0) {
			r->grace_armed = true;
			arm_timer(r->timerfd, r->p->kill_grace_ms);
		}
	}
}

static void on_timer(struct moat_run *r)
{
	uint64_t x;
	(void)!read(r->timerfd, &x, sizeof(x));
	if (!r->grace_armed) {
		/* the wall-clock limit: SIGTERM everything, SIGKILL after the grace */
		r->timed_out = true;
		r->grace_armed = true;
		moat_supervise_event_limit(r, "timeout");
		pidfd_send_signal(r->pidfd, SIGTERM, NULL, 0);
		arm_timer(r->timerfd, r->p->kill_grace_ms);
	} else {
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
		moat_supervise_kill_all(r);
	}
}

/* After the init exited every process of the sandbox is gone (its pid
 * namespace died with it), so the relay pipes reach EOF once drained: what
 * the command wrote last is never lost. The caller's reader sets the pace, as
 * it did for the command: moat waits for a slow reader, but the wall-clock
 * limit still ends the wait (after a timeout: one more second), as do the
 * signals that stop a run. A pipe that neither brings data nor EOF for a
 * second is held open outside the sandbox: not waited for. */
static void drain_stdio(struct moat_run *r)
{
	uint64_t cap_us = r->timed_out ? moat_now_us() + 1000000u : 0;
	for (;;) {
		struct pollfd pfd[4];
		unsigned idx[2];
		unsigned n = moat_stdio_pending(r, pfd, idx);
		if (n == 0)
			return;
		pfd[n] = (struct pollfd){.fd = r->sigfd, .events = POLLIN};
		pfd[n + 1] = (struct pollfd){.fd = r->timerfd, .events = POLLIN};
		int wait_ms = 1000;
		if (cap_us) {
			uint64_t now = moat_now_us();
			if (now >= cap_us)
				return;
			wait_ms = (int)MIN((cap_us - now) / 1000u + 1, 1000u);
		}
		int k = poll(pfd, n + 2, wait_ms);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return;
		if (k == 0) {
			if (moat_stdio_waiting_input_only(r))
				return;
			continue;
		}
		if (pfd[n].revents) {
			struct signalfd_siginfo si;
			while (read(r->sigfd, &si, sizeof(si)) == sizeof(si))
				if (si.ssi_signo != SIGCHLD && si.ssi_signo != SIGWINCH)
					return;
		}
		if (pfd[n + 1].revents)
			return; /* the time limit (or its grace) */
		for (unsigned i = 0; i < n; i++)
			if (pfd[i].revents)
				moat_stdio_dispatch(r, idx[i]);
	}
}

static int event_loop(struct moat_run *r)
{
	struct epoll_event evs[16];
	int k;
	if ((k = ep_add(r->epfd, r->pidfd, EV_PIDFD)) < 0 ||
	    (k = ep_add(r->epfd, r->sigfd, EV_SIGNAL)) < 0)
		return k;
	if (r->timerfd >= 0 && (k = ep_add(r->epfd, r->timerfd, EV_TIMER)) < 0)
		return k;
	if (r->pty_fd >= 0) {
		if ((k = ep_add(r->epfd, r->pty_fd, EV_PTY)) < 0)
			return k;
		if (r->tty_in >= 0 && ep_add(r->epfd, r->tty_in, EV_TTY_IN) < 0)
			r->tty_in = -1; /* e.g. /dev/null cannot be polled: nothing to relay */
	}
	if ((k = moat_stdio_register(r, r->epfd, EV_STDIO)) < 0 ||
	    (k = moat_supervise_register(r, r->epfd, EV_EXTRA)) < 0)
		return k;
	while (!r->init_exited) {
		int n = epoll_wait(r->epfd, evs, (int)ELEMENTSOF(evs), -1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		for (int i = 0; i < n; i++) {
			uint32_t tag = evs[i].data.u32;
			switch (tag) {
			case EV_PIDFD:
				r->init_exited = true;
				break;
			case EV_SIGNAL:
				on_signal(r);
				break;
			case EV_TIMER:
				on_timer(r);
				break;
			case EV_TTY_IN:
				if (relay_once(r->tty_in, r->pty_fd) <= 0) {
					epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->tty_in, NULL);
					r->tty_in = -1;
					/* stdin ended: send EOF to the terminal's reader */
					char eof = 4;
					(void)!write(r->pty_fd, &eof, 1);
				}
				break;
			case EV_PTY: {
				/* RT-069: a reader of moat's output that stalls must not
				 * block the supervisor (timeout, signals): stop reading the
				 * pty (the sandbox then blocks on its own terminal) until
				 * the output drains. Regular files never stall and cannot
				 * be polled (epoll_ctl fails): they are written directly. */
				struct pollfd out = {.fd = r->tty_out, .events = POLLOUT};
				struct epoll_event ev = {.events = EPOLLOUT,
							 .data.u32 = EV_TTY_OUT};
				if (!r->out_broken && poll(&out, 1, 0) == 0 &&
				    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->tty_out, &ev) == 0) {
					epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->pty_fd, NULL);
					break;
				}
				ssize_t k2 = relay_once(r->pty_fd, r->out_broken ? -1 : r->tty_out);
				if (k2 == 0 || k2 == -1) {
					epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->pty_fd, NULL);
					r->pty_done = true;
				} else if (k2 < 0) {
					/* the reader went away: keep draining the terminal
					 * (its output is lost), so the command neither blocks
					 * nor outlives its limits */
					r->out_broken = true;
				}
				break;
			}
			case EV_TTY_OUT:
				epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->tty_out, NULL);
				if (!r->pty_done)
					(void)ep_add(r->epfd, r->pty_fd, EV_PTY);
				break;
			case EV_STDIO:
			case EV_STDIO + 1:
			case EV_STDIO + 2:
				moat_stdio_dispatch(r, tag - EV_STDIO);
				break;
			default:
				moat_supervise_dispatch(r, tag, evs[i].events);
				break;
			}
		}
	}
	/* drain what the command wrote last (up to 2 s for a slow reader) */
	if (r->pty_fd >= 0 && !r->pty_done && !r->out_broken) {
		int fl = fcntl(r->pty_fd, F_GETFL);
		fcntl(r->pty_fd, F_SETFL, fl | O_NONBLOCK);
		for (int waits = 0; waits < 20;) {
			struct pollfd out = {.fd = r->tty_out, .events = POLLOUT};
			if (poll(&out, 1, 100) == 0) {
				waits++;
				continue;
			}
			if (relay_once(r->pty_fd, r->tty_out) <= 1)
				break;
		}
	}
	moat_stdio_stdin_finish(r);
	drain_stdio(r);
	moat_stdio_report(r);
	return 0;
}

/* ---- setup result ------------------------------------------------------------ */

/* Reads the setup pipe: EOF means the command was executed; a record means a
 * step failed. Also receives the fds the init hands over. */
static int wait_setup(struct moat_run *r)
{
	struct moat_setup_error e;
	ssize_t n;
	bool done = false;

	/* fds first: the init sends them before it execs, DONE last */
	for (;;) {
		int kind = 0, fd = -1;
		int k = moat_sandbox_recv_fd(r->sb.sock_sup, &kind, &fd);
		if (k < 0)
			break; /* the init died during setup: the pipe says why */
		if (kind == MOAT_FD_DONE) {
			done = true;
			break;
		}
		switch (kind) {
		case MOAT_FD_OUTPUT:
			r->output_fd = fd;
			break;
		case MOAT_FD_UPPER:
			r->upper_fd = fd;
			break;
		case MOAT_FD_PTY:
			r->pty_fd = fd;
			break;
		case MOAT_FD_NOTIFY:
			r->notify_fd = fd;
			break;
		case MOAT_FD_NOTIFY_TAKE: {
			/* The init's listener, by its number there (sandbox.c). */
			int num = -1, ok = 0;
			k = moat_sandbox_recv_fd(r->sb.sock_sup, &num, &fd);
			safe_close(fd);
			if (k >= 0 && num >= 0 && r->notify_fd < 0) {
				r->notify_fd = (int)syscall(SYS_pidfd_getfd, r->pidfd, num, 0);
				ok = r->notify_fd >= 0; /* pidfd_getfd sets O_CLOEXEC */
			}
			int32_t ack = ok;
			(void)!send(r->sb.sock_sup, &ack, sizeof(ack), MSG_NOSIGNAL);
			break;
		}
		default:
			if (moat_supervise_take_fd(r, kind, fd) <= 0)
				safe_close(fd);
		}
	}
	/* With exec recording the command's execve waits for our answer, and only
	 * then closes the setup pipe: serve the seccomp listener meanwhile. */
	while (r->notify_fd >= 0) {
		struct pollfd pf[2] = {{.fd = r->sb.setup_r, .events = POLLIN},
				       {.fd = r->notify_fd, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			break;
		if (pf[1].revents & POLLIN)
			moat_restrict_notify(r);
		else if (pf[1].revents)
			break;
	}
	while ((n = read(r->sb.setup_r, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	/* EOF after DONE: the command was executed (its copy closed on exec).
	 * EOF without DONE: the init died before finishing setup. */
	if (n == 0 && done)
		return 0;
	if (n != sizeof(e))
		return moat_error_set(r->err, "setup", EPROTO,
				      "the sandbox died during setup without saying why");
	e.detail[sizeof(e.detail) - 1] = 0;
	if (e.stage == MOAT_STAGE_EXEC) {
		r->exec_errno = e.err ? e.err : ENOEXEC;
		return moat_error_set(r->err, "exec", e.err, "cannot execute %s: %s", e.detail,
				      strerror(e.err));
	}
	char step[32] = "";
	if (e.step >= 0)
		snprintf(step, sizeof(step), " (plan step %d)", e.step + 1);
	return moat_error_set(r->err, moat_setup_stage_name(e.stage), e.err,
			      "%s step failed%s: %s: %s", moat_setup_stage_name(e.stage), step,
			      e.detail, strerror(e.err));
}

/* Back to the caller's signal mask, without a SIGPIPE we caused on the way. */
static void restore_mask(const sigset_t *oldmask)
{
	sigset_t pipe_set;
	struct timespec zero = {0, 0};
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (!sigismember(oldmask, SIGPIPE))
		while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
			;
	sigprocmask(SIG_SETMASK, oldmask, NULL);
}

/* ---- run ------------------------------------------------------------------- */

static void run_free(struct moat_run *r)
{
	tty_restore(r);
	moat_stdio_free(r);
	free(r->saved_tty);
	for (unsigned i = 0; i < r->n_envp; i++)
		free(r->envp[i]);
	free(r->envp);
	for (unsigned i = 0; r->argv_copy && r->argv_copy[i]; i++)
		free(r->argv_copy[i]);
	free(r->argv_copy);
	free(r->plan);
	safe_close(r->pidfd);
	safe_close(r->epfd);
	safe_close(r->sigfd);
	safe_close(r->timerfd);
	safe_close(r->output_fd);
	safe_close(r->upper_fd);
	safe_close(r->pty_fd);
	safe_close(r->notify_fd);
	safe_close(r->sb.setup_r);
	safe_close(r->sb.setup_w);
	safe_close(r->sb.go_r);
	safe_close(r->sb.go_w);
	safe_close(r->sb.status_r);
	safe_close(r->sb.status_w);
	safe_close(r->sb.sock_sup);
	safe_close(r->sb.sock_child);
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++) {
		safe_close(r->sb.premounted[i]);
		safe_close(r->sb.user_fd[i]);
		free(r->sb.user_path[i]);
	}
	safe_close(r->sb.rootfs_fd);
	free(r->sb.rootfs_path);
	safe_close(r->uid_slot_fd);
}

static void fill_status_from_wait(struct moat_run *r, int wst)
{
	struct moat_status *st = r->st;
	if (WIFEXITED(wst)) {
		st->reason = MOAT_REASON_EXITED;
		st->status = WEXITSTATUS(wst);
		st->exit_code = st->status;
	} else if (WIFSIGNALED(wst)) {
		st->reason = MOAT_REASON_SIGNALED;
		st->signal = WTERMSIG(wst);
		st->exit_code = 128 + st->signal;
	}
}

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

#ifdef MOAT_TESTING
/* Test build only: see sandbox.h. A copy, since the init wipes its environment. */
static char test_stall_at[32];

void moat_test_stall_arm(void)
{
	const char *gate = getenv("MOAT_TEST_LAYERS"), *at = getenv("MOAT_TEST_STALL_AT");
	test_stall_at[0] = '\0';
	if (gate && streq(gate, "1") && at && strlen(at) < sizeof(test_stall_at))
		snprintf(test_stall_at, sizeof(test_stall_at), "%s", at);
}

void moat_test_stall(const char *stage)
{
	char msg[80];
	if (!test_stall_at[0] || !streq(test_stall_at, stage))
		return;
	int n = snprintf(msg, sizeof(msg), "moat: test stall at %s\n", stage);
	(void)!write(STDERR_FILENO, msg, (size_t)n);
	for (;;)
		pause();
}
#endif

int moat_run(const struct moat_policy *p, char *const argv[], struct moat_status *ret_status,
	     struct moat_error *ret_err)
{
	struct moat_run run = {.p = p,
			       .st = ret_status,
			       .err = ret_err,
			       .pidfd = -1,
			       .epfd = -1,
			       .sigfd = -1,
			       .timerfd = -1,
			       .output_fd = -1,
			       .upper_fd = -1,
			       .pty_fd = -1,
			       .notify_fd = -1,
			       .notify_root_fd = -1,
			       .tty_in = -1,
			       .tty_out = -1,
			       .uid_slot_fd = -1,
			       .status_record = -1};
	struct moat_run *r = &run;
	sigset_t mask, oldmask;
	int k;

	memset(ret_status, 0, sizeof(*ret_status));
	ret_status->reason = MOAT_REASON_SETUP_FAILED;
	ret_status->exit_code = MOAT_EXIT_SETUP;
	r->start_us = moat_now_us();
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++)
		r->sb.premounted[i] = r->sb.user_fd[i] = -1;
	r->sb.rootfs_fd = -1;
	r->sb.setup_r = r->sb.setup_w = r->sb.go_r = r->sb.go_w = -1;
	r->sb.status_r = r->sb.status_w = r->sb.sock_sup = r->sb.sock_child = -1;

	if (!argv || !argv[0] || !argv[0][0])
		return moat_error_set(ret_err, "usage", EINVAL, "no command given");
	moat_test_stall_arm();
	if ((k = moat_policy_validate(p, ret_err)) < 0)
		return k;
	if ((k = random_hex(r->run_id, 8)) < 0)
		return moat_error_set(ret_err, "setup", -k, "no randomness for the run id");
	memcpy(ret_status->run_id, r->run_id, sizeof(ret_status->run_id));
	/* before anything is opened: no fd of moat may land on a closed 0..2 */
	moat_stdio_claim(r);

	r->plan = malloc(sizeof(*r->plan));
	if (!r->plan) {
		run_free(r);
		return -ENOMEM;
	}
	if ((k = moat_plan_build(p, r->plan)) < 0) {
		run_free(r);
		return moat_error_set(ret_err, "plan", -k,
				      "the policy needs more setup steps than allowed");
	}
	if ((k = build_env(r)) < 0)
		goto fail;

	/* Terminal: the command never gets the host's terminal. */
	bool any_tty = false;
	for (int i = 0; i < 3; i++) {
		r->sb.tty_fds[i] = isatty(i);
		any_tty |= r->sb.tty_fds[i];
	}
	if (p->tty == MOAT_TTY_ALWAYS || (p->tty == MOAT_TTY_AUTO && any_tty)) {
		r->sb.use_pty = true;
		if (p->tty == MOAT_TTY_ALWAYS)
			r->sb.tty_fds[0] = r->sb.tty_fds[1] = r->sb.tty_fds[2] = true;
	} else if (any_tty) {
		k = moat_error_set(
			ret_err, "tty", ENOTTY,
			"a standard stream is a terminal and --no-tty was given: redirect it "
			"(the sandbox never receives the host's terminal)");
		goto fail;
	}

	r->sb.p = p;
	r->sb.plan = r->plan;
	/* a heap copy: the init wipes moat's own argument area (see sandbox.c) */
	r->argv_copy = calloc(MOAT_MAX_ARGS + 1, sizeof(char *));
	if (!r->argv_copy) {
		k = -ENOMEM;
		goto fail;
	}
	for (unsigned i = 0; argv[i]; i++) {
		if (i >= MOAT_MAX_ARGS) {
			k = moat_error_set(ret_err, "usage", E2BIG, "more than %d arguments",
					   MOAT_MAX_ARGS);
			goto fail;
		}
		if (!(r->argv_copy[i] = strdup(argv[i]))) {
			k = -ENOMEM;
			goto fail;
		}
	}
	r->sb.argv = r->argv_copy;
	r->sb.envp = r->envp;
	r->sb.ucount_inotify_instances = half_of_sysctl("/proc/sys/user/max_inotify_instances");
	r->sb.ucount_inotify_watches = half_of_sysctl("/proc/sys/user/max_inotify_watches");
	r->sb.supervisor_pid = getpid();
	r->sb.root_mode = geteuid() == 0;
	if (r->sb.root_mode) {
		if ((k = alloc_uid_slot(r)) < 0)
			goto fail;
		/* root's supplementary groups must not follow into the sandbox */
		if (setgroups(0, NULL) < 0) {
			k = moat_error_set(ret_err, "identity", errno,
					   "cannot drop supplementary groups: %s", strerror(errno));
			goto fail;
		}
	} else {
		r->sb.host_uid = geteuid();
		r->sb.host_gid = getegid();
	}

	if ((k = resolve_user_paths(r)) < 0)
		goto fail;
	if ((k = moat_supervise_prepare(r)) < 0)
		goto fail;
	/* every source the plan left to the run (the CA bundle) is there */
	if (moat_plan_check_runtime(r->plan) < 0) {
		k = moat_error_set(ret_err, "plan", EPROTO,
				   "a plan step's source was not made before clone");
		goto fail;
	}
	if (r->sb.root_mode && (k = prepare_idmapped(r)) < 0)
		goto fail;
	moat_test_stall("prepared");

	int sp[2];
	if ((k = pipe_pair(&r->sb.setup_r, &r->sb.setup_w)) < 0 ||
	    (k = pipe_pair(&r->sb.go_r, &r->sb.go_w)) < 0 ||
	    (k = pipe_pair(&r->sb.status_r, &r->sb.status_w)) < 0) {
		k = moat_error_set(ret_err, "setup", -k, "cannot create pipes: %s", strerror(-k));
		goto fail;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		k = moat_error_set(ret_err, "setup", errno, "cannot create socketpair: %s",
				   strerror(errno));
		goto fail;
	}
	r->sb.sock_sup = sp[0];
	r->sb.sock_child = sp[1];

	/* Signals are taken through a signalfd; the sandbox's init resets its mask. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	r->sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	/* SIGPIPE is blocked too (not read from the signalfd): a write to a
	 * sandbox that died gives EPIPE; pending ones are dropped at the end. */
	sigaddset(&mask, SIGPIPE);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (p->timeout_ms || true)
		r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (r->sigfd < 0 || r->epfd < 0 || r->timerfd < 0) {
		k = moat_error_set(ret_err, "setup", errno, "cannot create event fds: %s",
				   strerror(errno));
		goto fail_mask;
	}

	/* the relay pipes last: no helper forked before the clone holds them */
	if ((k = moat_stdio_prepare(r)) < 0)
		goto fail_mask;
	pid_t pid = clone_sandbox(r, &r->pidfd);
	if (pid < 0) {
		int e = errno;
		k = moat_error_set(
			ret_err, "namespaces", e,
			"cannot create the sandbox's namespaces (clone3 with user, mount, pid, "
			"ipc, uts%s namespaces): %s%s",
			p->net == MOAT_NET_HOST ? "" : ", net", strerror(e),
			e == EPERM || e == ENOSPC
				? " (are unprivileged user namespaces enabled? see `moat doctor`)"
				: "");
		goto fail_mask;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		moat_sandbox_init(&r->sb);
	}
	r->init_pid = pid;
	moat_stdio_after_clone(r);
	moat_test_stall("cloned");
	safe_close(r->sb.setup_w);
	r->sb.setup_w = -1;
	safe_close(r->sb.go_r);
	r->sb.go_r = -1;
	safe_close(r->sb.status_w);
	r->sb.status_w = -1;
	safe_close(r->sb.sock_child);
	r->sb.sock_child = -1;

	if ((k = write_maps(r)) < 0) {
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
		waitid(P_PIDFD, (id_t)r->pidfd, NULL, WEXITED);
		goto fail_mask;
	}
	if (p->timeout_ms)
		arm_timer(r->timerfd, p->timeout_ms);
	moat_test_stall("child");
	if (write(r->sb.go_w, "g", 1) != 1) {
		k = moat_error_set(ret_err, "sync", errno, "the sandbox vanished during setup");
		goto fail_kill;
	}
	/* While the sandbox assembles its root: the work it needs only before its
	 * command runs (the cgroup attach, which on cgroup v1 waits for an RCU
	 * grace period; the seccomp filter's compilation; the secrets), and the
	 * audit log's start record. */
	if ((k = moat_supervise_child(r)) < 0 || (k = moat_supervise_started(r)) < 0)
		goto fail_kill;
	if (write(r->sb.go_w, "f", 1) != 1) {
		/* EPIPE (SIGPIPE is blocked): the sandbox failed a step meanwhile */
		k = wait_setup(r);
		if (k >= 0)
			k = moat_error_set(ret_err, "sync", EPIPE,
					   "the sandbox vanished during setup");
		goto fail_kill;
	}
	safe_close(r->sb.go_w);
	r->sb.go_w = -1;

	k = wait_setup(r);
	if (k < 0)
		goto fail_kill;
	moat_test_stall("started");

	if (r->pty_fd >= 0) {
		r->tty_in = r->sb.tty_fds[0] ? STDIN_FILENO : -1;
		r->tty_out = r->sb.tty_fds[1] ? STDOUT_FILENO : STDERR_FILENO;
		if (isatty(STDIN_FILENO)) {
			struct termios raw;
			r->saved_tty = malloc(sizeof(*r->saved_tty));
			if (r->saved_tty && tcgetattr(STDIN_FILENO, r->saved_tty) == 0) {
				raw = *r->saved_tty;
				cfmakeraw(&raw);
				if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) == 0)
					r->tty_raw = true;
			}
		}
		tty_winsize(r);
	}

	k = event_loop(r);
	siginfo_t si = {0};
	waitid(P_PIDFD, (id_t)r->pidfd, &si, WEXITED);
	tty_restore(r);
	int32_t rec;
	if (read(r->sb.status_r, &rec, sizeof(rec)) == sizeof(rec))
		fill_status_from_wait(r, rec);
	else {
		/* init itself was killed (timeout grace ran out, moat's SIGKILL) */
		ret_status->reason = MOAT_REASON_SIGNALED;
		ret_status->signal = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED
			? si.si_status
			: SIGKILL;
		ret_status->exit_code = 128 + ret_status->signal;
	}
	if (r->timed_out) {
		ret_status->reason = MOAT_REASON_TIMEOUT;
		ret_status->exit_code = MOAT_EXIT_TIMEOUT;
	}
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		ret_status->cpu_user_us =
			(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
		ret_status->cpu_sys_us =
			(uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
		ret_status->mem_peak = (uint64_t)ru.ru_maxrss * 1024u;
	}
	ret_status->wall_us = moat_now_us() - r->start_us;
	restore_mask(&oldmask);
	k = moat_supervise_finish(r, k);
	moat_supervise_teardown(r);
	run_free(r);
	return k;

fail_kill:
	if (r->pidfd >= 0) {
		pidfd_send_signal(r->pidfd, SIGKILL, NULL, 0);
		waitid(P_PIDFD, (id_t)r->pidfd, NULL, WEXITED);
	}
	if (r->exec_errno) {
		bool nf = r->exec_errno == ENOENT;
		ret_status->reason = nf ? MOAT_REASON_NOT_FOUND : MOAT_REASON_CANNOT_EXEC;
		ret_status->exit_code = nf ? MOAT_EXIT_NOT_FOUND : MOAT_EXIT_CANNOT_EXEC;
	}
fail_mask:
	restore_mask(&oldmask);
fail:
	ret_status->wall_us = moat_now_us() - r->start_us;
	moat_supervise_teardown(r);
	run_free(r);
	return k < 0 ? k : -EIO;
}
