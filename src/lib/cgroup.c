/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Per-run cgroups on cgroup v2, v1 and the hybrid of both. See cgroup.h for the
 * placement rule. Every file is opened relative to the run directory's fd, so
 * a rename of a path component after creation cannot redirect our writes.
 */
#include "lib/cgroup.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>

#include "shared/macro.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define LINE_MAX_BYTES 8192
#define KILL_TIMEOUT_MS 5000
#define RMDIR_TIMEOUT_MS 2000
#define CPU_PERIOD_US 100000ull

struct cg_dir {
	int version;
	unsigned controllers;
	int fd;
	char path[MOAT_CGROUP_PATH];
	char parent[MOAT_CGROUP_PATH]; /* the shared moat/ dir, "" if none */
};

struct moat_cgroup {
	struct cg_dir d[MOAT_CGROUP_MAX_HIER];
	unsigned n;
	unsigned limited;
	bool fake;
};

static const struct {
	const char *name;
	unsigned bit;
} ctrl_names[] = {
	{"memory", MOAT_CG_MEMORY},   {"pids", MOAT_CG_PIDS},	    {"cpu", MOAT_CG_CPU},
	{"cpuacct", MOAT_CG_CPUACCT}, {"freezer", MOAT_CG_FREEZER},
};

static unsigned ctrl_bit(const char *name, size_t len)
{
	for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++)
		if (strlen(ctrl_names[i].name) == len &&
		    strncmp(ctrl_names[i].name, name, len) == 0)
			return ctrl_names[i].bit;
	return 0;
}

/* Bits of the known controller names in a list separated by any of seps
 * ("+memory +pids" from cgroup.subtree_control is understood too). */
static unsigned ctrl_mask(const char *list, const char *seps)
{
	unsigned mask = 0;
	for (const char *p = list; *p;) {
		size_t n = strcspn(p, seps), wn = n;
		const char *w = p;
		if (wn > 0 && *w == '+')
			w++, wn--;
		mask |= ctrl_bit(w, wn);
		p += n;
		if (*p)
			p++;
	}
	return mask;
}

const char *moat_cgroup_ctrl_names(unsigned mask, char *buf, size_t len)
{
	size_t off = 0;
	if (len == 0)
		return buf;
	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++) {
		if (!(mask & ctrl_names[i].bit))
			continue;
		int n = snprintf(buf + off, len - off, "%s%s", off ? "," : "", ctrl_names[i].name);
		if (n < 0 || (size_t)n >= len - off)
			break;
		off += (size_t)n;
	}
	return buf;
}

