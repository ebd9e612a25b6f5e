/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state directory of live runs, and `moat gc`. See state.h. */
#include "supervisor/state.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pwd.h>
#include <stdarg.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/paths.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

#define GC_STALE_DOT_S 60 /* half-built or half-removed entries older than this are garbage */
/* Directories of ended entries kept for the next runs (.spare-0 ...): removing
 * a directory costs a synchronous block discard on some file systems (ext4
 * mounted with discard: 2-3 ms, the longest single wait of a whole run on the
 * benchmark machine), renaming one costs microseconds. Empty, at most this
 * many, never garbage-collected. */
#define STATE_SPARES 4
#define RM_MAX_DEPTH 64

struct moat_state_entry {
	int dirfd; /* the state directory */
	int lockfd; /* holds the OFD lock */
	char id[MOAT_STATE_ID_MAX + 1];
};

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static bool id_valid(const char *id)
{
	size_t n = strlen(id);
	if (n == 0 || n > MOAT_STATE_ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

int moat_state_default_dir(char *buf, size_t len)
{
	int n;
	if (moat_host_root())
		n = snprintf(buf, len, "/run/moat/live");
	else {
		const char *x = getenv("XDG_STATE_HOME");
		const char *home = getenv("HOME");
		if (x && x[0] == '/')
			n = snprintf(buf, len, "%s/moat/live", x);
		else {
			if (!home || home[0] != '/') {
				struct passwd *pw = getpwuid(geteuid());
				home = pw && pw->pw_dir && pw->pw_dir[0] == '/' ? pw->pw_dir : NULL;
			}
			if (!home)
				return -ENOENT;
			n = snprintf(buf, len, "%s/.local/state/moat/live", home);
		}
	}
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

int moat_state_new_id(char *buf, size_t len)
{
	uint8_t b[16];
	if (len < 33)
		return -ENOBUFS;
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return negerrno();
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(buf + 2 * i, 3, "%02x", b[i]);
	return 0;
}

/* The state directory as a readable directory fd, created (0700) if mkdirs,
 * never through a symlink a sandbox could have planted (paths.h). */
static int open_state_dir(const char *path, bool mkdirs)
{
	int fd = moat_path_open(path, MOAT_PATH_DIR | (mkdirs ? MOAT_PATH_MKDIR : 0), 0700, NULL);
	if (fd < 0)
		return fd;
	int dfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	return dfd < 0 ? negerrno() : dfd;
}

/* ---- run.json -------------------------------------------------------------------- */

int moat_state_record_to_json(const struct moat_state_record *rec, char **ret_json)
{
	json_t *cg = json_array(), *tmp = json_array();
	if (!cg || !tmp) {
		json_decref(cg);
		json_decref(tmp);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < rec->n_cgroups && i < MOAT_CGROUP_MAX_HIER; i++)
		json_array_append_new(cg, json_string(rec->cgroups[i]));
	for (unsigned i = 0; i < rec->n_tmpdirs && i < MOAT_STATE_MAX_TMPDIRS; i++)
		json_array_append_new(tmp, json_string(rec->tmpdirs[i]));
	json_t *o =
		json_pack("{s:s, s:I, s:I, s:o, s:o}", "id", rec->id, "pid", (json_int_t)rec->pid,
			  "start_us", (json_int_t)rec->start_us, "cgroups", cg, "tmpdirs", tmp);
	if (!o)
		return -ENOMEM;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	return 0;
}

static int parse_paths(json_t *a, char (*out)[MOAT_STATE_PATH], unsigned max, unsigned *ret_n)
{
	if (!json_is_array(a) || json_array_size(a) > max)
		return -EINVAL;
	size_t i;
	json_t *v;
	json_array_foreach(a, i, v)
	{
		const char *s = json_string_value(v);
		if (!s || s[0] != '/' || strlen(s) >= MOAT_STATE_PATH ||
		    strlen(s) != json_string_length(v))
			return -EINVAL;
		snprintf(out[i], MOAT_STATE_PATH, "%s", s);
	}
	*ret_n = (unsigned)json_array_size(a);
	return 0;
}

int moat_state_record_parse(const char *json, size_t len, struct moat_state_record *ret)
{
	json_error_t jerr;
	int r = -EINVAL;

	memset(ret, 0, sizeof(*ret));
	if (len > MOAT_STATE_JSON_MAX)
		return -EFBIG;
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!o)
		return -EINVAL;
	if (!json_is_object(o) || json_object_size(o) != 5)
		goto out;
	const char *id = json_string_value(json_object_get(o, "id"));
	json_t *pid = json_object_get(o, "pid"), *start = json_object_get(o, "start_us");
	if (!id || !id_valid(id) || !json_is_integer(pid) || !json_is_integer(start))
		goto out;
	if (json_integer_value(pid) <= 0 || json_integer_value(pid) > INT32_MAX ||
	    json_integer_value(start) < 0)
		goto out;
	snprintf(ret->id, sizeof(ret->id), "%s", id);
	ret->pid = (pid_t)json_integer_value(pid);
	ret->start_us = (uint64_t)json_integer_value(start);
	if (parse_paths(json_object_get(o, "cgroups"), ret->cgroups, MOAT_CGROUP_MAX_HIER,
			&ret->n_cgroups) < 0 ||
	    parse_paths(json_object_get(o, "tmpdirs"), ret->tmpdirs, MOAT_STATE_MAX_TMPDIRS,
			&ret->n_tmpdirs) < 0)
		goto out;
	r = 0;
out:
	json_decref(o);
	if (r < 0)
		memset(ret, 0, sizeof(*ret));
	return r;
}

/* ---- register -------------------------------------------------------------------- */

static int write_json_at(int dfd, const struct moat_state_record *rec)
{
	_cleanup_free_ char *s = NULL;
	int r = moat_state_record_to_json(rec, &s);
	if (r < 0)
		return r;
	_cleanup_close_ int fd = openat(
		dfd, "run.json.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return negerrno();
	size_t len = strlen(s);
	if (write(fd, s, len) != (ssize_t)len)
		return -EIO;
	if (renameat(dfd, "run.json.tmp", dfd, "run.json") < 0)
		return negerrno();
	return 0;
}

static int lock_fd(int fd, short type, int cmd)
{
	struct flock fl = {.l_type = type, .l_whence = SEEK_SET};
	return fcntl(fd, cmd, &fl) < 0 ? negerrno() : 0;
}

int moat_state_register(const char *dir, const struct moat_state_record *rec,
			struct moat_state_entry **ret)
{
	char tmpname[MOAT_STATE_ID_MAX + 8];
	int r;

	if (!id_valid(rec->id))
		return -EINVAL;
	_cleanup_close_ int dfd = open_state_dir(dir, true);
	if (dfd < 0)
		return dfd;
	snprintf(tmpname, sizeof(tmpname), ".tmp-%s", rec->id);
	/* a spare directory left by an earlier run if there is one (rename is
	 * atomic: of two runs, one gets it), else a new one */
	bool reused = false;
	for (unsigned k = 0; k < STATE_SPARES && !reused; k++) {
		char spare[16];
		snprintf(spare, sizeof(spare), ".spare-%u", k);
		reused = renameat(dfd, spare, dfd, tmpname) == 0;
	}
	if (!reused && mkdirat(dfd, tmpname, 0700) < 0)
		return negerrno();
	_cleanup_close_ int edfd =
		openat(dfd, tmpname, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	_cleanup_close_ int lfd = -1;
	if (edfd < 0) {
		r = negerrno();
		goto fail;
	}
	lfd = openat(edfd, "lock", O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (lfd < 0) {
		r = negerrno();
		goto fail;
	}
	r = lock_fd(lfd, F_WRLCK, F_OFD_SETLK);
	if (r < 0)
		goto fail;
	r = write_json_at(edfd, rec);
	if (r < 0)
		goto fail;
	/* Visible under its name only once locked and complete. */
	if (renameat2(dfd, tmpname, dfd, rec->id, RENAME_NOREPLACE) < 0) {
		r = negerrno();
		goto fail;
	}
	struct moat_state_entry *e = calloc(1, sizeof(*e));
	if (!e) {
		(void)unlinkat(edfd, "run.json", 0);
		(void)unlinkat(edfd, "lock", 0);
		(void)unlinkat(dfd, rec->id, AT_REMOVEDIR);
		return -ENOMEM;
	}
	e->dirfd = TAKE_FD(dfd);
	e->lockfd = TAKE_FD(lfd);
	snprintf(e->id, sizeof(e->id), "%s", rec->id);
	*ret = e;
	return 0;
fail:
	if (edfd >= 0) {
		(void)unlinkat(edfd, "run.json.tmp", 0);
		(void)unlinkat(edfd, "run.json", 0);
		(void)unlinkat(edfd, "lock", 0);
	}
	(void)unlinkat(dfd, tmpname, AT_REMOVEDIR);
	return r;
}

int moat_state_update(struct moat_state_entry *e, const struct moat_state_record *rec)
{
	if (!streq(e->id, rec->id))
		return -EINVAL;
	_cleanup_close_ int edfd =
		openat(e->dirfd, e->id, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (edfd < 0)
		return negerrno();
	return write_json_at(edfd, rec);
}

/* Remove the regular files of an entry directory, then the directory. */
static int remove_entry(int dfd, const char *name)
{
	_cleanup_close_ int edfd =
		openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (edfd >= 0) {
		(void)unlinkat(edfd, "run.json.tmp", 0);
		(void)unlinkat(edfd, "run.json", 0);
		(void)unlinkat(edfd, "lock", 0);
	}
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return negerrno();
	return 0;
}

/* The end of an entry: its files removed, its directory kept as a spare for
 * the next run when fewer than STATE_SPARES are there, else removed. */
static int retire_entry(int dfd, const char *name)
{
	_cleanup_close_ int edfd =
		openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (edfd < 0)
		return remove_entry(dfd, name);
	(void)unlinkat(edfd, "run.json.tmp", 0);
	(void)unlinkat(edfd, "run.json", 0);
	(void)unlinkat(edfd, "lock", 0);
	for (unsigned k = 0; k < STATE_SPARES; k++) {
		char spare[16];
		snprintf(spare, sizeof(spare), ".spare-%u", k);
		if (renameat2(dfd, name, dfd, spare, RENAME_NOREPLACE) == 0)
			return 0;
	}
	return remove_entry(dfd, name);
}

int moat_state_unregister(struct moat_state_entry *e)
{
	if (!e)
		return 0;
	char dead[MOAT_STATE_ID_MAX + 8];
	int r = 0;
	/* Out of sight first, so gc and ps never see a half-removed entry. */
	snprintf(dead, sizeof(dead), ".dead-%s", e->id);
	if (renameat(e->dirfd, e->id, e->dirfd, dead) < 0)
		r = negerrno();
	else
		r = retire_entry(e->dirfd, dead);
	safe_close(e->lockfd);
	safe_close(e->dirfd);
	free(e);
	return r;
}

void moat_state_abandon(struct moat_state_entry *e)
{
	if (!e)
		return;
	safe_close(e->lockfd);
	safe_close(e->dirfd);
	free(e);
}

/* ---- list and gc ----------------------------------------------------------------- */

/* 1: lock held by someone (live), 0: free (dead), <0: error (e.g. no lock file). */
static int entry_live(int edfd)
{
	_cleanup_close_ int lfd = openat(edfd, "lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	if (lfd < 0)
		return negerrno();
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	if (fcntl(lfd, F_OFD_GETLK, &fl) < 0)
		return negerrno();
	return fl.l_type != F_UNLCK;
}

static int read_record(int edfd, struct moat_state_record *rec)
{
	_cleanup_close_ int fd = openat(edfd, "run.json", O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negerrno();
	_cleanup_free_ char *buf = malloc(MOAT_STATE_JSON_MAX + 1);
	if (!buf)
		return -ENOMEM;
	size_t off = 0;
	for (;;) {
		ssize_t n = read(fd, buf + off, MOAT_STATE_JSON_MAX + 1 - off);
		if (n < 0)
			return negerrno();
		if (n == 0)
			break;
		off += (size_t)n;
		if (off > MOAT_STATE_JSON_MAX)
			return -EFBIG;
	}
	return moat_state_record_parse(buf, off, rec);
}

int moat_state_list(const char *dir, struct moat_state_record **ret, size_t *ret_n)
{
	*ret = NULL;
	*ret_n = 0;
	_cleanup_close_ int dfd = open_state_dir(dir, false);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	_cleanup_(closedirp) DIR *d = fdopendir(dup(dfd));
	if (!d)
		return negerrno();
	struct moat_state_record *list = NULL;
	size_t n = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || !id_valid(de->d_name))
			continue;
		_cleanup_close_ int edfd =
			openat(dfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (edfd < 0 || entry_live(edfd) != 1)
			continue;
		struct moat_state_record *nl = realloc(list, (n + 1) * sizeof(*list));
		if (!nl) {
			free(list);
			return -ENOMEM;
		}
		list = nl;
		if (read_record(edfd, &list[n]) < 0) {
			/* Live but unreadable: still list it, by name. */
			memset(&list[n], 0, sizeof(list[n]));
			snprintf(list[n].id, sizeof(list[n].id), "%.64s", de->d_name);
		}
		n++;
	}
	*ret = list;
	*ret_n = n;
	return 0;
}

int moat_state_remove_tmpdir(const char *path, uid_t owner)
{
	char parent[MOAT_STATE_PATH];
	const char *slash = strrchr(path, '/');
	if (path[0] != '/' || !slash || !startswith(slash + 1, "moat-") || strstr(path, "/../") ||
	    strlen(path) >= sizeof(parent))
		return -EINVAL;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - path), path);
	_cleanup_close_ int pfd = open_state_dir(parent[0] ? parent : "/", false);
	if (pfd < 0)
		return pfd == -ENOENT ? 0 : pfd;
	struct stat st;
	if (fstatat(pfd, slash + 1, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : negerrno();
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	/* Only what the caller made: a record edited by someone else must not
	 * make gc (root's above all) remove another user's directory. */
	if (st.st_uid != owner)
		return -EPERM;
	return moat_rmtree_at(pfd, slash + 1, RM_MAX_DEPTH);
}

/* Clean the dead entry dfd/name (its lock is held by us: lfd). */
static int clean_dead(int dfd, const char *name, int edfd, struct moat_state_gc_result *res)
{
	struct moat_state_record rec;
	int first = 0, r;

	r = read_record(edfd, &rec);
	if (r == 0 && !streq(rec.id, name))
		r = -EINVAL;
	if (r == 0) {
		char *dirs[MOAT_CGROUP_MAX_HIER];
		unsigned n = 0;
		for (unsigned i = 0; i < rec.n_cgroups; i++) {
			/* Only a group named after this run, never an arbitrary cgroup. */
			const char *slash = strrchr(rec.cgroups[i], '/');
			if (!slash || !streq(slash + 1, rec.id)) {
				first = first ? first : -EINVAL;
				continue;
			}
			dirs[n++] = rec.cgroups[i];
		}
		struct moat_cgroup *cg = NULL;
		r = moat_cgroup_open(dirs, n, &cg);
		if (r == 0) {
			unsigned opened = moat_cgroup_n_dirs(cg);
			r = moat_cgroup_destroy(cg);
			if (r == 0)
				res->cgroups += opened;
		}
		if (r < 0 && !first)
			first = r;
		for (unsigned i = 0; i < rec.n_tmpdirs; i++) {
			r = moat_state_remove_tmpdir(rec.tmpdirs[i], geteuid());
			if (r == 0)
				res->tmpdirs++;
			else if (!first)
				first = r;
		}
	} else if (r != -ENOENT && !first)
		first = r; /* unreadable record: keep the entry for a human to look at */
	if (first)
		return first;
	return remove_entry(dfd, name);
}

int moat_state_gc(const char *dir, struct moat_state_gc_result *ret)
{
	memset(ret, 0, sizeof(*ret));
	_cleanup_close_ int dfd = open_state_dir(dir, false);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	_cleanup_(closedirp) DIR *d = fdopendir(dup(dfd));
	if (!d)
		return negerrno();
	int first = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *name = de->d_name;
		if (streq(name, ".") || streq(name, ".."))
			continue;
		_cleanup_close_ int edfd =
			openat(dfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (edfd < 0)
			continue;
		if (name[0] == '.') {
			/* .spare-*: empty, a few at most, taken by the next run
			 * (a removal could race that run's taking it) */
			if (startswith(name, ".spare-"))
				continue;
			/* .tmp-* being built / .dead-* being removed: only when stale. */
			struct stat st;
			if (fstat(edfd, &st) == 0 && st.st_mtime + GC_STALE_DOT_S < time(NULL) &&
			    entry_live(edfd) != 1)
				(void)remove_entry(dfd, name);
			continue;
		}
		if (!id_valid(name))
			continue;
		/* Take the lock ourselves: a concurrent gc or a starting run cannot
		 * race us, and a lock we get means its supervisor is gone. */
		_cleanup_close_ int lfd = openat(edfd, "lock", O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (lfd >= 0 && lock_fd(lfd, F_WRLCK, F_OFD_SETLK) < 0) {
			ret->live++;
			continue;
		}
		int r = clean_dead(dfd, name, edfd, ret);
		if (r < 0) {
			ret->failed++;
			if (!first)
				first = r;
		} else
			ret->removed++;
	}
	return first;
}

/* ---- public API -------------------------------------------------------------------- */

_printf_(3, 4) static int state_fail(struct moat_error *e, int err, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		memset(e, 0, sizeof(*e));
		snprintf(e->stage, sizeof(e->stage), "state");
		e->err = -err;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof(e->message), fmt, ap);
		va_end(ap);
	}
	return err;
}

static int pick_dir(const char *state_dir, char *buf, size_t len, struct moat_error *ret_err)
{
	if (state_dir) {
		if (strlen(state_dir) >= len)
			return state_fail(ret_err, -ENAMETOOLONG, "state directory path too long");
		snprintf(buf, len, "%s", state_dir);
		return 0;
	}
	int r = moat_state_default_dir(buf, len);
	if (r < 0)
		return state_fail(ret_err, r, "cannot find the state directory: %s", strerror(-r));
	return 0;
}

int moat_gc(const char *state_dir, struct moat_gc_result *ret, struct moat_error *ret_err)
{
	char dir[MOAT_STATE_PATH];
	struct moat_state_gc_result g;
	int r = pick_dir(state_dir, dir, sizeof(dir), ret_err);
	memset(ret, 0, sizeof(*ret));
	if (r < 0)
		return r;
	r = moat_state_gc(dir, &g);
	ret->live = g.live;
	ret->removed = g.removed;
	ret->failed = g.failed;
	ret->cgroups = g.cgroups;
	ret->tmpdirs = g.tmpdirs;
	if (r < 0)
		return state_fail(ret_err, r, "%u dead run(s) in %s could not be cleaned: %s",
				  g.failed, dir, strerror(-r));
	return 0;
}

int moat_ps(const char *state_dir, struct moat_run_info **ret, size_t *ret_n,
	    struct moat_error *ret_err)
{
	char dir[MOAT_STATE_PATH];
	struct moat_state_record *recs = NULL;
	size_t n = 0;
	*ret = NULL;
	*ret_n = 0;
	int r = pick_dir(state_dir, dir, sizeof(dir), ret_err);
	if (r < 0)
		return r;
	r = moat_state_list(dir, &recs, &n);
	if (r < 0)
		return state_fail(ret_err, r, "cannot list %s: %s", dir, strerror(-r));
	struct moat_run_info *out = calloc(n ? n : 1, sizeof(*out));
	if (!out) {
		free(recs);
		return state_fail(ret_err, -ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		snprintf(out[i].id, sizeof(out[i].id), "%s", recs[i].id);
		out[i].pid = recs[i].pid;
		out[i].start_us = recs[i].start_us;
	}
	free(recs);
	*ret = out;
	*ret_n = n;
	return 0;
}
