/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The red-team battery of `moat selftest` (moat.h, moat_selftest_*): the
 * probes of tests/redteam/probes/ are compiled into the moat executable
 * (src/cli/probes.h), which this code runs as `moat __probe NAME ARGS`
 * through /proc/self/exe: the calling program must be moat.
 * For every probe:
 *   1. the positive control runs it WITHOUT moat, never as host root: as root,
 *      a forked child switches to a throw-away uid (and, for the "userns"
 *      context, enters a throw-away user+mount+net+pid+ipc namespace); as an
 *      unprivileged user, the user itself (and a throw-away user namespace);
 *   2. the same probe runs inside `moat run` with the user's policy options:
 *      this binary is bound read-only at /.moat-selftest/moat and runs
 *      `/.moat-selftest/moat __probe NAME ARGS`.
 * The judge is battery.sh's rt_judge: an attempt the control showed open
 * (FAIL) must be BLOCKED or CONTAINED inside; nothing inside may be FAIL
 * (escaped) or INCONCLUSIVE; a probe whose control shows nothing open is
 * skipped, with the control's own words as the reason.
 * Host oracles (a canary process, listeners on loopback and on abstract and
 * pathname sockets, canary secrets, fixture snapshots, the host process list)
 * judge what a probe cannot see from inside. Everything runs under one
 * temporary directory, removed by moat_selftest_free() with the run records
 * of the inner runs. No network beyond loopback. Nothing is printed: the
 * results are returned (struct moat_selftest_result).
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "policy/errors.h"
#include "moat/moat.h"
#include "shared/macro.h"

/* Paths here are built under a short mkdtemp() directory; a truncated one can
 * only make an open fail (reported as an inconclusive setup), never widen. */
#pragma GCC diagnostic ignored "-Wformat-truncation"

#define ST_INNER_EXE "/.moat-selftest/moat"
#define ST_MAX_ARGS 96
#define ST_MAX_ATTEMPTS MOAT_PROBE_MAX_ATTEMPTS
#define ST_OUT_MAX (1u << 20) /* bytes of one probe's output read back */
#define ST_TIMEOUT_S 90

enum {
	CTX_USER = 1 << 0, /* as the unprivileged (throw-away) uid */
	CTX_USERNS = 1 << 1, /* as root of a throw-away user+mnt+net+pid+ipc namespace */
	CTX_SHARED = 1 << 2, /* a throw-away user+mnt namespace with shared propagation */
};

enum st_special {
	SP_NONE,
	SP_TTY, /* under the tty oracle (rt_ttyhost) */
	SP_LEAK, /* --leak <the selftest's own directory> */
	SP_MOCK_PROC, /* control against writable stand-ins of /proc and /sys knobs */
	SP_MOCK_CGROUP, /* control against writable stand-ins of cgroup files */
	SP_SIGNAL, /* a canary process outside */
	SP_SOCKETS, /* listeners outside that count accepts */
	SP_FD3, /* fd 3 open in the caller */
	SP_EXE, /* the moat binary must be unchanged */
	SP_ROBIND, /* a read-only bound fixture must be unchanged */
	SP_FORKBOMB, /* --pids 32 */
	SP_TIMEOUT, /* a process ignoring SIGTERM must end at --timeout */
	SP_ORPHAN, /* a daemon must not outlive the sandbox */
	SP_CREDS, /* canary secrets in the environment and a fake home */
};

struct st_spec {
	const char *name;
	const char *title;
	unsigned ctx;
	enum st_special sp;
	const char *drop; /* attempts (prefix) of the oracle ignored for this probe */
	const char *args[6];
};

static const struct st_spec specs[] = {
	{"rt001_tiocsti",
	 "RT-001/003 TIOCSTI and TIOCLINUX injection",
	 CTX_USER,
	 SP_TTY,
	 "RT-004/host-tty-modes",
	 {"--inject"}},
	{"rt004_tty",
	 "RT-004 tty ioctls and the user's terminal",
	 CTX_USER,
	 SP_TTY,
	 "RT-001/host-tty-input",
	 {0}},
	{"rt005_userns", "RT-005 nested user namespace", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt007_ns", "RT-007 other namespace operations", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt008_mount",
	 "RT-008 mount and the new mount API",
	 CTX_USER | CTX_USERNS,
	 SP_NONE,
	 0,
	 {"--remount-target", "/usr", "--setup-ro"}},
	{"rt009_chroot", "RT-009 chroot and pivot_root", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt010_caps", "RT-010 capability sets", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt011_netlink", "RT-011 netfilter and link configuration", CTX_USERNS, SP_NONE, 0, {0}},
	{"rt012_sockfam", "RT-012 rare socket families", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt013_keyring", "RT-013 kernel keyring", CTX_USER, SP_NONE, 0, {0}},
	{"rt014_bpf",
	 "RT-014 bpf, perf_event_open, userfaultfd",
	 CTX_USER | CTX_USERNS,
	 SP_NONE,
	 0,
	 {0}},
	{"rt015_iouring", "RT-015 io_uring", CTX_USER, SP_NONE, 0, {0}},
	{"rt016_kernel",
	 "RT-016 modules, kexec, reboot, clock, acct",
	 CTX_USER | CTX_USERNS,
	 SP_NONE,
	 0,
	 {0}},
	{"rt017_handle", "RT-017 open_by_handle_at", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt019_personality", "RT-019 personality", CTX_USER, SP_NONE, 0, {0}},
	{"rt020_ptrace", "RT-020 ptrace and memory of init", CTX_USER, SP_NONE, 0, {0}},
	{"rt021_seccomp",
	 "RT-021 seccomp and NoNewPrivs on every thread",
	 CTX_USER,
	 SP_NONE,
	 0,
	 {0}},
	{"rt022_setuid", "RT-022 setuid binaries", CTX_USER, SP_NONE, 0, {0}},
	{"rt023_procleak", "RT-023/076 /proc, /sys and system secrets", CTX_USER, SP_LEAK, 0, {0}},
	{"rt024_procwrite", "RT-024 /proc and /sys writes", CTX_USER, SP_MOCK_PROC, 0, {0}},
	{"rt025_dev", "RT-025 device nodes", CTX_USER | CTX_USERNS, SP_NONE, 0, {0}},
	{"rt026_signal", "RT-026 signals outside", CTX_USER, SP_SIGNAL, 0, {0}},
	{"rt027_sockets", "RT-027/028 host sockets and listeners", CTX_USER, SP_SOCKETS, 0, {0}},
	{"rt029_core", "RT-029 core dumps", CTX_USER, SP_NONE, 0, {0}},
	{"rt030_fds", "RT-030 leaked fds and cwd", CTX_USER, SP_FD3, 0, {0}},
	{"rt031_exe", "RT-031 /proc/<pid>/exe overwrite", CTX_USER, SP_EXE, 0, {0}},
	{"rt033_robind", "RT-033 read-only binds", CTX_USER, SP_ROBIND, 0, {0}},
	{"rt037_propagation", "RT-037 mount propagation", CTX_SHARED, SP_NONE, 0, {0}},
	{"rt066_forkbomb",
	 "RT-066 fork bomb against --pids",
	 CTX_USER,
	 SP_FORKBOMB,
	 0,
	 {"--max", "200"}},
	{"rt072_orphan", "RT-071 outliving the time limit", CTX_USER, SP_TIMEOUT, 0, {0}},
	{"rt072_orphan", "RT-072 daemons outliving the sandbox", CTX_USER, SP_ORPHAN, 0, {0}},
	{"rt073_cgroup", "RT-073 cgroup escape and limits", CTX_USER, SP_MOCK_CGROUP, 0, {0}},
	{"rt074_creds", "RT-074/075 canary secrets", CTX_USER, SP_CREDS, 0, {0}},
	{"rt_arch", "architecture matrix: int 0x80, x32", CTX_USER, SP_NONE, 0, {0}},
};

/*
 * At the gvisor and vm levels (`--isolation gvisor|vm` among the run
 * options) the battery is their filesystem and network probes: each is judged by what the
 * host sees (fixtures, listeners, canaries) or by the sandbox's own view,
 * the same at every level. The kernel-surface probes (namespaces, keyring,
 * bpf, io_uring, ptrace, personality…) are skipped there, with the reason:
 * their syscalls are answered by gVisor's kernel (the Sentry) or the guest's
 * own kernel, never the host's, so "the call succeeded" says nothing about
 * the host.
 */
static const char *const level_battery[] = {
	"rt008_mount", "rt009_chroot",	"rt023_procleak", "rt024_procwrite",
	"rt030_fds",   "rt031_exe",	"rt033_robind",	  "rt037_propagation",
	"rt074_creds", "rt011_netlink", "rt027_sockets",
};

/* Inside results of the gvisor level that are gVisor's own answer and not a
 * way to the host, each measured on runsc 0.0~20221219: the row is shown as
 * CONTAINED with the reason. Only a FAIL whose detail holds `detail` (NULL:
 * any) is taken. */
static const struct {
	const char *id, *detail, *why;
} gvisor_contained[] = {
	{"RT-011/rtm-newaddr", "errno=EACCES",
	 "gvisor: the Sentry's netlink refuses RTM_NEWADDR with EACCES, not EPERM; no address "
	 "is added (its own stack under --net none; hostinet under --net allow returns EACCES "
	 "for every address change)"},
	{"RT-033/chown-noop", NULL,
	 "gvisor: chown(f, -1, -1) changes nothing and gVisor answers it before the read-only "
	 "check; the bound fixture is checked unchanged from the host (RT-033 oracle)"},
};

struct st_attempt {
	char id[128];
	char cls[16];
	char detail[200];
};

struct st_set {
	unsigned n;
	struct st_attempt a[ST_MAX_ATTEMPTS];
};

/* Where a command runs. */
enum st_as {
	AS_CTL_USER,
	AS_CTL_USERNS,
	AS_CTL_SHARED,
	AS_CALLER
};

struct moat_selftest {
	int self_fd; /* O_PATH fd of this binary (/proc/self/exe) */
	char self[PATH_MAX];
	char tmp[PATH_MAX]; /* the selftest's own directory, removed at the end */
	bool root;
	uid_t ctl_uid;
	gid_t ctl_gid;
	char **run_opts; /* the user's policy options, passed to every `moat run` */
	int n_run_opts;
	unsigned seq;
	char extra_env[3][4200]; /* NAME=VALUE for the next command, or "" */
	bool gvisor; /* --isolation gvisor: the level's battery (level_battery[]) */
	bool vm; /* --isolation vm: the same battery */
};

/* --------------------------------------------------------------- helpers */

/* Printable ASCII only: probe output from inside is not trusted. */
static void sanitize(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s > 0x7e)
			*s = '?';
}

static int rm_tree_at(int dfd, const char *name, unsigned depth)
{
	if (depth > 64)
		return -ELOOP;
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -errno;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			(void)rm_tree_at(dirfd(d), e->d_name, depth + 1);
	closedir(d);
	return unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT ? -errno : 0;
}

static int write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
	if (fd < 0)
		return -errno;
	size_t n = strlen(text);
	int r = write(fd, text, n) == (ssize_t)n ? 0 : -EIO;
	close(fd);
	return r;
}

