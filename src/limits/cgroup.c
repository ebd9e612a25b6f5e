/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A run's groups, whatever the version: create (one directory per hierarchy,
 * limits through the version's ops), re-open, attach, kill, statistics, remove. */
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include "limits/cgroup_int.h"
#include "policy/errors.h"
#include "shared/macro.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

/* ---- create ------------------------------------------------------------------ */

static bool run_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > MOAT_CGROUP_RUN_ID_MAX || id[0] == '.')
		return false;
	for (size_t i = 0; i < n; i++)
		if (!isalnum((unsigned char)id[i]) && !strchr("_.-", id[i]))
			return false;
	return true;
}

static void cg_free(struct moat_cgroup *cg)
{
	if (!cg)
		return;
	for (unsigned i = 0; i < cg->n; i++)
		safe_close(cg->d[i].fd);
	free(cg);
}

/* mkdir base/moat and base/moat/<id>; on v2 enable the controllers on the way. */
static int make_dir(const struct moat_cgroup_hier *h, const char *id, bool fake,
		    struct moat_cgroup_dir *d)
{
	int r;
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->version = h->version;
	d->controllers = h->controllers;
	r = moat_cgroup_path_fmt(d->parent, sizeof(d->parent), "%s/moat", h->base);
	if (r < 0)
		return r;
	r = moat_cgroup_path_fmt(d->path, sizeof(d->path), "%s/%s", d->parent, id);
	if (r < 0)
		return r;
	/* A concurrent destroy may rmdir an empty moat/ between our two mkdirs. */
	for (int attempt = 0;; attempt++) {
		if (h->version == 2 && h->controllers) {
			r = moat_cgroup_v2_enable(h->base, h->controllers, fake);
			if (r < 0)
				return r;
		}
		if (mkdir(d->parent, 0755) < 0 && errno != EEXIST)
			return negerrno();
		if (h->version == 2 && h->controllers) {
			r = moat_cgroup_v2_enable(d->parent, h->controllers, fake);
			if (r == -ENOENT && attempt < 3)
				continue;
			if (r < 0)
				return r;
		}
		if (mkdir(d->path, 0755) == 0)
			break;
		if (errno == ENOENT && attempt < 3)
			continue;
		return negerrno();
	}
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (d->fd < 0) {
		r = negerrno();
		rmdir(d->path);
		return r;
	}
	return 0;
}

/* An engine's placement (OCI linux.cgroupsPath) in hierarchy h: absolute from
 * its root, or relative to the cgroup we sit in. moat creates groups only
 * below its own cgroup or below a moat/ directory at the hierarchy's root:
 * anywhere else is -EPERM, with the reason in why. "." and ".." components,
 * empty ones and names beginning with "." are refused. */
static int engine_dir_path(const struct moat_cgroup_hier *h, const char *want, char *out,
			   size_t len, char *why, size_t whylen)
{
	char rel[MOAT_CGROUP_PATH];
	const char *s = want;
	size_t n = 0;
	while (*s == '/')
		s++;
	if (!*s) {
		snprintf(why, whylen, "not a cgroup below the hierarchy's root");
		return -EINVAL;
	}
	while (*s) {
		const char *e = strchrnul(s, '/');
		size_t l = (size_t)(e - s);
		if (l == 0 || s[0] == '.' || l > 255) {
			snprintf(why, whylen, "a component is empty, too long or begins with '.'");
			return -EINVAL;
		}
		if (n + l + 2 > sizeof(rel)) {
			snprintf(why, whylen, "too long");
			return -ENAMETOOLONG;
		}
		rel[n++] = '/';
		memcpy(rel + n, s, l);
		n += l;
		rel[n] = 0;
		s = *e ? e + 1 : e;
		while (*s == '/')
			s++;
	}
	/* h->self is h->mount + our cgroup's path in the hierarchy */
	size_t ml = strlen(h->mount), sl = strlen(h->self);
	const char *own = sl >= ml ? h->self + ml : ""; /* "" at the root */
	int r = want[0] == '/' ? moat_cgroup_path_fmt(out, len, "%s%s", h->mount, rel)
			       : moat_cgroup_path_fmt(out, len, "%s%s", h->self, rel);
	if (r < 0) {
		snprintf(why, whylen, "too long");
		return r;
	}
	if (want[0] != '/')
		return 0; /* below our own cgroup */
	size_t ol = strlen(own);
	if (strncmp(rel, own, ol) == 0 && rel[ol] == '/' && (ol == 0 || rel[ol + 1]))
		return 0;
	if (strncmp(rel, "/moat/", 6) == 0)
		return 0;
	snprintf(why, whylen,
		 "outside what moat may create (below its own cgroup %s, or below /moat/ at "
		 "the hierarchy's root)",
		 own[0] ? own : "/");
	return -EPERM;
}

