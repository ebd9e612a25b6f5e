/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Detection: which cgroup hierarchies the machine mounts (v2, v1 or the hybrid
 * of both), where we sit in each and where run groups can go; the doctor report. */
#include <stdio.h>

#include "limits/cgroup_int.h"
#include "shared/macro.h"

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

/* root/proc/self/NAME, for reading. */
static int open_proc_self(const char *root, const char *name, FILE **ret)
{
	char path[MOAT_CGROUP_PATH];
	int r = moat_cgroup_path_fmt(path, sizeof(path), "%s/proc/self/%s", root, name);
	if (r < 0)
		return r;
	*ret = fopen(path, "re");
	return *ret ? 0 : negerrno();
}

static int read_mountinfo(const char *root, struct mnt *m, unsigned max, unsigned *ret_n)
{
	_cleanup_fclose_ FILE *f = NULL;
	int r = open_proc_self(root, "mountinfo", &f);
	if (r < 0)
		return r;
	_cleanup_free_ char *line = NULL;
	size_t cap = 0;
	unsigned n = 0;
	ssize_t len;
	while ((len = getline(&line, &cap, f)) > 0) {
		if (len > MOAT_CGROUP_LINE_MAX)
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
		unsigned ctrls = v2 ? 0 : moat_cgroup_ctrl_mask(superopts, ",");
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
	_cleanup_fclose_ FILE *f = NULL;
	int r = open_proc_self(root, "cgroup", &f);
	if (r < 0)
		return r;
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
					  : (*list && moat_cgroup_ctrl_mask(list, ",") == ctrls);
		if (!match)
			continue;
		if (*p != '/' || strstr(p, "/..") || strlen(p) >= len)
			return -ENOENT; /* outside our cgroup namespace */
		snprintf(buf, len, "%s", p);
		return 0;
	}
	return -ENOENT;
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
		if (moat_cgroup_path_fmt(h->mount, sizeof(h->mount), "%s%s", root, m[i].point) < 0)
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
		if (moat_cgroup_path_fmt(h->self, sizeof(h->self), "%s%s", h->mount,
					 streq(rel, "/") ? "" : rel) < 0)
			continue;
		if (h->version == 1) {
			h->controllers = m[i].controllers;
			moat_cgroup_copy_str(h->base, sizeof(h->base), h->self, strlen(h->self));
			h->writable = moat_cgroup_writable_dir(h->base);
			ret->available |= h->controllers;
		} else {
			unsigned avail = moat_cgroup_read_ctrl_file(h->mount, "cgroup.controllers");
			ret->available |= avail & ~v1_ctrls;
			moat_cgroup_v2_pick_base(h, avail != 0);
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
