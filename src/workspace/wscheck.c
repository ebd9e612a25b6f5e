/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Start checks for `--workspace DIR:rw` and `DIR:ro` (docs/FLAGGED.md).
 *
 * Without the overlay there is no review: what the sandbox writes is on the
 * host the moment it is written. So before such a run moat looks for what
 * would turn those writes into code the host runs, or into writes elsewhere:
 *   - a git repository, found by structure (a `.git` entry, or a directory
 *     that is a git directory itself: HEAD plus objects/ and refs/, or a
 *     commondir/gitdir file) anywhere in DIR within a bounded walk, and
 *     above DIR (git's discovery walks upward from the working directory,
 *     so a repository above DIR sees DIR as its worktree): rw refuses
 *     unless --allow-rw-git;
 *   - files with more than one link whose other names are not all inside
 *     DIR: writing through one writes the other name (outside DIR), reading
 *     through one exposes it: rw refuses unless --allow-hardlinks, ro warns;
 *     the count goes into the start event.
 * The walk never follows symlinks and stops at its bounds; a walk that
 * could not finish counts as "cannot tell", which rw refuses like a find.
 */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "policy/errors.h"
#include "policy/policy.h"
#include "workspace/wscheck.h"
#include "shared/macro.h"

#define WS_MAX_ENTRIES 200000
#define WS_MAX_DEPTH 64

static bool exists_at(int dfd, const char *name, mode_t *ret_type)
{
	struct stat st;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return false;
	if (ret_type)
		*ret_type = st.st_mode & S_IFMT;
	return true;
}

/* Is the directory dfd a git directory by structure (git's is_git_directory,
 * widened), or does it hold a `.git` of any type? */
static const char *repo_here(int dfd)
{
	mode_t t = 0, t2 = 0;
	if (exists_at(dfd, ".git", NULL))
		return ".git";
	if (exists_at(dfd, "HEAD", NULL) &&
	    ((exists_at(dfd, "objects", &t) && S_ISDIR(t) && exists_at(dfd, "refs", &t2) &&
	      S_ISDIR(t2)) ||
	     exists_at(dfd, "commondir", NULL) || exists_at(dfd, "gitdir", NULL)))
		return "";
	return NULL;
}

/* Inodes with more than one link seen in the walk: a file all of whose
 * names are inside DIR exposes nothing (cargo's target/, git's objects). */
struct ino_seen {
	dev_t dev;
	ino_t ino;
	nlink_t nlink, seen;
	bool used;
};

struct ws_walk {
	struct moat_workspace_check *res;
	struct ino_seen *tab;
	size_t cap, n;
	bool tab_full;
	dev_t ex_dev; /* the inode of res->hardlink_example */
	ino_t ex_ino;
	char path[4096];
};

#define WS_MAX_LINKED 65536

static void note_inode(struct ws_walk *w, const struct stat *st)
{
	if (!w->tab && !w->tab_full) {
		w->cap = 2 * WS_MAX_LINKED;
		w->tab = calloc(w->cap, sizeof(*w->tab));
		if (!w->tab)
			w->tab_full = true;
	}
	if (w->tab_full)
		return;
	size_t h = ((size_t)st->st_ino * 0x9e3779b97f4a7c15ull ^ (size_t)st->st_dev) & (w->cap - 1);
	while (w->tab[h].used && !(w->tab[h].dev == st->st_dev && w->tab[h].ino == st->st_ino))
		h = (h + 1) & (w->cap - 1);
	if (!w->tab[h].used) {
		if (w->n >= WS_MAX_LINKED) {
			w->tab_full = true; /* cannot tell: count every link as outside */
			return;
		}
		w->tab[h] = (struct ino_seen){
			.dev = st->st_dev, .ino = st->st_ino, .nlink = st->st_nlink, .used = true};
		w->n++;
	}
	w->tab[h].seen++;
}

static void note_path(char *dst, size_t len, const char *base, const char *name)
{
	snprintf(dst, len, "%s%s%s", base, *name && base[strlen(base) - 1] != '/' ? "/" : "", name);
}