_printf_(3, 4) static int path_fmt(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Copy at most n bytes of src (distinct objects in one struct), truncating. */
static void copy_str(char *dst, size_t size, const char *src, size_t n)
{
	if (n >= size)
		n = size - 1;
	memmove(dst, src, n);
	dst[n] = 0;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- small file helpers ------------------------------------------------------ */

/* Read up to size-1 bytes of dirfd/name, NUL-terminated. Returns length or -errno. */
static int read_at(int dirfd, const char *name, char *buf, size_t size)
{
	_cleanup_close_ int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return negerrno();
	size_t off = 0;
	while (off + 1 < size) {
		ssize_t n = read(fd, buf + off, size - 1 - off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		if (n == 0)
			break;
		off += (size_t)n;
	}
	buf[off] = 0;
	return (int)off;
}

static int write_at(int dirfd, const char *name, const char *val, bool fake)
{
	int flags = O_WRONLY | O_CLOEXEC | O_NOFOLLOW;
	if (fake)
		flags |= O_CREAT | O_APPEND;
	_cleanup_close_ int fd = openat(dirfd, name, flags, 0644);
	if (fd < 0)
		return negerrno();
	size_t len = strlen(val);
	ssize_t n = write(fd, val, len);
	if (n < 0)
		return negerrno();
	if ((size_t)n != len)
		return -EIO;
	return 0;
}

static int write_u64_at(int dirfd, const char *name, uint64_t v, bool fake)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%" PRIu64 "\n", v);
	return write_at(dirfd, name, buf, fake);
}

static bool exists_at(int dirfd, const char *name)
{
	return faccessat(dirfd, name, F_OK, AT_SYMLINK_NOFOLLOW) == 0;
}

/* A decimal number, or "max" (UINT64_MAX). */
static int parse_u64(const char *s, uint64_t *ret)
{
	while (*s == ' ' || *s == '\t')
		s++;
	if (startswith(s, "max")) {
		*ret = UINT64_MAX;
		return 0;
	}
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	char *end;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end && *end != '\n' && *end != ' ')
		return -EINVAL;
	*ret = v;
	return 0;
}

static int read_u64_at(int dirfd, const char *name, uint64_t *ret)
{
	char buf[64];
	int r = read_at(dirfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	return parse_u64(buf, ret);
}

/* "key value" lines (memory.events, cpu.stat, memory.oom_control, pids.events). */
static int read_key_at(int dirfd, const char *name, const char *key, uint64_t *ret)
{
	char buf[4096];
	int r = read_at(dirfd, name, buf, sizeof(buf));
	if (r < 0)
		return r;
	size_t klen = strlen(key);
	for (char *line = buf; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		if (strncmp(line, key, klen) == 0 && line[klen] == ' ')
			return parse_u64(line + klen + 1, ret);
		line = nl ? nl + 1 : NULL;
	}
	return -ENOENT;
}

/* ---- detection --------------------------------------------------------------- */

struct mnt {
	int version;
	unsigned controllers;
	char point[MOAT_CGROUP_PATH]; /* without the prefix */
	char root[MOAT_CGROUP_PATH]; /* the mount's root inside the hierarchy */
};

/* Undo mountinfo's octal escapes (\040 etc.) in place. */
static void unescape(char *s)
{
	char *w = s;
	for (char *r = s; *r;) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 4;
		} else
			*w++ = *r++;
	}
	*w = 0;
}

static int read_mountinfo(const char *root, struct mnt *m, unsigned max, unsigned *ret_n)
{
	char path[MOAT_CGROUP_PATH];
	int r = path_fmt(path, sizeof(path), "%s/proc/self/mountinfo", root);
	if (r < 0)
		return r;
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return negerrno();
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	unsigned n = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (len > LINE_MAX_BYTES)
			continue;
		/* id parent maj:min root point opts [optional...] - fstype source superopts */
		char *sep = strstr(line, " - ");
		if (!sep)
			continue;
		*sep = 0;
		char fstype[32], source[256], superopts[1024];
		if (sscanf(sep + 3, "%31s %255s %1023s", fstype, source, superopts) != 3)
			continue;
		bool v2 = streq(fstype, "cgroup2");
		if (!v2 && !streq(fstype, "cgroup"))
			continue;
		char mroot[MOAT_CGROUP_PATH], point[MOAT_CGROUP_PATH];
		if (sscanf(line, "%*s %*s %*s %1023s %1023s", mroot, point) != 2)
			continue;
		unescape(mroot);
		unescape(point);
		unsigned ctrls = v2 ? 0 : ctrl_mask(superopts, ",");
		if (!v2 && ctrls == 0)
			continue; /* name=systemd, net_cls, ...: nothing of ours */
		/* The first mount of a hierarchy wins. */
		bool dup = false;
		for (unsigned i = 0; i < n; i++)
			if (m[i].version == (v2 ? 2 : 1) && m[i].controllers == ctrls)
				dup = true;
		if (dup || n >= max)
			continue;
		m[n].version = v2 ? 2 : 1;
		m[n].controllers = ctrls;
		snprintf(m[n].point, sizeof(m[n].point), "%s", point);
		snprintf(m[n].root, sizeof(m[n].root), "%s", mroot);
		n++;
	}
	*ret_n = n;
	return 0;
}