/* mkdir -p of a path under s->tmp, handed to the control's uid. */
static int mkdirs_for(struct moat_selftest *s, const char *path)
{
	char p[PATH_MAX];
	snprintf(p, sizeof p, "%s", path);
	for (char *q = p + strlen(s->tmp) + 1; *q; q++) {
		if (*q != '/')
			continue;
		*q = '\0';
		if (mkdir(p, 0777) < 0 && errno != EEXIST)
			return -errno;
		*q = '/';
	}
	return 0;
}

static void chown_tree(struct moat_selftest *s, const char *path)
{
	if (!s->root)
		return;
	(void)!lchown(path, s->ctl_uid, s->ctl_gid);
	DIR *d = opendir(path);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char p[PATH_MAX];
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		snprintf(p, sizeof p, "%s/%s", path, e->d_name);
		if (e->d_type == DT_DIR)
			chown_tree(s, p);
		else
			(void)!lchown(p, s->ctl_uid, s->ctl_gid);
	}
	closedir(d);
}

static char *read_all(const char *path, size_t max)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return NULL;
	char *buf = malloc(max + 1);
	size_t off = 0;
	ssize_t n;
	if (!buf) {
		close(fd);
		return NULL;
	}
	while (off < max && (n = read(fd, buf + off, max - off)) > 0)
		off += (size_t)n;
	buf[off] = '\0';
	close(fd);
	return buf;
}

static void sleep_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---------------------------------------------------------- running things */

static int write_map(const char *file, const char *text)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, text, strlen(text));
	close(fd);
	return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* In the forked child: become the control's identity. Never host root. */
static void become_control(struct moat_selftest *s, enum st_as as)
{
	uid_t uid;
	gid_t gid;
	char map[64];

	if (s->root) {
		if (setgroups(0, NULL) < 0 || setresgid(s->ctl_gid, s->ctl_gid, s->ctl_gid) < 0 ||
		    setresuid(s->ctl_uid, s->ctl_uid, s->ctl_uid) < 0)
			_exit(126);
		/* /proc/self/{uid,gid}_map belong to root after a uid change */
		(void)prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	}
	uid = getuid();
	gid = getgid();
	if (s->root && (uid == 0 || geteuid() == 0 || getegid() == 0))
		_exit(126);
	if (as == AS_CTL_USER)
		return;
	int flags = CLONE_NEWUSER | CLONE_NEWNS;
	if (as == AS_CTL_USERNS)
		flags |= CLONE_NEWNET | CLONE_NEWPID | CLONE_NEWIPC;
	if (unshare(flags) < 0)
		_exit(120);
	snprintf(map, sizeof map, "0 %u 1", (unsigned)uid);
	if (write_map("/proc/self/uid_map", map) < 0)
		_exit(121);
	(void)write_map("/proc/self/setgroups", "deny");
	snprintf(map, sizeof map, "0 %u 1", (unsigned)gid);
	if (write_map("/proc/self/gid_map", map) < 0)
		_exit(121);
	if (as == AS_CTL_SHARED) {
		if (mount(NULL, "/", NULL, MS_REC | MS_SHARED, NULL) < 0)
			_exit(122);
		return;
	}
	/* a new pid namespace takes effect for children: fork once more */
	pid_t pid = fork();
	if (pid < 0)
		_exit(123);
	if (pid > 0) {
		int st;
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st));
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0 ||
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		_exit(122);
}

static char env_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
static char env_lang[] = "LANG=C";
static char env_home[] = "HOME=/nonexistent";

/*
 * Starts this binary with argv (argv[0] included) as `as`, stdout and stderr
 * to out_path, in a process group of its own. Returns the pid or -1.
 */
