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
#include <limits.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "lib/errors.h"
#include "lib/paths.h"
#include "shared/macro.h"

#define MAX_FOLLOW 16 /* trusted links followed in one resolution */

bool moat_path_link_trusted(const char *parent, bool system_chain, uid_t link_uid)
{
	/* Only the top of the system hierarchy: a root-owned directory deeper
	 * down may still be a workspace a root-mode sandbox wrote to as root
	 * (an idmapped mount of a root-owned tree stores its files as root). */
	return system_chain && link_uid == 0 &&
		(parent[0] == 0 || streq(parent, "/usr") || streq(parent, "/var"));
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
	struct open_how how = {.flags = flags,
			       .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
				       RESOLVE_NO_MAGICLINKS};
	return syscall(SYS_openat2, dfd, name, &how, sizeof(how));
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
		if ((flags & MOAT_PATH_MKDIR) && mkdirat(dfd, name, mode) < 0 && errno != EEXIST)
			return negerrno();
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
	int fd = moat_path_open(dir[0] ? dir : "/",
				MOAT_PATH_DIR | (flags & (MOAT_PATH_MKDIR | MOAT_PATH_NO_LINKS)),
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

int moat_path_write_file(const char *path, int oflags, mode_t mode, bool mkdirs,
			 struct moat_path_info *why)
{
	const char *name;
	char dir[MOAT_MAX_PATH];
	struct stat st;
	_cleanup_close_ int pfd =
		moat_path_open_parent(path, mkdirs ? MOAT_PATH_MKDIR : 0, 0700, &name, why);
	if (pfd < 0)
		return pfd;
	parent_of(dir, sizeof(dir), path);
	/* O_NONBLOCK: a fifo planted at the path must not block us */
	_cleanup_close_ int fd = openat(pfd, name,
					O_WRONLY | O_CREAT | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK |
						O_CLOEXEC | (oflags & O_APPEND),
					mode);
	if (fd < 0) {
		int e = errno;
		if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
		    check_existing(pfd, dir, name, &st, why) < 0)
			return check_existing(pfd, dir, name, &st, why);
		return -e;
	}
	if (fstat(fd, &st) < 0)
		return negerrno();
	int r = check_existing(pfd, dir, name, &st, why);
	if (r < 0)
		return r;
	if ((oflags & O_TRUNC) && ftruncate(fd, 0) < 0)
		return negerrno();
	if (fcntl(fd, F_SETFL, oflags & O_APPEND) < 0)
		return negerrno();
	return TAKE_FD(fd);
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
		return S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
	if (fcntl(fd, F_SETFL, 0) < 0)
		return negerrno();
	return TAKE_FD(fd);
}

int moat_path_check_writable(const char *path, bool mkdirs, struct moat_path_info *why)
{
	const char *name;
	char dir[MOAT_MAX_PATH];
	struct stat st;
	_cleanup_close_ int pfd =
		moat_path_open_parent(path, mkdirs ? MOAT_PATH_MKDIR : 0, 0700, &name, why);
	if (pfd < 0)
		return pfd;
	parent_of(dir, sizeof(dir), path);
	if (fstatat(pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : negerrno();
	return check_existing(pfd, dir, name, &st, why);
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
	if (err == EINVAL || err == EISDIR)
		return moat_error_set(e, stage, err, "%s %s: not a regular file%s", what, path,
				      err == EISDIR ? " (a directory)"
						    : " (fifo, device or socket)");
	return moat_error_set(e, stage, err, "%s %s: %s", what, path, strerror(err));
}
