/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Copying and syncing snapshot trees (snapshot.h). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "workspace/snapshot.h"
#include "shared/macro.h"

#define DIR_FLAGS (O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)

/* The mount an entry is on (st_dev says little on an overlay, whose files
 * show their layer's device); 0 if unknown. */
static uint64_t mnt_of(int dir, const char *name)
{
	struct statx sx;
	if (statx(dir, name, AT_SYMLINK_NOFOLLOW | (name[0] ? 0 : AT_EMPTY_PATH), STATX_MNT_ID,
		  &sx) < 0 ||
	    !(sx.stx_mask & STATX_MNT_ID))
		return 0;
	return sx.stx_mnt_id;
}

struct names {
	char **v;
	size_t n, cap;
};

static void names_done(struct names *ns)
{
	for (size_t i = 0; i < ns->n; i++)
		free(ns->v[i]);
	free(ns->v);
	ns->v = NULL;
	ns->n = ns->cap = 0;
}

static int names_add(struct names *ns, const char *name)
{
	if (ns->n >= MOAT_SNAP_MAX_ENTRIES)
		return -E2BIG;
	if (ns->n == ns->cap) {
		size_t cap = ns->cap ? ns->cap * 2 : 32;
		char **v = realloc(ns->v, cap * sizeof(*v));
		if (!v)
			return -ENOMEM;
		ns->v = v;
		ns->cap = cap;
	}
	if (!(ns->v[ns->n] = strdup(name)))
		return -ENOMEM;
	ns->n++;
	return 0;
}

/* The names of dir (not . and ..) added to ns. */
static int names_read(struct names *ns, int dir)
{
	int fd = openat(dir, ".", DIR_FLAGS);
	if (fd < 0)
		return negerrno();
	DIR *d = fdopendir(fd);
	if (!d) {
		int e = negerrno();
		close(fd);
		return e;
	}
	int k = 0;
	struct dirent *de;
	errno = 0;
	while (k >= 0 && (de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		k = names_add(ns, de->d_name);
	}
	if (k >= 0 && errno)
		k = negerrno();
	closedir(d);
	return k;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void names_unique(struct names *ns)
{
	if (!ns->n)
		return;
	qsort(ns->v, ns->n, sizeof(*ns->v), cmp_str);
	size_t o = 1;
	for (size_t i = 1; i < ns->n; i++) {
		if (streq(ns->v[i], ns->v[o - 1]))
			free(ns->v[i]);
		else
			ns->v[o++] = ns->v[i];
	}
	ns->n = o;
}

/* Set while a live tree is written: the overlay's own attributes
 * (user.overlay.*) are the overlay's to set, never copied into it. The
 * helper is one thread. */
static bool strip_overlay_xattrs;

static int copy_xattrs(int sfd, int dfd)
{
	char list[8192], val[65536];
	ssize_t n = flistxattr(sfd, list, sizeof(list));
	if (n < 0)
		return errno == ENOTSUP || errno == ENODATA ? 0 : negerrno();
	for (ssize_t off = 0; off < n; off += (ssize_t)strlen(list + off) + 1) {
		const char *x = list + off;
		if (strip_overlay_xattrs && !strncmp(x, "user.overlay.", 13))
			continue;
		ssize_t v = fgetxattr(sfd, x, val, sizeof(val));
		if (v < 0)
			continue;
		if (fsetxattr(dfd, x, val, (size_t)v, 0) < 0 && !strncmp(x, "user.", 5))
			return negerrno(); /* e.g. an overlay's opaque mark: needed */
	}
	return 0;
}

static int copy_data(int in, int out, uint64_t *bytes)
{
	char buf[65536];
	for (;;) {
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return negerrno();
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			ssize_t w = write(out, buf + off, (size_t)(n - off));
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0)
				return negerrno();
			off += w;
		}
		*bytes += (uint64_t)n;
	}
}

static int copy_dir(int sdir, int ddir, uint64_t mnt, unsigned depth, uint64_t *bytes,
		    unsigned *entries);