/* The process's cgroup path in the hierarchy with these controllers (v1) or the
 * unified one (v2). */
static int self_path(const char *root, int version, unsigned ctrls, char *buf, size_t len)
{
	char path[MOAT_CGROUP_PATH];
	int r = path_fmt(path, sizeof(path), "%s/proc/self/cgroup", root);
	if (r < 0)
		return r;
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		return negerrno();
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[n - 1] = 0;
		char *c1 = strchr(line, ':');
		char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		if (!c2)
			continue;
		*c1 = *c2 = 0;
		const char *list = c1 + 1, *p = c2 + 1;
		bool match = version == 2 ? (streq(line, "0") && *list == 0)
					  : (*list && ctrl_mask(list, ",") == ctrls);
		if (!match)
			continue;
		if (*p != '/' || strstr(p, "/..") || strlen(p) >= len)
			return -ENOENT; /* outside our cgroup namespace */
		snprintf(buf, len, "%s", p);
		return 0;
	}
	return -ENOENT;
}

/* dir and its cgroup.procs writable by us. */
static bool writable_dir(const char *dir)
{
	char p[MOAT_CGROUP_PATH];
	if (access(dir, W_OK | X_OK) < 0)
		return false;
	if (path_fmt(p, sizeof(p), "%s/cgroup.procs", dir) < 0)
		return false;
	return access(p, W_OK) == 0;
}

static unsigned read_ctrl_file(const char *dir, const char *name)
{
	char buf[1024];
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || read_at(fd, name, buf, sizeof(buf)) < 0)
		return 0;
	return ctrl_mask(buf, " \n") & (MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU);
}

static bool has_procs(const char *dir)
{
	char buf[64];
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || read_at(fd, "cgroup.procs", buf, sizeof(buf)) < 0)
		return false;
	return buf[0] != 0;
}

/*
 * Where to put run groups on v2. The cgroup we sit in can hold a child with
 * controllers only if it is the hierarchy root (no "no internal processes" rule
 * there); otherwise the nearest writable ancestor (still inside our delegated
 * subtree, e.g. the user's user@UID.service) is used. A controller-less
 * (tracking) group can live right below us.
 */
static void v2_pick_base(struct moat_cgroup_hier *h, bool want_ctrls)
{
	char a[MOAT_CGROUP_PATH];
	size_t mlen = strlen(h->mount);

	copy_str(h->base, sizeof(h->base), h->self, strlen(h->self));
	h->writable = writable_dir(h->self);
	h->controllers = 0;
	if (!h->writable)
		return;
	snprintf(a, sizeof(a), "%s", h->self);
	for (;;) {
		bool is_root = strlen(a) <= mlen;
		bool is_self = streq(a, h->self);
		if (!want_ctrls || is_root || !is_self) {
			snprintf(h->base, sizeof(h->base), "%s", a);
			break;
		}
		char *slash = strrchr(a, '/');
		if (!slash || (size_t)(slash - a) < mlen)
			break;
		*slash = 0;
		if (strlen(a) < mlen)
			snprintf(a, sizeof(a), "%s", h->mount);
		if (!writable_dir(a))
			break; /* stay at self: tracking only */
	}
	bool is_root = strlen(h->base) <= mlen;
	unsigned enabled = read_ctrl_file(h->base, "cgroup.subtree_control");
	unsigned avail = read_ctrl_file(h->base, "cgroup.controllers");
	/* A non-root cgroup with processes cannot enable more controllers. */
	if (!is_root && has_procs(h->base))
		h->controllers = enabled;
	else
		h->controllers = avail | enabled;
}

