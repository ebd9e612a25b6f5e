/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * User-given host paths, resolved without following what a sandbox could have
 * planted (paths.h states the rule). The walk opens one component at a time
 * with openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
 * from the fd of the directory before it, so what was checked is what is held:
 * a rename between two steps cannot redirect the walk, it can only make it
 * meet a symlink and refuse. Fixed buffers only: the sandbox's init uses it.
 */
#include <fcntl.h>
#include <linux/openat2.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "policy/errors.h"
#include "sandbox/paths.h"
#include "shared/macro.h"
#include "shared/openat2.h"

#define MAX_FOLLOW 16 /* trusted links followed in one resolution */

bool moat_path_link_trusted(const char *parent, bool system_chain, uid_t link_uid)
{
	/* Only the top of the system hierarchy: a root-owned directory deeper
	 * down may still be a workspace a root-mode sandbox wrote to as root
	 * (an idmapped mount of a root-owned tree stores its files as root). */
	return system_chain && link_uid == 0 &&
		(parent[0] == 0 || streq(parent, "/usr") || streq(parent, "/var"));
}

void moat_path_invoker(uid_t *ret_uid, gid_t *ret_gid)
{
	*ret_uid = getuid();
	*ret_gid = getgid();
	if (!moat_host_root())
		return;
	const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
	char *e1 = NULL, *e2 = NULL;
	unsigned long u = su ? strtoul(su, &e1, 10) : 0, g = sg ? strtoul(sg, &e2, 10) : 0;
	if (su && sg && *su && *sg && !*e1 && !*e2 && u > 0 && u < 0xfffffffful &&
	    g < 0xfffffffful) {
		*ret_uid = (uid_t)u;
		*ret_gid = (gid_t)g;
	}
}

/* Whether uid (with gid and its supplementary groups) may write in the
 * directory or file st, by its mode bits. Only needed when root acts for
 * another user: otherwise the kernel checks as that user already. */
static bool may_write(const struct stat *st, uid_t uid, gid_t gid)
{
	if (uid == 0)
		return true;
	if (st->st_uid == uid)
		return st->st_mode & S_IWUSR;
	bool in_group = st->st_gid == gid;
	struct passwd *pw = in_group ? NULL : getpwuid(uid);
	if (pw) {
		gid_t groups[256];
		int n = (int)ELEMENTSOF(groups);
		if (getgrouplist(pw->pw_name, gid, groups, &n) >= 0)
			for (int i = 0; i < n && !in_group; i++)
				in_group = groups[i] == st->st_gid;
	}
	return in_group ? (st->st_mode & S_IWGRP) : (st->st_mode & S_IWOTH);
}

/* For MOAT_PATH_AS_INVOKER as root: -EACCES unless the invoking user may
 * write in the directory dfd. */
static int invoker_may_write(int dfd, uid_t uid, gid_t gid)
{
	struct stat st;
	if (fstat(dfd, &st) < 0)
		return negerrno();
	return geteuid() != 0 || may_write(&st, uid, gid) ? 0 : -EACCES;
}

/* Appends component c[0, n) to the absolute path buf[0, *len) ("" is /),
 * lexically: "." is dropped, ".." removes the last component. */
static int push(char *buf, size_t *len, const char *c, size_t n)
{
	if (n == 0 || (n == 1 && c[0] == '.'))
		return 0;
	if (n == 2 && c[0] == '.' && c[1] == '.') {
		while (*len > 0 && buf[*len - 1] != '/')
			(*len)--;
		if (*len > 0)
			(*len)--;
		buf[*len] = 0;
		return 0;
	}
	if (*len + 1 + n >= MOAT_MAX_PATH)
		return -ENAMETOOLONG;
	buf[(*len)++] = '/';
	memcpy(buf + *len, c, n);
	*len += n;
	buf[*len] = 0;
	return 0;
}

static int push_all(char *buf, size_t *len, const char *s)
{
	while (*s) {
		const char *e = strchrnul(s, '/');
		int r = push(buf, len, s, (size_t)(e - s));
		if (r < 0)
			return r;
		s = *e ? e + 1 : e;
	}
	return 0;
}

