/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The confined unpacker (image.h). A layer is hostile bytes, and libarchive
 * is a large parser: it runs in a child that
 *   - holds the blob (fd 3), the staging tree as its root (chroot, fd 4 is
 *     closed once there) and the result pipe (fd 5), nothing else;
 *   - unprivileged: in a user namespace of its own that maps only the
 *     caller's uid and gid (so that chroot is possible);
 *   - has no capability in any set, no_new_privs, and a seccomp filter
 *     that allows the *at calls the unpacking needs and nothing that
 *     reaches outside (no socket, no exec, no chroot, no mount, no ptrace);
 * and it resolves every name beneath the tree with RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS, one component at a time: a symlink of an earlier
 * entry or layer is never followed, a name that would pass through one is
 * refused. Whiteouts are applied in a first pass over the layer (they only
 * ever hide what the layers below put there), the entries in a second; both
 * passes hash what they read and refuse a blob that is not the digest asked.
 */
#include <archive.h>
#include <archive_entry.h>
#include <dlfcn.h>
#include <stddef.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "image/image.h"
#include "kernel/confine.h"
#include "shared/io.h"
#include "shared/macro.h"
#include "shared/openat2.h"
#include "shared/rmtree.h"

/* libarchive is loaded when a layer is unpacked (a cache miss), not linked:
 * every other start of moat maps libc alone (the start-up budget of issue
 * 14; the vm level's initramfs carries moat with libc only). Loaded in the
 * parent, before the confined child exists, from the system's library path
 * (the trust of libc itself). */
static struct {
	struct archive *(*read_new)(void);
	int (*read_free)(struct archive *);
	int (*read_support_format_tar)(struct archive *);
	int (*read_support_filter_gzip)(struct archive *);
	int (*read_support_filter_zstd)(struct archive *);
	int (*read_support_filter_none)(struct archive *);
	int (*read_open)(struct archive *, void *, archive_open_callback *, archive_read_callback *,
			 archive_close_callback *);
	int (*read_next_header)(struct archive *, struct archive_entry **);
	int (*read_data_block)(struct archive *, const void **, size_t *, la_int64_t *);
	const char *(*error_string)(struct archive *);
	void (*set_error)(struct archive *, int, const char *, ...);
	la_int64_t (*entry_size)(struct archive_entry *);
	const char *(*entry_symlink)(struct archive_entry *);
	const char *(*entry_hardlink)(struct archive_entry *);
	const char *(*entry_pathname)(struct archive_entry *);
	__LA_MODE_T (*entry_perm)(struct archive_entry *);
	__LA_MODE_T (*entry_mode)(struct archive_entry *);
	__LA_MODE_T (*entry_filetype)(struct archive_entry *);
	time_t (*entry_mtime)(struct archive_entry *);
	long (*entry_mtime_nsec)(struct archive_entry *);
} LA;

#define LIBARCHIVE "libarchive.so.13"

static int la_load(char *why, size_t len)
{
	static void *h;
	if (h)
		return 0;
	void *d = dlopen(LIBARCHIVE, RTLD_NOW | RTLD_LOCAL);
	if (!d) {
		snprintf(why, len, "cannot load %s (Debian's libarchive13): %s", LIBARCHIVE,
			 dlerror());
		return -ENOENT;
	}
	static const struct {
		const char *sym;
		size_t off;
	} fns[] = {
#define F(n) {"archive_" #n, offsetof(__typeof__(LA), n)}
		F(read_new),
		F(read_free),
		F(read_support_format_tar),
		F(read_support_filter_gzip),
		F(read_support_filter_zstd),
		F(read_support_filter_none),
		F(read_open),
		F(read_next_header),
		F(read_data_block),
		F(error_string),
		F(set_error),
		F(entry_size),
		F(entry_symlink),
		F(entry_hardlink),
		F(entry_pathname),
		F(entry_perm),
		F(entry_mode),
		F(entry_filetype),
		F(entry_mtime),
		F(entry_mtime_nsec),
#undef F
	};
	for (size_t i = 0; i < ELEMENTSOF(fns); i++) {
		void *f = dlsym(d, fns[i].sym);
		if (!f) {
			snprintf(why, len, "%s has no %s", LIBARCHIVE, fns[i].sym);
			dlclose(d);
			memset(&LA, 0, sizeof(LA));
			return -ENOENT;
		}
		memcpy((char *)&LA + fns[i].off, &f, sizeof(f));
	}
	h = d;
	return 0;
}