static pid_t st_spawn(struct moat_selftest *s, enum st_as as, char **argv, bool fd3,
		      const char *out_path)
{
	extern char **environ;
	char *extra[4] = {0};
	char **env;
	int k = 0, m = 0, ne = 0;

	for (int j = 0; j < 3; j++)
		if (s->extra_env[j][0])
			extra[ne++] = s->extra_env[j];
	if (as == AS_CALLER) {
		/* moat run needs the caller's environment (HOME, XDG_*, and for
		 * the test build's vacuity check MOAT_TEST_LAYERS); the extra
		 * variables win */
		while (environ[k] && k < 4096)
			k++;
	} else {
		k = 4;
	}
	env = calloc((size_t)k + 8, sizeof(char *));
	if (!env)
		return -1;
	if (as == AS_CALLER) {
		for (int i = 0; i < k; i++) {
			bool over = false;
			for (int j = 0; j < ne; j++) {
				const char *eq = strchr(extra[j], '=');
				if (eq &&
				    strncmp(environ[i], extra[j], (size_t)(eq - extra[j] + 1)) == 0)
					over = true;
			}
			if (!over)
				env[m++] = environ[i];
		}
	} else {
		bool home = false;
		env[m++] = env_path;
		env[m++] = env_lang;
		for (int j = 0; j < ne; j++)
			home |= startswith(extra[j], "HOME=");
		if (!home)
			env[m++] = env_home;
	}
	for (int j = 0; j < ne; j++)
		env[m++] = extra[j];
	env[m] = NULL;

	pid_t pid = fork();
	if (pid == 0) {
		int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
		setpgid(0, 0);
		if (out < 0 || null < 0 || dup2(null, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(out, 2) < 0 || (as != AS_CALLER && chdir("/") < 0))
			_exit(125);
		if (fd3 && dup3(open("/etc", O_RDONLY | O_DIRECTORY | O_CLOEXEC), 3, 0) < 0)
			_exit(125);
		if (as != AS_CALLER)
			become_control(s, as);
		syscall(SYS_execveat, s->self_fd, "", argv, env, AT_EMPTY_PATH);
		_exit(127);
	}
	free(env);
	return pid;
}

/* Waits for pid; past timeout_s kills its process group. Returns the wait
 * status or -1 (*ret_timeout set on a timeout). */
static int st_wait(pid_t pid, int timeout_s, bool *ret_timeout)
{
	int st;

	if (ret_timeout)
		*ret_timeout = false;
	if (pid < 0)
		return -1;
	for (long waited = 0;; waited += 20) {
		pid_t r = waitpid(pid, &st, WNOHANG);
		if (r == pid)
			return st;
		if (r < 0 && errno != EINTR)
			return -1;
		if (waited > timeout_s * 1000L) {
			kill(-pid, SIGKILL);
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			if (ret_timeout)
				*ret_timeout = true;
			return -1;
		}
		sleep_ms(20);
	}
}

static int st_exec(struct moat_selftest *s, enum st_as as, char **argv, bool fd3,
		   const char *out_path, int timeout_s, bool *ret_timeout)
{
	return st_wait(st_spawn(s, as, argv, fd3, out_path), timeout_s, ret_timeout);
}

/* Ends a background process of ours and its group. */
static void st_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(-pid, SIGKILL);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* argv builder */
struct st_argv {
	int n;
	char *v[ST_MAX_ARGS + 1];
	char store[ST_MAX_ARGS][600];
};

static void av_add(struct st_argv *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void av_add(struct st_argv *a, const char *fmt, ...)
{
	va_list ap;
	if (a->n >= ST_MAX_ARGS)
		return;
	va_start(ap, fmt);
	vsnprintf(a->store[a->n], sizeof a->store[a->n], fmt, ap);
	va_end(ap);
	a->v[a->n] = a->store[a->n];
	a->v[++a->n] = NULL;
}

/* ---------------------------------------------------------- RESULT lines */

static void set_put(struct st_set *set, const char *id, const char *cls, const char *detail,
		    bool fail_wins)
{
	for (unsigned i = 0; i < set->n; i++)
		if (strcmp(set->a[i].id, id) == 0) {
			if (!fail_wins || strcmp(cls, "FAIL") == 0) {
				snprintf(set->a[i].cls, sizeof set->a[i].cls, "%s", cls);
				snprintf(set->a[i].detail, sizeof set->a[i].detail, "%s", detail);
			}
			return;
		}
	if (set->n >= ST_MAX_ATTEMPTS)
		return;
	struct st_attempt *a = &set->a[set->n++];
	snprintf(a->id, sizeof a->id, "%s", id);
	snprintf(a->cls, sizeof a->cls, "%s", cls);
	snprintf(a->detail, sizeof a->detail, "%s", detail);
}

static const struct st_attempt *set_get(const struct st_set *set, const char *id)
{
	for (unsigned i = 0; i < set->n; i++)
		if (strcmp(set->a[i].id, id) == 0)
			return &set->a[i];
	return NULL;
}

static bool valid_class(const char *c)
{
	return !strcmp(c, "BLOCKED") || !strcmp(c, "CONTAINED") || !strcmp(c, "FAIL") ||
		!strcmp(c, "SKIP") || !strcmp(c, "INCONCLUSIVE");
}

/* Parses the RESULT lines of a file into set; fixture paths in attempt names
 * are replaced by "<tmp>". Returns the number of lines. */
static unsigned parse_results(struct moat_selftest *s, const char *path, struct st_set *set,
			      const char *drop, bool fail_wins)
{
	_cleanup_free_ char *buf = read_all(path, ST_OUT_MAX);
	unsigned n = 0;
	size_t tl = strlen(s->tmp);

	if (!buf)
		return 0;
	for (char *l = buf, *next; l && *l; l = next) {
		next = strchr(l, '\n');
		if (next)
			*next++ = '\0';
		if (strncmp(l, "RESULT ", 7) != 0)
			continue;
		char id[128] = "", cls[32] = "", *detail;
		char *p = l + 7, *sp = strchr(p, ' ');
		if (!sp || (size_t)(sp - p) >= sizeof id)
			continue;
		memcpy(id, p, (size_t)(sp - p));
		p = sp + 1;
		sp = strchr(p, ' ');
		if (!sp || (size_t)(sp - p) >= sizeof cls)
			continue;
		memcpy(cls, p, (size_t)(sp - p));
		detail = sp + 1;
		if (!valid_class(cls))
			continue;
		if (drop && startswith(id, drop))
			continue;
		char *t = strstr(id, s->tmp);
		if (t && tl) {
			char fixed[128];
			snprintf(fixed, sizeof fixed, "%.*s<tmp>%s", (int)(t - id), id, t + tl);
			snprintf(id, sizeof id, "%s", fixed);
		}
		sanitize(id);
		sanitize(detail);
		set_put(set, id, cls, detail, fail_wins);
		n++;
	}
	return n;
}

/* The last lines of a file, for an error message. */
static void tail_of(const char *path, char *out, size_t size)
{
	_cleanup_free_ char *buf = read_all(path, ST_OUT_MAX);
	out[0] = '\0';
	if (!buf)
		return;
	size_t n = strlen(buf);
	const char *p = n > size - 1 ? buf + n - (size - 1) : buf;
	snprintf(out, size, "%s", p);
	sanitize(out);
}

/* battery.sh's rt_judge */
static void judge(const struct st_set *ctl, const struct st_set *in, struct moat_selftest_result *r)
{
	unsigned open = 0, bad_fail = 0, bad_other = 0;
	char bad[400] = "";

	r->n_attempts = 0;
	for (unsigned i = 0; i < ctl->n && r->n_attempts < ST_MAX_ATTEMPTS; i++) {
		const struct st_attempt *c = &ctl->a[i], *x = set_get(in, c->id);
		struct moat_selftest_attempt *row = &r->attempts[r->n_attempts++];
		snprintf(row->id, sizeof row->id, "%s", c->id);
		snprintf(row->ctl, sizeof row->ctl, "%s", c->cls);
		snprintf(row->in, sizeof row->in, "%s", x ? x->cls : "MISSING");
		snprintf(row->detail, sizeof row->detail, "%s", x ? x->detail : c->detail);
		bool c_open = strcmp(c->cls, "FAIL") == 0;
		open += c_open;
		if (x && strcmp(x->cls, "FAIL") == 0) {
			row->verdict = "ESCAPED";
			bad_fail++;
		} else if (x && strcmp(x->cls, "INCONCLUSIVE") == 0) {
			row->verdict = "inconclusive";
			bad_other++;
		} else if (c_open &&
			   (!x || (strcmp(x->cls, "BLOCKED") && strcmp(x->cls, "CONTAINED")))) {
			row->verdict = "inconclusive";
			bad_other++;
		} else if (c_open) {
			row->verdict = "held";
		} else {
			row->verdict = "not open";
		}
		if (strcmp(row->verdict, "held") && strcmp(row->verdict, "not open"))
			snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " %s=%s", row->id,
				 row->in);
	}
	for (unsigned i = 0; i < in->n && r->n_attempts < ST_MAX_ATTEMPTS; i++) {
		const struct st_attempt *x = &in->a[i];
		if (set_get(ctl, x->id))
			continue;
		struct moat_selftest_attempt *row = &r->attempts[r->n_attempts++];
		snprintf(row->id, sizeof row->id, "%s", x->id);
		snprintf(row->ctl, sizeof row->ctl, "-");
		snprintf(row->in, sizeof row->in, "%s", x->cls);
		snprintf(row->detail, sizeof row->detail, "%s", x->detail);
		if (strcmp(x->cls, "FAIL") == 0) {
			row->verdict = "ESCAPED";
			bad_fail++;
		} else if (strcmp(x->cls, "INCONCLUSIVE") == 0) {
			row->verdict = "inconclusive";
			bad_other++;
		} else {
			row->verdict = "not open";
			continue;
		}
		snprintf(bad + strlen(bad), sizeof bad - strlen(bad), " %s=%s", row->id, row->in);
	}
	if (bad_fail) {
		r->verdict = MOAT_PROBE_ESCAPED;
		snprintf(r->reason, sizeof r->reason, "escape or unproven attempt inside moat:%s",
			 bad);
	} else if (bad_other) {
		r->verdict = MOAT_PROBE_INCONCLUSIVE;
		snprintf(r->reason, sizeof r->reason, "unproven attempt inside moat:%s", bad);
	} else if (open == 0) {
		r->verdict = MOAT_PROBE_SKIPPED;
		int k = snprintf(r->reason, sizeof r->reason,
				 "the control shows no open path on this machine:");
		for (unsigned i = 0; i < ctl->n && k > 0 && (size_t)k < sizeof r->reason; i++)
			k += snprintf(r->reason + k, sizeof r->reason - (size_t)k, " %s %s;",
				      ctl->a[i].id, ctl->a[i].detail);
		if (ctl->n == 0)
			snprintf(r->reason, sizeof r->reason, "the control produced no result");
	} else {
		r->verdict = MOAT_PROBE_HELD;
		snprintf(r->reason, sizeof r->reason, "%u attempt(s) open outside, held inside",
			 open);
	}
}

/* ------------------------------------------------------------ one probe */

struct st_job {
	struct moat_selftest *s;
	const struct st_spec *spec;
	struct st_set ctl, in;
	char ctl_args[8][600]; /* extra arguments of the control only */
	int n_ctl_args;
	char in_args[8][600]; /* extra arguments inside only */
	int n_in_args;
	char args[8][600]; /* extra arguments of both */
	int n_args;
	char opts[8][600]; /* extra `moat run` options */
	int n_opts;
	int in_status;
	bool in_timeout;
	char in_out[PATH_MAX];
};

static void forget_run(struct moat_selftest *s, const char *status_path)
{
	_cleanup_free_ char *buf = read_all(status_path, 1 << 16);
	char id[80];
	const char *p;
	size_t n = 0;

	if (!buf || !(p = strstr(buf, "\"run\":")))
		return;
	p += 6;
	while (*p == ' ')
		p++;
	if (*p++ != '"')
		return;
	while (n + 1 < sizeof id && (isalnum((unsigned char)p[n]) || strchr("._-", p[n])))
		n++;
	if (p[n] != '"' || n == 0)
		return;
	memcpy(id, p, n);
	id[n] = '\0';
	(void)moat_run_forget(id, NULL);
}

/* The inside run: `moat run [USER OPTIONS] --ro SELF:/.moat-selftest/moat ... --
 * /.moat-selftest/moat __probe NAME ARGS`, optionally under the tty oracle. */
static int run_inside(struct st_job *j, const char *out_path, bool *ret_timeout)
{
	struct moat_selftest *s = j->s;
	_cleanup_free_ struct st_argv *a = calloc(1, sizeof *a);
	char status[PATH_MAX];
	int st;

	if (!a)
		return -1;
	snprintf(status, sizeof status, "%s/status.%u", s->tmp, ++s->seq);
	av_add(a, "moat");
	if (j->spec->sp == SP_TTY) {
		av_add(a, "__probe");
		av_add(a, "rt_ttyhost");
		av_add(a, "/proc/self/exe");
	}
	av_add(a, "run");
	av_add(a, "--quiet");
	for (int i = 0; i < s->n_run_opts; i++)
		av_add(a, "%s", s->run_opts[i]);
	av_add(a, "--ro");
	av_add(a, "%s:%s", s->self, ST_INNER_EXE);
	av_add(a, "--json-status");
	av_add(a, "%s", status);
	for (int i = 0; i < j->n_opts; i++)
		av_add(a, "%s", j->opts[i]);
	av_add(a, "--");
	av_add(a, "%s", ST_INNER_EXE);
	av_add(a, "__probe");
	av_add(a, "%s", j->spec->name);
	for (const char *const *x = j->spec->args; *x; x++)
		av_add(a, "%s", *x);
	for (int i = 0; i < j->n_args; i++)
		av_add(a, "%s", j->args[i]);
	for (int i = 0; i < j->n_in_args; i++)
		av_add(a, "%s", j->in_args[i]);
	st = st_exec(s, AS_CALLER, a->v, j->spec->sp == SP_FD3, out_path, ST_TIMEOUT_S,
		     ret_timeout);
	forget_run(s, status);
	unlink(status);
	return st;
}

static int run_control(struct st_job *j, enum st_as as, const char *out_path)
{
	struct moat_selftest *s = j->s;
	_cleanup_free_ struct st_argv *a = calloc(1, sizeof *a);

	if (!a)
		return -1;
	av_add(a, "moat");
	av_add(a, "__probe");
	if (j->spec->sp == SP_TTY) {
		av_add(a, "rt_ttyhost");
		av_add(a, "/proc/self/exe");
		av_add(a, "__probe");
	}
	av_add(a, "%s", j->spec->name);
	av_add(a, "--control");
	for (const char *const *x = j->spec->args; *x; x++)
		av_add(a, "%s", *x);
	for (int i = 0; i < j->n_args; i++)
		av_add(a, "%s", j->args[i]);
	for (int i = 0; i < j->n_ctl_args; i++)
		av_add(a, "%s", j->ctl_args[i]);
	return st_exec(s, as, a->v, j->spec->sp == SP_FD3, out_path, ST_TIMEOUT_S, NULL);
}

/* Processes whose command line contains marker (the host process list). */
static int find_marked(const char *marker, pid_t *out, int max)
{
	DIR *d = opendir("/proc");
	struct dirent *e;
	int n = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < max) {
		char p[64], buf[4096];
		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		snprintf(p, sizeof p, "/proc/%s/cmdline", e->d_name);
		int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		ssize_t k = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (k <= 0)
			continue;
		for (ssize_t i = 0; i < k; i++)
			if (buf[i] == '\0')
				buf[i] = ' ';
		buf[k] = '\0';
		if (strstr(buf, marker))
			out[n++] = (pid_t)atoi(e->d_name);
	}
	closedir(d);
	return n;
}