/* mkdir -p of an engine's directory: each missing level is made (on v2
 * with the controllers enabled on the way); d->parent is the topmost one
 * moat made, removed with the run's when empty (the engine's own stay). The
 * run's directory must be new: an existing one may hold another's
 * processes. */
static int make_engine_dir_once(const struct moat_cgroup_hier *h, const char *want, bool fake,
				struct moat_cgroup_dir *d, char *why, size_t whylen)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->version = h->version;
	d->controllers = h->controllers;
	int r = engine_dir_path(h, want, d->path, sizeof(d->path), why, whylen);
	if (r < 0)
		return r;
	size_t start = strlen(h->mount);
	for (char *p = d->path + start + 1; (p = strchr(p, '/')); p++) {
		*p = 0;
		if (h->version == 2 && h->controllers) {
			char up[MOAT_CGROUP_PATH];
			snprintf(up, sizeof(up), "%s", d->path);
			char *sl = strrchr(up, '/');
			if (sl && (size_t)(sl - up) >= start) {
				*sl = 0;
				if ((r = moat_cgroup_v2_enable(up[0] ? up : "/", h->controllers,
							       fake)) < 0 &&
				    r != -ENOENT) {
					*p = '/';
					snprintf(why, whylen, "cannot enable the controllers");
					return r;
				}
			}
		}
		r = 0;
		if (mkdir(d->path, 0755) == 0) {
			if (!d->parent[0])
				memcpy(d->parent, d->path, strlen(d->path) + 1);
		} else if (errno != EEXIST)
			r = negerrno();
		*p = '/';
		if (r < 0) {
			snprintf(why, whylen, "cannot create a parent directory");
			return r;
		}
	}
	if (h->version == 2 && h->controllers) {
		char up[MOAT_CGROUP_PATH];
		snprintf(up, sizeof(up), "%s", d->path);
		*strrchr(up, '/') = 0;
		if ((r = moat_cgroup_v2_enable(up, h->controllers, fake)) < 0) {
			snprintf(why, whylen, "cannot enable the controllers in %s", up);
			return r;
		}
	}
	if (mkdir(d->path, 0755) < 0) {
		r = negerrno();
		snprintf(why, whylen, "%s", r == -EEXIST ? "exists already" : "cannot create it");
		return r;
	}
	d->fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (d->fd < 0) {
		r = negerrno();
		rmdir(d->path);
		snprintf(why, whylen, "cannot open it");
		return r;
	}
	return 0;
}

/* Removes the empty directories from the run's parent up to d->parent. */
static void remove_made_parents(const struct moat_cgroup_dir *d)
{
	char cur[MOAT_CGROUP_PATH];
	size_t top = strlen(d->parent);
	snprintf(cur, sizeof(cur), "%s", d->path);
	for (char *sl; (sl = strrchr(cur, '/')) && (size_t)(sl - cur) >= top;) {
		*sl = 0;
		if (rmdir(cur) < 0)
			break;
	}
}

/* A concurrent run's end may remove an empty parent between two mkdirs. */
static int make_engine_dir(const struct moat_cgroup_hier *h, const char *want, bool fake,
			   struct moat_cgroup_dir *d, char *why, size_t whylen)
{
	int r = -ENOENT;
	for (int attempt = 0; attempt < 4 && r == -ENOENT; attempt++)
		if ((r = make_engine_dir_once(h, want, fake, d, why, whylen)) < 0 && d->parent[0] &&
		    !fake)
			remove_made_parents(d);
	return r;
}