/* the child's descriptors, in moat_image_spawn_child's order */
#define BLOB_FD 3
#define ROOT_FD 4
#define OUT_FD 5
#define RES (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define DEPTH_MAX 512u

struct unpacker {
	struct sha256_ctx sha;
	uint64_t read_len;
	unsigned char buf[64 * 1024];
	int root; /* "/" of the chroot, O_PATH */
	unsigned flags;
	uint64_t bytes, bytes_max, entries, entries_max;
	char why[512];
};

_printf_(2, 3) static int fail(struct unpacker *u, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(u->why, sizeof(u->why), fmt, ap);
	va_end(ap);
	return -EPERM;
}

int moat_image_hash_fd(int fd, uint64_t max, char ret[MOAT_IMAGE_DIGEST_LEN + 1], uint64_t *ret_len)
{
	struct sha256_ctx sha;
	unsigned char buf[64 * 1024], md[SHA256_DIGEST_SIZE];
	uint64_t off = 0;
	sha256_init(&sha);
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), (off_t)off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negerrno();
		if (n == 0)
			break;
		off += (uint64_t)n;
		if (off > max)
			return -EFBIG;
		sha256_update(&sha, (size_t)n, buf);
	}
	sha256_digest(&sha, sizeof(md), md);
	memcpy(ret, "sha256:", 7);
	for (int i = 0; i < 32; i++)
		snprintf(ret + 7 + 2 * i, 3, "%02x", md[i]);
	*ret_len = off;
	return 0;
}