static long openat2_one(int dfd, const char *name, uint64_t flags)
{
	return moat_openat2(dfd, name, flags, 0,
			    RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
}

static void refuse(struct moat_path_info *why, const char *dir, const char *name, int lfd,
		   const char *lname)
{
	if (!why)
		return;
	snprintf(why->link, sizeof(why->link), "%s/%s", dir, name);
	ssize_t n = readlinkat(lfd, lname, why->target, sizeof(why->target) - 1);
	why->target[n > 0 ? n : 0] = 0;
}

int moat_path_open(const char *path, unsigned flags, mode_t mode, struct moat_path_info *why)
{
	char cur[MOAT_MAX_PATH], done[MOAT_MAX_PATH], name[NAME_MAX + 1];
	unsigned follows = 0;
	size_t len = 0;
	int r;

	if (why)
		why->resolved[0] = why->link[0] = why->target[0] = 0;
	if (!path || path[0] != '/')
		return -EINVAL;
	if (strlen(path) >= sizeof(cur))
		return -ENAMETOOLONG;
	cur[0] = 0;
	if ((r = push_all(cur, &len, path)) < 0)
		return r;
	uid_t uid = 0;
	gid_t gid = 0;
	if (flags & MOAT_PATH_AS_INVOKER)
		moat_path_invoker(&uid, &gid);

restart:;
	_cleanup_close_ int dfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	struct stat st;
	if (dfd < 0 || fstat(dfd, &st) < 0)
		return negerrno();
	/* every directory so far is root's and writable by no one else */
	bool system = st.st_uid == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH));
	size_t dlen = 0;
	done[0] = 0;
	for (const char *p = cur; *p;) {
		const char *c = p + 1, *e = strchrnul(c, '/');
		size_t n = (size_t)(e - c);
		bool last = *e == 0;
		if (n == 0 || n > NAME_MAX)
			return n ? -ENAMETOOLONG : -EINVAL;
		memcpy(name, c, n);
		name[n] = 0;
		/* mkdir first: EEXIST for anything already there, which the
		 * open below then checks (a symlink is never created through) */
		if (flags & MOAT_PATH_MKDIR) {
			bool created = false;
			if ((flags & MOAT_PATH_AS_INVOKER) &&
			    fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
				if (errno != ENOENT)
					return negerrno();
				if ((r = invoker_may_write(dfd, uid, gid)) < 0)
					return r;
			}
			if (mkdirat(dfd, name, mode) == 0)
				created = true;
			else if (errno != EEXIST)
				return negerrno();
			/* what moat creates for the user is the user's */
			if (created && (flags & MOAT_PATH_AS_INVOKER) && geteuid() == 0 &&
			    fchownat(dfd, name, uid, gid, AT_SYMLINK_NOFOLLOW) < 0)
				return negerrno();
		}
		_cleanup_close_ int fd =
			(int)openat2_one(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0)
			return negerrno();
		if (S_ISLNK(st.st_mode)) {
			if (last && (flags & MOAT_PATH_NOFOLLOW_LAST))
				return TAKE_FD(fd);
			if ((flags & MOAT_PATH_NO_LINKS) ||
			    !moat_path_link_trusted(done, system, st.st_uid) ||
			    ++follows > MAX_FOLLOW) {
				refuse(why, done, name, fd, "");
				return -ELOOP;
			}
			/* a trusted link: its target, then the rest, from / again */
			char target[MOAT_MAX_PATH], next[MOAT_MAX_PATH];
			ssize_t tn = readlinkat(fd, "", target, sizeof(target) - 1);
			if (tn <= 0)
				return tn < 0 ? negerrno() : -ELOOP;
			target[tn] = 0;
			size_t nl = 0;
			next[0] = 0;
			r = 0;
			if (target[0] != '/')
				r = push_all(next, &nl, done);
			if (r >= 0)
				r = push_all(next, &nl, target);
			if (r >= 0)
				r = push_all(next, &nl, e);
			if (r < 0)
				return r;
			memcpy(cur, next, nl + 1);
			goto restart;
		}
		if (!last && !S_ISDIR(st.st_mode))
			return -ENOTDIR;
		system = system && S_ISDIR(st.st_mode) && st.st_uid == 0 &&
			!(st.st_mode & (S_IWGRP | S_IWOTH));
		if ((r = push(done, &dlen, name, n)) < 0)
			return r;
		safe_close(dfd);
		dfd = TAKE_FD(fd);
		p = e;
	}
	if ((flags & MOAT_PATH_DIR) && !S_ISDIR(st.st_mode))
		return -ENOTDIR;
	if (why)
		snprintf(why->resolved, sizeof(why->resolved), "%s", done[0] ? done : "/");
	return TAKE_FD(dfd);
}