int moat_cgroup_detect_at(const char *root, struct moat_cgroup_info *ret)
{
	struct mnt m[MOAT_CGROUP_MAX_HIER];
	unsigned n = 0;

	memset(ret, 0, sizeof(*ret));
	if (!root)
		root = "";
	if (strlen(root) >= sizeof(ret->root) / 2)
		return -ENAMETOOLONG;
	snprintf(ret->root, sizeof(ret->root), "%s", root);
	ret->fake = root[0] != 0;

	int r = read_mountinfo(root, m, ELEMENTSOF(m), &n);
	if (r < 0)
		return r;

	unsigned v1_ctrls = 0;
	for (unsigned i = 0; i < n; i++)
		if (m[i].version == 1)
			v1_ctrls |= m[i].controllers;

	for (unsigned i = 0; i < n && ret->n_hier < MOAT_CGROUP_MAX_HIER; i++) {
		struct moat_cgroup_hier *h = &ret->hier[ret->n_hier];
		char self[MOAT_CGROUP_PATH];
		memset(h, 0, sizeof(*h));
		h->version = m[i].version;
		if (path_fmt(h->mount, sizeof(h->mount), "%s%s", root, m[i].point) < 0)
			continue;
		if (self_path(root, h->version, m[i].controllers, self, sizeof(self)) < 0)
			continue;
		/* A bind mount of a sub-tree: our path must be inside it. */
		const char *rel = self;
		if (!streq(m[i].root, "/")) {
			size_t rl = strlen(m[i].root);
			if (strncmp(self, m[i].root, rl) != 0 || (self[rl] && self[rl] != '/'))
				continue;
			rel = self + rl;
		}
		if (path_fmt(h->self, sizeof(h->self), "%s%s", h->mount,
			     streq(rel, "/") ? "" : rel) < 0)
			continue;
		if (h->version == 1) {
			h->controllers = m[i].controllers;
			copy_str(h->base, sizeof(h->base), h->self, strlen(h->self));
			h->writable = writable_dir(h->base);
			ret->available |= h->controllers;
		} else {
			unsigned avail = read_ctrl_file(h->mount, "cgroup.controllers");
			ret->available |= avail & ~v1_ctrls;
			v2_pick_base(h, avail != 0);
			h->controllers &= ~v1_ctrls;
		}
		if (h->writable)
			ret->usable |= h->controllers;
		ret->n_hier++;
	}

	bool have_v2 = false;
	for (unsigned i = 0; i < ret->n_hier; i++)
		if (ret->hier[i].version == 2)
			have_v2 = true;
	if (v1_ctrls & (MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU)) {
		ret->mode = 1;
		for (unsigned i = 0; i < ret->n_hier; i++)
			if (ret->hier[i].version == 2 && ret->hier[i].writable)
				ret->v2_tracking = true;
	} else if (have_v2)
		ret->mode = 2;
	return 0;
}

int moat_cgroup_detect(struct moat_cgroup_info *ret)
{
	return moat_cgroup_detect_at("", ret);
}

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

_printf_(3, 4) static int fail(struct moat_error *e, int err, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		memset(e, 0, sizeof(*e));
		snprintf(e->stage, sizeof(e->stage), "cgroup");
		e->err = -err;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof(e->message), fmt, ap);
		va_end(ap);
	}
	return err;
}

static void cg_free(struct moat_cgroup *cg)
{
	if (!cg)
		return;
	for (unsigned i = 0; i < cg->n; i++)
		safe_close(cg->d[i].fd);
	free(cg);
}

static int enable_controllers(const char *dir, unsigned want, bool fake)
{
	char buf[128] = "";
	size_t off = 0;
	unsigned have = read_ctrl_file(dir, "cgroup.subtree_control");
	want &= ~have;
	if (!want)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(ctrl_names); i++)
		if (want & ctrl_names[i].bit)
			off += (size_t)snprintf(buf + off, sizeof(buf) - off, "%s+%s",
						off ? " " : "", ctrl_names[i].name);
	_cleanup_close_ int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	return write_at(fd, "cgroup.subtree_control", buf, fake);
}