static int set_times(int dir, const char *name, const struct stat *st)
{
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	return utimensat(dir, name, ts, AT_SYMLINK_NOFOLLOW) < 0 ? negerrno() : 0;
}

/* One entry of sdir (stat st) created in ddir. */
static int copy_entry(int sdir, int ddir, const char *name, const struct stat *st, uint64_t mnt,
		      unsigned depth, uint64_t *bytes, unsigned *entries)
{
	mode_t perm = st->st_mode & 07777;
	int k = 0;
	if (++*entries > MOAT_SNAP_MAX_ENTRIES)
		return -E2BIG;
	switch (st->st_mode & S_IFMT) {
	case S_IFREG: {
		_cleanup_close_ int in = openat(sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		if (in < 0)
			return negerrno();
		_cleanup_close_ int out = openat(
			ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (out < 0)
			return negerrno();
		if ((k = copy_data(in, out, bytes)) < 0 || (k = copy_xattrs(in, out)) < 0)
			return k;
		if (fchmod(out, perm) < 0)
			return negerrno();
		struct timespec ts[2] = {st->st_atim, st->st_mtim};
		return futimens(out, ts) < 0 ? negerrno() : 0;
	}
	case S_IFDIR: {
		if (depth + 1 > MOAT_SNAP_MAX_DEPTH)
			return -ELOOP;
		if (mkdirat(ddir, name, 0700) < 0)
			return negerrno();
		_cleanup_close_ int in = openat(sdir, name, DIR_FLAGS);
		_cleanup_close_ int out = openat(ddir, name, DIR_FLAGS);
		if (in < 0 || out < 0)
			return negerrno();
		if ((k = copy_xattrs(in, out)) < 0 ||
		    (k = copy_dir(in, out, mnt, depth + 1, bytes, entries)) < 0)
			return k;
		if (fchmod(out, perm) < 0)
			return negerrno();
		struct timespec ts[2] = {st->st_atim, st->st_mtim};
		return futimens(out, ts) < 0 ? negerrno() : 0;
	}
	case S_IFLNK: {
		char t[4097];
		ssize_t n = readlinkat(sdir, name, t, sizeof(t) - 1);
		if (n < 0)
			return negerrno();
		t[n] = '\0';
		if (symlinkat(t, ddir, name) < 0)
			return negerrno();
		return set_times(ddir, name, st);
	}
	case S_IFIFO:
		if (mkfifoat(ddir, name, perm) < 0)
			return negerrno();
		return set_times(ddir, name, st);
	case S_IFCHR:
		/* an overlay whiteout (0/0) only: no other device exists in a sandbox */
		if (st->st_rdev != makedev(0, 0))
			return 0;
		if (mknodat(ddir, name, S_IFCHR | 0, makedev(0, 0)) < 0)
			return negerrno();
		return 0;
	default:
		return 0; /* sockets: nothing listens on them any more */
	}
}

static int copy_dir(int sdir, int ddir, uint64_t mnt, unsigned depth, uint64_t *bytes,
		    unsigned *entries)
{
	struct names ns = {0};
	int k = names_read(&ns, sdir);
	for (size_t i = 0; k >= 0 && i < ns.n; i++) {
		struct stat st;
		if (fstatat(sdir, ns.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0) {
			k = errno == ENOENT ? 0 : negerrno();
			continue;
		}
		if (mnt && mnt_of(sdir, ns.v[i]) != mnt)
			continue; /* another mount: not part of this tree */
		k = copy_entry(sdir, ddir, ns.v[i], &st, mnt, depth, bytes, entries);
	}
	names_done(&ns);
	return k;
}

int moat_snap_copy(int src_dir, int dst_dir, uint64_t *bytes)
{
	struct stat st;
	unsigned entries = 0;
	if (fstat(src_dir, &st) < 0)
		return negerrno();
	int k = copy_xattrs(src_dir, dst_dir);
	if (k < 0)
		return k;
	k = copy_dir(src_dir, dst_dir, mnt_of(src_dir, ""), 0, bytes, &entries);
	if (k < 0)
		return k;
	/* the root's own mode and times */
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	if (fchmod(dst_dir, st.st_mode & 07777) < 0 || futimens(dst_dir, ts) < 0)
		return negerrno();
	return 0;
}

static int remove_tree(int dir, const char *name, uint64_t mnt, unsigned depth)
{
	struct stat st;
	if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : negerrno();
	if (mnt && mnt_of(dir, name) != mnt)
		return 1; /* a mount of its own (and so what holds it): kept */
	if (!S_ISDIR(st.st_mode))
		return unlinkat(dir, name, 0) < 0 ? negerrno() : 0;
	if (depth + 1 > MOAT_SNAP_MAX_DEPTH)
		return -ELOOP;
	/* an unwritable directory of the sandbox's user: ours to change */
	if ((st.st_mode & 0700) != 0700)
		(void)!fchmodat(dir, name, st.st_mode | 0700, 0);
	_cleanup_close_ int fd = openat(dir, name, DIR_FLAGS);
	if (fd < 0)
		return negerrno();
	struct names ns = {0};
	int k = names_read(&ns, fd), kept = 0;
	for (size_t i = 0; k >= 0 && i < ns.n; i++)
		if ((k = remove_tree(fd, ns.v[i], mnt, depth + 1)) > 0)
			kept = 1;
	names_done(&ns);
	if (k < 0)
		return k;
	if (kept)
		return 1;
	return unlinkat(dir, name, AT_REMOVEDIR) < 0 ? negerrno() : 0;
}

int moat_snap_clear(int dir)
{
	uint64_t mnt = mnt_of(dir, "");
	struct names ns = {0};
	int k = names_read(&ns, dir);
	for (size_t i = 0; k >= 0 && i < ns.n; i++)
		k = remove_tree(dir, ns.v[i], mnt, 0);
	names_done(&ns);
	return k < 0 ? k : 0;
}

static bool same_data(int a_dir, int b_dir, const char *name)
{
	char x[65536], y[65536];
	_cleanup_close_ int a = openat(a_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	_cleanup_close_ int b = openat(b_dir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (a < 0 || b < 0)
		return false;
	for (;;) {
		ssize_t n = read(a, x, sizeof(x));
		if (n < 0)
			return false;
		ssize_t got = 0;
		while (got < n) {
			ssize_t m = read(b, y + got, (size_t)(n - got));
			if (m <= 0)
				return false;
			got += m;
		}
		if (memcmp(x, y, (size_t)n))
			return false;
		if (n == 0)
			return read(b, y, 1) == 0;
	}
}

static bool same_link(int a_dir, int b_dir, const char *name)
{
	char x[4097], y[4097];
	ssize_t n = readlinkat(a_dir, name, x, sizeof(x));
	ssize_t m = readlinkat(b_dir, name, y, sizeof(y));
	return n >= 0 && n == m && !memcmp(x, y, (size_t)n);
}

/* An overlay upper directory that hides what is under it. */
static bool opaque(int dir)
{
	char v[4];
	ssize_t n = fgetxattr(dir, "user.overlay.opaque", v, sizeof(v));
	return n == 1 && v[0] == 'y';
}

/* Opens name in the layer dir (-1: the layer has nothing there); *ret_nondir
 * when the layer has something else than a directory there. */
static int layer_child(int dir, const char *name, bool *ret_nondir)
{
	struct stat st;
	if (dir < 0 || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return -1;
	if (!S_ISDIR(st.st_mode)) {
		*ret_nondir = true;
		return -1;
	}
	return openat(dir, name, DIR_FLAGS);
}

/* The target of a sync: a snapshot's copy of an upper layer (top) over the
 * lower tree (low), looked up as the overlay would (whiteouts hide, opaque
 * directories stop the merge); either may be -1. */
struct view {
	int top, low;
};

static void view_done(struct view *v)
{
	safe_close(v->top);
	safe_close(v->low);
	v->top = v->low = -1;
}

/* 1 and *st (and, for a directory, *child; *src: the layer holding the
 * entry) if name is in the view, 0 if not. */
static int view_lookup(const struct view *v, const char *name, struct stat *st, int *src,
		       struct view *child)
{
	struct stat ls;
	child->top = child->low = -1;
	if (v->top >= 0 && fstatat(v->top, name, st, AT_SYMLINK_NOFOLLOW) == 0) {
		if (S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0))
			return 0; /* a whiteout */
		*src = v->top;
		if (!S_ISDIR(st->st_mode))
			return 1;
		if ((child->top = openat(v->top, name, DIR_FLAGS)) < 0)
			return negerrno();
		if (!opaque(child->top) && v->low >= 0 &&
		    fstatat(v->low, name, &ls, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(ls.st_mode) &&
		    (child->low = openat(v->low, name, DIR_FLAGS)) < 0) {
			int e = negerrno();
			view_done(child);
			return e;
		}
		return 1;
	}
	if (v->top >= 0 && errno != ENOENT)
		return negerrno();
	if (v->low < 0 || fstatat(v->low, name, st, AT_SYMLINK_NOFOLLOW) < 0)
		return v->low < 0 || errno == ENOENT ? 0 : negerrno();
	*src = v->low;
	if (S_ISDIR(st->st_mode) && (child->low = openat(v->low, name, DIR_FLAGS)) < 0)
		return negerrno();
	return 1;
}

static int view_names(struct names *ns, const struct view *v)
{
	int k = 0;
	if (v->top >= 0)
		k = names_read(ns, v->top);
	if (k >= 0 && v->low >= 0)
		k = names_read(ns, v->low);
	return k;
}

static int copy_view_dir(const struct view *v, int ddir, unsigned depth, unsigned *entries);

/* Creates name in ddir as the view has it (st, src, child from view_lookup). */
static int copy_view_entry(const struct stat *st, int src, const struct view *child, int ddir,
			   const char *name, unsigned depth, unsigned *entries)
{
	uint64_t bytes = 0;
	if (!S_ISDIR(st->st_mode))
		return copy_entry(src, ddir, name, st, 0, depth, &bytes, entries);
	if (++*entries > MOAT_SNAP_MAX_ENTRIES)
		return -E2BIG;
	if (depth + 1 > MOAT_SNAP_MAX_DEPTH)
		return -ELOOP;
	if (mkdirat(ddir, name, 0700) < 0)
		return negerrno();
	_cleanup_close_ int out = openat(ddir, name, DIR_FLAGS);
	_cleanup_close_ int in = openat(src, name, DIR_FLAGS);
	if (out < 0 || in < 0)
		return negerrno();
	int k = copy_xattrs(in, out);
	if (k >= 0)
		k = copy_view_dir(child, out, depth + 1, entries);
	if (k < 0)
		return k;
	if (fchmod(out, st->st_mode & 07777) < 0)
		return negerrno();
	struct timespec ts[2] = {st->st_atim, st->st_mtim};
	return futimens(out, ts) < 0 ? negerrno() : 0;
}

static int copy_view_dir(const struct view *v, int ddir, unsigned depth, unsigned *entries)
{
	struct names ns = {0};
	int k = view_names(&ns, v);
	if (k >= 0)
		names_unique(&ns);
	for (size_t i = 0; k >= 0 && i < ns.n; i++) {
		struct stat st;
		struct view c = {-1, -1};
		int src = -1;
		k = view_lookup(v, ns.v[i], &st, &src, &c);
		if (k > 0)
			k = copy_view_entry(&st, src, &c, ddir, ns.v[i], depth, entries);
		view_done(&c);
	}
	names_done(&ns);
	return k;
}

static int sync_dir(const struct view *t, int l, int u, bool full, uint64_t mnt, unsigned depth,
		    unsigned *entries);

static int sync_entry(const struct view *t, int l, int u, bool full, uint64_t mnt, unsigned depth,
		      unsigned *entries, const char *name)
{
	struct stat ts, ls;
	struct view tc __attribute__((cleanup(view_done))) = {-1, -1};
	int tsrc = -1;
	int has_t = view_lookup(t, name, &ts, &tsrc, &tc);
	if (has_t < 0)
		return has_t;
	bool has_l = fstatat(l, name, &ls, AT_SYMLINK_NOFOLLOW) == 0;
	if (!has_l && errno != ENOENT)
		return negerrno();
	if (has_l && mnt && mnt_of(l, name) != mnt)
		return 0; /* a mount of its own below the tree: not ours */
	if (!has_t)
		return has_l ? MIN(remove_tree(l, name, mnt, depth), 0) : 0;
	if (has_l && (ts.st_mode & S_IFMT) != (ls.st_mode & S_IFMT)) {
		int k = remove_tree(l, name, mnt, depth);
		if (k != 0)
			return MIN(k, 0); /* it holds a mount: left as it is */
		has_l = false;
	}
	if (!has_l)
		return copy_view_entry(&ts, tsrc, &tc, l, name, depth, entries);
	if (++*entries > MOAT_SNAP_MAX_ENTRIES)
		return -E2BIG;
	bool replace = false;
	switch (ts.st_mode & S_IFMT) {
	case S_IFREG:
		replace = ts.st_size != ls.st_size || !same_data(tsrc, l, name);
		break;
	case S_IFLNK:
		replace = !same_link(tsrc, l, name);
		break;
	case S_IFDIR:
		break;
	default:
		return 0; /* FIFOs: the type is all there is */
	}
	if (replace) {
		if (unlinkat(l, name, 0) < 0)
			return negerrno();
		return copy_view_entry(&ts, tsrc, &tc, l, name, depth, entries);
	}
	if (S_ISDIR(ts.st_mode)) {
		bool u_nondir = false;
		_cleanup_close_ int uc = layer_child(u, name, &u_nondir);
		bool f = full || u_nondir || (uc >= 0 && opaque(uc)) ||
			(t->low >= 0 && tc.top >= 0 && opaque(tc.top));
		if (f || uc >= 0 || (t->low >= 0 && tc.top >= 0)) {
			if (depth + 1 > MOAT_SNAP_MAX_DEPTH)
				return -ELOOP;
			if ((ls.st_mode & 0700) != 0700)
				(void)!fchmodat(l, name, ls.st_mode | 0700, 0);
			_cleanup_close_ int lc = openat(l, name, DIR_FLAGS);
			if (lc < 0)
				return negerrno();
			int k = sync_dir(&tc, lc, uc, f, mnt, depth + 1, entries);
			if (k < 0)
				return k;
		}
	}
	if (!S_ISLNK(ts.st_mode) &&
	    ((ts.st_mode & 07777) != (ls.st_mode & 07777) || S_ISDIR(ts.st_mode)) &&
	    fchmodat(l, name, ts.st_mode & 07777, 0) < 0)
		return negerrno();
	if (ts.st_mtim.tv_sec != ls.st_mtim.tv_sec || ts.st_mtim.tv_nsec != ls.st_mtim.tv_nsec ||
	    S_ISDIR(ts.st_mode))
		return set_times(l, name, &ts);
	return 0;
}

/* Below a directory neither upper layer made opaque, t and l can differ only
 * at the names the live upper (u) or the snapshot's (t's top, over a lower
 * tree) holds; else (full) every name of both is compared. */
static int sync_dir(const struct view *t, int l, int u, bool full, uint64_t mnt, unsigned depth,
		    unsigned *entries)
{
	struct names ns = {0};
	int k = 0;
	if (full) {
		if ((k = view_names(&ns, t)) >= 0)
			k = names_read(&ns, l);
	} else {
		if (u >= 0)
			k = names_read(&ns, u);
		if (k >= 0 && t->top >= 0)
			k = names_read(&ns, t->top);
	}
	if (k >= 0)
		names_unique(&ns);
	for (size_t i = 0; k >= 0 && i < ns.n; i++)
		k = sync_entry(t, l, u, full, mnt, depth, entries, ns.v[i]);
	names_done(&ns);
	return k;
}

int moat_snap_sync(int t_top, int t_low, int l_dir, int u_dir, bool full, bool root_attrs)
{
	struct stat ts;
	unsigned entries = 0;
	uint64_t mnt = mnt_of(l_dir, "");
	if (!mnt)
		return -ENOTSUP; /* no statx mount ids: mounts below could not be told apart */
	struct view t __attribute__((cleanup(view_done))) = {-1, -1};
	if ((t_top >= 0 && (t.top = fcntl(t_top, F_DUPFD_CLOEXEC, 3)) < 0) ||
	    (t_low >= 0 && (t.low = fcntl(t_low, F_DUPFD_CLOEXEC, 3)) < 0))
		return negerrno();
	if (t.top >= 0 && opaque(t.top))
		safe_close(t.low), t.low = -1;
	strip_overlay_xattrs = true;
	bool f = full || (u_dir >= 0 && opaque(u_dir)) ||
		(t.low >= 0 && t.top >= 0 && opaque(t.top));
	int k = sync_dir(&t, l_dir, u_dir, f, mnt, 0, &entries);
	strip_overlay_xattrs = false;
	if (k < 0 || !root_attrs)
		return k;
	if (fstat(t.top >= 0 ? t.top : t.low, &ts) < 0)
		return negerrno();
	struct timespec tt[2] = {ts.st_atim, ts.st_mtim};
	if (fchmod(l_dir, ts.st_mode & 07777) < 0 || futimens(l_dir, tt) < 0)
		return negerrno();
	return 0;
}

/* The live upper layer after a sync: a directory the sync re-created through
 * the overlay (it had been removed) is opaque there, though it now holds a
 * copy of every name of the lower directory. Such a directory is made
 * transparent again, its child directories that have a lower counterpart
 * made opaque first (they hid that lower directory already), so that the
 * view does not change and the end-of-run review compares file by file
 * (finding the copies unchanged) instead of seeing a replaced directory. */
static int normalize_dir(int u, int low, unsigned depth)
{
	struct names un = {0}, ln = {0};
	int k = names_read(&un, u);
	if (k >= 0 && low >= 0)
		k = names_read(&ln, low);
	if (k < 0)
		goto out;
	names_unique(&un);
	bool superset = low >= 0;
	for (size_t i = 0; superset && i < ln.n; i++)
		superset = un.n > 0 && /* bsearch of no array: undefined */
			bsearch(&ln.v[i], un.v, un.n, sizeof(*un.v), cmp_str) != NULL;
	bool was_opaque = opaque(u);
	for (size_t i = 0; k >= 0 && i < un.n; i++) {
		struct stat st, ls;
		if (fstatat(u, un.v[i], &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		_cleanup_close_ int uc = openat(u, un.v[i], DIR_FLAGS);
		_cleanup_close_ int lc = -1;
		if (uc < 0) {
			k = negerrno();
			break;
		}
		bool has_low = low >= 0 && fstatat(low, un.v[i], &ls, AT_SYMLINK_NOFOLLOW) == 0 &&
			S_ISDIR(ls.st_mode);
		if (has_low && (lc = openat(low, un.v[i], DIR_FLAGS)) < 0) {
			k = negerrno();
			break;
		}
		/* under an opaque directory the child hid the lower one already */
		if (was_opaque && superset && has_low && !opaque(uc) &&
		    fsetxattr(uc, "user.overlay.opaque", "y", 1, 0) < 0) {
			k = negerrno();
			break;
		}
		if (depth + 1 <= MOAT_SNAP_MAX_DEPTH)
			k = normalize_dir(uc, (was_opaque && !superset) ? -1 : lc, depth + 1);
	}
	if (k >= 0 && was_opaque && superset && fremovexattr(u, "user.overlay.opaque") < 0 &&
	    errno != ENODATA)
		k = negerrno();
out:
	names_done(&un);
	names_done(&ln);
	return k;
}

int moat_snap_normalize(int u_dir, int low_dir)
{
	return normalize_dir(u_dir, low_dir, 0);
}