static int set_limits(struct moat_cgroup *cg, struct moat_cgroup_dir *d,
		      const struct moat_cgroup_limits *l, const char **ret_file)
{
	const struct moat_cgroup_ops *ops = moat_cgroup_ops_of(d);
	int r;
	if ((d->controllers & MOAT_CG_MEMORY) && l->memory) {
		r = ops->limit_memory(d, l->memory, cg->fake, ret_file);
		if (r < 0)
			return r;
		cg->limited |= MOAT_CG_MEMORY;
	}
	if ((d->controllers & MOAT_CG_MEMORY) && l->oom_kill_disable) {
		r = ops->disable_oom_killer(d, cg->fake, ret_file);
		if (r < 0)
			return r;
		cg->limited |= MOAT_CG_MEMORY;
	}
	if ((d->controllers & MOAT_CG_PIDS) && l->pids) {
		r = moat_cgroup_put(d, "pids.max", l->pids, cg->fake, ret_file);
		if (r < 0)
			return r;
		cg->limited |= MOAT_CG_PIDS;
	}
	if ((d->controllers & MOAT_CG_CPU) && l->cpus_milli) {
		uint64_t quota = l->cpus_milli * MOAT_CGROUP_CPU_PERIOD_US / 1000;
		if (quota < 1000)
			quota = 1000; /* the kernel's minimum */
		r = ops->limit_cpu(d, quota, cg->fake, ret_file);
		if (r < 0)
			return r;
		cg->limited |= MOAT_CG_CPU;
	}
	return 0;
}

static unsigned wanted(const struct moat_cgroup_limits *l)
{
	return (l->memory || l->oom_kill_disable ? MOAT_CG_MEMORY : 0) |
		(l->pids ? MOAT_CG_PIDS : 0) | (l->cpus_milli ? MOAT_CG_CPU : 0);
}

int moat_cgroup_create_with(const struct moat_cgroup_info *info, const struct moat_cgroup_limits *l,
			    const char *run_id, struct moat_cgroup **ret,
			    struct moat_error *ret_err)
{
	char names[64];
	unsigned need = wanted(l), covered = 0;
	int first_err = 0;

	if (!run_id_valid(run_id))
		return moat_error_set(ret_err, "cgroup", EINVAL,
				      "invalid run id for a cgroup name");
	if (info->mode == 0)
		return need ? moat_error_set(ret_err, "cgroup", EOPNOTSUPP,
					     "no cgroup hierarchy is mounted")
			    : -EOPNOTSUPP;
	for (unsigned i = 0; i < info->n_hier; i++)
		covered |= info->hier[i].controllers;
	if (need & ~covered)
		return moat_error_set(
			ret_err, "cgroup", EOPNOTSUPP, "cgroup controller(s) %s not available",
			moat_cgroup_ctrl_names(need & ~covered, names, sizeof(names)));

	/* an engine's placement: checked in every hierarchy before any is made */
	for (unsigned i = 0; l->path && i < info->n_hier; i++) {
		const struct moat_cgroup_hier *h = &info->hier[i];
		char p[MOAT_CGROUP_PATH], why[2 * MOAT_CGROUP_PATH + 200];
		if (h->controllers == 0 && !(h->version == 2 && info->mode == 1))
			continue;
		int r = engine_dir_path(h, l->path, p, sizeof(p), why, sizeof(why));
		if (r < 0)
			return moat_error_set(ret_err, "cgroup", -r, "%s: %s (%s)", h->mount, why,
					      strerror(-r));
	}

	struct moat_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return moat_error_set(ret_err, "cgroup", ENOMEM, "out of memory");
	cg->fake = info->fake;