/* mkdir base/moat and base/moat/<id>; on v2 enable the controllers on the way. */
static int make_dir(const struct moat_cgroup_hier *h, const char *id, bool fake, struct cg_dir *d)
{
	int r;
	memset(d, 0, sizeof(*d));
	d->fd = -1;
	d->version = h->version;
	d->controllers = h->controllers;
	r = path_fmt(d->parent, sizeof(d->parent), "%s/moat", h->base);
	if (r < 0)
		return r;
	r = path_fmt(d->path, sizeof(d->path), "%s/%s", d->parent, id);
	if (r < 0)
		return r;
	/* A concurrent destroy may rmdir an empty moat/ between our two mkdirs. */
	for (int attempt = 0;; attempt++) {
		if (h->version == 2 && h->controllers) {
			r = enable_controllers(h->base, h->controllers, fake);
			if (r < 0)
				return r;
		}
		if (mkdir(d->parent, 0755) < 0 && errno != EEXIST)
			return negerrno();
		if (h->version == 2 && h->controllers) {
			r = enable_controllers(d->parent, h->controllers, fake);
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

static int set_limits(struct moat_cgroup *cg, struct cg_dir *d, const struct moat_cgroup_limits *l,
		      const char **ret_file)
{
	int r;
	bool fake = cg->fake;
#define W(name, val) \
	do { \
		*ret_file = (name); \
		r = write_u64_at(d->fd, (name), (val), fake); \
		if (r < 0) \
			return r; \
	} while (0)

	if ((d->controllers & MOAT_CG_MEMORY) && l->memory) {
		if (d->version == 2) {
			W("memory.max", l->memory);
			/* No swap: absent without swap accounting, then nothing swaps into it. */
			if (fake || exists_at(d->fd, "memory.swap.max"))
				W("memory.swap.max", 0);
			/* One OOM kills the whole group: the run ends, clearly "memory". */
			if (fake || exists_at(d->fd, "memory.oom.group"))
				W("memory.oom.group", 1);
		} else {
			W("memory.limit_in_bytes", l->memory);
			if (!fake && exists_at(d->fd, "memory.memsw.limit_in_bytes"))
				W("memory.memsw.limit_in_bytes", l->memory);
			else
				W("memory.swappiness", 0);
		}
		cg->limited |= MOAT_CG_MEMORY;
	}
	if ((d->controllers & MOAT_CG_PIDS) && l->pids) {
		W("pids.max", l->pids);
		cg->limited |= MOAT_CG_PIDS;
	}
	if ((d->controllers & MOAT_CG_CPU) && l->cpus_milli) {
		uint64_t quota = l->cpus_milli * CPU_PERIOD_US / 1000;
		if (quota < 1000)
			quota = 1000; /* the kernel's minimum */
		if (d->version == 2) {
			char buf[64];
			snprintf(buf, sizeof(buf), "%" PRIu64 " %llu\n", quota, CPU_PERIOD_US);
			*ret_file = "cpu.max";
			r = write_at(d->fd, "cpu.max", buf, fake);
			if (r < 0)
				return r;
		} else {
			W("cpu.cfs_period_us", CPU_PERIOD_US);
			W("cpu.cfs_quota_us", quota);
		}
		cg->limited |= MOAT_CG_CPU;
	}
#undef W
	return 0;
}

static unsigned wanted(const struct moat_cgroup_limits *l)
{
	return (l->memory ? MOAT_CG_MEMORY : 0) | (l->pids ? MOAT_CG_PIDS : 0) |
		(l->cpus_milli ? MOAT_CG_CPU : 0);
}

int moat_cgroup_create_with(const struct moat_cgroup_info *info, const struct moat_cgroup_limits *l,
			    const char *run_id, struct moat_cgroup **ret,
			    struct moat_error *ret_err)
{
	char names[64];
	unsigned need = wanted(l), covered = 0;
	int first_err = 0;

	if (!run_id_valid(run_id))
		return fail(ret_err, -EINVAL, "invalid run id for a cgroup name");
	if (info->mode == 0)
		return need ? fail(ret_err, -EOPNOTSUPP, "no cgroup hierarchy is mounted")
			    : -EOPNOTSUPP;
	for (unsigned i = 0; i < info->n_hier; i++)
		covered |= info->hier[i].controllers;
	if (need & ~covered)
		return fail(ret_err, -EOPNOTSUPP, "cgroup controller(s) %s not available",
			    moat_cgroup_ctrl_names(need & ~covered, names, sizeof(names)));

	struct moat_cgroup *cg = calloc(1, sizeof(*cg));
	if (!cg)
		return fail(ret_err, -ENOMEM, "out of memory");
	cg->fake = info->fake;

	for (unsigned i = 0; i < info->n_hier; i++) {
		const struct moat_cgroup_hier *h = &info->hier[i];
		unsigned req = h->controllers & need;
		struct cg_dir *d = &cg->d[cg->n];
		const char *file = "";
		int r;

		/* v1 hierarchies without one of our controllers, and a controller-less
		 * v2 mount on a pure-v2 machine, are of no use. */
		if (h->controllers == 0 && !(h->version == 2 && info->mode == 1))
			continue;
		r = make_dir(h, run_id, cg->fake, d);
		if (r >= 0) {
			cg->n++;
			r = set_limits(cg, d, l, &file);
			if (r < 0) {
				int e = fail(ret_err, r, "cannot set %s/%s: %s", d->path, file,
					     strerror(-r));
				moat_cgroup_destroy(cg);
				return e;
			}
			continue;
		}
		if (req) {
			char p[MOAT_CGROUP_PATH + 16];
			snprintf(p, sizeof(p), "%s/moat/%s", h->base, run_id);
			int e = fail(ret_err, r, "cannot create cgroup %s (%s): %s", p,
				     moat_cgroup_ctrl_names(req, names, sizeof(names)),
				     strerror(-r));
			moat_cgroup_destroy(cg);
			return e;
		}
		if (!first_err)
			first_err = r;
	}
	if (cg->n == 0) {
		cg_free(cg);
		return fail(ret_err, first_err ? first_err : -EOPNOTSUPP,
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
		return fail(ret_err, r, "cannot probe cgroups: %s", strerror(-r));
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
		struct cg_dir *d = &cg->d[cg->n];
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
		if (exists_at(fd, "freezer.state"))
			d->controllers |= MOAT_CG_FREEZER;
		snprintf(d->path, sizeof(d->path), "%s", dirs[i]);
		char *slash = strrchr(d->path, '/');
		if (slash && slash > d->path && (size_t)(slash - d->path) >= 5 &&
		    strncmp(slash - 5, "/moat", 5) == 0)
			copy_str(d->parent, sizeof(d->parent), d->path, (size_t)(slash - d->path));
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
		int r = write_u64_at(cg->d[i].fd, "cgroup.procs", (uint64_t)pid, cg->fake);
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
static int for_each_pid(const struct cg_dir *d, bool do_kill)
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
	for (unsigned i = 0; i < cg->n; i++) {
		const struct cg_dir *d = &cg->d[i];
		if (d->controllers & MOAT_CG_FREEZER)
			(void)write_at(d->fd, "freezer.state", on ? "FROZEN" : "THAWED", cg->fake);
		else if (d->version == 2 && exists_at(d->fd, "cgroup.freeze"))
			(void)write_at(d->fd, "cgroup.freeze", on ? "1" : "0", cg->fake);
	}
	if (!on)
		return;
	/* Wait (briefly) until the freeze took: FREEZING -> FROZEN, frozen 1. */
	uint64_t end = now_ms() + 500;
	for (unsigned i = 0; i < cg->n; i++) {
		const struct cg_dir *d = &cg->d[i];
		char buf[64];
		uint64_t v;
		for (;;) {
			bool done = true;
			if (d->controllers & MOAT_CG_FREEZER)
				done = read_at(d->fd, "freezer.state", buf, sizeof(buf)) < 0 ||
					startswith(buf, "FROZEN");
			else if (d->version == 2 && exists_at(d->fd, "cgroup.freeze"))
				done = read_key_at(d->fd, "cgroup.events", "frozen", &v) < 0 ||
					v == 1;
			if (done || now_ms() > end)
				break;
			sleep_ms(1);
		}
	}
}

int moat_cgroup_kill(struct moat_cgroup *cg)
{
	if (!cg)
		return 0;
	uint64_t end = now_ms() + KILL_TIMEOUT_MS;
	for (unsigned round = 0;; round++) {
		if (count_procs(cg) == 0)
			return 0;
		if (now_ms() > end)
			return -ETIMEDOUT;
		bool killed = false;
		for (unsigned i = 0; i < cg->n; i++) {
			const struct cg_dir *d = &cg->d[i];
			/* cgroup.kill (5.14+): atomic, also catches a fork in flight. */
			if (d->version == 2 && exists_at(d->fd, "cgroup.kill") &&
			    write_at(d->fd, "cgroup.kill", "1", cg->fake) >= 0)
				killed = true;
		}
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
			sleep_ms(2);
	}
}

/* ---- stats ------------------------------------------------------------------- */

int moat_cgroup_stats(const struct moat_cgroup *cg, struct moat_cgroup_stats *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (unsigned i = 0; cg && i < cg->n; i++) {
		const struct cg_dir *d = &cg->d[i];
		uint64_t v;
		if (d->controllers & MOAT_CG_MEMORY) {
			if (d->version == 2) {
				if (read_u64_at(d->fd, "memory.peak", &ret->mem_peak) >= 0)
					ret->have_mem_peak = true;
				(void)read_u64_at(d->fd, "memory.current", &ret->mem_current);
				if (read_key_at(d->fd, "memory.events", "oom_kill", &v) >= 0)
					ret->oom_kills = v;
			} else {
				if (read_u64_at(d->fd, "memory.max_usage_in_bytes",
						&ret->mem_peak) >= 0)
					ret->have_mem_peak = true;
				(void)read_u64_at(d->fd, "memory.usage_in_bytes",
						  &ret->mem_current);
				if (read_key_at(d->fd, "memory.oom_control", "oom_kill", &v) >= 0)
					ret->oom_kills = v;
				(void)read_u64_at(d->fd, "memory.failcnt", &ret->mem_failcnt);
			}
		}
		if (d->controllers & MOAT_CG_PIDS) {
			(void)read_u64_at(d->fd, "pids.current", &ret->pids_current);
			if (read_u64_at(d->fd, "pids.peak", &ret->pids_peak) >= 0)
				ret->have_pids_peak = true;
			if (read_key_at(d->fd, "pids.events", "max", &v) >= 0)
				ret->pids_max_hits = v;
		}
		/* CPU time: v2 cpu.stat exists even without the cpu controller. */
		if (d->version == 2 && !ret->have_cpu &&
		    read_key_at(d->fd, "cpu.stat", "usage_usec", &ret->cpu_usage_us) >= 0) {
			(void)read_key_at(d->fd, "cpu.stat", "user_usec", &ret->cpu_user_us);
			(void)read_key_at(d->fd, "cpu.stat", "system_usec", &ret->cpu_sys_us);
			ret->have_cpu = true;
		}
		if (d->version == 1 && (d->controllers & MOAT_CG_CPUACCT) &&
		    read_u64_at(d->fd, "cpuacct.usage", &v) >= 0) {
			ret->cpu_usage_us = v / 1000;
			if (read_u64_at(d->fd, "cpuacct.usage_user", &v) >= 0)
				ret->cpu_user_us = v / 1000;
			if (read_u64_at(d->fd, "cpuacct.usage_sys", &v) >= 0)
				ret->cpu_sys_us = v / 1000;
			ret->have_cpu = true;
		}
	}
	ret->oom = ret->oom_kills > 0;
	ret->pids_hit = ret->pids_max_hits > 0;
	return 0;
}

/* ---- destroy ----------------------------------------------------------------- */

static void closedirp(DIR **d)
{
	if (*d)
		closedir(*d);
}

static void remove_dir(struct cg_dir *d)
{
	d->fd = safe_close(d->fd);
}

int moat_cgroup_destroy(struct moat_cgroup *cg)
{
	if (!cg)
		return 0;
	int r = moat_cgroup_kill(cg), first = r < 0 ? r : 0;
	for (unsigned i = 0; i < cg->n; i++) {
		struct cg_dir *d = &cg->d[i];
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
		uint64_t end = now_ms() + RMDIR_TIMEOUT_MS;
		while (rmdir(d->path) < 0) {
			if (errno == ENOENT)
				break;
			if (errno != EBUSY || now_ms() > end) {
				if (!first)
					first = negerrno();
				break;
			}
			sleep_ms(5);
		}
		/* The shared moat/ parent: gone when the last run leaves it. */
		if (d->parent[0] && !cg->fake)
			(void)rmdir(d->parent);
	}
	free(cg);
	return first;
}

/* ---- doctor ----------------------------------------------------------------- */

int moat_cgroup_describe(const struct moat_cgroup_info *info, char *buf, size_t len)
{
	char a[64], u[64];
	size_t off = 0;
	int n;
#define ADD(...) \
	do { \
		n = snprintf(buf + off, len - off, __VA_ARGS__); \
		if (n < 0 || (size_t)n >= len - off) \
			return -ENOBUFS; \
		off += (size_t)n; \
	} while (0)
	if (len == 0)
		return -ENOBUFS;
	buf[0] = 0;
	ADD("cgroup: %s; controllers available: %s; usable by this user: %s%s\n",
	    info->mode == 2	      ? "v2 (unified)"
		    : info->mode == 1 ? "v1 (legacy/hybrid)"
				      : "none",
	    info->available ? moat_cgroup_ctrl_names(info->available, a, sizeof(a)) : "none",
	    info->usable ? moat_cgroup_ctrl_names(info->usable, u, sizeof(u)) : "none",
	    info->v2_tracking ? "; v2 tracking group for cgroup.kill" : "");
	for (unsigned i = 0; i < info->n_hier; i++) {
		const struct moat_cgroup_hier *h = &info->hier[i];
		ADD("  v%d %-16s groups below %s/moat (%s)\n", h->version,
		    h->controllers ? moat_cgroup_ctrl_names(h->controllers, a, sizeof(a)) : "-",
		    h->base, h->writable ? "writable" : "not writable");
	}
#undef ADD
	return (int)off;
}

/* ---- rlimits ----------------------------------------------------------------- */

void moat_rlimits_plan(const struct moat_cgroup_limits *l, uint64_t nofile, uint64_t fsize,
		       bool degraded, struct moat_rlimit_opts *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->nofile = nofile;
	ret->fsize = fsize;
	if (degraded) {
		ret->as = l->memory;
		ret->nproc = l->pids;
	}
}

static int lower(int resource, uint64_t want)
{
	struct rlimit rl;
	if (getrlimit(resource, &rl) < 0)
		return negerrno();
	rlim_t v = (rlim_t)want;
	if (rl.rlim_max != RLIM_INFINITY && v > rl.rlim_max)
		v = rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = v;
	if (setrlimit(resource, &rl) < 0)
		return negerrno();
	return 0;
}

int moat_rlimits_apply(const struct moat_rlimit_opts *o)
{
	struct rlimit core = {0, 0};
	int r;
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		return negerrno();
	if (o->nofile && (r = lower(RLIMIT_NOFILE, o->nofile)) < 0)
		return r;
	if (o->fsize && (r = lower(RLIMIT_FSIZE, o->fsize)) < 0)
		return r;
	if (o->as && (r = lower(RLIMIT_AS, o->as)) < 0)
		return r;
	if (o->nproc && (r = lower(RLIMIT_NPROC, o->nproc)) < 0)
		return r;
	return 0;
}