static la_ssize_t read_cb(struct archive *a, void *ud, const void **out)
{
	struct unpacker *u = ud;
	for (;;) {
		ssize_t n = read(BLOB_FD, u->buf, sizeof(u->buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			LA.set_error(a, errno, "read");
			return -1;
		}
		sha256_update(&u->sha, (size_t)n, u->buf);
		u->read_len += (uint64_t)n;
		*out = u->buf;
		return n;
	}
}

/* The directory `dir` (relative, normalised; "" the root) beneath the tree,
 * made when missing if create: an O_PATH fd, or -errno with why. */
static int open_dir(struct unpacker *u, const char *dir, bool create)
{
	int cur = (int)moat_openat2(u->root, ".", O_PATH | O_DIRECTORY | O_CLOEXEC, 0, RES);
	if (cur < 0)
		return fail(u, "cannot open the tree: %s", strerror(errno));
	for (const char *c = dir; *c;) {
		size_t n = strcspn(c, "/");
		char comp[MOAT_IMAGE_NAME_MAX + 1];
		if (n == 0 || n > MOAT_IMAGE_NAME_MAX) {
			close(cur);
			return fail(u, "%.200s: malformed", dir);
		}
		memcpy(comp, c, n);
		comp[n] = 0;
		int fd = (int)moat_openat2(cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
					   0, RES);
		if (fd < 0 && errno == ENOENT && create) {
			if (mkdirat(cur, comp, 0755) < 0 && errno != EEXIST) {
				int e = errno;
				close(cur);
				return fail(u, "%.200s: cannot make %s: %s", dir, comp,
					    strerror(e));
			}
			fd = (int)moat_openat2(
				cur, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, RES);
		}
		int e = errno;
		close(cur);
		if (fd < 0) {
			if (e == ENOENT && !create)
				return -ENOENT;
			return fail(u, "%.200s: %s is %s", dir, comp,
				    e == ELOOP || e == ENOTDIR
					    ? "a symlink or not a directory (refused: never "
					      "written through)"
					    : strerror(e));
		}
		cur = fd;
		c += n;
		if (*c == '/')
			c++;
	}
	return cur;
}

/* dir/name gone (a tree too), unless keep_dir and it is a directory. */
static int clear(struct unpacker *u, int dfd, const char *name, bool keep_dir, bool *ret_is_dir)
{
	struct stat st;
	*ret_is_dir = false;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : fail(u, "%s: %s", name, strerror(errno));
	if (S_ISDIR(st.st_mode) && keep_dir) {
		*ret_is_dir = true;
		return 0;
	}
	int k = moat_rmtree_at(dfd, name, DEPTH_MAX);
	return k < 0 ? fail(u, "%s: cannot replace it: %s", name, strerror(-k)) : 0;
}

static void split(const char *path, char *dir, const char **base)
{
	const char *s = strrchr(path, '/');
	size_t n = s ? (size_t)(s - path) : 0;
	memcpy(dir, path, n);
	dir[n] = 0;
	*base = s ? s + 1 : path;
}

static int write_file(struct unpacker *u, struct archive *a, struct archive_entry *ae, int pfd,
		      const char *base, const struct moat_image_checked *c)
{
	int64_t size = LA.entry_size(ae);
	if ((uint64_t)size > u->bytes_max - u->bytes)
		return fail(u, "%.200s: the image's files exceed %llu bytes", c->path,
			    (unsigned long long)u->bytes_max);
	u->bytes += (uint64_t)size;
	_cleanup_close_ int fd =
		openat(pfd, base, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return fail(u, "%.200s: %s", c->path, strerror(errno));
	const void *buf;
	size_t len;
	la_int64_t off;
	int r;
	while ((r = LA.read_data_block(a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off + len > (uint64_t)size)
			return fail(u, "%.200s: data beyond the entry's size", c->path);
		for (size_t done = 0; done < len;) {
			ssize_t n = pwrite(fd, (const char *)buf + done, len - done,
					   (off_t)(off + (la_int64_t)done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return fail(u, "%.200s: %s", c->path, strerror(errno));
			done += (size_t)n;
		}
	}
	if (r != ARCHIVE_EOF)
		return fail(u, "%.200s: %s", c->path, LA.error_string(a));
	if (ftruncate(fd, (off_t)size) < 0 || fchmod(fd, c->mode) < 0)
		return fail(u, "%.200s: %s", c->path, strerror(errno));
	struct timespec ts[2] = {
		{.tv_nsec = UTIME_OMIT},
		{.tv_sec = LA.entry_mtime(ae), .tv_nsec = LA.entry_mtime_nsec(ae)}};
	(void)futimens(fd, ts);
	return 0;
}

static int apply_entry(struct unpacker *u, struct archive *a, struct archive_entry *ae,
		       const struct moat_image_checked *c)
{
	char dir[MOAT_IMAGE_PATH_MAX + 1];
	const char *base;
	bool is_dir;
	int k;
	split(c->path, dir, &base);
	_cleanup_close_ int pfd = open_dir(u, dir, true);
	if (pfd < 0)
		return pfd;
	if ((k = clear(u, pfd, base, c->kind == MOAT_IMAGE_ENT_DIR, &is_dir)) < 0)
		return k;
	switch (c->kind) {
	case MOAT_IMAGE_ENT_DIR: {
		if (!is_dir && mkdirat(pfd, base, 0700) < 0)
			return fail(u, "%.200s: %s", c->path, strerror(errno));
		_cleanup_close_ int fd = (int)moat_openat2(
			pfd, base, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0, RES);
		/* the owner keeps rwx: later entries and whiteouts go in */
		if (fd < 0 || fchmod(fd, c->mode | 0700) < 0)
			return fail(u, "%.200s: %s", c->path, strerror(errno));
		return 0;
	}
	case MOAT_IMAGE_ENT_FILE:
		return write_file(u, a, ae, pfd, base, c);
	case MOAT_IMAGE_ENT_SYMLINK:
		if (symlinkat(c->link, pfd, base) < 0)
			return fail(u, "%.200s: %s", c->path, strerror(errno));
		return 0;
	case MOAT_IMAGE_ENT_HARDLINK: {
		char tdir[MOAT_IMAGE_PATH_MAX + 1];
		const char *tbase;
		struct stat st;
		split(c->link, tdir, &tbase);
		_cleanup_close_ int tfd = open_dir(u, tdir, false);
		if (tfd < 0 || fstatat(tfd, tbase, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISREG(st.st_mode))
			return fail(u,
				    "%.200s: a hard link to %.200s, which is not a file of the "
				    "tree (refused)",
				    c->path, c->link);
		if (linkat(tfd, tbase, pfd, base, 0) < 0)
			return fail(u, "%.200s: %s", c->path, strerror(errno));
		return 0;
	}
	default:
		return 0;
	}
}

static int apply_whiteout(struct unpacker *u, const struct moat_image_checked *c)
{
	bool is_dir;
	_cleanup_close_ int dfd = open_dir(u, c->path, false);
	if (dfd == -ENOENT)
		return 0; /* nothing below to hide */
	if (dfd < 0)
		return dfd;
	if (c->kind == MOAT_IMAGE_ENT_WHITEOUT)
		return clear(u, dfd, c->name, false, &is_dir);
	/* opaque: everything the layers below put in the directory */
	_cleanup_close_ int rfd =
		(int)moat_openat2(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0, RES);
	if (rfd < 0)
		return fail(u, "%.200s: %s", c->path, strerror(errno));
	char buf[8192];
	/* until a listing from the start finds nothing but "." and ".." */
	for (bool removed = false;;) {
		long n = syscall(SYS_getdents64, rfd, buf, sizeof(buf));
		if (n < 0)
			return fail(u, "%.200s: %s", c->path, strerror(errno));
		if (n == 0 && !removed)
			return 0;
		for (long off = 0; off < n;) {
			struct {
				uint64_t ino;
				int64_t off;
				unsigned short reclen;
				unsigned char type;
				char name[];
			} *d = (void *)(buf + off);
			off += d->reclen;
			if (streq(d->name, ".") || streq(d->name, ".."))
				continue;
			int k = clear(u, dfd, d->name, false, &is_dir);
			if (k < 0)
				return k;
			removed = true;
		}
		/* the directory changed under the listing: read it again */
		if (n == 0) {
			if (lseek(rfd, 0, SEEK_SET) < 0)
				return fail(u, "%.200s: %s", c->path, strerror(errno));
			removed = false;
		}
	}
}

/* One pass over the blob: whiteouts (first) or the rest (second). */
static int pass(struct unpacker *u, bool whiteouts, const char *expect, uint64_t expect_size)
{
	struct moat_image_checked *c = malloc(sizeof(*c));
	struct archive *a = LA.read_new();
	struct archive_entry *ae;
	int k = 0, r;
	if (!c || !a) {
		free(c);
		if (a)
			LA.read_free(a);
		return fail(u, "out of memory");
	}
	sha256_init(&u->sha);
	u->read_len = 0;
	if (lseek(BLOB_FD, 0, SEEK_SET) < 0) {
		k = fail(u, "seek: %s", strerror(errno));
		goto out;
	}
	/* tar (ustar, pax, GNU) only, plain, gzip or zstd: anything else is
	 * "unsupported compression" (libarchive would not run a program: the
	 * filter allows no exec) */
	LA.read_support_format_tar(a);
	LA.read_support_filter_gzip(a);
	LA.read_support_filter_zstd(a);
	LA.read_support_filter_none(a);
	if (LA.read_open(a, u, NULL, read_cb, NULL) != ARCHIVE_OK) {
		k = fail(u, "not a tar moat can read (tar, gzip, zstd): %s", LA.error_string(a));
		goto out;
	}
	while ((r = LA.read_next_header(a, &ae)) == ARCHIVE_OK) {
		char why[400];
		struct moat_image_entry e = {
			.path = LA.entry_pathname(ae),
			.type = LA.entry_filetype(ae),
			.mode = LA.entry_perm(ae) |
				(LA.entry_mode(ae) & (S_ISUID | S_ISGID | S_ISVTX)),
			.symlink = LA.entry_symlink(ae),
			.hardlink = LA.entry_hardlink(ae),
			.size = LA.entry_size(ae),
		};
		if (++u->entries > u->entries_max) {
			k = fail(u, "more than %llu entries", (unsigned long long)u->entries_max);
			goto out;
		}
		if (moat_image_entry_check(&e, u->flags, c, why, sizeof(why)) < 0) {
			k = fail(u, "%s", why);
			goto out;
		}
		bool wh = c->kind == MOAT_IMAGE_ENT_WHITEOUT || c->kind == MOAT_IMAGE_ENT_OPAQUE;
		if (wh && whiteouts)
			k = apply_whiteout(u, c);
		else if (!wh && !whiteouts && c->kind != MOAT_IMAGE_ENT_SKIP)
			k = apply_entry(u, a, ae, c);
		if (k < 0)
			goto out;
	}
	if (r != ARCHIVE_EOF) {
		k = fail(u, "not a tar moat can read: %s", LA.error_string(a));
		goto out;
	}
	/* what follows the end of the archive counts for the digest too */
	for (;;) {
		const void *b;
		la_ssize_t n = read_cb(a, u, &b);
		if (n < 0) {
			k = fail(u, "read: %s", strerror(errno));
			goto out;
		}
		if (n == 0)
			break;
	}
	if (expect) {
		unsigned char md[SHA256_DIGEST_SIZE];
		char got[MOAT_IMAGE_DIGEST_LEN + 1] = "sha256:";
		sha256_digest(&u->sha, sizeof(md), md);
		for (int i = 0; i < 32; i++)
			snprintf(got + 7 + 2 * i, 3, "%02x", md[i]);
		if (!streq(got, expect) || u->read_len != expect_size)
			k = fail(u, "the blob read is %s (%llu bytes), not %s (%llu bytes)", got,
				 (unsigned long long)u->read_len, expect,
				 (unsigned long long)expect_size);
	}
out:
	LA.read_free(a);
	free(c);
	return k;
}

static int drop_caps(void)
{
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return negerrno();
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return negerrno();
	struct __user_cap_header_struct hd = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capset, &hd, d) < 0)
		return negerrno();
	return prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ? negerrno() : 0;
}

static int write_map(const char *file, unsigned id)
{
	char line[64];
	int n = streq(file, "/proc/self/setgroups")
		? snprintf(line, sizeof(line), "deny")
		: snprintf(line, sizeof(line), "%u %u 1\n", id, id);
	_cleanup_close_ int fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, line, (size_t)n) != n)
		return negerrno();
	return 0;
}

int moat_image_confine_child(int root_fd, const char **ret_step)
{
	uid_t uid = getuid();
	gid_t gid = getgid();
	int k = 0;
	(void)prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (uid != 0) {
		/* chroot needs CAP_SYS_CHROOT: a user namespace of one uid */
		*ret_step = "user namespace";
		if (unshare(CLONE_NEWUSER) < 0 || write_map("/proc/self/setgroups", 0) < 0 ||
		    write_map("/proc/self/uid_map", uid) < 0 ||
		    write_map("/proc/self/gid_map", gid) < 0)
			k = negerrno();
	}
	if (k >= 0) {
		*ret_step = "chroot";
		if (fchdir(root_fd) < 0 || chroot(".") < 0 || chdir("/") < 0)
			k = negerrno();
	}
	close(root_fd);
	if (k >= 0) {
		*ret_step = "capabilities";
		k = drop_caps();
	}
	return k;
}

int moat_image_spawn_child(const int *fds, unsigned n_fds, void (*run)(void *userdata),
			   void *userdata, pid_t *ret_pid, int *ret_pipe)
{
	int pp[2];
	if (n_fds > MOAT_IMAGE_CHILD_FDS_MAX)
		return -EINVAL;
	if (pipe2(pp, O_CLOEXEC) < 0)
		return negerrno();
	pid_t pid = fork();
	if (pid < 0) {
		int e = errno;
		close(pp[0]);
		close(pp[1]);
		return -e;
	}
	if (pid == 0) {
		/* every descriptor above its place first (they may overlap),
		 * /dev/null on 0..2, each to its place, nothing else */
		int hi[MOAT_IMAGE_CHILD_FDS_MAX + 1];
		for (unsigned i = 0; i <= n_fds; i++)
			if ((hi[i] = fcntl(i < n_fds ? fds[i] : pp[1], F_DUPFD_CLOEXEC, 10)) < 0)
				_exit(2);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (null < 0 || dup2(null, 0) < 0 || dup2(null, 1) < 0 || dup2(null, 2) < 0)
			_exit(2);
		for (unsigned i = 0; i <= n_fds; i++)
			if (dup2(hi[i], 3 + (int)i) < 0)
				_exit(2);
		if (close_range(3 + n_fds + 1, ~0U, 0) < 0)
			_exit(2);
		run(userdata);
		_exit(2);
	}
	close(pp[1]);
	*ret_pid = pid;
	*ret_pipe = pp[0];
	return 0;
}

struct child_args {
	unsigned flags;
	const char *expect;
	uint64_t expect_size, bytes_max, entries_max;
};

/* Everything up to the seccomp filter; then the passes. */
_Noreturn static void child(void *userdata)
{
	static struct unpacker u;
	const struct child_args *ca = userdata;
	char msg[600];
	const char *step = "confine";
	int k = moat_image_confine_child(ROOT_FD, &step);
	if (k >= 0) {
		static const int extra[] = {
			SCMP_SYS(openat),	SCMP_SYS(openat2),   SCMP_SYS(mkdirat),
			SCMP_SYS(symlinkat),	SCMP_SYS(linkat),    SCMP_SYS(unlinkat),
			SCMP_SYS(fchmod),	SCMP_SYS(fstat),     SCMP_SYS(newfstatat),
			SCMP_SYS(statx),	SCMP_SYS(lseek),     SCMP_SYS(pread64),
			SCMP_SYS(pwrite64),	SCMP_SYS(ftruncate), SCMP_SYS(getdents64),
			SCMP_SYS(utimensat),	SCMP_SYS(fcntl),     SCMP_SYS(getuid),
			SCMP_SYS(geteuid),	SCMP_SYS(getgid),    SCMP_SYS(getegid),
			SCMP_SYS(rt_sigaction),
		};
		step = "seccomp";
		k = moat_confine_seccomp(extra, ELEMENTSOF(extra), NULL, NULL);
	}
	if (k < 0) {
		int n = snprintf(msg, sizeof(msg), "E the unpacker's %s step: %s", step,
				 strerror(-k));
		(void)!write(OUT_FD, msg, (size_t)n);
		_exit(3);
	}
	u.flags = ca->flags;
	u.bytes_max = ca->bytes_max;
	u.entries_max = ca->entries_max;
	u.root = (int)moat_openat2(AT_FDCWD, "/", O_PATH | O_DIRECTORY | O_CLOEXEC, 0, 0);
	if (u.root < 0)
		k = fail(&u, "cannot open the tree: %s", strerror(errno));
	if (k >= 0 && !(ca->flags & MOAT_IMAGE_F_PLAIN))
		k = pass(&u, true, ca->expect, ca->expect_size);
	if (k >= 0) {
		u.entries = 0;
		k = pass(&u, false, ca->expect, ca->expect_size);
	}
	int n = k < 0 ? snprintf(msg, sizeof(msg), "E %s", u.why)
		      : snprintf(msg, sizeof(msg), "O %llu %llu", (unsigned long long)u.bytes,
				 (unsigned long long)u.entries);
	(void)!write(OUT_FD, msg, (size_t)MIN((size_t)n, sizeof(msg) - 1));
	_exit(k < 0 ? 1 : 0);
}

int moat_image_unpack(int blob_fd, int root_fd, const char *expect_digest, uint64_t expect_size,
		      unsigned flags, uint64_t *bytes, uint64_t bytes_max, uint64_t *entries,
		      uint64_t entries_max, char *why, size_t whylen)
{
	int k = la_load(why, whylen);
	if (k < 0)
		return k;
	struct child_args ca = {
		.flags = flags,
		.expect = expect_digest,
		.expect_size = expect_size,
		.bytes_max = bytes_max > *bytes ? bytes_max - *bytes : 0,
		.entries_max = entries_max > *entries ? entries_max - *entries : 0,
	};
	/* the blob at 3 (BLOB_FD), the tree at 4 (ROOT_FD), the pipe at 5 */
	const int fds[] = {blob_fd, root_fd};
	pid_t pid;
	int out;
	k = moat_image_spawn_child(fds, ELEMENTSOF(fds), child, &ca, &pid, &out);
	if (k < 0)
		return k;
	char msg[601];
	size_t n = 0;
	while (n < sizeof(msg) - 1) {
		ssize_t m = read(out, msg + n, sizeof(msg) - 1 - n);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		n += (size_t)m;
	}
	close(out);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	msg[n] = 0;
	unsigned long long bb = 0, ee = 0;
	if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && sscanf(msg, "O %llu %llu", &bb, &ee) == 2) {
		*bytes += bb;
		*entries += ee;
		return 0;
	}
	if (msg[0] == 'E' && msg[1] == ' ')
		snprintf(why, whylen, "%s", msg + 2);
	else
		snprintf(why, whylen, "the unpacker failed (status 0x%x)", (unsigned)st);
	return -EPERM;
}