	for (unsigned i = 0; i < info->n_hier; i++) {
		const struct moat_cgroup_hier *h = &info->hier[i];
		unsigned req = h->controllers & need;
		struct moat_cgroup_dir *d = &cg->d[cg->n];
		const char *file = "";
		int r;

		/* v1 hierarchies without one of our controllers, and a controller-less
		 * v2 mount on a pure-v2 machine, are of no use. */
		if (h->controllers == 0 && !(h->version == 2 && info->mode == 1))
			continue;
		if (l->path) {
			/* the engine's placement: every hierarchy or nothing */
			char why[2 * MOAT_CGROUP_PATH + 200] = "";
			r = make_engine_dir(h, l->path, cg->fake, d, why, sizeof(why));
			if (r < 0) {
				int e = moat_error_set(ret_err, "cgroup", -r, "%s: %s (%s)",
						       h->mount, why, strerror(-r));
				moat_cgroup_destroy(cg);
				return e;
			}
		} else if ((r = make_dir(h, run_id, cg->fake, d)) < 0) {
			/* The freezer is expected where its base is ours: the kill
			 * path freezes before it signals (no fork escapes the one
			 * pass over cgroup.procs), so a group that cannot be made
			 * there fails closed, as a limit's does. */
			if (!req && (h->controllers & MOAT_CG_FREEZER) && h->writable)
				req = MOAT_CG_FREEZER;
			if (req) {
				char p[MOAT_CGROUP_PATH + 16];
				snprintf(p, sizeof(p), "%s/moat/%s", h->base, run_id);
				int e = moat_error_set(
					ret_err, "cgroup", -r, "cannot create cgroup %s (%s): %s",
					p, moat_cgroup_ctrl_names(req, names, sizeof(names)),
					strerror(-r));
				moat_cgroup_destroy(cg);
				return e;
			}
			if (!first_err)
				first_err = r;
			continue;
		}
		cg->n++;
		r = set_limits(cg, d, l, &file);
		if (r < 0) {
			int e = moat_error_set(ret_err, "cgroup", -r, "cannot set %s/%s: %s",
					       d->path, file, strerror(-r));
			moat_cgroup_destroy(cg);
			return e;
		}
	}
	if (cg->n == 0) {
		cg_free(cg);
		return moat_error_set(ret_err, "cgroup", -(first_err ? first_err : -EOPNOTSUPP),
				      "no cgroup could be created: %s",
				      strerror(first_err ? -first_err : EOPNOTSUPP));
	}
	*ret = cg;
	return 0;
}

int moat_cgroup_create(const struct moat_cgroup_limits *l, const char *run_id,
		       struct moat_cgroup **ret, struct moat_error *ret_err)
{
	struct moat_cgroup_info info;
	int r = moat_cgroup_detect(&info);
	if (r < 0)
		return moat_error_set(ret_err, "cgroup", -r, "cannot probe cgroups: %s",
				      strerror(-r));
	return moat_cgroup_create_with(&info, l, run_id, ret, ret_err);
}

int moat_cgroup_open(char *const *dirs, unsigned n, struct moat_cgroup **ret)
{
	if (n > MOAT_CGROUP_MAX_HIER)
		return -E2BIG;
	struct moat_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++) {
		struct moat_cgroup_dir *d = &cg->d[cg->n];
		struct statfs sfs;
		if (strlen(dirs[i]) >= sizeof(d->path) || dirs[i][0] != '/') {
			cg_free(cg);
			return -EINVAL;
		}
		int fd = open(dirs[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			if (errno == ENOENT)
				continue; /* already gone */
			int r = negerrno();
			cg_free(cg);
			return r;
		}
		if (fstatfs(fd, &sfs) < 0 ||
		    ((unsigned long)sfs.f_type != CGROUP_SUPER_MAGIC &&
		     (unsigned long)sfs.f_type != CGROUP2_SUPER_MAGIC)) {
			close(fd);
			cg_free(cg);
			return -EINVAL;
		}
		memset(d, 0, sizeof(*d));
		d->fd = fd;
		d->version = (unsigned long)sfs.f_type == CGROUP2_SUPER_MAGIC ? 2 : 1;
		if (moat_cgroup_exists_at(fd, "freezer.state"))
			d->controllers |= MOAT_CG_FREEZER;
		snprintf(d->path, sizeof(d->path), "%s", dirs[i]);
		char *slash = strrchr(d->path, '/');
		if (slash && slash > d->path && (size_t)(slash - d->path) >= 5 &&
		    strncmp(slash - 5, "/moat", 5) == 0)
			moat_cgroup_copy_str(d->parent, sizeof(d->parent), d->path,
					     (size_t)(slash - d->path));
		cg->n++;
	}
	*ret = cg;
	return 0;
}

