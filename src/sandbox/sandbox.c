/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The sandbox side: what runs in the cloned child, which becomes PID 1 of the
 * new pid namespace ("moat init"). It applies the plan, pivots into the new
 * root, drops every privilege, forks the command, then reaps and forwards
 * signals until the command exits. Nothing here allocates or prints: a failed
 * step writes one struct moat_setup_error to the setup pipe and exits.
 */
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <net/if.h>
#include <sched.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>

#include "sandbox/hooks.h"
#include "supervisor/layer.h"
#include "sandbox/paths.h"
#include "sandbox/sandbox.h"
#include "shared/io.h"
#include "shared/fdpass.h"
#include "shared/macro.h"
#include "shared/openat2.h"

#ifndef SECBIT_NOROOT
#define SECBIT_NOROOT (1 << 0)
#define SECBIT_NOROOT_LOCKED (1 << 1)
#define SECBIT_NO_SETUID_FIXUP (1 << 2)
#define SECBIT_NO_SETUID_FIXUP_LOCKED (1 << 3)
#define SECBIT_KEEP_CAPS_LOCKED (1 << 5)
#define SECBIT_NO_CAP_AMBIENT_RAISE (1 << 6)
#define SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED (1 << 7)
#endif

#define NEWROOT "/tmp"

static struct moat_init *g_sb;

const char *moat_setup_stage_name(enum moat_setup_stage s)
{
	static const char *const names[] = {
		[MOAT_STAGE_NONE] = "setup",	    [MOAT_STAGE_SYNC] = "sync",
		[MOAT_STAGE_IDENTITY] = "identity", [MOAT_STAGE_HOSTNAME] = "hostname",
		[MOAT_STAGE_NETWORK] = "network",   [MOAT_STAGE_MOUNT] = "mount",
		[MOAT_STAGE_PIVOT] = "pivot_root",  [MOAT_STAGE_CHDIR] = "chdir",
		[MOAT_STAGE_CAPS] = "capabilities", [MOAT_STAGE_RLIMIT] = "rlimits",
		[MOAT_STAGE_LANDLOCK] = "landlock", [MOAT_STAGE_SECCOMP] = "seccomp",
		[MOAT_STAGE_PTY] = "pty",	    [MOAT_STAGE_FORK] = "fork",
		[MOAT_STAGE_EXEC] = "exec",	    [MOAT_STAGE_CGROUP] = "cgroup",
		[MOAT_STAGE_STDIO] = "stdio",
	};
	return (size_t)s < ELEMENTSOF(names) && names[s] ? names[s] : "setup";
}

/* Report a failed step and exit. errno-style err is positive. */
static _Noreturn _printf_(4, 5) void die(int stage, int err, int step, const char *fmt, ...)
{
	struct moat_setup_error e = {.stage = stage, .err = err, .step = step};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(e.detail, sizeof(e.detail), fmt, ap);
	va_end(ap);
	if (g_sb)
		(void)!write(g_sb->setup_w, &e, sizeof(e));
	_exit(MOAT_EXIT_SETUP);
}

/* ---- walking the new root (fixed buffers, no allocation) -------------------- */

/*
 * Every path below the new root is reached with *at() calls from O_PATH
 * directory fds, one component at a time and never through a symlink: a
 * directory may lie inside a host bind the sandbox wrote to before. The fds of
 * the directories the last walk went through stay open, as levels (0 is the
 * root): the plan's steps come in tree order (/etc, /etc/a, /etc/b, /dev,
 * /dev/null...), so most walks start from a cached parent. A mount at a cached
 * level hides what the fd refers to: walk_mounted() drops that level and every
 * deeper one, and the next walk opens them again, on top of the mount.
 */
#define WALK_LEVELS 32

static struct {
	char path[MOAT_MAX_PATH]; /* the deepest cached directory ("" for the root) */
	size_t end[WALK_LEVELS]; /* level k is path[0, end[k]) */
	int fd[WALK_LEVELS];
	unsigned n; /* cached levels, 0 before the root is mounted */
	int deep; /* a directory below the last level (paths deeper than WALK_LEVELS) */
} walk = {.deep = -1};

static void walk_drop(unsigned keep)
{
	if (walk.deep >= 0)
		walk.deep = safe_close(walk.deep);
	while (walk.n > keep)
		close(walk.fd[--walk.n]);
}

/* A mount was placed at dest: the levels at and below it are stale. */
static void walk_mounted(const char *dest)
{
	size_t len = streq(dest, "/") ? 0 : strlen(dest);
	for (unsigned k = 0; k < walk.n; k++)
		if (walk.end[k] >= len && memcmp(walk.path, dest, len) == 0 &&
		    (walk.end[k] == len || walk.path[len] == '/')) {
			walk_drop(k);
			return;
		}
	walk_drop(walk.n);
}

/* The directory dir[0, len) ("/a/b"; len 0 is the root) as a borrowed O_PATH
 * fd, valid until the next walk or mount. Missing components are created with
 * `mode` when `create` is set. A symlink or a non-directory on the way gives
 * -ELOOP. */