static void job_add(char (*arr)[600], int *n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void job_add(char (*arr)[600], int *n, const char *fmt, ...)
{
	va_list ap;
	if (*n >= 8)
		return;
	va_start(ap, fmt);
	vsnprintf(arr[*n], 600, fmt, ap);
	va_end(ap);
	(*n)++;
}

/* Waits up to ms for a file to contain `what`. */
static bool wait_for(const char *path, const char *what, long ms)
{
	for (long t = 0; t <= ms; t += 50) {
		_cleanup_free_ char *b = read_all(path, 4096);
		if (b && strstr(b, what))
			return true;
		sleep_ms(50);
	}
	return false;
}

static long read_count(const char *path)
{
	_cleanup_free_ char *b = read_all(path, 64);
	return b && isdigit((unsigned char)b[0]) ? atol(b) : -1;
}

/* A listener of our own outside (rt_listen): pid, or -1. */
static pid_t start_listener(struct moat_selftest *s, const char *kind, const char *addr,
			    const char *count, const char *ready)
{
	_cleanup_free_ struct st_argv *a = calloc(1, sizeof *a);
	if (!a)
		return -1;
	av_add(a, "moat");
	av_add(a, "__probe");
	av_add(a, "rt_listen");
	av_add(a, "%s", count);
	av_add(a, "%s", kind);
	av_add(a, "%s", addr);
	pid_t pid = st_spawn(s, AS_CALLER, a->v, false, ready);
	if (pid > 0 && !wait_for(ready, "READY", 5000)) {
		st_stop(pid);
		return -1;
	}
	return pid;
}

/* `moat __probe rt072_orphan --sleep ...`: a process that ignores SIGTERM,
 * findable by its marker in the host process list. */
static struct st_argv *sleeper_argv(const char *marker, const char *secs)
{
	struct st_argv *a = calloc(1, sizeof *a);
	if (!a)
		return NULL;
	av_add(a, "moat");
	av_add(a, "__probe");
	av_add(a, "rt072_orphan");
	av_add(a, "--sleep");
	av_add(a, "--seconds");
	av_add(a, "%s", secs);
	av_add(a, "--marker");
	av_add(a, "%s", marker);
	return a;
}

/* A canary process of the control's uid that only waits to be killed (any
 * signal ends it). */
static pid_t start_canary(struct moat_selftest *s)
{
	pid_t pid = fork();
	if (pid == 0) {
		setpgid(0, 0);
		become_control(s, AS_CTL_USER);
		for (;;)
			pause();
	}
	sleep_ms(100);
	return pid;
}

/* Snapshot of a fixture tree: names, modes, sizes, mtimes (one level deep is
 * enough for rt033's fixture: f, sub/g, sub/h). */
static void snapshot(const char *dir, char *out, size_t size)
{
	static const char *const names[] = {"",	  "f",	"sub", "sub/g", "sub/h",
					    "n1", "n2", "n3",  "r"};
	size_t k = 0;
	out[0] = '\0';
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		char p[PATH_MAX];
		struct stat st;
		snprintf(p, sizeof p, "%s/%s", dir, names[i]);
		if (lstat(p, &st) < 0)
			k += (size_t)snprintf(out + k, size > k ? size - k : 0, "%s:-;", names[i]);
		else
			k += (size_t)snprintf(out + k, size > k ? size - k : 0,
					      "%s:%o:%lld:%lld.%ld;", names[i], st.st_mode,
					      (long long)st.st_size, (long long)st.st_mtim.tv_sec,
					      st.st_mtim.tv_nsec);
		if (k >= size)
			break;
	}
}