int moat_cgroup_fd(const struct moat_cgroup *cg)
{
	for (unsigned i = 0; cg && i < cg->n; i++)
		if (cg->d[i].version == 2)
			return cg->d[i].fd;
	return -EOPNOTSUPP;
}

int moat_cgroup_attach_some(const struct moat_cgroup *cg, pid_t pid, unsigned which)
{
	for (unsigned i = 0; i < cg->n; i++) {
		unsigned bit =
			cg->d[i].version == 2 ? MOAT_CGROUP_ATTACH_V2 : MOAT_CGROUP_ATTACH_V1;
		if (!(which & bit))
			continue;
		int r = moat_cgroup_write_u64_at(cg->d[i].fd, "cgroup.procs", (uint64_t)pid,
						 cg->fake);
		if (r < 0)
			return r;
	}
	return 0;
}

int moat_cgroup_attach(const struct moat_cgroup *cg, pid_t pid)
{
	return moat_cgroup_attach_some(cg, pid, MOAT_CGROUP_ATTACH_V1 | MOAT_CGROUP_ATTACH_V2);
}

int moat_cgroup_open_self_attach(const struct moat_cgroup *cg, int *fds, unsigned max,
				 unsigned *ret_n)
{
	unsigned n = 0;

	*ret_n = 0;
	if (!cg)
		return 0;
	if (cg->fake)
		return -EOPNOTSUPP; /* a test tree: the supervisor writes cgroup.procs */
	for (unsigned i = 0; i < cg->n; i++) {
		if (cg->d[i].version == 2)
			continue;
		if (n >= max) {
			for (unsigned j = 0; j < n; j++)
				close(fds[j]);
			return -E2BIG;
		}
		int fd = openat(cg->d[i].fd, "tasks", O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			int e = errno;
			for (unsigned j = 0; j < n; j++)
				close(fds[j]);
			return -e;
		}
		fds[n++] = fd;
	}
	*ret_n = n;
	return 0;
}

unsigned moat_cgroup_n_dirs(const struct moat_cgroup *cg)
{
	return cg ? cg->n : 0;
}

const char *moat_cgroup_dir(const struct moat_cgroup *cg, unsigned i)
{
	return cg && i < cg->n ? cg->d[i].path : NULL;
}

unsigned moat_cgroup_limited(const struct moat_cgroup *cg)
{
	return cg ? cg->limited : 0;
}

/* ---- kill -------------------------------------------------------------------- */