static int walk_dir(const char *dir, size_t len, unsigned mode, bool create)
{
	if (len >= sizeof(walk.path))
		return -ENAMETOOLONG;
	if (walk.n == 0) {
		int fd = open(NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (fd < 0)
			return -errno;
		walk.fd[0] = fd;
		walk.end[0] = 0;
		walk.n = 1;
	}
	/* the deepest cached level that is dir or one of its parents */
	unsigned k = 1;
	while (k < walk.n && walk.end[k] <= len && memcmp(walk.path, dir, walk.end[k]) == 0 &&
	       (walk.end[k] == len || dir[walk.end[k]] == '/'))
		k++;
	walk_drop(k);

	int pfd = walk.fd[walk.n - 1];
	size_t pos = walk.end[walk.n - 1];
	while (pos < len) {
		char name[256];
		size_t start = pos + 1, stop = start;
		while (stop < len && dir[stop] != '/')
			stop++;
		if (dir[pos] != '/' || stop == start || stop - start >= sizeof(name))
			return -EINVAL;
		memcpy(name, dir + start, stop - start);
		name[stop - start] = 0;

		/* mkdir first: most directories are new. An existing name gives
		 * EEXIST (before any write-permission or read-only check), and
		 * the open below refuses it unless it is a real directory. */
		if (create && mkdirat(pfd, name, mode) < 0 && errno != EEXIST)
			return -errno;
		int fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			return errno == ELOOP || errno == ENOTDIR ? -ELOOP : -errno;
		if (walk.n < WALK_LEVELS) {
			memcpy(walk.path + pos, dir + pos, stop - pos);
			walk.end[walk.n] = stop;
			walk.fd[walk.n++] = fd;
		} else {
			safe_close(walk.deep);
			walk.deep = fd;
		}
		pfd = fd;
		pos = stop;
	}
	return pfd;
}

/* The parent directory of dest, created (0755) if missing, and dest's last
 * component in *ret_name. Dies on failure. */
static int walk_parent(const char *dest, int step, const char **ret_name)
{
	const char *slash = strrchr(dest, '/');
	if (!slash || !slash[1])
		die(MOAT_STAGE_MOUNT, EINVAL, step, "bad destination %s", dest);
	int fd = walk_dir(dest, (size_t)(slash - dest), 0755, true);
	if (fd < 0)
		die(MOAT_STAGE_MOUNT, -fd, step, "cannot create directory %.*s%s",
		    (int)(slash - dest), dest, fd == -ELOOP ? " (a symlink is in the way)" : "");
	*ret_name = slash + 1;
	return fd;
}

/* The directory dest itself, created (mode) if missing. Dies on failure. */
static int walk_mountpoint(const char *dest, unsigned mode, int step)
{
	int fd = walk_dir(dest, strlen(dest), mode, true);
	if (fd < 0)
		die(MOAT_STAGE_MOUNT, -fd, step, "cannot create mount point %s%s", dest,
		    fd == -ELOOP ? " (a symlink is in the way)" : "");
	return fd;
}

/* mount(2) takes no directory fd: it is given the fd's magic link instead, so
 * the target is exactly the directory the walk checked. */
static const char *fd_path(char buf[static 32], int fd)
{
	snprintf(buf, 32, "/proc/self/fd/%d", fd);
	return buf;
}

int moat_sandbox_open_source(const struct moat_step *s, const char *path, int rootfs_fd,
			     const char *sysroot)
{
	uint64_t fl = O_PATH | O_CLOEXEC | ((s->flags & MOAT_STEPF_MIRROR_LINK) ? O_NOFOLLOW : 0);
	long fd;
	if (s->flags & MOAT_STEPF_USER)
		return moat_path_open(path ? path : s->src, MOAT_PATH_NO_LINKS, 0, NULL);
	if (s->flags & MOAT_STEPF_SYSROOT) {
		size_t n = sysroot ? strlen(sysroot) : 0;
		if (rootfs_fd < 0 || !n || strncmp(s->src, sysroot, n) != 0 || s->src[n] != '/')
			return -EINVAL;
		fd = moat_openat2(rootfs_fd, s->src + n + 1, fl, 0,
				  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	} else {
		fd = moat_openat2(AT_FDCWD, s->src, fl, 0, RESOLVE_NO_MAGICLINKS);
	}
	return fd < 0 ? negerrno() : (int)fd;
}

int moat_sandbox_rootfs_here(struct moat_init *sb)
{
	if (!sb->rootfs_path)
		return 0;
	int fd = moat_path_open(sb->rootfs_path, MOAT_PATH_DIR | MOAT_PATH_NO_LINKS, 0, NULL);
	if (fd < 0)
		return fd;
	struct stat a, b;
	if (fstat(fd, &a) < 0 || fstat(sb->rootfs_fd, &b) < 0 || a.st_dev != b.st_dev ||
	    a.st_ino != b.st_ino) {
		close(fd);
		return -EXDEV;
	}
	close(sb->rootfs_fd);
	sb->rootfs_fd = fd;
	return 0;
}

const char *moat_open_source_hint(int err)
{
	return err == ELOOP || err == EXDEV
		? " (moat follows no symlink a sandbox could have planted: pass the resolved "
		  "path; inside --rootfs, no symlink on the way to a directory moat mounts)"
		: "";
}

static uint64_t attr_for(const struct moat_step *s)
{
	uint64_t a = MOUNT_ATTR_NOSUID;
	if (!(s->flags & MOAT_STEPF_DEV))
		a |= MOUNT_ATTR_NODEV;
	if (s->flags & MOAT_STEPF_RO)
		a |= MOUNT_ATTR_RDONLY;
	if (s->flags & MOAT_STEPF_NOEXEC)
		a |= MOUNT_ATTR_NOEXEC;
	return a;
}

/* Attaches a detached mount (open_tree) at dest, creating the mount point:
 * a directory, or an empty file when `file` is set. Never through a symlink:
 * move_mount() does not follow one at its target unless asked to. */
static void attach(int tree, const struct moat_step *s, bool file, int step)
{
	const char *dest = s->dest, *name;
	int pfd = walk_parent(dest, step, &name);
	int r = file ? mknodat(pfd, name, S_IFREG | 0444, 0) : mkdirat(pfd, name, 0755);
	if (r == 0) {
		if (move_mount(tree, "", pfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
			die(MOAT_STAGE_MOUNT, errno, step, "cannot mount %s at %s", s->src, dest);
		walk_mounted(dest);
		return;
	}
	/* Something is there already (a mount point in a host bind, or under a
	 * read-only one): use it if it is of the right kind, never a symlink. */
	if (errno != EEXIST && (!file || (errno != EROFS && errno != EACCES)))
		die(MOAT_STAGE_MOUNT, errno, step, "cannot create mount point %s", dest);
	int mp = openat(pfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (file ? 0 : O_DIRECTORY));
	struct stat st;
	if (mp >= 0 && file && fstat(mp, &st) == 0 && S_ISLNK(st.st_mode)) {
		close(mp);
		mp = -1;
		errno = ELOOP;
	}
	if (mp < 0)
		die(MOAT_STAGE_MOUNT, errno == ENOTDIR ? ELOOP : errno, step,
		    "cannot open mount point %s%s", dest,
		    errno == ELOOP || errno == ENOTDIR ? " (a symlink is in the way)" : "");
	if (move_mount(tree, "", mp, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		die(MOAT_STAGE_MOUNT, errno, step, "cannot mount %s at %s", s->src, dest);
	close(mp);
	walk_mounted(dest);
}

static void do_bind(const struct moat_step *s, int idx, int srcfd, const struct stat *st)
{
	int tree = g_sb->premounted[idx];
	if (tree < 0) {
		tree = (int)open_tree(srcfd, "",
				      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH |
					      AT_RECURSIVE);
		if (tree < 0)
			die(MOAT_STAGE_MOUNT, errno, idx, "cannot clone mount of %s", s->src);
	}
	struct mount_attr ma = {.attr_set = attr_for(s)};
	if (mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot set %s on %s",
		    s->flags & MOAT_STEPF_RO ? "read-only,nosuid,nodev" : "nosuid,nodev", s->src);
	attach(tree, s, !S_ISDIR(st->st_mode), idx);
	close(tree);
}

static int self_fds = -1; /* /proc/self/fd, opened by the first copy */

/* A small regular file that everyone may read is copied into place instead of
 * bound (a bind costs a mount at start and at teardown). Files others may not
 * read stay binds, so the copy never widens who can read them. Returns true
 * if copied. The umask is 0 while the plan is applied: the mode is exact. */

static bool copy_small(const struct moat_step *s, int idx, int srcfd, const struct stat *st)
{
	static char buf[64 << 10];
	char num[16];
	const char *name;
	if (!S_ISREG(st->st_mode) || !(st->st_mode & S_IROTH) || st->st_size > (off_t)sizeof(buf))
		return false;
	/* Reopened through its magic link: the very file the O_PATH fd holds. */
	if (self_fds < 0)
		self_fds = open("/proc/self/fd", O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(num, sizeof(num), "%d", srcfd);
	int in = self_fds < 0 ? -1
			      : openat(self_fds, num, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (in < 0)
		return false;
	ssize_t n = read(in, buf, sizeof(buf));
	close(in);
	if (n < 0 || n != st->st_size)
		return false;
	int pfd = walk_parent(s->dest, idx, &name);
	int out = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			 st->st_mode & 0755);
	if (out < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create %s", s->dest);
	if (write(out, buf, (size_t)n) != n)
		die(MOAT_STAGE_MOUNT, errno ? errno : EIO, idx, "cannot write %s", s->dest);
	close(out);
	return true;
}

static void do_tmpfs(const struct moat_step *s, int idx)
{
	char opts[96], target[32];
	int mp = walk_mountpoint(s->dest, 0755, idx);
	/* writable areas belong to the sandbox user; the rest to nobody */
	if (s->flags & MOAT_STEPF_WRITABLE)
		snprintf(opts, sizeof(opts), "mode=%04o,size=%llu,uid=%u,gid=%u",
			 s->mode ? s->mode : 0755,
			 (unsigned long long)(s->size ? s->size : 64u << 20),
			 (unsigned)g_sb->plan->id.uid, (unsigned)g_sb->plan->id.gid);
	else
		snprintf(opts, sizeof(opts), "mode=%04o,size=%llu", s->mode ? s->mode : 0755,
			 (unsigned long long)(s->size ? s->size : 64u << 20));
	unsigned long fl = MS_NOSUID | MS_NODEV | ((s->flags & MOAT_STEPF_NOEXEC) ? MS_NOEXEC : 0);
	if (mount("tmpfs", fd_path(target, mp), "tmpfs", fl, opts) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount tmpfs at %s", s->dest);
	walk_mounted(s->dest);
}

static void do_file(const struct moat_step *s, int idx)
{
	const char *name;
	int pfd = walk_parent(s->dest, idx, &name);
	/* the umask is 0 while the plan is applied: the mode is exact */
	int fd = openat(pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, s->mode);
	if (fd < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create %s", s->dest);
	int r = moat_write_all(fd, s->data, s->data_len);
	if (r < 0)
		die(MOAT_STAGE_MOUNT, -r, idx, "cannot write %s", s->dest);
	close(fd);
}

static void do_symlink(const char *target, const char *dest, int idx)
{
	const char *name;
	int pfd = walk_parent(dest, idx, &name);
	if (symlinkat(target, pfd, name) < 0 && errno != EEXIST)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create symlink %s", dest);
}

/* /proc: a fresh instance for the new pid namespace, with the host-global
 * knobs read-only and the kernel-memory files masked. */
static void do_proc(const struct moat_step *s, int idx)
{
	char target[32];
	int mp = walk_mountpoint(s->dest, 0755, idx);
	if (mount("proc", fd_path(target, mp), "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount proc at %s", s->dest);
	walk_mounted(s->dest);
	int proc = walk_dir(s->dest, strlen(s->dest), 0, false);
	if (proc < 0)
		die(MOAT_STAGE_MOUNT, -proc, idx, "cannot open the new %s", s->dest);
	static const char *const ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs", "asound"};
	for (size_t i = 0; i < ELEMENTSOF(ro); i++) {
		int tree = (int)open_tree(proc, ro[i],
					  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
						  AT_SYMLINK_NOFOLLOW);
		if (tree < 0 && errno == ENOENT)
			continue;
		struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
						MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
		if (tree < 0 ||
		    mount_setattr(tree, "", AT_EMPTY_PATH | AT_RECURSIVE, &ma, sizeof(ma)) < 0 ||
		    move_mount(tree, "", proc, ro[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			die(MOAT_STAGE_MOUNT, errno, idx, "cannot make /proc/%s read-only", ro[i]);
		close(tree);
	}
	/* masked with an empty read-only file: kernel memory, keys, timers */
	/* (the OCI engines' default maskedPaths are a subset: docs/OCI.md) */
	static const char *const masked[] = {
		"kcore",      "keys",	 "timer_list", "sched_debug",	"kallsyms",    "kpagecount",
		"kpageflags", "sysvipc", "acpi",       "latency_stats", "timer_stats", "scsi"};
	int devnull = open("/dev/null", O_PATH | O_CLOEXEC);
	for (size_t i = 0; devnull >= 0 && i < ELEMENTSOF(masked); i++) {
		struct stat st;
		if (fstatat(proc, masked[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue;
		if (S_ISDIR(st.st_mode)) {
			int dfd = openat(proc, masked[i],
					 O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (dfd < 0 ||
			    mount("tmpfs", fd_path(target, dfd), "tmpfs",
				  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
				  "size=0,mode=0555") < 0)
				die(MOAT_STAGE_MOUNT, errno, idx, "cannot mask /proc/%s",
				    masked[i]);
			close(dfd);
			continue;
		}
		int tree = (int)open_tree(devnull, "",
					  OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
		if (tree < 0 || move_mount(tree, "", proc, masked[i], MOVE_MOUNT_F_EMPTY_PATH) < 0)
			die(MOAT_STAGE_MOUNT, errno, idx, "cannot mask /proc/%s", masked[i]);
		close(tree);
	}
	if (devnull >= 0)
		close(devnull);
}

static void do_devpts(const struct moat_step *s, int idx)
{
	char target[32];
	int mp = walk_dir(s->dest, strlen(s->dest), 0, false);
	if (mp < 0)
		die(MOAT_STAGE_MOUNT, -mp, idx, "cannot mount devpts at %s", s->dest);
	if (mount("devpts", fd_path(target, mp), "devpts", MS_NOSUID | MS_NOEXEC,
		  "newinstance,ptmxmode=0666,mode=0620") < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount devpts at %s", s->dest);
	walk_mounted(s->dest);
}

static void do_hide(const struct moat_step *s, int idx)
{
	char target[32];
	struct stat st;
	const char *slash = strrchr(s->dest, '/');
	if (!slash || !slash[1])
		die(MOAT_STAGE_MOUNT, EINVAL, idx, "cannot hide %s", s->dest);
	const char *name = slash + 1;
	char parent[MOAT_MAX_PATH];
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - s->dest), s->dest);
	/* What the sandbox will see at dest: its parent is resolved as the
	 * sandbox will resolve it, symlinks included but inside the new root;
	 * the last component is never followed. */
	int root = walk_dir("", 0, 0, false);
	if (root < 0)
		die(MOAT_STAGE_MOUNT, -root, idx, "cannot open the new root");
	_cleanup_close_ int pfd =
		(int)moat_openat2(root, *parent ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
				  RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS);
	if (pfd < 0 && errno == ENOENT)
		return; /* nothing to hide */
	if (pfd < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot inspect %s to hide it", s->dest);
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno == ENOENT)
			return;
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot inspect %s to hide it", s->dest);
	}
	if (S_ISDIR(st.st_mode)) {
		int mp = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (mp < 0 ||
		    mount("tmpfs", fd_path(target, mp), "tmpfs",
			  MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC, "size=0,mode=0555") < 0)
			die(MOAT_STAGE_MOUNT, errno, idx, "cannot hide %s", s->dest);
		close(mp);
		walk_mounted(s->dest);
		return;
	}
	if (S_ISLNK(st.st_mode))
		die(MOAT_STAGE_MOUNT, ELOOP, idx,
		    "cannot hide %s: it is a symlink (hide its target)", s->dest);
	int devnull = open("/dev/null", O_PATH | O_CLOEXEC);
	int tree = devnull < 0
		? -1
		: (int)open_tree(devnull, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID |
					MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC};
	if (tree < 0 || mount_setattr(tree, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0 ||
	    move_mount(tree, "", pfd, name, MOVE_MOUNT_F_EMPTY_PATH) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot hide %s", s->dest);
	close(tree);
	close(devnull);
	walk_mounted(s->dest);
}

static void do_readonly(const struct moat_step *s, int idx)
{
	int fd = walk_dir(s->dest, strlen(s->dest), 0, false);
	struct mount_attr ma = {.attr_set = MOUNT_ATTR_RDONLY};
	if (fd < 0)
		errno = -fd;
	if (fd < 0 || mount_setattr(fd, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot make %s read-only", s->dest);
}

/* An overlay's lower layer: the step's source mount (premounted, idmapped in
 * root mode, else a clone of srcfd) made read-only, nosuid and nodev and
 * attached at the directory lowerp, which must exist. */
static void attach_lower(const struct moat_step *s, int idx, int srcfd, const char *lowerp)
{
	int tree = g_sb->premounted[idx];
	if (tree < 0)
		tree = (int)open_tree(srcfd, "",
				      OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
	struct mount_attr ma = {.attr_set =
					MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	int lower = open(lowerp, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (tree < 0 || lower < 0 || mount_setattr(tree, "", AT_EMPTY_PATH, &ma, sizeof(ma)) < 0 ||
	    move_mount(tree, "", lower, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot attach the overlay's lower layer %s",
		    s->src);
	close(lower);
	close(tree);
}

/* Overlay over the workspace: lower = the real directory (read-only), upper
 * and work on a private tmpfs, so every write is held for review. The lower
 * layer is a clone of the workspace's mount (idmapped in root mode) attached
 * in a staging tmpfs that is detached again once the overlay holds it. */
static void do_overlay(const struct moat_step *s, int idx, int srcfd)
{
	char opts[512], target[32];
	const char *base = NEWROOT "/.moat-ovl";
	char sz[96];
	if (mkdir(base, 0700) < 0 && errno != EEXIST)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create overlay staging");
	snprintf(sz, sizeof(sz), "mode=0755,size=%llu,uid=%u,gid=%u", (unsigned long long)s->size,
		 (unsigned)g_sb->plan->id.uid, (unsigned)g_sb->plan->id.gid);
	if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, sz) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount the overlay's tmpfs");
	walk_mounted("/.moat-ovl");
	if (mkdir(NEWROOT "/.moat-ovl/upper", 0755) < 0 ||
	    mkdir(NEWROOT "/.moat-ovl/work", 0755) < 0 ||
	    mkdir(NEWROOT "/.moat-ovl/lower", 0755) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create the overlay's directories");
	attach_lower(s, idx, srcfd, NEWROOT "/.moat-ovl/lower");
	/* the lower tree itself (the mount now attached there), for snapshots:
	 * the supervisor reads the workspace's start from it (snapshot.c) */
	int lower = open(NEWROOT "/.moat-ovl/lower", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (lower < 0 || moat_sandbox_send_fd(g_sb->sock_child, MOAT_FD_LOWER, lower) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot hand the overlay's lower layer to moat");
	close(lower);
	int mp = walk_mountpoint(s->dest, 0755, idx);
	snprintf(opts, sizeof(opts),
		 "lowerdir=" NEWROOT "/.moat-ovl/lower,upperdir=" NEWROOT
		 "/.moat-ovl/upper,workdir=" NEWROOT "/.moat-ovl/work,userxattr");
	if (mount("overlay", fd_path(target, mp), "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount the overlay over %s", s->dest);
	walk_mounted(s->dest);
	int up = open(NEWROOT "/.moat-ovl/upper", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (up < 0 || moat_sandbox_send_fd(g_sb->sock_child, MOAT_FD_UPPER, up) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot hand the overlay's upper layer to moat");
	close(up);
	/* the staging area disappears from the sandbox; the overlay keeps its layers */
	if (umount2(base, MNT_DETACH) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot detach the overlay's staging area");
	rmdir(base);
}

/* The writable root's tmpfs (MOAT_STEP_UPPER, OCI root.readonly false):
 * mounted in the new root while it is assembled, owned by the sandbox user
 * (its upper layers are the user's files), bounded by the step's size;
 * detached by root_upper_detach() once the overlays hold it. */
static bool root_upper_mounted;

static void do_upper(const struct moat_step *s, int idx)
{
	char opts[96];
	if (mkdir(NEWROOT MOAT_PLAN_ROOT_UPPER, 0700) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create %s", s->dest);
	snprintf(opts, sizeof(opts), "mode=0700,size=%llu,uid=%u,gid=%u",
		 (unsigned long long)s->size, (unsigned)g_sb->plan->id.uid,
		 (unsigned)g_sb->plan->id.gid);
	if (mount("tmpfs", NEWROOT MOAT_PLAN_ROOT_UPPER, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount the writable root's tmpfs");
	walk_mounted(MOAT_PLAN_ROOT_UPPER);
	root_upper_mounted = true;
}

static void root_upper_detach(void)
{
	if (!root_upper_mounted)
		return;
	if (umount2(NEWROOT MOAT_PLAN_ROOT_UPPER, MNT_DETACH) < 0 ||
	    rmdir(NEWROOT MOAT_PLAN_ROOT_UPPER) < 0)
		die(MOAT_STAGE_MOUNT, errno, -1, "cannot detach the writable root's tmpfs");
	root_upper_mounted = false;
}

/* One tree of the writable root: lower = the source's mount (a clone, made
 * read-only, nosuid, nodev; idmapped in root mode by the supervisor so that
 * the tree's owner is the sandbox user and copy-up can give it its owner),
 * upper and work in the root's tmpfs under the step's index. The upper
 * directory takes the lower root's mode (the overlay's root shows the
 * upper's). Nothing is written to the source: the lower is read-only. */
static void do_root_overlay(const struct moat_step *s, int idx, int srcfd, const struct stat *st)
{
	char dir[96], lowerp[128], opts[512], target[32];
	if (!root_upper_mounted)
		die(MOAT_STAGE_MOUNT, EINVAL, idx, "the writable root's tmpfs is missing");
	snprintf(dir, sizeof(dir), NEWROOT MOAT_PLAN_ROOT_UPPER "/%d", idx);
	int d = -1;
	if (mkdir(dir, 0700) < 0 || (d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC)) < 0 ||
	    mkdirat(d, "l", 0700) < 0 || mkdirat(d, "u", st->st_mode & 0777) < 0 ||
	    mkdirat(d, "w", 0700) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot create the layers of %s", s->dest);
	close(d);
	snprintf(lowerp, sizeof(lowerp), "%s/l", dir);
	attach_lower(s, idx, srcfd, lowerp);
	int mp = walk_mountpoint(s->dest, 0755, idx);
	snprintf(opts, sizeof(opts), "lowerdir=%s/l,upperdir=%s/u,workdir=%s/w,userxattr", dir, dir,
		 dir);
	if (mount("overlay", fd_path(target, mp), "overlay", MS_NOSUID | MS_NODEV, opts) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot mount the overlay over %s", s->dest);
	walk_mounted(s->dest);
}

static int srcfd[MOAT_PLAN_MAX_STEPS];

/* The root of the writable tmpfs step idx just mounted, as O_PATH (through
 * the mount: its parent and a lookup of its name), kept for the supervisor,
 * which only fstatfs()es it to see the area fill (limits/disk_watch.h). */
static void keep_disk_root(const struct moat_step *s, int idx)
{
	const char *name;
	int pfd = walk_parent(s->dest, idx, &name);
	int fd = openat(pfd, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot open the tmpfs at %s", s->dest);
	g_sb->disk_fd[g_sb->n_disk] = fd;
	g_sb->disk_step[g_sb->n_disk++] = idx;
}

/* Whether a and b are the same file (the supervisor's fd and the init's). */
static bool same_file(int a, int b)
{
	struct stat sa, sb;
	return a >= 0 && b >= 0 && fstat(a, &sa) == 0 && fstat(b, &sb) == 0 &&
		sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Phase 1, still as the caller's host identity (in root mode the sources may
 * be readable only by their owner): resolve every source before anything is
 * mounted over. The user's paths and --rootfs were resolved by the supervisor
 * (paths.h); they are walked again here, in this mount namespace, along the
 * symlink-free path the supervisor reached, and must be the same files: a
 * rename race in between makes the run fail, never mount something else. */
static void open_sources(void)
{
	const struct moat_plan *pl = g_sb->plan;
	int rootfs_fd = -1;

	if (g_sb->rootfs_path) {
		rootfs_fd = moat_path_open(g_sb->rootfs_path, MOAT_PATH_DIR | MOAT_PATH_NO_LINKS, 0,
					   NULL);
		if (rootfs_fd < 0)
			die(MOAT_STAGE_MOUNT, -rootfs_fd, -1, "cannot open --rootfs %s%s",
			    g_sb->rootfs_path, moat_open_source_hint(-rootfs_fd));
		if (!same_file(rootfs_fd, g_sb->rootfs_fd))
			die(MOAT_STAGE_MOUNT, EXDEV, -1,
			    "--rootfs %s changed while moat started (refused)", g_sb->rootfs_path);
	}
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		srcfd[i] = -1;
		if ((s->op != MOAT_STEP_BIND && s->op != MOAT_STEP_OVERLAY) || !s->src)
			continue;
		if (g_sb->premounted[i] >= 0)
			continue;
		bool user = s->flags & MOAT_STEPF_USER;
		if (user && !g_sb->user_path[i])
			die(MOAT_STAGE_MOUNT, EINVAL, (int)i, "%s was not resolved", s->src);
		int fd = moat_sandbox_open_source(s, user ? g_sb->user_path[i] : NULL, rootfs_fd,
						  pl->sysroot);
		if (fd < 0) {
			if (fd == -ENOENT && (s->flags & MOAT_STEPF_OPTIONAL))
				continue;
			die(MOAT_STAGE_MOUNT, -fd, (int)i, "cannot open %s%s", s->src,
			    moat_open_source_hint(-fd));
		}
		if (user && !same_file(fd, g_sb->user_fd[i]))
			die(MOAT_STAGE_MOUNT, EXDEV, (int)i,
			    "%s changed while moat started (refused: a rename race?)", s->src);
		srcfd[i] = fd;
	}
	if (rootfs_fd >= 0)
		close(rootfs_fd);
	/* The supervisor's fds refer to the host's mounts (a read-only bind's
	 * source is writable there): the init keeps none of them. */
	for (unsigned i = 0; i < pl->n_steps; i++)
		if (g_sb->user_fd[i] >= 0)
			g_sb->user_fd[i] = safe_close(g_sb->user_fd[i]);
	if (g_sb->rootfs_fd >= 0)
		g_sb->rootfs_fd = safe_close(g_sb->rootfs_fd);
}

/* Closes the sources, a range of consecutive fds at a time (they were opened
 * in step order, so most are consecutive). */
static void close_sources(void)
{
	const struct moat_plan *pl = g_sb->plan;
	int lo = -1, hi = -1;
	for (unsigned i = 0; i <= pl->n_steps; i++) {
		int fd = -1;
		if (i < pl->n_steps) {
			fd = srcfd[i];
			srcfd[i] = -1;
			if (fd < 0)
				continue;
		}
		if (lo >= 0 && fd == hi + 1) {
			hi = fd;
			continue;
		}
		if (lo >= 0 && syscall(SYS_close_range, lo, hi, 0) < 0)
			for (int f = lo; f <= hi; f++)
				close(f);
		lo = hi = fd;
	}
}

/* A MOAT_STEPF_ROOT_LAYER step: what its source is decides (as for a
 * bind): missing and optional, nothing; a symlink, made again; a file,
 * bound read-only (an overlay is of a directory); a directory, an overlay. */
static void root_layer(const struct moat_step *s, int idx, struct stat *st)
{
	int fd = g_sb->premounted[idx] >= 0 ? g_sb->premounted[idx] : srcfd[idx];
	if (fd < 0)
		return;
	if (fstat(fd, st) < 0)
		die(MOAT_STAGE_MOUNT, errno, idx, "cannot stat %s", s->src);
	g_sb->step_type[idx] = st->st_mode & S_IFMT;
	if (S_ISLNK(st->st_mode)) {
		char target[MOAT_MAX_PATH];
		ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
		if (n < 0)
			die(MOAT_STAGE_MOUNT, errno, idx, "cannot read link %s", s->src);
		target[n] = 0;
		do_symlink(target, s->dest, idx);
	} else if (!S_ISDIR(st->st_mode)) {
		struct moat_step ro = *s;
		ro.flags = (s->flags & ~MOAT_STEPF_WRITABLE) | MOAT_STEPF_RO;
		do_bind(&ro, idx, fd, st);
	} else
		do_root_overlay(s, idx, fd, st);
}

/* Phase 2, as the sandbox user with the namespace's capabilities. */
static void apply_plan(void)
{
	const struct moat_plan *pl = g_sb->plan;
	/* Every mode the plan asks for is exact: no umask while it is applied
	 * (the command gets the caller's umask back). */
	mode_t umask_saved = umask(0);

	/* 2. The new root: a private tmpfs, read-only once assembled. */
	if (mount("moat", NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m") < 0)
		die(MOAT_STAGE_MOUNT, errno, -1, "cannot mount the root tmpfs");

	/* 3. The steps, in order. */
	memset(g_sb->step_type, 0, sizeof(g_sb->step_type));
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		int idx = (int)i;
		struct stat st;
		switch (s->op) {
		case MOAT_STEP_BIND: {
			int fd = g_sb->premounted[i] >= 0 ? g_sb->premounted[i] : srcfd[i];
			if (fd < 0)
				break; /* optional and missing */
			if (fstat(fd, &st) < 0)
				die(MOAT_STAGE_MOUNT, errno, idx, "cannot stat %s", s->src);
			g_sb->step_type[i] = st.st_mode & S_IFMT;
			if (g_sb->premounted[i] < 0 && (s->flags & MOAT_STEPF_MIRROR_LINK) &&
			    S_ISLNK(st.st_mode)) {
				char target[MOAT_MAX_PATH];
				ssize_t n = readlinkat(fd, "", target, sizeof(target) - 1);
				if (n < 0)
					die(MOAT_STAGE_MOUNT, errno, idx, "cannot read link %s",
					    s->src);
				target[n] = 0;
				do_symlink(target, s->dest, idx);
				break;
			}
			if (g_sb->premounted[i] < 0 && (s->flags & MOAT_STEPF_COPY_SMALL) &&
			    copy_small(s, idx, fd, &st))
				break;
			do_bind(s, idx, fd, &st);
			break;
		}
		case MOAT_STEP_OVERLAY:
			if (!(s->flags & MOAT_STEPF_ROOT_LAYER)) {
				do_overlay(s, idx, srcfd[i]);
				break;
			}
			root_layer(s, idx, &st);
			break;
		case MOAT_STEP_UPPER:
			do_upper(s, idx);
			break;
		case MOAT_STEP_TMPFS:
			do_tmpfs(s, idx);
			if (s->flags & MOAT_STEPF_OUTPUT) {
				const char *name;
				int pfd = walk_parent(s->dest, idx, &name);
				int ofd = openat(pfd, name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (ofd < 0 ||
				    moat_sandbox_send_fd(g_sb->sock_child, MOAT_FD_OUTPUT, ofd) < 0)
					die(MOAT_STAGE_MOUNT, errno, idx,
					    "cannot hand /output to moat");
				close(ofd);
			} else if (s->flags & MOAT_STEPF_WRITABLE)
				keep_disk_root(s, idx);
			break;
		case MOAT_STEP_PROC:
			do_proc(s, idx);
			break;
		case MOAT_STEP_DEVPTS:
			do_devpts(s, idx);
			break;
		case MOAT_STEP_MQUEUE:
			break;
		case MOAT_STEP_SYMLINK:
			do_symlink(s->src, s->dest, idx);
			break;
		case MOAT_STEP_MKDIR: {
			int r = walk_dir(s->dest, strlen(s->dest), s->mode, true);
			if (r < 0)
				die(MOAT_STAGE_MOUNT, -r, idx, "cannot create %s%s", s->dest,
				    r == -ELOOP ? " (a symlink is in the way)" : "");
			break;
		}
		case MOAT_STEP_FILE:
			do_file(s, idx);
			g_sb->step_type[i] = S_IFREG;
			break;
		case MOAT_STEP_HIDE:
			do_hide(s, idx);
			break;
		case MOAT_STEP_READONLY:
			do_readonly(s, idx);
			break;
		}
		if (s->op == MOAT_STEP_TMPFS || s->op == MOAT_STEP_UPPER ||
		    (s->op == MOAT_STEP_OVERLAY && !(s->flags & MOAT_STEPF_ROOT_LAYER)) ||
		    s->op == MOAT_STEP_PROC || s->op == MOAT_STEP_DEVPTS ||
		    s->op == MOAT_STEP_MKDIR)
			g_sb->step_type[i] = S_IFDIR;
	}
	root_upper_detach();
	walk_drop(0);
	self_fds = safe_close(self_fds);
	close_sources();
	umask(umask_saved);
}

static void enter_root(void)
{
	if (chdir(NEWROOT) < 0)
		die(MOAT_STAGE_PIVOT, errno, -1, "cannot enter the new root");
	/* pivot_root(".", "."): the old root is stacked on top and detached. */
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		die(MOAT_STAGE_PIVOT, errno, -1, "pivot_root failed");
	if (umount2(".", MNT_DETACH) < 0)
		die(MOAT_STAGE_PIVOT, errno, -1, "cannot detach the old root");
	if (chdir("/") < 0)
		die(MOAT_STAGE_PIVOT, errno, -1, "chdir / failed");
	struct mount_attr ma = {.attr_set =
					MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
	if (mount_setattr(AT_FDCWD, "/", 0, &ma, sizeof(ma)) < 0)
		die(MOAT_STAGE_PIVOT, errno, -1, "cannot make / read-only");
}

static void loopback_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	if (s < 0)
		die(MOAT_STAGE_NETWORK, errno, -1, "socket for loopback setup");
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		die(MOAT_STAGE_NETWORK, errno, -1, "cannot read lo flags");
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		die(MOAT_STAGE_NETWORK, errno, -1, "cannot bring lo up");
	close(s);
}

/* No capability in any set, the bounding set emptied, securebits locked so
 * nothing can regain them, no_new_privs. In two parts: what only matters at
 * the next execve or uid change (securebits, bounding and ambient sets) is
 * done while the supervisor still works on the cgroup and the seccomp filter;
 * the effective capabilities stay until the cgroup namespace is made. */
static void limit_privileges(void)
{
	/* NOROOT: an exec as uid 0 (the sandbox's own root, --uid 0) or of a
	 * set-uid-0 file gains no capability; NO_SETUID_FIXUP: no uid change
	 * moves capabilities; KEEP_CAPS off; no ambient raise; each locked. Read
	 * back: a kernel that ignored a bit must not leave uid 0 able to regain
	 * capabilities at exec. */
	const int bits = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	if (prctl(PR_SET_SECUREBITS, bits) < 0)
		die(MOAT_STAGE_CAPS, errno, -1, "cannot lock securebits");
	int got = prctl(PR_GET_SECUREBITS);
	if (got != bits)
		die(MOAT_STAGE_CAPS, got < 0 ? errno : EPERM, -1,
		    "securebits read back as %#x, not %#x", (unsigned)got, (unsigned)bits);
	/* Capabilities are numbered 0..CAP_LAST_CAP without gaps; EINVAL names
	 * the first number past the last one this kernel knows. */
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0) {
			if (errno == EINVAL && c > 0)
				break;
			die(MOAT_STAGE_CAPS, errno, -1,
			    "cannot drop capability %d from the bounding set", c);
		}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		die(MOAT_STAGE_CAPS, errno, -1, "cannot clear ambient capabilities");
}

static void drop_privileges(void)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {0};
	if (syscall(SYS_capset, &h, d) < 0)
		die(MOAT_STAGE_CAPS, errno, -1, "cannot clear capabilities");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		die(MOAT_STAGE_CAPS, errno, -1, "cannot set no_new_privs");
}

/* Caps the sandbox's share of per-user kernel objects: the limits of
 * /proc/sys/user are per user namespace and start unlimited in ours, while
 * every object is also charged to the host user who owns it. Written through
 * the host's /proc, before the sandbox's own /proc (whose sys is read-only)
 * replaces it; the sandbox has no CAP_SYS_RESOURCE to raise them again. */
static void limit_ucounts(void)
{
	static const char *const files[] = {"/proc/sys/user/max_inotify_instances",
					    "/proc/sys/user/max_inotify_watches"};
	const long vals[] = {g_sb->ucount_inotify_instances, g_sb->ucount_inotify_watches};
	for (unsigned i = 0; i < 2; i++) {
		char buf[32];
		if (vals[i] <= 0)
			continue;
		int fd = open(files[i], O_WRONLY | O_CLOEXEC);
		if (fd < 0 && errno == ENOENT)
			continue; /* a kernel without per-namespace ucounts */
		int n = snprintf(buf, sizeof(buf), "%ld\n", vals[i]);
		if (fd < 0 || write(fd, buf, (size_t)n) != n)
			die(MOAT_STAGE_RLIMIT, errno, -1, "cannot limit %s", files[i]);
		close(fd);
	}
}

/* OCI process.rlimits (oci_rlimits.c checked them against this process's
 * hard limits): soft and hard as given, never above what is set already
 * (a lower hard limit of moat's own stays). RLIMIT_AS and RLIMIT_DATA wait
 * for each new process (init_serve.c), as the degraded AS does; CORE stays 0. */
static void set_oci_rlimits(const struct moat_policy *p)
{
	for (int res = 0; res < MOAT_POLICY_RLIMITS; res++) {
		const struct moat_policy_rlimit *w = &p->rlimits[res];
		struct rlimit cur, r;
		if (!w->set || res == RLIMIT_CORE || res == RLIMIT_AS || res == RLIMIT_DATA)
			continue;
		if (getrlimit(res, &cur) < 0)
			die(MOAT_STAGE_RLIMIT, errno, -1, "process.rlimits: getrlimit %d", res);
		r.rlim_max = w->hard;
		if (cur.rlim_max != RLIM_INFINITY && r.rlim_max > cur.rlim_max)
			r.rlim_max = cur.rlim_max;
		r.rlim_cur = w->soft < r.rlim_max ? w->soft : r.rlim_max;
		if (setrlimit(res, &r) < 0)
			die(MOAT_STAGE_RLIMIT, errno, -1,
			    "process.rlimits: cannot set resource %d to %llu/%llu", res,
			    (unsigned long long)r.rlim_cur, (unsigned long long)r.rlim_max);
	}
}

/* OCI's value for a limit each process sets before exec: the lower of it
 * and moat's own (r; rlim_max 0: none) */
static void late_rlimit(struct rlimit *r, const struct moat_policy_rlimit *w)
{
	if (w->set && (!r->rlim_max || w->hard < r->rlim_max))
		r->rlim_max = w->hard;
	if (w->set && (!r->rlim_cur || w->soft < r->rlim_cur))
		r->rlim_cur = w->soft;
	if (r->rlim_cur > r->rlim_max)
		r->rlim_cur = r->rlim_max;
}

static void set_rlimits(void)
{
	const struct moat_policy *p = g_sb->p;
	struct rlimit zero = {0, 0};
	if (setrlimit(RLIMIT_CORE, &zero) < 0)
		die(MOAT_STAGE_RLIMIT, errno, -1, "cannot set RLIMIT_CORE");
	if (p->nofile) {
		struct rlimit r = {p->nofile, p->nofile};
		if (setrlimit(RLIMIT_NOFILE, &r) < 0)
			die(MOAT_STAGE_RLIMIT, errno, -1, "cannot set RLIMIT_NOFILE to %llu",
			    (unsigned long long)p->nofile);
	}
	if (p->fsize) {
		struct rlimit r = {p->fsize, p->fsize};
		if (setrlimit(RLIMIT_FSIZE, &r) < 0)
			die(MOAT_STAGE_RLIMIT, errno, -1, "cannot set RLIMIT_FSIZE");
	}
	/* No cgroup (--allow-degraded cgroup): the weaker per-process limits.
	 * RLIMIT_AS is set by each new process just before it execs
	 * (init_serve.c): the init is a fork of the supervisor, whose address
	 * space (under ASan: terabytes of shadow) may already exceed it, and a
	 * new process maps its request before exec. */
	if (g_sb->rlimit_nproc) {
		struct rlimit r = {g_sb->rlimit_nproc, g_sb->rlimit_nproc};
		if (setrlimit(RLIMIT_NPROC, &r) < 0)
			die(MOAT_STAGE_RLIMIT, errno, -1, "cannot set RLIMIT_NPROC");
	}
	set_oci_rlimits(p);
}

/* The init is a fork of moat: its argument and environment areas still hold
 * moat's command line and environment (which may name secrets). /proc/1/cmdline
 * is readable by everyone in the sandbox, so both areas are wiped; the
 * command's argv was copied to the heap before clone. */
static void wipe_args_and_env(void)
{
	char buf[2048];
	int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		die(MOAT_STAGE_SYNC, errno, -1, "cannot read /proc/self/stat");
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		die(MOAT_STAGE_SYNC, EIO, -1, "cannot read /proc/self/stat");
	buf[n] = 0;
	/* fields after the parenthesised comm; arg_start is field 48 */
	char *c = strrchr(buf, ')');
	unsigned long long v[52] = {0};
	int field = 3; /* c + 2 is field 3, the state letter */
	if (!c || !c[1] || !c[2])
		die(MOAT_STAGE_SYNC, EPROTO, -1, "unexpected /proc/self/stat");
	c += 3;
	while (field < 51 && *c) {
		char *end;
		while (*c == ' ')
			c++;
		field++;
		v[field] = strtoull(c, &end, 10);
		if (end == c)
			break;
		c = end;
	}
	if (field < 51)
		die(MOAT_STAGE_SYNC, EPROTO, -1, "unexpected /proc/self/stat");
	unsigned long long arg_start = v[48], arg_end = v[49], env_start = v[50], env_end = v[51];
	if (arg_end > arg_start && arg_end - arg_start < (64u << 20)) {
		memset((void *)(uintptr_t)arg_start, 0, arg_end - arg_start);
		if (arg_end - arg_start > 10)
			memcpy((void *)(uintptr_t)arg_start, "moat-init", 10);
	}
	if (env_end > env_start && env_end - env_start < (64u << 20))
		memset((void *)(uintptr_t)env_start, 0, env_end - env_start);
}

/* A change of uid/gid clears the parent-death signal: set it again, then make
 * sure moat did not die in between (the read end of the setup pipe is then
 * closed and the write end reports an error). */
static void rearm_parent_death(void)
{
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(MOAT_EXIT_SETUP);
	struct pollfd pfd = {.fd = g_sb->setup_w, .events = POLLOUT};
	if (poll(&pfd, 1, 0) < 0 || (pfd.revents & (POLLERR | POLLHUP)))
		_exit(MOAT_EXIT_SETUP);
}

/* The init is a clone of the supervisor and does not exec: it would keep
 * every descriptor of the process that made it (another sandbox's control
 * channel, relay pipes, the audit log, a server's client connections...).
 * It keeps only what its set-up uses; everything else is closed first. No
 * allocation: a fixed list, sorted in place. */
static void close_inherited(struct moat_init *sb)
{
	int keep[8 + 8 + 2 * MOAT_PLAN_MAX_STEPS];
	unsigned n = 0;
	keep[n++] = 0;
	keep[n++] = 1;
	keep[n++] = 2;
	keep[n++] = sb->setup_w;
	keep[n++] = sb->go_r;
	keep[n++] = sb->sock_child;
	keep[n++] = sb->rootfs_fd;
	for (unsigned i = 0; i < sb->n_cgroup_self && i < 8; i++)
		keep[n++] = sb->cgroup_self[i];
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++) {
		keep[n++] = sb->premounted[i];
		keep[n++] = sb->user_fd[i];
	}
	for (unsigned i = 1; i < n; i++) /* insertion sort: a few hundred ints */
		for (unsigned j = i; j > 0 && keep[j - 1] > keep[j]; j--) {
			int t = keep[j];
			keep[j] = keep[j - 1];
			keep[j - 1] = t;
		}
	int next = 0; /* the lowest fd not yet decided */
	for (unsigned i = 0; i < n; i++) {
		if (keep[i] < next)
			continue; /* -1, or a duplicate */
		if (keep[i] > next && syscall(SYS_close_range, next, keep[i] - 1, 0) < 0)
			_exit(MOAT_EXIT_SETUP);
		next = keep[i] + 1;
	}
	if (syscall(SYS_close_range, next, ~0U, 0) < 0)
		_exit(MOAT_EXIT_SETUP);
}

/* ---- the init's ordered steps ----------------------------------------------
 *
 * Each step belongs to one layer (layer.h); the table below is their order,
 * and the order is the point. A step that fails reports {stage, errno, fail}
 * (or its own, more precise message) and nothing runs.
 */

/* The supervisor's first byte on the go pipe: the id maps are written. Read
 * by the first step that needs them (identity/maps, or network/capture for
 * --net allow, whose child keeps the order it always had), not at the
 * init's start: the steps before it (wipe, hostname, loopback, ucounts,
 * private, sources) use no id map and overlap the supervisor's writing of
 * the maps instead of waiting for it. If moat is gone the read gives EOF and
 * the init leaves. */
static void wait_go(struct moat_init *sb)
{
	char go;
	ssize_t n;
	if (sb->go_seen)
		return;
	while ((n = read(sb->go_r, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1)
		_exit(MOAT_EXIT_SETUP); /* the supervisor gave up; it reports why */
	sb->go_seen = true;
	moat_test_stall("init-go");
}

static int step_cgroup_join(struct moat_init *sb)
{
	/* Into the run's cgroup v1 groups before anything is forked (sandbox.h) */
	for (unsigned i = 0; i < sb->n_cgroup_self; i++) {
		if (write(sb->cgroup_self[i], "0", 1) != 1)
			die(MOAT_STAGE_CGROUP, errno, -1, "cannot join the run's cgroup");
		close(sb->cgroup_self[i]);
	}
	return 0;
}

static int step_wipe(struct moat_init *sb)
{
	wipe_args_and_env();
	return 0;
}

static int step_hostname(struct moat_init *sb)
{
	/* the identity is the plan's */
	const struct moat_plan_identity *id = &sb->plan->id;
	if (sethostname(id->hostname, strlen(id->hostname)) < 0)
		return -1;
	if (setdomainname("", 0) < 0)
		die(MOAT_STAGE_HOSTNAME, errno, -1, "setdomainname");
	return 0;
}

static int step_loopback(struct moat_init *sb)
{
	if (sb->plan->id.clone_flags & CLONE_NEWNET)
		loopback_up();
	return 0;
}

static int step_capture(struct moat_init *sb)
{
	if (sb->plan->net.mode == MOAT_NET_ALLOW)
		wait_go(sb);
	return moat_hook_network(sb);
}

static int step_ucounts(struct moat_init *sb)
{
	limit_ucounts();
	return 0;
}

static int step_private(struct moat_init *sb)
{
	return mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
}

static int step_sources(struct moat_init *sb)
{
	open_sources();
	return 0;
}

static int step_maps(struct moat_init *sb)
{
	wait_go(sb);
	return 0;
}

static int step_ids(struct moat_init *sb)
{
	const struct moat_plan_identity *id = &sb->plan->id;
	if (setresgid(id->gid, id->gid, id->gid) < 0)
		die(MOAT_STAGE_IDENTITY, errno, -1, "setresgid(%u)", (unsigned)id->gid);
	if (setresuid(id->uid, id->uid, id->uid) < 0)
		die(MOAT_STAGE_IDENTITY, errno, -1, "setresuid(%u)", (unsigned)id->uid);
	rearm_parent_death();
	return 0;
}

static int step_mounts(struct moat_init *sb)
{
	apply_plan();
	return 0;
}

static int step_root(struct moat_init *sb)
{
	enter_root();
	moat_test_stall("init-mounted");
	return 0;
}

static int step_cwd(struct moat_init *sb)
{
	if (chdir(sb->plan->cwd) < 0)
		die(MOAT_STAGE_CHDIR, errno, -1, "cannot change to %s", sb->plan->cwd);
	return 0;
}

/* Terminals are made per process by the supervisor, in this sandbox's own
 * devpts instance: it gets the instance's ptmx (O_PATH), handed over with the
 * namespaces (init/namespaces). */
static int step_terminal(struct moat_init *sb)
{
	sb->init_ptmx = open("/dev/pts/ptmx", O_PATH | O_CLOEXEC);
	return 0;
}

/* The sandbox's user and mount namespaces to the supervisor, for the
 * snapshots' helper (snapshot.c): once the init is not dumpable an
 * unprivileged supervisor can neither open its /proc/PID/ns nor setns by its
 * pidfd. One message with the ptmx: one wake-up of the supervisor, not three. */
static int step_namespaces(struct moat_init *sb)
{
	static const char *const ns_files[] = {"/proc/self/ns/user", "/proc/self/ns/mnt"};
	int32_t kinds[MOAT_SANDBOX_BATCH_MAX];
	int fds[MOAT_SANDBOX_BATCH_MAX];
	unsigned n = 0, d = 0;
	int k = 0;
	if (sb->init_ptmx >= 0) {
		kinds[n] = MOAT_FD_PTMX;
		fds[n++] = sb->init_ptmx;
		sb->init_ptmx = -1;
	}
	for (int i = 0; i < 2 && k >= 0; i++) {
		int nfd = open(ns_files[i], O_RDONLY | O_CLOEXEC);
		if (nfd < 0)
			k = -errno;
		else {
			kinds[n] = i ? MOAT_FD_MNTNS : MOAT_FD_USERNS;
			fds[n++] = nfd;
		}
	}
	/* and the writable tmpfs roots (keep_disk_root), in the same message as
	 * long as they fit (three by default: /dev/shm, /tmp, home), then as
	 * many more as needed: none is waited for */
	do {
		while (k >= 0 && d < sb->n_disk && n < MOAT_SANDBOX_BATCH_MAX) {
			kinds[n] = MOAT_FD_DISK + sb->disk_step[d];
			fds[n++] = sb->disk_fd[d++];
		}
		if (k >= 0)
			k = moat_sandbox_send_fds(sb->sock_child, kinds, n, fds, n);
		for (unsigned i = 0; i < n; i++)
			close(fds[i]);
		n = 0;
	} while (k >= 0 && d < sb->n_disk);
	for (; d < sb->n_disk; d++)
		close(sb->disk_fd[d]);
	sb->n_disk = 0;
	if (k < 0) {
		errno = -k;
		return -1;
	}
	return 0;
}

/* /dev/null for 0..2 of the init, which keeps none of the caller's files. */
static int step_devnull(struct moat_init *sb)
{
	sb->init_devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
	return sb->init_devnull < 0 ? -1 : 0;
}

static int step_rlimits(struct moat_init *sb)
{
	set_rlimits();
	return 0;
}

static int step_bounding(struct moat_init *sb)
{
	limit_privileges();
	return 0;
}

/* The supervisor placed us in our cgroup and compiled the seccomp filter
 * while we built the root: its second byte on the go pipe says both are
 * done (the program is in the shared mapping). */
static int step_sync(struct moat_init *sb)
{
	char go;
	ssize_t n;
	while ((n = read(sb->go_r, &go, 1)) < 0 && errno == EINTR)
		;
	if (n != 1 || go != 'f')
		_exit(MOAT_EXIT_SETUP); /* the supervisor failed and reports why */
	close(sb->go_r);
	return 0;
}

/* Our cgroup becomes the root of our cgroup namespace. */
static int step_cgroupns(struct moat_init *sb)
{
	return unshare(CLONE_NEWCGROUP);
}

static int step_caps(struct moat_init *sb)
{
	drop_privileges();
	if (prctl(PR_SET_DUMPABLE, 0) < 0)
		die(MOAT_STAGE_CAPS, errno, -1, "cannot make init non-dumpable");
	return 0;
}

static int step_seccomp(struct moat_init *sb)
{
	int notify_fd = -1;
	/* Dumpable before the filter: until moat has the listener, no syscall
	 * may reach it (nobody would answer, the set-up would hang), and
	 * moat's pidfd_getfd() needs the init dumpable (below). */
	if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
		return -1;
	if (moat_hook_seccomp(sb, &notify_fd) < 0)
		return -1;
	if (notify_fd < 0 && prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return -1;
	/* the listener is handed over with DONE (init/stdio) */
	sb->init_notify_fd = notify_fd;
	moat_test_stall("init-restricted");
	return 0;
}

static int step_stdio(struct moat_init *sb)
{
	for (int i = 0; i < 3; i++)
		if (dup2(sb->init_devnull, i) < 0)
			die(MOAT_STAGE_STDIO, errno, -1, "cannot set up fd %d", i);
	close(sb->init_devnull);
	sb->init_devnull = -1;
	/* The seccomp listener, then DONE, in one message (one wake-up of the
	 * supervisor). Not with SCM_RIGHTS: under network recording sendmsg goes
	 * to this very listener, which nobody would serve yet; without fds this
	 * is a plain write(). moat takes the listener with pidfd_getfd(), which
	 * needs ptrace access: an unprivileged moat has it to a dumpable process
	 * of its own uid only, so the init is dumpable until moat has it. No
	 * answer is waited for: moat takes it before it reads DONE and sends
	 * nothing before, so the first record on the channel says it is taken
	 * (and a failure ends the sandbox from moat's side). Nothing else runs
	 * in the sandbox meanwhile. */
	int32_t msg[3];
	unsigned n = 0;
	if (sb->init_notify_fd >= 0) {
		msg[n++] = MOAT_FD_NOTIFY_TAKE;
		msg[n++] = sb->init_notify_fd;
	}
	msg[n++] = MOAT_FD_DONE;
	/* Setup is done: EOF on the setup pipe before DONE, so that moat, woken
	 * by DONE, finds it there and does not wait for it again. Nothing is left
	 * that could fail but the message itself, and without DONE moat fails the
	 * setup on that EOF ("died during setup"). */
	close(sb->setup_w);
	sb->setup_w = -1;
	if (moat_sandbox_send_fds(sb->sock_child, msg, n, NULL, 0) < 0)
		_exit(MOAT_EXIT_SETUP);
	return 0;
}

/*
 * The order, and why:
 * - limits/cgroup first: the init is in its v1 groups before it forks (the
 *   network child) or allocates anything the groups should count.
 * - credentials/wipe: moat's argv and environment (which may name secrets)
 *   are gone before anything else could read /proc/1/cmdline.
 * - identity/hostname, network/loopback and network/capture: the network
 *   child is started as early as possible, with the namespace capabilities
 *   and the host's mount table, so that libnftables' work overlaps the
 *   whole root assembly below (hook_net.c).
 * - limits/ucounts: through the host's /proc, before the sandbox's own /proc
 *   (whose sys is read-only) replaces it.
 * - mount/private, mount/sources: the sources are opened as the caller, so
 *   before identity/uid.
 * - identity/maps: waits for the supervisor's go (the id maps are written);
 *   every step before it needs no map, so they overlap the supervisor's
 *   writing of the maps (network/capture waits there instead with --net
 *   allow: its child starts after the go, as it always did).
 * - identity/uid before the mounts, so that what the
 *   steps create belongs to the sandbox's uid (the namespace capabilities
 *   stay: uid 0 is not mapped).
 * - mount/steps, mount/root, mount/cwd: the root is built, pivoted into and
 *   made read-only.
 * - init/terminal, init/devnull: need the new /dev, before it is locked.
 * - network/join: the capture rules must be in before capabilities go (the
 *   command never runs without them).
 * - limits/rlimits, identity/before-caps, identity/bounding: while the
 *   supervisor still compiles the seccomp program.
 * - landlock/ruleset: built before the sync, enforced after it (it needs the
 *   assembled root, not the capabilities).
 * - init/sync: waits for the supervisor (cgroup attach, seccomp program).
 * - identity/cgroupns, identity/caps: the cgroup namespace needs
 *   CAP_SYS_ADMIN, so it comes right before every capability is dropped and
 *   no_new_privs set (which Landlock needs).
 * - landlock/enforce, then seccomp/install: last, for the init and
 *   everything it forks; seccomp after Landlock because Landlock's own
 *   syscalls may be among those it denies.
 * - init/stdio: 0..2 to /dev/null, the supervisor told "done".
 */
static const struct moat_init_step init_steps[] = {
	{"limits", "cgroup", MOAT_STAGE_CGROUP, step_cgroup_join, "cannot join the run's cgroup"},
	{"credentials", "wipe", MOAT_STAGE_SYNC, step_wipe, "cannot wipe moat's environment"},
	{"identity", "hostname", MOAT_STAGE_HOSTNAME, step_hostname, "sethostname"},
	{"network", "loopback", MOAT_STAGE_NETWORK, step_loopback, "cannot bring lo up"},
	{"network", "capture", MOAT_STAGE_NETWORK, step_capture, "network setup failed"},
	{"limits", "ucounts", MOAT_STAGE_RLIMIT, step_ucounts, "cannot limit ucounts"},
	{"mount", "private", MOAT_STAGE_MOUNT, step_private, "cannot make mounts private"},
	{"mount", "sources", MOAT_STAGE_MOUNT, step_sources, "cannot open the sources"},
	{"identity", "maps", MOAT_STAGE_SYNC, step_maps, "the supervisor failed"},
	{"identity", "uid", MOAT_STAGE_IDENTITY, step_ids, "cannot set the identity"},
	{"mount", "steps", MOAT_STAGE_MOUNT, step_mounts, "cannot mount"},
	{"mount", "root", MOAT_STAGE_PIVOT, step_root, "pivot_root failed"},
	{"mount", "cwd", MOAT_STAGE_CHDIR, step_cwd, "cannot change directory"},
	{"init", "terminal", MOAT_STAGE_PTY, step_terminal, "cannot hand the pty device to moat"},
	{"init", "namespaces", MOAT_STAGE_MOUNT, step_namespaces,
	 "cannot hand the namespaces to moat"},
	{"init", "devnull", MOAT_STAGE_STDIO, step_devnull, "cannot open /dev/null"},
	{"network", "join", MOAT_STAGE_NETWORK, moat_hook_network_join, "network setup failed"},
	{"limits", "rlimits", MOAT_STAGE_RLIMIT, step_rlimits, "cannot set the rlimits"},
	{"identity", "before-caps", MOAT_STAGE_CAPS, moat_hook_before_caps, "setup hook failed"},
	{"identity", "bounding", MOAT_STAGE_CAPS, step_bounding, "cannot limit capabilities"},
	{"landlock", "ruleset", MOAT_STAGE_LANDLOCK, moat_hook_restrict_prepare,
	 "cannot build the Landlock rules"},
	{"init", "sync", MOAT_STAGE_SYNC, step_sync, "the supervisor failed"},
	{"identity", "cgroupns", MOAT_STAGE_IDENTITY, step_cgroupns,
	 "cannot create the cgroup namespace"},
	{"identity", "caps", MOAT_STAGE_CAPS, step_caps, "cannot clear capabilities"},
	{"landlock", "enforce", MOAT_STAGE_SECCOMP, moat_hook_landlock, "restriction hook failed"},
	{"seccomp", "install", MOAT_STAGE_SECCOMP, step_seccomp, "restriction hook failed"},
	{"init", "stdio", MOAT_STAGE_STDIO, step_stdio, "cannot set up fds 0..2"},
};

const struct moat_init_step *moat_init_steps(size_t *ret_n)
{
	*ret_n = ELEMENTSOF(init_steps);
	return init_steps;
}

int moat_init_step_run(struct moat_init *sb, const char *layer, const char *name)
{
	g_sb = sb;
	for (size_t i = 0; i < ELEMENTSOF(init_steps); i++)
		if (streq(init_steps[i].layer, layer) && streq(init_steps[i].name, name))
			return init_steps[i].apply(sb);
	errno = ENOENT;
	return -1;
}

_Noreturn void moat_sandbox_init(struct moat_init *sb)
{
	g_sb = sb;
	sb->init_devnull = -1;
	sb->init_notify_fd = -1;
	sb->init_ptmx = -1;
	close_inherited(sb); /* the supervisor's ends of the pipes go too */
	/* The sandbox dies with moat, even if moat is SIGKILLed: PID 1 exiting
	 * takes the whole pid namespace with it. (getppid() is 0 here: the parent
	 * is outside the pid namespace. If moat died before this line, the go
	 * pipe reads EOF at identity/maps and we leave.) */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
		_exit(MOAT_EXIT_SETUP);

	for (size_t i = 0; i < ELEMENTSOF(init_steps); i++) {
		const struct moat_init_step *s = &init_steps[i];
		if (s->apply(sb) < 0)
			die(s->stage, errno, -1, "%s", s->fail);
	}
	/* setup is done (init/stdio closed the setup pipe); from now on the
	 * control channel */
	if (sb->init_notify_fd >= 0) {
		/* the first record (or the channel's end): moat has the listener */
		struct pollfd pf = {.fd = sb->sock_child, .events = POLLIN};
		while (poll(&pf, 1, -1) < 0 && errno == EINTR)
			;
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
			_exit(MOAT_EXIT_SETUP);
		close(sb->init_notify_fd);
		sb->init_notify_fd = -1;
	}
	struct moat_init_late_rlimits late = {.as = {sb->rlimit_as, sb->rlimit_as}};
	late_rlimit(&late.as, &sb->p->rlimits[RLIMIT_AS]);
	late_rlimit(&late.data, &sb->p->rlimits[RLIMIT_DATA]);
	moat_init_serve(sb->sock_child, &late, false);
}
