/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Public entry points for `moat log`, `moat diff` and `moat apply`. */
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>

#include "policy/policy.h"

#include "audit/audit.h"
#include "policy/errors.h"
#include "workspace/fsdiff.h"
#include "sandbox/paths.h"
#include "workspace/review_diff.h"
#include "sandbox/sandbox.h"
#include "moat/moat.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

/* how deep a run directory moat run forget removes may be */
#define FORGET_MAX_DEPTH 32

struct moat_log {
	struct moat_audit_reader *r;
	struct moat_audit_filter f;
};

/* The directory of run `id`, opened; fills ret_err on failure. */
static int open_run_dir(const char *id, struct moat_error *ret_err)
{
	_cleanup_free_ char *runs = NULL, *dir = NULL;
	int k, fd;

	if (!moat_run_id_valid(id))
		return moat_error_set(ret_err, "usage", EINVAL, "not a run id: %s", id);
	k = moat_runs_dir(&runs);
	if (k < 0)
		return moat_error_set(ret_err, "usage", -k,
				      "no runs directory (set XDG_STATE_HOME or HOME)");
	if (asprintf(&dir, "%s/%s", runs, id) < 0)
		return -ENOMEM;
	/* never through a symlink a sandbox could have planted (paths.h) */
	k = moat_path_open(dir, MOAT_PATH_DIR, 0, NULL);
	fd = k < 0 ? -1 : openat(k, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (k >= 0 && fd < 0)
		k = negerrno();
	safe_close(k);
	if (fd < 0)
		return moat_error_set(ret_err, "usage", -k, "no run %s (%s): %s", id, dir,
				      strerror(-k));
	return fd;
}

/* A run id names <runs>/<id>/events.jsonl (or the file its log-path names);
 * anything else is a path. */
static int resolve_log_path(const char *what, char **ret, struct moat_error *ret_err)
{
	struct stat st;
	char buf[4096];
	char *runs = NULL;
	int k, dfd, lp;
	ssize_t n;

	if (strchr(what, '/') || stat(what, &st) == 0 || !moat_run_id_valid(what)) {
		*ret = strdup(what);
		return *ret ? 0 : -ENOMEM;
	}
	dfd = open_run_dir(what, ret_err);
	if (dfd < 0)
		return dfd;
	lp = openat(dfd, "log-path", O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	n = lp >= 0 ? read(lp, buf, sizeof(buf) - 1) : -1;
	safe_close(lp);
	safe_close(dfd);
	if (n > 0) {
		buf[n] = '\0';
		*ret = strdup(buf);
		return *ret ? 0 : -ENOMEM;
	}
	k = moat_runs_dir(&runs);
	if (k < 0)
		return k;
	k = asprintf(ret, "%s/%s/events.jsonl", runs, what);
	free(runs);
	return k < 0 ? -ENOMEM : 0;
}

int moat_log_open(const char *run_or_file, const char *types_csv, bool denied_only,
		  struct moat_log **ret, struct moat_error *ret_err)
{
	struct moat_audit_reader *rd = NULL;
	struct moat_log *l;
	unsigned types = 0;
	char *path = NULL;
	int k;

	if (!run_or_file || !*run_or_file)
		return moat_error_set(ret_err, "usage", EINVAL, "no run id or log file given");
	if (types_csv && moat_audit_parse_types(types_csv, &types) < 0)
		return moat_error_set(
			ret_err, "usage", EINVAL,
			"bad --type list '%s' (start,exec,net,dns,syscall,limit,file,alert,exit)",
			types_csv);
	k = resolve_log_path(run_or_file, &path, ret_err);
	if (k < 0)
		return k;
	k = moat_audit_reader_open(path, &rd);
	if (k < 0)
		k = moat_error_set(ret_err, "usage", -k, "cannot read the log %s: %s", path,
				   strerror(-k));
	free(path);
	if (k < 0)
		return k;
	l = calloc(1, sizeof(*l));
	if (!l) {
		moat_audit_reader_free(rd);
		return -ENOMEM;
	}
	l->r = rd;
	l->f.types = types;
	l->f.denied_only = denied_only;
	*ret = l;
	return 0;
}

int moat_log_next(struct moat_log *l, char **ret_line, char **ret_text)
{
	return moat_audit_reader_next(l->r, &l->f, ret_line, ret_text);
}

uint64_t moat_log_bad_lines(const struct moat_log *l)
{
	return l ? moat_audit_reader_bad_lines(l->r) : 0;
}

struct moat_log *moat_log_free(struct moat_log *l)
{
	if (l) {
		moat_audit_reader_free(l->r);
		free(l);
	}
	return NULL;
}

static int load_run(const char *run_id, int *ret_dirfd, struct moat_manifest **ret,
		    struct moat_error *ret_err)
{
	_cleanup_close_ int dfd = open_run_dir(run_id, ret_err);
	int k;
	if (dfd < 0)
		return dfd;
	k = moat_fsdiff_load(dfd, ret);
	if (k == -ENOENT)
		return moat_error_set(
			ret_err, "review", ENOENT,
			"run %s has no workspace change manifest (no --workspace DIR:overlay)",
			run_id);
	if (k < 0)
		return moat_error_set(ret_err, "review", -k,
				      "cannot load the manifest of run %s: %s", run_id,
				      strerror(-k));
	*ret_dirfd = TAKE_FD(dfd);
	return 0;
}

int moat_review_diff(const char *run_id, bool json, char **ret_text, struct moat_error *ret_err)
{
	struct moat_manifest *m = NULL;
	int dfd = -1, k;

	k = load_run(run_id, &dfd, &m, ret_err);
	if (k < 0)
		return k;
	k = json ? moat_manifest_to_json(m, ret_text) : moat_manifest_to_text(m, ret_text);
	if (k >= 0 && !json) {
		/* then the content of what the run still holds, against the workspace */
		_cleanup_free_ char *content = NULL;
		_cleanup_close_ int ws =
			m->workspace ? moat_path_open(m->workspace, MOAT_PATH_DIR, 0, NULL) : -1;
		if (moat_review_content_diff(dfd, ws, m, &content) >= 0 && content && *content) {
			char *both = NULL;
			if (asprintf(&both, "%s\n%s", *ret_text, content) >= 0) {
				free(*ret_text);
				*ret_text = both;
			}
		}
	}
	safe_close(dfd);
	moat_manifest_free(m);
	return k;
}

int moat_review_apply(const char *run_id, const char *const *paths, char **ret_text,
		      struct moat_error *ret_err)
{
	struct moat_manifest *m = NULL;
	struct moat_fsapply_report rep;
	int dfd = -1, k, ka;

	k = load_run(run_id, &dfd, &m, ret_err);
	if (k < 0)
		return k;
	if (!m->workspace) {
		safe_close(dfd);
		moat_manifest_free(m);
		return moat_error_set(ret_err, "review", EINVAL, "the manifest names no workspace");
	}
	_cleanup_close_ int target = moat_path_open(m->workspace, MOAT_PATH_DIR, 0, NULL);
	_cleanup_close_ int store = moat_fsdiff_open_store(dfd);
	if (target < 0) {
		k = moat_error_set(ret_err, "review", -target, "cannot open the workspace %s: %s%s",
				   m->workspace, strerror(-target), moat_open_source_hint(-target));
		goto out;
	}
	for (size_t i = 0; paths && paths[i]; i++) {
		bool found = false;
		for (size_t j = 0; j < m->n && !found; j++) {
			size_t n = strlen(paths[i]);
			while (n > 1 && paths[i][n - 1] == '/')
				n--;
			found = strncmp(m->entries[j].path, paths[i], n) == 0 &&
				(m->entries[j].path[n] == '\0' || m->entries[j].path[n] == '/');
		}
		if (!found) {
			k = moat_error_set(ret_err, "usage", ENOENT, "no change at '%s' in run %s",
					   paths[i], run_id);
			goto out;
		}
	}
	unsigned refused = 0;
	const struct moat_fs_entry *first_refused = NULL;
	{
		unsigned dropped = 0;
		for (size_t j = 0; j < m->n; j++) {
			const struct moat_fs_entry *e = &m->entries[j];
			bool sel = !paths;
			for (size_t i = 0; paths && paths[i] && !sel; i++) {
				size_t n = strlen(paths[i]);
				while (n > 1 && paths[i][n - 1] == '/')
					n--;
				sel = strncmp(e->path, paths[i], n) == 0 &&
					(e->path[n] == '\0' || e->path[n] == '/');
			}
			dropped += sel && e->state == MOAT_FS_DROPPED;
			/* a path named on the command line that moat never applies */
			if (paths && sel && e->refused) {
				refused++;
				first_refused = first_refused ?: e;
			}
		}
		if (dropped) {
			k = moat_error_set(
				ret_err, "review", EFBIG,
				"%u change(s) of run %s were over the held-data cap at the "
				"end of the run and were not kept: nothing applied",
				dropped, run_id);
			goto out;
		}
	}
	ka = moat_fsdiff_apply(m, store, target, MOAT_FSAPPLY_ALL, paths, &rep);
	k = moat_fsdiff_save(m, -1, dfd, 0);
	if (k < 0)
		moat_error_set(ret_err, "review", -k, "cannot update the manifest of run %s",
			       run_id);
	else if (ka < 0)
		k = moat_error_set(
			ret_err, "review", EIO,
			"%u change(s) failed and %u conflicted (the workspace changed since the run)",
			rep.failed, rep.conflicts);
	else if (refused)
		k = moat_error_set(ret_err, "review", EPERM,
				   "%u of the changes named are refused and were not applied "
				   "(%s: %s); moat never applies them",
				   refused, first_refused->path, first_refused->refused);
	if (ret_text && moat_manifest_to_text(m, ret_text) < 0)
		*ret_text = NULL;
out:
	safe_close(dfd);
	moat_manifest_free(m);
	return k;
}

#define ACCEPT_MAX_PATHS 100000

int moat_review_apply_accept(const char *run_id, const char *const *accept, char **ret_text,
			     struct moat_error *ret_err)
{
	struct moat_manifest *m = NULL;
	char **sel = NULL;
	size_t n = 0;
	int dfd = -1, k;

	for (size_t i = 0; accept && accept[i]; i++) {
		char why[1400];
		k = moat_review_item_check(accept[i], true, true, why, sizeof(why));
		if (k < 0)
			return moat_error_set(ret_err, "usage", -k, "--accept %s: %s", accept[i],
					      why);
	}
	if (!accept || !accept[0])
		return moat_error_set(ret_err, "usage", EINVAL, "--accept needs a class or glob");
	k = load_run(run_id, &dfd, &m, ret_err);
	if (k < 0)
		return k;
	safe_close(dfd);
	sel = calloc(m->n + 1, sizeof(char *));
	if (!sel) {
		moat_manifest_free(m);
		return moat_error_set(ret_err, "review", ENOMEM, "out of memory");
	}
	for (size_t j = 0; j < m->n && n < ACCEPT_MAX_PATHS; j++) {
		struct moat_fs_entry *e = &m->entries[j];
		bool hit = false;
		if (e->state != MOAT_FS_HELD && e->state != MOAT_FS_PENDING &&
		    e->state != MOAT_FS_CONFLICT)
			continue;
		for (size_t i = 0; accept[i] && !hit; i++)
			hit = moat_review_item_selects(accept[i], e);
		if (hit)
			sel[n++] = TAKE_PTR(e->path);
	}
	moat_manifest_free(m);
	if (!n) {
		free(sel);
		return moat_error_set(ret_err, "usage", ENOENT,
				      "no held change of run %s matches --accept %s%s", run_id,
				      accept[0], accept[1] ? " ..." : "");
	}
	k = moat_review_apply(run_id, (const char *const *)sel, ret_text, ret_err);
	for (size_t i = 0; i < n; i++)
		free(sel[i]);
	free(sel);
	return k;
}

int moat_run_forget(const char *run_id, struct moat_error *ret_err)
{
	_cleanup_free_ char *runs = NULL;
	int k;

	if (!moat_run_id_valid(run_id))
		return moat_error_set(ret_err, "usage", EINVAL, "not a run id: %s", run_id);
	k = moat_runs_dir(&runs);
	if (k < 0)
		return moat_error_set(ret_err, "usage", -k, "no runs directory");
	_cleanup_close_ int dfd = open(runs, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_set(ret_err, "usage", errno, "cannot open %s: %s", runs,
				      strerror(errno));
	k = moat_rmtree_at(dfd, run_id, FORGET_MAX_DEPTH);
	if (k < 0)
		return moat_error_set(ret_err, "usage", -k, "cannot remove run %s: %s", run_id,
				      strerror(-k));
	return 0;
}

/* ---- the runs directory: usage, retention and the total cap ----------------- */

#define RUNS_MAX_DIRS 100000
#define RUNS_WALK_DEPTH 4

/* Bytes (allocated blocks) under dfd/name, bounded depth, no symlinks followed. */
static uint64_t tree_bytes(int dfd, const char *name, unsigned depth, uint64_t *ret_mtime)
{
	struct stat st;
	uint64_t sum = 0;

	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (ret_mtime && (uint64_t)st.st_mtime > *ret_mtime)
		*ret_mtime = (uint64_t)st.st_mtime;
	sum = (uint64_t)st.st_blocks * 512;
	if (!S_ISDIR(st.st_mode) || depth > RUNS_WALK_DEPTH)
		return sum;
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		safe_close(fd);
		return sum;
	}
	struct dirent *e;
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			sum += tree_bytes(dirfd(d), e->d_name, depth + 1,
					  depth == 0 ? ret_mtime : NULL);
	closedir(d);
	return sum;
}

int moat_runs_usage(const char *runs_dir, uint64_t *ret)
{
	_cleanup_close_ int fd = open(runs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	*ret = 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : negerrno();
	*ret = tree_bytes(fd, ".", 0, NULL);
	return 0;
}

struct run_dir {
	char id[65];
	uint64_t mtime, bytes;
	bool live;
};

static int run_age_cmp(const void *a, const void *b)
{
	const struct run_dir *x = a, *y = b;
	return x->mtime < y->mtime ? -1 : x->mtime > y->mtime ? 1 : strcmp(x->id, y->id);
}

int moat_runs_gc(const char *runs_dir, unsigned long long retention_ms,
		 unsigned long long max_total, const char *const *live_ids,
		 struct moat_runs_gc_result *ret, struct moat_error *ret_err)
{
	_cleanup_free_ char *def = NULL;
	_cleanup_free_ struct run_dir *v = NULL;
	size_t n = 0, cap = 0;
	uint64_t now = (uint64_t)time(NULL), total = 0;
	int k, first = 0;

	memset(ret, 0, sizeof(*ret));
	if (!runs_dir) {
		k = moat_runs_dir(&def);
		if (k < 0)
			return moat_error_set(ret_err, "gc", -k, "no runs directory");
		runs_dir = def;
	}
	_cleanup_close_ int dfd = open(runs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0) {
		if (errno == ENOENT)
			return 0;
		return moat_error_set(ret_err, "gc", errno, "cannot open %s: %s", runs_dir,
				      strerror(errno));
	}
	int fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
	if (!d) {
		safe_close(fd2);
		return -ENOMEM;
	}
	struct dirent *e;
	while ((e = readdir(d)) && n < RUNS_MAX_DIRS) {
		struct stat st;
		if (!moat_run_id_valid(e->d_name) || strlen(e->d_name) >= sizeof(v->id))
			continue;
		if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct run_dir *nv = reallocarray(v, cap, sizeof(*v));
			if (!nv) {
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		struct run_dir *r = &v[n++];
		memset(r, 0, sizeof(*r));
		memcpy(r->id, e->d_name, strlen(e->d_name) + 1); /* length checked above */
		r->bytes = tree_bytes(dfd, e->d_name, 0, &r->mtime);
		for (size_t i = 0; live_ids && live_ids[i]; i++)
			if (strcmp(live_ids[i], r->id) == 0)
				r->live = true;
		total += r->bytes;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), run_age_cmp);
	ret->total_before = total;
	/* oldest first: past the retention age, then until the total fits */
	for (size_t i = 0; i < n; i++) {
		struct run_dir *r = &v[i];
		bool old = retention_ms && r->mtime + retention_ms / 1000 < now;
		bool over = max_total && total > max_total;
		if (r->live || !(old || over))
			continue;
		k = moat_rmtree_at(dfd, r->id, FORGET_MAX_DEPTH);
		if (k < 0) {
			ret->failed++;
			first = first ?: k;
			continue;
		}
		if (old)
			ret->removed_age++;
		else
			ret->removed_cap++;
		ret->bytes_freed += r->bytes;
		total -= r->bytes;
	}
	ret->total_after = total;
	if (first < 0)
		return moat_error_set(ret_err, "gc", -first,
				      "%u run(s) under %s could not be removed: %s", ret->failed,
				      runs_dir, strerror(-first));
	return 0;
}

unsigned long long moat_policy_retention_ms(const struct moat_policy *p)
{
	return p->retention_ms;
}

unsigned long long moat_policy_runs_max(const struct moat_policy *p)
{
	return p->runs_max;
}
