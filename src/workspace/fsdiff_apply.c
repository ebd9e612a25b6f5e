/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Safe apply: writes the selected manifest entries into the target tree
 * without following links or crossing mounts. */
#include "workspace/fsdiff_int.h"

#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "workspace/copytree.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

/* how deep a directory the apply removes may be */
#define MAX_TREE_DEPTH 256

/* ---- apply ---------------------------------------------------------------- */

int moat_fsdiff_tmp_name(char buf[32])
{
	uint8_t rnd[8];
	char h[17];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	moat_fsdiff_hex(rnd, sizeof(rnd), h);
	snprintf(buf, 32, ".moat-tmp-%s", h);
	return 0;
}

/* Write the regular file of e from src into parent/tmp, verifying size and
 * SHA-256 against the manifest. */
int moat_fsdiff_write_file_tmp(const struct moat_manifest *m, const struct moat_fs_entry *e,
			       int src, int parent, const char *tmp, bool with_xattrs)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat st;
	uint8_t sha[32];
	uint64_t n = 0;
	int r;

	if (!e->has_sha)
		return -EINVAL;
	if (m->from_store) {
		char hx[65];
		moat_fsdiff_hex(e->sha256, 32, hx);
		in = openat(src, hx, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (in < 0)
			return negerrno();
	} else {
		in = moat_fsdiff_openat2_beneath(src, e->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
		if (in < 0)
			return in;
	}
	if (fstat(in, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size != e->size)
		return -ESTALE;
	out = openat(parent, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return negerrno();
	struct sha256_ctx ctx;
	sha256_init(&ctx);
	r = moat_copytree_copy_data(in, out, e->size + 1, &ctx, &n);
	if (r >= 0)
		sha256_digest(&ctx, SHA256_DIGEST_SIZE, sha);
	if (r >= 0 && (n != e->size || memcmp(sha, e->sha256, 32) != 0))
		r = -EBADMSG;
	/* xattrs before the mode: user.* needs write permission on the inode */
	if (r >= 0 && with_xattrs && (e->xattrs || e->xattr_diff))
		r = moat_fsdiff_xattrs_apply(out, e->xattrs);
	if (r >= 0 && fchmod(out, e->mode & 0777) < 0)
		r = negerrno();
	if (r >= 0 && e->mtime_ns > 0) {
		struct timespec ts[2] = {
			{.tv_nsec = UTIME_OMIT},
			{.tv_sec = e->mtime_ns / 1000000000, .tv_nsec = e->mtime_ns % 1000000000},
		};
		(void)futimens(out, ts);
	}
	return r;
}

/* As root, a new entry takes the owner of what it replaces, else of its
 * directory: files applied into a user's workspace stay the user's. */
static void own_like(int parent, const char *name, const struct stat *replaced)
{
	struct stat st;
	if (geteuid() != 0)
		return;
	if (!replaced && fstat(parent, &st) < 0)
		return;
	if (!replaced)
		replaced = &st;
	(void)!fchownat(parent, name, replaced->st_uid, replaced->st_gid, AT_SYMLINK_NOFOLLOW);
}

static int apply_entry(const struct moat_manifest *m, struct moat_fs_entry *e, int src, int target)
{
	const char *name;
	_cleanup_close_ int parent = moat_fsdiff_open_parent(target, e->path, &name);
	struct stat cur;
	bool exists;
	char tmp[32];
	int r;

	if (parent < 0)
		return parent;
	if (fstatat(parent, name, &cur, AT_SYMLINK_NOFOLLOW) == 0)
		exists = true;
	else if (errno == ENOENT)
		exists = false;
	else
		return negerrno();

	/* Conflicts: the target must still be what the manifest saw. */
	if (e->change != MOAT_FS_CREATED && e->old_type) {
		if (!exists)
			return e->change == MOAT_FS_DELETED ? 0 : -ESTALE;
		if ((cur.st_mode & S_IFMT) != e->old_type)
			return -ESTALE;
		if (e->has_old_sha && S_ISREG(cur.st_mode)) {
			uint8_t sha[32];
			r = moat_fsdiff_sha256_at(parent, name, sha);
			if (r < 0)
				return r;
			if (memcmp(sha, e->old_sha256, 32) != 0)
				return -ESTALE;
		}
	} else if (exists && !(S_ISDIR(e->type) && S_ISDIR(cur.st_mode))) {
		return -ESTALE;
	}

	switch (e->change) {
	case MOAT_FS_DELETED:
		return S_ISDIR(e->old_type) ? moat_rmtree_at(parent, name, MAX_TREE_DEPTH)
					    : (unlinkat(parent, name, 0) < 0 ? negerrno() : 0);
	case MOAT_FS_MODE:
		if (S_ISDIR(e->type))
			return 0; /* directory modes are set in the final pass */
		if (S_ISREG(e->type)) {
			_cleanup_close_ int fd =
				openat(parent, name,
				       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
			struct stat st;
			if (fd < 0 || fstat(fd, &st) < 0)
				return negerrno();
			if (!S_ISREG(st.st_mode))
				return -ESTALE;
			if (fchmod(fd, e->mode & 0777) < 0)
				return negerrno();
			return e->xattr_diff ? moat_fsdiff_xattrs_apply(fd, e->xattrs) : 0;
		}
		return 0;
	case MOAT_FS_XATTR:
		return moat_fsdiff_xattrs_apply_at(parent, name, e);
	case MOAT_FS_CREATED:
	case MOAT_FS_MODIFIED:
		break;
	}

	if (S_ISDIR(e->type)) {
		if (exists && S_ISDIR(cur.st_mode))
			return 0;
		if (exists && unlinkat(parent, name, 0) < 0)
			return negerrno();
		if (mkdirat(parent, name, 0700) < 0)
			return negerrno();
		own_like(parent, name, NULL);
		return moat_fsdiff_xattrs_apply_at(parent, name, e);
	}
	if (!S_ISREG(e->type) && !S_ISLNK(e->type))
		return -EPERM; /* refused kinds never get here */
	r = moat_fsdiff_tmp_name(tmp);
	if (r < 0)
		return r;
	if (S_ISREG(e->type)) {
		r = moat_fsdiff_write_file_tmp(m, e, src, parent, tmp, true);
	} else
		r = symlinkat(e->target, parent, tmp) < 0 ? negerrno() : 0;
	if (r >= 0)
		own_like(parent, tmp, exists ? &cur : NULL);
	if (r >= 0 && exists && S_ISDIR(cur.st_mode))
		r = moat_rmtree_at(parent, name, MAX_TREE_DEPTH);
	if (r >= 0 && renameat(parent, tmp, parent, name) < 0)
		r = negerrno();
	if (r < 0)
		(void)unlinkat(parent, tmp, 0);
	return r;
}

static bool path_under(const char *path, const char *prefix)
{
	size_t n = strlen(prefix);
	while (n > 0 && prefix[n - 1] == '/')
		n--;
	if (n == 0 || (n == 1 && prefix[0] == '.'))
		return true;
	return strncmp(path, prefix, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

static bool selected(const struct moat_fs_entry *e, const char *const *only)
{
	if (!only)
		return true;
	for (size_t i = 0; only[i]; i++) {
		if (path_under(e->path, only[i]))
			return true;
		/* an ancestor directory the selected path needs */
		if (S_ISDIR(e->type) && e->change != MOAT_FS_DELETED &&
		    path_under(only[i], e->path))
			return true;
	}
	return false;
}

static const struct moat_manifest *sort_m;
static int idx_cmp(const void *a, const void *b)
{
	return strcmp(sort_m->entries[*(const size_t *)a].path,
		      sort_m->entries[*(const size_t *)b].path);
}

/* The entry of the nearest ancestor directory of path whose state blocks it. */
static const struct moat_fs_entry *blocked_by(const struct moat_manifest *m, const size_t *idx,
					      const char *path)
{
	_cleanup_free_ char *p = strdup(path);
	if (!p)
		return NULL;
	for (char *s = strrchr(p, '/'); s; s = strrchr(p, '/')) {
		*s = '\0';
		size_t lo = 0, hi = m->n;
		while (lo < hi) {
			size_t mid = (lo + hi) / 2;
			int c = strcmp(m->entries[idx[mid]].path, p);
			if (c == 0) {
				const struct moat_fs_entry *a = &m->entries[idx[mid]];
				if (a->state != MOAT_FS_APPLIED && a->change != MOAT_FS_MODE &&
				    a->change != MOAT_FS_XATTR &&
				    !(a->change == MOAT_FS_MODIFIED && a->old_type == S_IFDIR))
					return a;
				break;
			}
			if (c < 0)
				lo = mid + 1;
			else
				hi = mid;
		}
	}
	return NULL;
}

int moat_fsdiff_apply(struct moat_manifest *m, int src_dirfd, int target_dirfd,
		      enum moat_fsapply_mode mode, const char *const *only_paths,
		      struct moat_fsapply_report *ret)
{
	struct moat_fsapply_report rep = {0};
	_cleanup_free_ size_t *idx = NULL;
	bool any_failed = false;

	if (!m)
		return -EINVAL;
	idx = calloc(m->n ? m->n : 1, sizeof(size_t));
	if (!idx)
		return -ENOMEM;
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	sort_m = m;
	qsort(idx, m->n, sizeof(size_t), idx_cmp);

	for (size_t i = 0; i < m->n; i++) {
		struct moat_fs_entry *e = &m->entries[i];
		const struct moat_fs_entry *b;
		int r;

		if (!selected(e, only_paths) || e->state == MOAT_FS_APPLIED ||
		    e->state == MOAT_FS_DROPPED) {
			rep.skipped++;
			continue;
		}
		if (e->refused) {
			e->state = MOAT_FS_REFUSED;
			continue;
		}
		if (e->flagged && !e->accepted && mode == MOAT_FSAPPLY_SAFE) {
			e->state = MOAT_FS_HELD;
			continue;
		}
		b = blocked_by(m, idx, e->path);
		if (b) {
			if (b->state == MOAT_FS_HELD) {
				e->state = MOAT_FS_HELD;
			} else {
				e->state = MOAT_FS_FAILED;
				e->err = ENOENT;
			}
			continue;
		}
		/* changed on the host during the run: never overwritten here */
		r = e->host_changed ? -ESTALE : apply_entry(m, e, src_dirfd, target_dirfd);
		if (r == -ESTALE || r == -EEXIST) {
			e->state = MOAT_FS_CONFLICT;
		} else if (r < 0) {
			e->state = MOAT_FS_FAILED;
			e->err = -r;
		} else {
			e->state = MOAT_FS_APPLIED;
			e->err = 0;
		}
	}
	/* directory permissions last, deepest first, so read-only dirs do not block children */
	for (size_t i = m->n; i-- > 0;) {
		struct moat_fs_entry *e = &m->entries[idx[i]];
		if (e->state != MOAT_FS_APPLIED || !S_ISDIR(e->type) ||
		    e->change == MOAT_FS_DELETED || !selected(e, only_paths))
			continue;
		_cleanup_close_ int fd = moat_fsdiff_openat2_beneath(target_dirfd, e->path,
								     O_RDONLY | O_DIRECTORY, 0);
		if (fd < 0 || fchmod(fd, e->mode & 0777) < 0) {
			e->state = MOAT_FS_FAILED;
			e->err = fd < 0 ? -fd : errno;
		}
	}
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		if (!selected(e, only_paths))
			continue;
		switch (e->state) {
		case MOAT_FS_APPLIED:
			rep.applied++;
			break;
		case MOAT_FS_HELD:
			rep.held++;
			break;
		case MOAT_FS_REFUSED:
			rep.refused++;
			break;
		case MOAT_FS_FAILED:
			rep.failed++;
			any_failed = true;
			break;
		case MOAT_FS_CONFLICT:
			rep.conflicts++;
			any_failed = true;
			break;
		case MOAT_FS_PENDING:
		case MOAT_FS_DROPPED:
			break;
		}
	}
	if (ret)
		*ret = rep;
	return any_failed ? -EIO : 0;
}