static int make_robind_fixture(struct moat_selftest *s, const char *fix)
{
	char p[PATH_MAX];
	(void)rm_tree_at(AT_FDCWD, fix, 0);
	if (mkdir(fix, 0777) < 0)
		return -errno;
	snprintf(p, sizeof p, "%s/sub", fix);
	if (mkdir(p, 0777) < 0)
		return -errno;
	snprintf(p, sizeof p, "%s/f", fix);
	write_file(p, "canary\n", 0666);
	snprintf(p, sizeof p, "%s/sub/g", fix);
	write_file(p, "g\n", 0666);
	snprintf(p, sizeof p, "%s/sub/h", fix);
	write_file(p, "h\n", 0666);
	chmod(fix, 0777);
	snprintf(p, sizeof p, "%s/sub", fix);
	chmod(p, 0777);
	chown_tree(s, fix);
	return 0;
}

static int make_mocks(struct moat_selftest *s, const char *root, const char *const *files)
{
	char p[PATH_MAX];
	for (; *files; files++) {
		snprintf(p, sizeof p, "%s/%s", root, *files);
		if (mkdirs_for(s, p) < 0 || write_file(p, "", 0666) < 0)
			return -1;
	}
	chown_tree(s, root);
	return 0;
}

static void oracle(struct st_set *set, const char *id, const char *cls, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void oracle(struct st_set *set, const char *id, const char *cls, const char *fmt, ...)
{
	char d[200];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(d, sizeof d, fmt, ap);
	va_end(ap);
	set_put(set, id, cls, d, false);
}

static unsigned rnd(void)
{
	unsigned v = 0;
	if (getrandom(&v, sizeof v, 0) != sizeof v)
		v = (unsigned)getpid() ^ (unsigned)time(NULL);
	return v;
}

static void run_job(struct moat_selftest *s, const struct st_spec *spec,
		    struct moat_selftest_result *r)
{
	_cleanup_free_ struct st_job *j = calloc(1, sizeof *j);
	char out[PATH_MAX], dir[PATH_MAX], marker[96], tok[64], hash_before[512] = "";
	pid_t pids[8] = {-1, -1, -1, -1, -1, -1, -1, -1};
	long before[3] = {0};
	struct stat exe_before = {0};
	unsigned id = rnd();

	memset(r, 0, sizeof *r);
	r->probe = spec->name;
	r->title = spec->title;
	if (!j) {
		r->verdict = MOAT_PROBE_INCONCLUSIVE;
		snprintf(r->reason, sizeof r->reason, "out of memory");
		return;
	}
	j->s = s;
	j->spec = spec;
	for (int i = 0; i < 3; i++)
		s->extra_env[i][0] = '\0';
	snprintf(dir, sizeof dir, "%s/fx%u", s->tmp, s->seq++);
	if (mkdir(dir, 0777) < 0) {
		r->verdict = MOAT_PROBE_INCONCLUSIVE;
		snprintf(r->reason, sizeof r->reason, "cannot create %s: %s", dir, strerror(errno));
		return;
	}
	chmod(dir, 0777);
	chown_tree(s, dir);
	snprintf(marker, sizeof marker, "moat-selftest-%u-%d", id, (int)getpid());

	/* -- setup before the control */
	switch (spec->sp) {
	case SP_LEAK:
		job_add(j->args, &j->n_args, "--leak");
		job_add(j->args, &j->n_args, "%s", s->tmp);
		break;
	case SP_MOCK_PROC: {
		static const char *const f[] = {"proc/sysrq-trigger",
						"proc/sys/kernel/core_pattern",
						"sys/kernel/uevent_helper",
						"proc/sys/vm/drop_caches",
						"proc/sys/kernel/sysrq",
						"proc/sys/kernel/modprobe",
						NULL};
		if (make_mocks(s, dir, f) < 0)
			goto setup_failed;
		job_add(j->ctl_args, &j->n_ctl_args, "--root");
		job_add(j->ctl_args, &j->n_ctl_args, "%s", dir);
		break;
	}
	case SP_MOCK_CGROUP: {
		static const char *const f[] = {"sys/fs/cgroup/cgroup.procs",
						"sys/fs/cgroup/memory.max",
						"sys/fs/cgroup/pids.max",
						"sys/fs/cgroup/unified/cgroup.procs",
						"sys/fs/cgroup/memory/memory.limit_in_bytes",
						"sys/fs/cgroup/memory/cgroup.procs",
						"sys/fs/cgroup/pids/pids.max",
						"sys/fs/cgroup/memory/release_agent",
						"sys/fs/cgroup.procs",
						NULL};
		if (make_mocks(s, dir, f) < 0)
			goto setup_failed;
		job_add(j->ctl_args, &j->n_ctl_args, "--root");
		job_add(j->ctl_args, &j->n_ctl_args, "%s", dir);
		break;
	}
	case SP_SIGNAL:
		pids[0] = start_canary(s);
		if (pids[0] < 0 || kill(pids[0], 0) < 0)
			goto setup_failed;
		job_add(j->ctl_args, &j->n_ctl_args, "--pid");
		job_add(j->ctl_args, &j->n_ctl_args, "%d", (int)pids[0]);
		break;
	case SP_SOCKETS: {
		char c[PATH_MAX], rd[PATH_MAX], name[80], sock[PATH_MAX], port[16];
		snprintf(name, sizeof name, "moat-selftest-%u", id);
		snprintf(sock, sizeof sock, "%s/canary.sock", dir);
		snprintf(c, sizeof c, "%s/count.abstract", dir);
		snprintf(rd, sizeof rd, "%s/ready.abstract", dir);
		pids[0] = start_listener(s, "abstract", name, c, rd);
		snprintf(c, sizeof c, "%s/count.unix", dir);
		snprintf(rd, sizeof rd, "%s/ready.unix", dir);
		pids[1] = start_listener(s, "unix", sock, c, rd);
		for (int t = 0; t < 8 && pids[2] < 0; t++) {
			snprintf(port, sizeof port, "%u", 20000 + rnd() % 20000);
			snprintf(c, sizeof c, "%s/count.tcp", dir);
			snprintf(rd, sizeof rd, "%s/ready.tcp", dir);
			pids[2] = start_listener(s, "tcp", port, c, rd);
		}
		if (pids[0] < 0 || pids[1] < 0 || pids[2] < 0)
			goto setup_failed;
		job_add(j->args, &j->n_args, "--abstract");
		job_add(j->args, &j->n_args, "%s", name);
		job_add(j->args, &j->n_args, "--path");
		job_add(j->args, &j->n_args, "%s", sock);
		job_add(j->args, &j->n_args, "--tcp");
		job_add(j->args, &j->n_args, "%s", port);
		break;
	}
	case SP_EXE:
		if (stat(s->self, &exe_before) < 0)
			goto setup_failed;
		break;
	case SP_ROBIND: {
		char fix[PATH_MAX];
		snprintf(fix, sizeof fix, "%s/fix", dir);
		if (make_robind_fixture(s, fix) < 0)
			goto setup_failed;
		job_add(j->ctl_args, &j->n_ctl_args, "--dir");
		job_add(j->ctl_args, &j->n_ctl_args, "%s", fix);
		break;
	}
	case SP_ORPHAN:
		job_add(j->ctl_args, &j->n_ctl_args, "--marker");
		job_add(j->ctl_args, &j->n_ctl_args, "%s-c", marker);
		job_add(j->in_args, &j->n_in_args, "--marker");
		job_add(j->in_args, &j->n_in_args, "%s-s", marker);
		job_add(j->args, &j->n_args, "--seconds");
		job_add(j->args, &j->n_args, "60");
		break;
	case SP_CREDS: {
		char p[PATH_MAX];
		snprintf(tok, sizeof tok, "MOATCANARY%u%u", id, rnd());
		static const char *const f[] = {".ssh/rt_canary", ".aws/credentials",
						".config/gh/hosts.yml", ".netrc", NULL};
		if (make_mocks(s, dir, f) < 0)
			goto setup_failed;
		snprintf(p, sizeof p, "%s/.ssh/rt_canary", dir);
		snprintf(out, sizeof out, "%s-ssh\n", tok);
		write_file(p, out, 0644);
		snprintf(p, sizeof p, "%s/.aws/credentials", dir);
		snprintf(out, sizeof out, "[default]\naws_secret_access_key=%s-aws\n", tok);
		write_file(p, out, 0644);
		snprintf(p, sizeof p, "%s/.config/gh/hosts.yml", dir);
		snprintf(out, sizeof out, "github.com:\n  oauth_token: %s-gh\n", tok);
		write_file(p, out, 0644);
		snprintf(p, sizeof p, "%s/.netrc", dir);
		snprintf(out, sizeof out, "machine example.com login x password %s-netrc\n", tok);
		write_file(p, out, 0644);
		snprintf(s->extra_env[0], sizeof s->extra_env[0], "HOME=%s", dir);
		snprintf(s->extra_env[1], sizeof s->extra_env[1], "RT_CANARY_ENV=%s-env", tok);
		job_add(j->args, &j->n_args, "--token");
		job_add(j->args, &j->n_args, "%s", tok);
		job_add(j->args, &j->n_args, "--file");
		job_add(j->args, &j->n_args, "%s/.ssh/rt_canary", dir);
		job_add(j->args, &j->n_args, "--file");
		job_add(j->args, &j->n_args, "%s/.netrc", dir);
		break;
	}
	default:
		break;
	}

	/* -- the positive control(s): FAIL in any context wins */
	if (spec->sp == SP_TIMEOUT) {
		/* outside, SIGTERM (what `timeout` sends) does not end it */
		_cleanup_free_ struct st_argv *a = sleeper_argv(marker, "30");
		snprintf(out, sizeof out, "%s/ctl.out", dir);
		pid_t p = a ? st_spawn(s, AS_CTL_USER, a->v, false, out) : -1;
		sleep_ms(300);
		kill(p, SIGTERM);
		sleep_ms(1500);
		if (p > 0 && waitpid(p, NULL, WNOHANG) == 0)
			oracle(&j->ctl, "RT-071/outlives-deadline", "FAIL",
			       "still running 1.5 s after SIGTERM");
		else
			oracle(&j->ctl, "RT-071/outlives-deadline", "BLOCKED", "ended at SIGTERM");
		st_stop(p);
	} else {
		for (unsigned c = CTX_USER; c <= CTX_SHARED; c <<= 1) {
			if (!(spec->ctx & c))
				continue;
			enum st_as as = c == CTX_USER ? AS_CTL_USER
				: c == CTX_USERNS     ? AS_CTL_USERNS
						      : AS_CTL_SHARED;
			snprintf(out, sizeof out, "%s/ctl.%u.out", dir, c);
			if (spec->sp == SP_ROBIND)
				make_robind_fixture(s, j->ctl_args[1]);
			(void)run_control(j, as, out);
			parse_results(s, out, &j->ctl, spec->drop, true);
		}
	}

	/* -- between control and inside */
	switch (spec->sp) {
	case SP_SIGNAL:
		sleep_ms(200);
		if (waitpid(pids[0], NULL, WNOHANG) == 0) {
			st_stop(pids[0]);
			oracle(&j->ctl, "RT-026/host-canary", "INCONCLUSIVE",
			       "the control could not signal the canary");
		} else {
			oracle(&j->ctl, "RT-026/host-canary", "FAIL",
			       "the control killed the host canary");
		}
		pids[0] = start_canary(s);
		if (pids[0] < 0)
			goto setup_failed;
		j->n_ctl_args = 0;
		job_add(j->in_args, &j->n_in_args, "--pid");
		job_add(j->in_args, &j->n_in_args, "%d", (int)pids[0]);
		job_add(j->in_args, &j->n_in_args, "--kill-all");
		break;
	case SP_SOCKETS: {
		static const char *const k[] = {"abstract", "unix", "tcp"};
		for (int i = 0; i < 3; i++) {
			char c[PATH_MAX];
			snprintf(c, sizeof c, "%s/count.%s", dir, k[i]);
			for (int t = 0; t < 30 && read_count(c) < 1; t++)
				sleep_ms(100);
			before[i] = read_count(c);
			char oid[64];
			snprintf(oid, sizeof oid, "RT-027/oracle-%s", k[i]);
			if (before[i] >= 1)
				oracle(&j->ctl, oid, "FAIL", "control reached the listener");
			else
				oracle(&j->ctl, oid, "INCONCLUSIVE",
				       "oracle not reached by the control");
		}
		break;
	}
	case SP_ORPHAN: {
		pid_t found[16];
		char m[128];
		sleep_ms(300);
		snprintf(m, sizeof m, "%s-c", marker);
		int n = find_marked(m, found, 16);
		if (n > 0)
			oracle(&j->ctl, "RT-072/host-survivor", "FAIL", "pid %d outlived the probe",
			       (int)found[0]);
		else
			oracle(&j->ctl, "RT-072/host-survivor", "BLOCKED",
			       "nothing survived the probe");
		for (int i = 0; i < n; i++)
			kill(found[i], SIGKILL);
		break;
	}
	case SP_ROBIND:
		j->n_ctl_args = 0;
		make_robind_fixture(s, j->ctl_args[1]);
		snapshot(j->ctl_args[1], hash_before, sizeof hash_before);
		job_add(j->opts, &j->n_opts, "--ro");
		job_add(j->opts, &j->n_opts, "%s:/rt-ro", j->ctl_args[1]);
		job_add(j->in_args, &j->n_in_args, "--dir");
		job_add(j->in_args, &j->n_in_args, "/rt-ro");
		break;
	case SP_FORKBOMB:
		job_add(j->opts, &j->n_opts, "--pids");
		job_add(j->opts, &j->n_opts, "32");
		break;
	case SP_TIMEOUT:
		job_add(j->opts, &j->n_opts, "--timeout");
		job_add(j->opts, &j->n_opts, "1s");
		job_add(j->opts, &j->n_opts, "--kill-grace");
		job_add(j->opts, &j->n_opts, "500ms");
		job_add(j->in_args, &j->n_in_args, "--sleep");
		job_add(j->in_args, &j->n_in_args, "--seconds");
		job_add(j->in_args, &j->n_in_args, "30");
		job_add(j->in_args, &j->n_in_args, "--marker");
		job_add(j->in_args, &j->n_in_args, "%s-s", marker);
		break;
	default:
		break;
	}

	/* -- inside moat */
	snprintf(j->in_out, sizeof j->in_out, "%s/in.out", dir);
	j->in_status = run_inside(j, j->in_out, &j->in_timeout);
	if (spec->sp == SP_FORKBOMB && WIFEXITED(j->in_status) &&
	    WEXITSTATUS(j->in_status) == MOAT_EXIT_SETUP) {
		_cleanup_free_ char *o = read_all(j->in_out, ST_OUT_MAX);
		if (o && strstr(o, "cannot be enforced")) {
			/* no delegated cgroup: moat failed closed; the rlimit
			 * fallback the user can name must hold */
			oracle(&j->in, "RT-066/fail-closed", "BLOCKED",
			       "moat refused to run without an enforceable --pids");
			job_add(j->opts, &j->n_opts, "--allow-degraded");
			job_add(j->opts, &j->n_opts, "cgroup");
			j->in_status = run_inside(j, j->in_out, &j->in_timeout);
		}
	}
	parse_results(s, j->in_out, &j->in, spec->drop, false);
	if (j->in_timeout)
		oracle(&j->in, "selftest/inside-timeout", "INCONCLUSIVE",
		       "the run did not end within %d s", ST_TIMEOUT_S);

	/* -- host oracles after the run */
	switch (spec->sp) {
	case SP_SIGNAL:
		sleep_ms(200);
		if (waitpid(pids[0], NULL, WNOHANG) == 0)
			oracle(&j->in, "RT-026/host-canary", "BLOCKED", "the host canary survived");
		else
			oracle(&j->in, "RT-026/host-canary", "FAIL", "the host canary was killed");
		break;
	case SP_SOCKETS: {
		static const char *const k[] = {"abstract", "unix", "tcp"};
		sleep_ms(500); /* an accept still in a backlog must be counted */
		for (int i = 0; i < 3; i++) {
			char c[PATH_MAX], oid[64];
			snprintf(c, sizeof c, "%s/count.%s", dir, k[i]);
			snprintf(oid, sizeof oid, "RT-027/oracle-%s", k[i]);
			if (read_count(c) == before[i])
				oracle(&j->in, oid, "BLOCKED", "no accept on the host listener");
			else
				oracle(&j->in, oid, "FAIL", "the host %s listener accepted", k[i]);
		}
		break;
	}
	case SP_EXE: {
		struct stat now;
		if (stat(s->self, &now) < 0 || now.st_ino != exe_before.st_ino ||
		    now.st_size != exe_before.st_size ||
		    now.st_mtim.tv_sec != exe_before.st_mtim.tv_sec ||
		    now.st_mtim.tv_nsec != exe_before.st_mtim.tv_nsec)
			oracle(&j->in, "RT-031/host-moat-binary", "FAIL",
			       "the moat binary changed");
		break;
	}
	case SP_ROBIND: {
		char after[512];
		snapshot(j->ctl_args[1], after, sizeof after);
		if (strcmp(after, hash_before))
			oracle(&j->in, "RT-033/host-fixture", "FAIL",
			       "the read-only fixture changed on the host");
		break;
	}
	case SP_TIMEOUT:
	case SP_ORPHAN: {
		pid_t found[16];
		char m[128];
		sleep_ms(300);
		snprintf(m, sizeof m, "%s-s", marker);
		int n = find_marked(m, found, 16);
		const char *oid = spec->sp == SP_TIMEOUT ? "RT-071/outlives-deadline"
							 : "RT-072/host-survivor";
		if (n > 0)
			oracle(&j->in, oid, "FAIL", "pid %d alive after moat returned",
			       (int)found[0]);
		else if (spec->sp == SP_TIMEOUT &&
			 !(WIFEXITED(j->in_status) && WEXITSTATUS(j->in_status) == 124))
			oracle(&j->in, oid, "FAIL", "moat did not end the run with exit 124");
		else
			oracle(&j->in, oid, "BLOCKED", "nothing outlived the sandbox");
		for (int i = 0; i < n; i++)
			kill(found[i], SIGKILL);
		if (spec->sp == SP_ORPHAN && j->in_timeout)
			oracle(&j->in, "RT-072/supervisor-returns", "FAIL",
			       "moat waited for the daemon");
		break;
	}
	case SP_CREDS: {
		/* no secret may appear in moat's own output either */
		_cleanup_free_ char *o = read_all(j->in_out, ST_OUT_MAX);
		char needle[80];
		snprintf(needle, sizeof needle, "%s-", tok);
		for (char *l = o, *next; l && *l; l = next) {
			next = strchr(l, '\n');
			if (next)
				*next++ = '\0';
			if (!startswith(l, "RESULT ") && strstr(l, needle))
				oracle(&j->in, "RT-074/moat-output", "FAIL",
				       "a canary secret in moat's own output");
		}
		break;
	}
	default:
		break;
	}
	for (int i = 0; i < 8; i++)
		st_stop(pids[i]);
	for (int i = 0; i < 3; i++)
		s->extra_env[i][0] = '\0';
	if (s->gvisor)
		for (unsigned i = 0; i < j->in.n; i++)
			for (unsigned g = 0; g < ELEMENTSOF(gvisor_contained); g++) {
				struct st_attempt *a = &j->in.a[i];
				if (strcmp(a->id, gvisor_contained[g].id) ||
				    strcmp(a->cls, "FAIL") ||
				    (gvisor_contained[g].detail &&
				     !strstr(a->detail, gvisor_contained[g].detail)))
					continue;
				snprintf(a->cls, sizeof a->cls, "CONTAINED");
				snprintf(a->detail, sizeof a->detail, "%s",
					 gvisor_contained[g].why);
			}
	judge(&j->ctl, &j->in, r);
	if (r->verdict == MOAT_PROBE_SKIPPED && j->ctl.n == 0) {
		char t[300];
		snprintf(out, sizeof out, "%s/ctl.%u.out", dir, CTX_USER);
		tail_of(out, t, sizeof t);
		snprintf(r->reason, sizeof r->reason, "the control produced no result: %s", t);
		r->verdict = MOAT_PROBE_INCONCLUSIVE;
	}
	(void)rm_tree_at(AT_FDCWD, dir, 0);
	return;

setup_failed:
	for (int i = 0; i < 8; i++)
		st_stop(pids[i]);
	for (int i = 0; i < 3; i++)
		s->extra_env[i][0] = '\0';
	r->verdict = MOAT_PROBE_INCONCLUSIVE;
	snprintf(r->reason, sizeof r->reason, "the selftest's own setup failed (%s)",
		 strerror(errno));
	(void)rm_tree_at(AT_FDCWD, dir, 0);
}

/* ------------------------------------------------------------- the API */

/* The level with the user's options runs a command at all: else no probe
 * could say anything, and the battery fails closed naming why (a probe
 * whose inside run cannot start would only be inconclusive). */
static int preflight(struct moat_selftest *s, struct moat_error *err)
{
	_cleanup_free_ struct st_argv *a = calloc(1, sizeof *a);
	char out[PATH_MAX], t[600] = "";
	bool timeout = false;
	const char *level = s->vm ? "vm" : "gvisor";

	if (!a)
		return moat_error_set(err, "selftest", ENOMEM, "out of memory");
	snprintf(out, sizeof out, "%s/preflight.out", s->tmp);
	av_add(a, "moat");
	av_add(a, "run");
	av_add(a, "--quiet");
	for (int i = 0; i < s->n_run_opts; i++)
		av_add(a, "%s", s->run_opts[i]);
	av_add(a, "--json-status");
	av_add(a, "%s/preflight.status", s->tmp);
	av_add(a, "--");
	av_add(a, "true");
	int st = st_exec(s, AS_CALLER, a->v, false, out, ST_TIMEOUT_S, &timeout);
	char status[PATH_MAX];
	snprintf(status, sizeof status, "%s/preflight.status", s->tmp);
	forget_run(s, status);
	unlink(status);
	if (st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
		return 0;
	tail_of(out, t, sizeof t);
	size_t tl = strlen(t);
	while (tl && (t[tl - 1] == '?' || t[tl - 1] == ' '))
		t[--tl] = '\0'; /* the message's newline, sanitized */
	if (timeout)
		return moat_error_set(err, "selftest", ETIMEDOUT,
				      "isolation %s does not work here: `moat run` of true with "
				      "these options did not end within %d s",
				      level, ST_TIMEOUT_S);
	return moat_error_set(err, "selftest", EOPNOTSUPP,
			      "isolation %s does not work here: `moat run` of true with these "
			      "options exits %d: %s",
			      level, st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1,
			      t[0] ? t : "no message");
}

const char *moat_selftest_verdict_name(enum moat_selftest_verdict v)
{
	static const char *const names[] = {"held", "skipped", "inconclusive", "escaped"};
	return (unsigned)v < ELEMENTSOF(names) ? names[v] : "?";
}

unsigned moat_selftest_count(void)
{
	return ELEMENTSOF(specs);
}

const char *moat_selftest_probe(unsigned i)
{
	return i < ELEMENTSOF(specs) ? specs[i].name : NULL;
}

const char *moat_selftest_title(unsigned i)
{
	return i < ELEMENTSOF(specs) ? specs[i].title : NULL;
}

struct moat_selftest *moat_selftest_free(struct moat_selftest *s)
{
	if (!s)
		return NULL;
	if (s->tmp[0])
		(void)rm_tree_at(AT_FDCWD, s->tmp, 0);
	if (s->self_fd >= 0)
		close(s->self_fd);
	for (int i = 0; i < s->n_run_opts; i++)
		free(s->run_opts[i]);
	free(s->run_opts);
	free(s);
	return NULL;
}

static void moat_selftest_freep(struct moat_selftest **s)
{
	moat_selftest_free(*s);
}

int moat_selftest_new(char *const *run_opts, int n_run_opts, struct moat_selftest **ret,
		      struct moat_error *ret_err)
{
	_cleanup_(moat_selftest_freep) struct moat_selftest *s = NULL;
	ssize_t k;

	/* Each inner `moat run` gets every option whole (st_argv holds
	 * ST_MAX_ARGS of 600 bytes, the battery's own arguments at most 40):
	 * never a shortened or partial policy. */
	if (n_run_opts < 0 || n_run_opts > ST_MAX_ARGS - 40)
		return moat_error_set(ret_err, "selftest", E2BIG,
				      "too many policy options (at most %d)", ST_MAX_ARGS - 40);
	for (int i = 0; i < n_run_opts; i++)
		if (strlen(run_opts[i]) >= sizeof(((struct st_argv *)NULL)->store[0]))
			return moat_error_set(ret_err, "selftest", E2BIG,
					      "policy option %d is too long", i + 1);
	s = calloc(1, sizeof(*s));
	if (!s)
		return moat_error_set(ret_err, "selftest", ENOMEM, "out of memory");
	s->self_fd = -1;
	s->run_opts = calloc((size_t)n_run_opts + 1, sizeof(char *));
	if (!s->run_opts)
		return moat_error_set(ret_err, "selftest", ENOMEM, "out of memory");
	for (; s->n_run_opts < n_run_opts; s->n_run_opts++)
		if (!(s->run_opts[s->n_run_opts] = strdup(run_opts[s->n_run_opts])))
			return moat_error_set(ret_err, "selftest", ENOMEM, "out of memory");
	for (int i = 0; i < n_run_opts; i++)
		if (!strcmp(run_opts[i], "--isolation=gvisor") ||
		    (!strcmp(run_opts[i], "--isolation") && i + 1 < n_run_opts &&
		     !strcmp(run_opts[i + 1], "gvisor")))
			s->gvisor = true;
		else if (!strcmp(run_opts[i], "--isolation=vm") ||
			 (!strcmp(run_opts[i], "--isolation") && i + 1 < n_run_opts &&
			  !strcmp(run_opts[i + 1], "vm")))
			s->vm = true;
	s->root = geteuid() == 0;
	s->ctl_uid = s->root ? (uid_t)(0x7ffe0000u | ((unsigned)getpid() & 0xffffu)) : getuid();
	s->ctl_gid = s->root ? (gid_t)s->ctl_uid : getgid();
	s->self_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	if (s->self_fd >= 0) {
		/* well above fd 3, which the RT-030 control is given */
		int high = fcntl(s->self_fd, F_DUPFD_CLOEXEC, 64);
		close(s->self_fd);
		s->self_fd = high;
	}
	k = readlink("/proc/self/exe", s->self, sizeof s->self - 1);
	if (s->self_fd < 0 || k <= 0)
		return moat_error_set(ret_err, "selftest", errno, "cannot find my own binary: %s",
				      strerror(errno));
	s->self[k] = '\0';
	if (strchr(s->self, ':'))
		return moat_error_set(ret_err, "selftest", EINVAL,
				      "the path of moat (%s) contains ':'", s->self);
	snprintf(s->tmp, sizeof s->tmp, "/tmp/moat-selftest.XXXXXX");
	if (!mkdtemp(s->tmp)) {
		int e = errno;
		s->tmp[0] = '\0';
		return moat_error_set(ret_err, "selftest", e,
				      "cannot create a temporary directory: %s", strerror(e));
	}
	chmod(s->tmp, 0711); /* the control's uid reaches its fixtures below */
	if ((s->gvisor || s->vm) && preflight(s, ret_err) < 0)
		return -1;
	*ret = TAKE_PTR(s);
	return 0;
}

bool moat_selftest_as_root(const struct moat_selftest *s)
{
	return s->root;
}

unsigned moat_selftest_control_uid(const struct moat_selftest *s)
{
	return (unsigned)s->ctl_uid;
}

const char *moat_selftest_workdir(const struct moat_selftest *s)
{
	return s->tmp;
}

int moat_selftest_run(struct moat_selftest *s, unsigned i, struct moat_selftest_result *ret)
{
	if (i >= ELEMENTSOF(specs))
		return -EINVAL;
	bool in_battery = !s->gvisor && !s->vm;
	for (unsigned g = 0; g < ELEMENTSOF(level_battery) && !in_battery; g++)
		in_battery = !strcmp(level_battery[g], specs[i].name);
	if (!in_battery) {
		memset(ret, 0, sizeof(*ret));
		ret->probe = specs[i].name;
		ret->title = specs[i].title;
		ret->verdict = MOAT_PROBE_SKIPPED;
		if (s->vm)
			snprintf(
				ret->reason, sizeof ret->reason,
				"not in the vm level's battery (its filesystem and network probes, "
				"docs/ISOLATION.md): this probe tests the host kernel's surface or "
				"the process level's own limits, and the guest's own kernel answers "
				"its syscalls");
		else
			snprintf(ret->reason, sizeof ret->reason,
				 "not in the gvisor level's battery (its filesystem and network "
				 "probes, docs/ISOLATION.md): this probe tests the host kernel's "
				 "surface or the process level's own limits, and gVisor's kernel "
				 "answers its syscalls");
		return 0;
	}
	run_job(s, &specs[i], ret);
	return 0;
}