static int walk(struct ws_walk *w, int dfd, unsigned depth)
{
	struct moat_workspace_check *res = w->res;
	const char *r = repo_here(dfd);
	if (r && !res->repo[0])
		note_path(res->repo, sizeof(res->repo), w->path, r);
	if (depth >= WS_MAX_DEPTH) {
		res->truncated = true;
		return 0;
	}
	int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	struct dirent *e;
	size_t base = strlen(w->path);
	int ret = 0;
	while (ret >= 0 && (e = readdir(d))) {
		struct stat st;
		if (streq(e->d_name, ".") || streq(e->d_name, ".."))
			continue;
		if (++res->entries > WS_MAX_ENTRIES) {
			res->truncated = true;
			break;
		}
		if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* gone meanwhile */
		if (!S_ISDIR(st.st_mode)) {
			if (st.st_nlink > 1) {
				res->hardlinks++; /* corrected below for all-inside inodes */
				note_inode(w, &st);
				if (!res->hardlink_example[0]) {
					w->ex_dev = st.st_dev;
					w->ex_ino = st.st_ino;
				}
				if (!res->hardlink_example[0])
					note_path(res->hardlink_example,
						  sizeof(res->hardlink_example), w->path,
						  e->d_name);
			}
			continue;
		}
		if (base + 1 + strlen(e->d_name) >= sizeof(w->path)) {
			res->truncated = true;
			continue;
		}
		int sub = openat(dirfd(d), e->d_name,
				 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		if (sub < 0) {
			res->truncated = true; /* unreadable: cannot tell what is inside */
			continue;
		}
		snprintf(w->path + base, sizeof(w->path) - base, "/%s", e->d_name);
		ret = walk(w, sub, depth + 1);
		w->path[base] = '\0';
		close(sub);
	}
	closedir(d);
	return ret;
}

/* The check of one directory (or file: its links, and the repositories
 * above it) given by path. */
static int check_path(const char *path, const char *what, struct moat_workspace_check *ret,
		      struct moat_error *ret_err)
{
	struct stat st;
	memset(ret, 0, sizeof(*ret));
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0 || fstat(fd, &st) < 0)
		return moat_error_set(ret_err, "workspace", errno, "cannot open %s %s: %s", what,
				      path, strerror(errno));
	if (!S_ISDIR(st.st_mode)) {
		/* a single file: its own links, and the repositories above its directory */
		if (st.st_nlink > 1) {
			ret->hardlinks = 1;
			snprintf(ret->hardlink_example, sizeof(ret->hardlink_example), "%s", path);
		}
		_cleanup_free_ char *dir = strdup(path);
		char *sl = dir ? strrchr(dir, '/') : NULL;
		if (!dir)
			return -ENOMEM;
		if (sl && sl != dir)
			*sl = '\0';
		else
			snprintf(dir, strlen(dir) + 1, "%s", sl ? "/" : ".");
		struct moat_workspace_check up;
		int k = check_path(dir, what, &up, ret_err);
		if (k < 0)
			return k;
		/* only what lies above, not the directory's other files */
		size_t dl = strlen(dir);
		bool here = up.repo[0] && strncmp(up.repo, dir, dl) == 0 &&
			(up.repo[dl] == '\0' ||
			 (up.repo[dl] == '/' && !strchr(up.repo + dl + 1, '/')));
		if (up.repo_above || here) {
			snprintf(ret->repo, sizeof(ret->repo), "%s", up.repo);
			ret->repo_above = true;
		}
		return 0;
	}
	struct ws_walk *w = calloc(1, sizeof(*w));
	if (!w)
		return -ENOMEM;
	w->res = ret;
	snprintf(w->path, sizeof(w->path), "%s", path);
	int k = walk(w, fd, 0);
	/* a file whose every name was seen inside DIR writes through to nothing
	 * outside; unless the table overflowed (then every link counts) */
	if (k >= 0 && !w->tab_full && w->tab) {
		ret->hardlinks = 0;
		for (size_t i = 0; i < w->cap; i++)
			if (w->tab[i].used && w->tab[i].seen < w->tab[i].nlink)
				ret->hardlinks += w->tab[i].seen;
			else if (w->tab[i].used && w->tab[i].dev == w->ex_dev &&
				 w->tab[i].ino == w->ex_ino)
				ret->hardlink_example[0] = '\0'; /* all its names are inside */
	}
	free(w->tab);
	free(w);
	if (k < 0)
		return moat_error_set(ret_err, "workspace", -k, "cannot check %s %s: %s", what,
				      path, strerror(-k));
	/* above DIR: every parent, as git's discovery would go */
	_cleanup_close_ int cur = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	char up[4096];
	snprintf(up, sizeof(up), "%s", path);
	for (unsigned i = 0; cur >= 0 && i < 256 && !ret->repo[0]; i++) {
		struct stat a, b;
		int parent = openat(cur, "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (parent < 0)
			break;
		if (fstat(parent, &a) < 0 || fstat(cur, &b) < 0 ||
		    (a.st_dev == b.st_dev && a.st_ino == b.st_ino)) {
			close(parent); /* at / */
			break;
		}
		close(cur);
		cur = parent;
		char *s = strrchr(up, '/');
		if (s && s != up)
			*s = '\0';
		else
			snprintf(up, sizeof(up), "/");
		const char *r = repo_here(cur);
		if (r) {
			note_path(ret->repo, sizeof(ret->repo), up, r);
			ret->repo_above = true;
		}
	}
	return 0;
}

int moat_workspace_check(const struct moat_policy *p, struct moat_workspace_check *ret,
			 struct moat_error *ret_err)
{
	memset(ret, 0, sizeof(*ret));
	if (!p->workspace || p->workspace_mode == MOAT_WS_OVERLAY)
		return 0;
	return check_path(p->workspace, "--workspace", ret, ret_err);
}

const char *moat_workspace_note(const struct moat_policy *p)
{
	if (!p->workspace)
		return NULL;
	if (p->workspace_mode == MOAT_WS_RW)
		return "--workspace rw: writes go straight to the host; review does not apply "
		       "(no manifest, no --apply, no moat diff): use the default overlay mode to "
		       "review changes";
	return NULL;
}

static int enforce_one(const struct moat_policy *p, const char *what, const char *path,
		       const struct moat_workspace_check *c, struct moat_error *ret_err);

int moat_wscheck_mounts(const struct moat_policy *p, unsigned long long *ret_hardlinks,
			struct moat_error *ret_err)
{
	*ret_hardlinks = 0;
	for (unsigned i = 0; i < p->n_mounts; i++) {
		const struct moat_mount *m = &p->mounts[i];
		struct moat_workspace_check c;
		if (m->kind != MOAT_MOUNT_RW || !m->src)
			continue;
		int k = check_path(m->src, "--rw", &c, ret_err);
		if (k >= 0)
			k = enforce_one(p, "--rw", m->src, &c, ret_err);
		*ret_hardlinks += c.hardlinks;
		if (k < 0)
			return k;
	}
	return 0;
}

int moat_wscheck_enforce(const struct moat_policy *p, const struct moat_workspace_check *c,
			 struct moat_error *ret_err)
{
	if (!p->workspace || p->workspace_mode != MOAT_WS_RW)
		return 0;
	return enforce_one(p, "--workspace", p->workspace, c, ret_err);
}

static int enforce_one(const struct moat_policy *p, const char *what, const char *path,
		       const struct moat_workspace_check *c, struct moat_error *ret_err)
{
	if (c->repo[0] && !p->allow_rw_git)
		return moat_error_set(
			ret_err, "workspace", EPERM,
			"%s %s (read-write): %s is a git repository%s (found by structure); without "
			"review a planted hook or config runs at the next git command: use the "
			"overlay mode (the default) or pass --allow-rw-git",
			what, path, c->repo, c->repo_above ? " above it" : "");
	if (c->hardlinks && !p->allow_hardlinks)
		return moat_error_set(
			ret_err, "workspace", EPERM,
			"%s %s (read-write): %llu file(s) have other names outside it (hard links)%s%s: "
			"writes would reach them: use the overlay mode (the default) or pass "
			"--allow-hardlinks",
			what, path, (unsigned long long)c->hardlinks,
			c->hardlink_example[0] ? ", e.g. " : "", c->hardlink_example);
	if (c->truncated && !(p->allow_rw_git && p->allow_hardlinks))
		return moat_error_set(
			ret_err, "workspace", E2BIG,
			"%s %s (read-write): it could not be checked completely (over %u "
			"entries, %u levels, or unreadable directories) for repositories and hard "
			"links: use the overlay mode or pass --allow-rw-git --allow-hardlinks",
			what, path, WS_MAX_ENTRIES, WS_MAX_DEPTH);
	return 0;
}