/* Calls fn(pid) for each pid in d's cgroup.procs; returns how many, or -errno. */
static int for_each_pid(const struct moat_cgroup_dir *d, bool do_kill)
{
	int fd = openat(d->fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : negerrno();
	FILE *f = fdopen(fd, "re");
	if (!f) {
		int r = negerrno();
		close(fd);
		return r;
	}
	int n = 0;
	long pid;
	while (fscanf(f, "%ld", &pid) == 1) {
		if (pid <= 0)
			continue;
		n++;
		if (do_kill)
			(void)kill((pid_t)pid, SIGKILL);
	}
	fclose(f);
	return n;
}

static int count_procs(const struct moat_cgroup *cg)
{
	int total = 0;
	for (unsigned i = 0; i < cg->n; i++) {
		int r = for_each_pid(&cg->d[i], false);
		if (r > 0)
			total += r;
	}
	return total;
}

static void freeze(const struct moat_cgroup *cg, bool on)
{
	for (unsigned i = 0; i < cg->n; i++)
		moat_cgroup_ops_of(&cg->d[i])->freeze(&cg->d[i], on, cg->fake);
	if (!on)
		return;
	/* Wait (briefly) until the freeze took. */
	uint64_t end = moat_cgroup_now_ms() + 500;
	for (unsigned i = 0; i < cg->n; i++) {
		const struct moat_cgroup_dir *d = &cg->d[i];
		while (!moat_cgroup_ops_of(d)->frozen(d) && moat_cgroup_now_ms() <= end)
			moat_cgroup_sleep_ms(1);
	}
}

int moat_cgroup_freeze(struct moat_cgroup *cg, bool on)
{
	bool any = false;
	for (unsigned i = 0; cg && i < cg->n; i++) {
		const struct moat_cgroup_dir *d = &cg->d[i];
		any |= d->version == 2 ? moat_cgroup_exists_at(d->fd, "cgroup.freeze")
				       : (d->controllers & MOAT_CG_FREEZER) != 0;
	}
	if (!any)
		return -EOPNOTSUPP;
	freeze(cg, on);
	return 0;
}

int moat_cgroup_kill(struct moat_cgroup *cg)
{
	if (!cg)
		return 0;
	uint64_t end = moat_cgroup_now_ms() + MOAT_CGROUP_KILL_TIMEOUT_MS;
	for (unsigned round = 0;; round++) {
		if (count_procs(cg) == 0)
			return 0;
		if (moat_cgroup_now_ms() > end)
			return -ETIMEDOUT;
		bool killed = false;
		for (unsigned i = 0; i < cg->n; i++)
			if (moat_cgroup_ops_of(&cg->d[i])->kill(&cg->d[i], cg->fake))
				killed = true;
		/* Something that is in a v1 group but not the v2 one (attach raced
		 * with a crash) survives cgroup.kill: from the third round on, also
		 * signal every listed pid. */
		if (!killed || round >= 2) {
			/* Frozen tasks cannot fork, so one pass over cgroup.procs finds
			 * them all; the SIGKILLs land when we thaw. Without a freezer we
			 * loop, and the pids limit bounds the race. */
			freeze(cg, true);
			for (unsigned i = 0; i < cg->n; i++)
				(void)for_each_pid(&cg->d[i], true);
			freeze(cg, false);
		}
		for (int w = 0; w < 50 && count_procs(cg) > 0; w++)
			moat_cgroup_sleep_ms(2);
	}
}

/* ---- stats ------------------------------------------------------------------- */

int moat_cgroup_stats(const struct moat_cgroup *cg, struct moat_cgroup_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (unsigned i = 0; cg && i < cg->n; i++) {
		const struct moat_cgroup_dir *d = &cg->d[i];
		uint64_t v;
		moat_cgroup_ops_of(d)->stats(d, ret);
		if (d->controllers & MOAT_CG_PIDS) {
			(void)moat_cgroup_read_u64_at(d->fd, "pids.current", &ret->pids_current);
			if (moat_cgroup_read_u64_at(d->fd, "pids.peak", &ret->pids_peak) >= 0)
				ret->have_pids_peak = true;
			if (moat_cgroup_read_key_at(d->fd, "pids.events", "max", &v) >= 0)
				ret->pids_max_hits = v;
		}
	}
	ret->oom = ret->oom_kills > 0;
	ret->pids_hit = ret->pids_max_hits > 0;
	return 0;
}

/* ---- destroy ----------------------------------------------------------------- */

/* ---- destroy ----------------------------------------------------------------- */

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static void remove_dir(struct moat_cgroup_dir *d)
{
	d->fd = safe_close(d->fd);
}

int moat_cgroup_destroy(struct moat_cgroup *cg)
{
	if (!cg)
		return 0;
	int r = moat_cgroup_kill(cg), first = r < 0 ? r : 0;
	for (unsigned i = 0; i < cg->n; i++) {
		struct moat_cgroup_dir *d = &cg->d[i];
		remove_dir(d);
		if (cg->fake) {
			/* A fake tree holds regular files the kernel would not have. */
			_cleanup_close_ int fd = open(d->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			_cleanup_(closedirp) DIR *dir = fd >= 0 ? fdopendir(TAKE_FD(fd)) : NULL;
			struct dirent *de;
			while (dir && (de = readdir(dir)))
				if (de->d_name[0] != '.')
					(void)unlinkat(dirfd(dir), de->d_name, 0);
		}
		uint64_t end = moat_cgroup_now_ms() + MOAT_CGROUP_RMDIR_TIMEOUT_MS;
		while (rmdir(d->path) < 0) {
			if (errno == ENOENT)
				break;
			if (errno != EBUSY || moat_cgroup_now_ms() > end) {
				if (!first)
					first = negerrno();
				break;
			}
			moat_cgroup_sleep_ms(5);
		}
		/* The shared moat/ parent (or the levels moat made of an engine's
		 * path): gone when the last run leaves it. */
		if (d->parent[0] && !cg->fake)
			remove_made_parents(d);
	}
	free(cg);
	return first;
}