int moat_path_open_parent(const char *path, unsigned flags, mode_t mode, const char **ret_name,
			  struct moat_path_info *why)
{
	char dir[MOAT_MAX_PATH];
	if (why)
		why->resolved[0] = why->link[0] = why->target[0] = 0;
	if (!path || !*path)
		return -EINVAL;
	const char *slash = strrchr(path, '/');
	const char *name = slash ? slash + 1 : path;
	if (!*name || streq(name, ".") || streq(name, ".."))
		return -EINVAL;
	if (path[0] != '/') {
		/* relative to the working directory, whose name getcwd()
		 * gives without any symlink */
		if (!getcwd(dir, sizeof(dir)))
			return negerrno();
		size_t n = strlen(dir);
		if (n + 1 + (size_t)(name - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		snprintf(dir + n, sizeof(dir) - n, "/%.*s", (int)(name - path), path);
	} else {
		if ((size_t)(slash - path) >= sizeof(dir))
			return -ENAMETOOLONG;
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
	}
	int fd = moat_path_open(
		dir[0] ? dir : "/",
		MOAT_PATH_DIR |
			(flags & (MOAT_PATH_MKDIR | MOAT_PATH_NO_LINKS | MOAT_PATH_AS_INVOKER)),
		mode, why);
	if (fd >= 0)
		*ret_name = name;
	return fd;
}

/* What is at name in pfd, without following it: regular files pass (with one
 * link only: another name of the file could be anywhere), a symlink is
 * -ELOOP, anything else is refused. */
static int check_existing(int pfd, const char *dir, const char *name, const struct stat *st,
			  struct moat_path_info *why)
{
	if (S_ISLNK(st->st_mode)) {
		refuse(why, dir, name, pfd, name);
		return -ELOOP;
	}
	if (S_ISDIR(st->st_mode))
		return -EISDIR;
	if (!S_ISREG(st->st_mode))
		return -EINVAL;
	if (st->st_nlink > 1)
		return -EMLINK;
	return 0;
}

static void parent_of(char *buf, size_t len, const char *path)
{
	const char *slash = strrchr(path, '/');
	snprintf(buf, len, "%.*s", slash ? (int)(slash - path) : 0, path);
}

/* The common start of a file moat writes or checks for the user: the
 * invoking user (with MOAT_PATH_AS_INVOKER), the held parent directory
 * (returned), the last component in *ret_name and the parent's path in dir. */
static int open_target(const char *path, unsigned flags, const char **ret_name, char *dir,
		       size_t dirlen, uid_t *ret_uid, gid_t *ret_gid, struct moat_path_info *why)
{
	if (flags & MOAT_PATH_AS_INVOKER)
		moat_path_invoker(ret_uid, ret_gid);
	int pfd = moat_path_open_parent(path, flags & (MOAT_PATH_AS_INVOKER | MOAT_PATH_MKDIR),
					0700, ret_name, why);
	if (pfd >= 0)
		parent_of(dir, dirlen, path);
	return pfd;
}

/* moat_path_write_file's work below its held parent pfd (dir: its path, for
 * the checks' messages). */
static int write_file_in(int pfd, const char *dir, const char *name, int oflags, mode_t mode,
			 bool as, uid_t uid, gid_t gid, struct moat_path_info *why)
{
	struct stat st;
	/* O_NONBLOCK: a fifo planted at the path must not block us */
	const int fl =
		O_WRONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC | (oflags & O_APPEND);
	bool created = false;
	_cleanup_close_ int fd = -1;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return negerrno();
		int r = as ? invoker_may_write(pfd, uid, gid) : 0;
		if (r < 0)
			return r;
		fd = openat(pfd, name, fl | O_CREAT | O_EXCL, mode);
		created = fd >= 0;
	} else {
		int r = check_existing(pfd, dir, name, &st, why);
		if (r < 0)
			return r;
		if (as && geteuid() == 0 && !may_write(&st, uid, gid))
			return -EACCES;
		fd = openat(pfd, name, fl);
	}
	if (fd < 0) {
		int e = errno;
		int r;
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    (r = check_existing(pfd, dir, name, &st, why)) < 0)
			return r;
		return -e;
	}
	if (fstat(fd, &st) < 0)
		return negerrno();
	int r = check_existing(pfd, dir, name, &st, why);
	if (r < 0)
		return r;
	if (created && as && geteuid() == 0 && fchown(fd, uid, gid) < 0)
		return negerrno();
	if ((oflags & O_TRUNC) && ftruncate(fd, 0) < 0)
		return negerrno();
	if (fcntl(fd, F_SETFL, oflags & O_APPEND) < 0)
		return negerrno();
	return TAKE_FD(fd);
}

int moat_path_write_file(const char *path, int oflags, mode_t mode, unsigned flags,
			 struct moat_path_info *why)
{
	const char *name;
	char dir[MOAT_MAX_PATH];
	uid_t uid = 0;
	gid_t gid = 0;
	_cleanup_close_ int pfd =
		open_target(path, flags, &name, dir, sizeof(dir), &uid, &gid, why);
	if (pfd < 0)
		return pfd;
	return write_file_in(pfd, dir, name, oflags, mode, flags & MOAT_PATH_AS_INVOKER, uid, gid,
			     why);
}

int moat_path_write_file_at(int dirfd, const char *dir, const char *name, int oflags, mode_t mode,
			    struct moat_path_info *why)
{
	if (dirfd < 0 || !dir || !name || !name[0] || strchr(name, '/') || streq(name, ".") ||
	    streq(name, ".."))
		return -EINVAL;
	return write_file_in(dirfd, dir, name, oflags, mode, false, 0, 0, why);
}

int moat_path_read_file(const char *path, struct moat_path_info *why)
{
	const char *name;
	char dir[MOAT_MAX_PATH];
	struct stat st;
	_cleanup_close_ int pfd = moat_path_open_parent(path, 0, 0, &name, why);
	if (pfd < 0)
		return pfd;
	parent_of(dir, sizeof(dir), path);
	_cleanup_close_ int fd =
		openat(pfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		if (e == ELOOP)
			refuse(why, dir, name, pfd, name);
		return -e;
	}
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	if (fcntl(fd, F_SETFL, 0) < 0)
		return negerrno();
	return TAKE_FD(fd);
}

int moat_path_check_writable(const char *path, unsigned flags, struct moat_path_info *why)
{
	const char *name;
	char dir[MOAT_MAX_PATH];
	struct stat st;
	uid_t uid = 0;
	gid_t gid = 0;
	const bool as = flags & MOAT_PATH_AS_INVOKER;
	_cleanup_close_ int pfd =
		open_target(path, flags, &name, dir, sizeof(dir), &uid, &gid, why);
	if (pfd < 0)
		return pfd;
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		if (errno != ENOENT)
			return negerrno();
		if (!as)
			return 0;
		if (geteuid() != 0) {
			/* the kernel's own check, through the held directory */
			char self[32];
			snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
			return access(self, W_OK) < 0 ? negerrno() : 0;
		}
		return invoker_may_write(pfd, uid, gid);
	}
	int r = check_existing(pfd, dir, name, &st, why);
	if (r < 0)
		return r;
	return as && geteuid() == 0 && !may_write(&st, uid, gid) ? -EACCES : 0;
}

int moat_path_error(struct moat_error *e, const char *stage, const char *what, const char *path,
		    int err, const struct moat_path_info *why)
{
	err = err < 0 ? -err : err;
	if (err == ELOOP && why && why->link[0]) {
		/* the link's own target, resolved, then the rest of the path */
		char resolved[PATH_MAX], full[PATH_MAX + MOAT_MAX_PATH];
		const char *res = NULL;
		size_t ln = strlen(why->link);
		if (realpath(why->link, resolved) && strncmp(path, why->link, ln) == 0 &&
		    (path[ln] == 0 || path[ln] == '/')) {
			snprintf(full, sizeof(full), "%s%s", resolved, path + ln);
			res = full;
		}
		return moat_error_set(
			e, stage, err,
			"%s %s: %s is a symlink (-> %s) and moat follows no symlink a sandbox "
			"could have planted (only root's in /, /usr, /var); if it is yours, check "
			"it and pass %s%s",
			what, path, why->link, why->target[0] ? why->target : "?",
			res ? "the resolved path instead: " : "a path without symlinks",
			res ? res : "");
	}
	if (err == EMLINK)
		return moat_error_set(
			e, stage, err,
			"%s %s: the file has more than one hard link (another name of "
			"it could be written); remove it or name another file",
			what, path);
	if (err == EACCES) {
		uid_t uid;
		gid_t gid;
		moat_path_invoker(&uid, &gid);
		return moat_error_set(e, stage, err,
				      "%s %s: %s (the invoking user, uid %u, may not write there)",
				      what, path, strerror(err), (unsigned)uid);
	}
	if (err == EINVAL || err == EISDIR)
		return moat_error_set(e, stage, err, "%s %s: not a regular file%s", what, path,
				      err == EISDIR ? " (a directory)"
						    : " (fifo, device or socket)");
	return moat_error_set(e, stage, err, "%s %s: %s", what, path, strerror(err));
}

/* Whether the directory anc is dir or one of its ancestors: dir's ".." chain
 * up to / (where ".." is the directory itself), compared by device and inode,
 * so that a second name of the same directory (a bind mount) is no way
 * around it. */
static int is_ancestor(int anc, int dir)
{
	struct stat a, st;
	if (fstat(anc, &a) < 0 || fstat(dir, &st) < 0)
		return negerrno();
	_cleanup_close_ int cur = fcntl(dir, F_DUPFD_CLOEXEC, 3);
	if (cur < 0)
		return negerrno();
	for (unsigned depth = 0; depth < MOAT_MAX_PATH / 2; depth++) {
		if (st.st_dev == a.st_dev && st.st_ino == a.st_ino)
			return 1;
		int up = openat(cur, "..", O_PATH | O_DIRECTORY | O_CLOEXEC);
		struct stat ust;
		if (up < 0 || fstat(up, &ust) < 0) {
			int e = negerrno();
			safe_close(up);
			return e;
		}
		safe_close(cur);
		cur = up;
		if (ust.st_dev == st.st_dev && ust.st_ino == st.st_ino)
			return 0; /* "/" */
		st = ust;
	}
	return -ELOOP;
}

int moat_path_overlaps(int fd, const char *fd_path, const char *path)
{
	char p[MOAT_MAX_PATH];
	bool whole = true;
	struct stat st;
	if (!path || path[0] != '/' || strlen(path) >= sizeof(p) || fstat(fd, &st) < 0)
		return -EINVAL;
	_cleanup_close_ int parent = -1;
	if (!S_ISDIR(st.st_mode)) {
		/* a file holds nothing: only whether it lies in path, through
		 * the directory it is in (fd_path: the symlink-free name) */
		const char *name;
		parent = moat_path_open_parent(fd_path, 0, 0, &name, NULL);
		if (parent < 0)
			return parent;
	}
	snprintf(p, sizeof(p), "%s", path);
	for (;;) {
		_cleanup_close_ int pfd = moat_path_open(p, MOAT_PATH_DIR, 0, NULL);
		if (pfd >= 0) {
			/* fd holds what is at path (or what would be created there) */
			int r = parent >= 0 ? 0 : is_ancestor(fd, pfd);
			if (r != 0 || !whole)
				return r;
			/* path holds fd */
			return is_ancestor(pfd, parent >= 0 ? parent : fd);
		}
		if (pfd != -ENOENT && pfd != -ELOOP && pfd != -ENOTDIR)
			return pfd;
		/* not there (yet): the nearest existing directory on the way */
		char *slash = strrchr(p, '/');
		if (!slash || slash == p)
			snprintf(p, sizeof(p), "/");
		else
			*slash = 0;
		whole = false;
	}
}
