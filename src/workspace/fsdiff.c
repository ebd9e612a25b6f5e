/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Workspace change manifest: the walk of the overlay upper layer against the
 * lower one, xattr comparison, shared helpers and the compute entry point. */
#include "workspace/fsdiff_int.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "shared/jsonesc.h"
#include "shared/macro.h"
#include "shared/openat2.h"

/* ---- helpers -------------------------------------------------------------- */

bool moat_fsdiff_is_whiteout(mode_t mode, dev_t rdev)
{
	return S_ISCHR(mode) && major(rdev) == 0 && minor(rdev) == 0;
}

bool moat_fsdiff_link_escapes(const char *path, const char *target)
{
	long depth = 0;

	if (!target || !*target || target[0] == '/')
		return true;
	/* the link lives in dirname(path): count its components */
	for (const char *p = path; (p = strchr(p, '/')); p++)
		depth++;
	for (const char *s = target; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (--depth < 0)
				return true;
		} else if (!(n == 0 || (n == 1 && s[0] == '.'))) {
			depth++;
		}
		s += n;
		while (*s == '/')
			s++;
	}
	return false;
}

int moat_fsdiff_openat2_beneath(int dirfd, const char *path, uint64_t flags, mode_t mode)
{
	/* NO_XDEV: a mount inside the host directory was not visible in the
	 * overlay (overlayfs does not cross mounts), so nothing the sandbox did
	 * may reach into one */
	long fd = moat_openat2(
		dirfd, path && *path ? path : ".", flags | O_CLOEXEC | O_NOFOLLOW, mode,
		RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
	return fd < 0 ? negerrno() : (int)fd;
}

/* Split "a/b/c" into the parent ("a/b", or "." for top level) opened beneath
 * root as O_PATH|O_DIRECTORY, and the last component. */
int moat_fsdiff_open_parent(int root, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		*ret_name = path;
		return moat_fsdiff_openat2_beneath(root, ".", O_PATH | O_DIRECTORY, 0);
	}
	_cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	*ret_name = slash + 1;
	return moat_fsdiff_openat2_beneath(root, dir, O_PATH | O_DIRECTORY, 0);
}

static int sha256_fd(int fd, uint8_t out[32])
{
	struct sha256_ctx ctx;
	char buf[65536];
	int r = 0;

	sha256_init(&ctx);
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = negerrno();
			break;
		}
		if (n == 0)
			break;
		sha256_update(&ctx, (size_t)n, (const uint8_t *)buf);
	}
	if (r == 0)
		sha256_digest(&ctx, SHA256_DIGEST_SIZE, out);
	return r;
}

/* Hash name under dirfd if it is (still) a regular file. */
int moat_fsdiff_sha256_at(int dirfd, const char *name, uint8_t out[32])
{
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	struct stat st;
	if (fd < 0)
		return negerrno();
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode))
		return -EINVAL;
	return sha256_fd(fd, out);
}

void moat_fsdiff_hex(const uint8_t *in, size_t n, char *out)
{
	static const char h[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[in[i] >> 4];
		out[2 * i + 1] = h[in[i] & 15];
	}
	out[2 * n] = '\0';
}

int moat_fsdiff_unhex(const char *s, uint8_t *out, size_t n)
{
	if (strlen(s) != 2 * n)
		return -EINVAL;
	for (size_t i = 0; i < 2 * n; i++) {
		int v = s[i] >= '0' && s[i] <= '9'   ? s[i] - '0'
			: s[i] >= 'a' && s[i] <= 'f' ? s[i] - 'a' + 10
						     : -1;
		if (v < 0)
			return -EINVAL;
		if (i % 2 == 0)
			out[i / 2] = (uint8_t)(v << 4);
		else
			out[i / 2] |= (uint8_t)v;
	}
	return 0;
}

const char *moat_fs_change_name(enum moat_fs_change c)
{
	static const char *const n[] = {"created", "modified", "deleted", "mode", "xattr"};
	return (unsigned)c < ELEMENTSOF(n) ? n[c] : "?";
}

const char *moat_fs_state_name(enum moat_fs_state s)
{
	static const char *const n[] = {"pending", "applied",  "held",	 "refused",
					"failed",  "conflict", "dropped"};
	return (unsigned)s < ELEMENTSOF(n) ? n[s] : "?";
}

const char *moat_fsdiff_type_name(mode_t t)
{
	switch (t & S_IFMT) {
	case S_IFREG:
		return "file";
	case S_IFDIR:
		return "dir";
	case S_IFLNK:
		return "symlink";
	case S_IFIFO:
		return "fifo";
	case S_IFSOCK:
		return "socket";
	case S_IFCHR:
		return "chardev";
	case S_IFBLK:
		return "blockdev";
	}
	return "none";
}

mode_t moat_fsdiff_type_from_name(const char *s)
{
	static const struct {
		const char *n;
		mode_t t;
	} m[] = {{"file", S_IFREG},	{"dir", S_IFDIR},     {"symlink", S_IFLNK},
		 {"fifo", S_IFIFO},	{"socket", S_IFSOCK}, {"chardev", S_IFCHR},
		 {"blockdev", S_IFBLK}, {"none", 0}};
	for (size_t i = 0; s && i < ELEMENTSOF(m); i++)
		if (streq(s, m[i].n))
			return m[i].t;
	return (mode_t)-1;
}

/* ---- manifest building ---------------------------------------------------- */

struct moat_manifest *moat_manifest_free(struct moat_manifest *m)
{
	if (!m)
		return NULL;
	for (size_t i = 0; i < m->n; i++) {
		free(m->entries[i].path);
		free(m->entries[i].target);
		free(m->entries[i].xattrs);
		free(m->entries[i].xattr_diff);
		free(m->entries[i].flagged);
		free(m->entries[i].refused);
	}
	free(m->entries);
	free(m->workspace);
	free(m);
	return NULL;
}

static struct moat_fs_entry *add_entry(struct walk *w, const char *path, enum moat_fs_change c)
{
	struct moat_manifest *m = w->m;
	struct moat_fs_entry *e;

	if (m->n >= w->lim.max_entries)
		return NULL;
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 64;
		struct moat_fs_entry *n = reallocarray(m->entries, cap, sizeof(*n));
		if (!n)
			return NULL;
		m->entries = n;
		m->cap = cap;
	}
	e = &m->entries[m->n];
	*e = (struct moat_fs_entry){.change = c};
	e->path = strdup(path);
	if (!e->path)
		return NULL;
	m->n++;
	return e;
}

int moat_fsdiff_set_str(char **dst, const char *s)
{
	if (*dst || !s)
		return 0;
	*dst = strdup(s);
	return *dst ? 0 : -ENOMEM;
}

/* Does the overlay mark this upper entry with xattr name ("opaque", …)? */
static bool ovl_xattr(int fd, const char *what, bool want_y)
{
	static const char *const prefixes[] = {"trusted.overlay.", "user.overlay."};
	for (size_t i = 0; i < ELEMENTSOF(prefixes); i++) {
		char name[64], val[8];
		snprintf(name, sizeof(name), "%s%s", prefixes[i], what);
		ssize_t n = fgetxattr(fd, name, val, sizeof(val));
		if (n < 0 && errno == ERANGE)
			n = sizeof(val); /* present, long value */
		if (n >= 0 && (!want_y || (n == 1 && val[0] == 'y')))
			return true;
	}
	return false;
}

/* Compare the "scripts" objects of the lower and upper package.json. Returns
 * a reason when they differ (or cannot be compared), else NULL. */
static const char *pkg_json_check(int upper, int lower, const char *name)
{
	json_t *j[2] = {NULL, NULL};
	int fds[2] = {upper, lower};
	const char *why = NULL;

	for (int i = 0; i < 2; i++) {
		_cleanup_close_ int fd = -1;
		struct stat st;
		json_error_t err;
		char *buf;
		ssize_t n;

		if (fds[i] < 0)
			continue;
		fd = openat(fds[i], name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			if (i == 1)
				continue; /* no old one: compare with nothing */
			why = "package.json could not be read for a scripts check";
			goto out;
		}
		if ((uint64_t)st.st_size > PKG_JSON_MAX) {
			why = "package.json too large for a scripts check";
			goto out;
		}
		buf = malloc((size_t)st.st_size + 1);
		if (!buf) {
			why = "package.json could not be checked";
			goto out;
		}
		n = read(fd, buf, (size_t)st.st_size);
		j[i] = n >= 0 ? json_loadb(buf, (size_t)n, 0, &err) : NULL;
		free(buf);
		if (!j[i] && i == 0) {
			why = "package.json does not parse: scripts cannot be checked";
			goto out;
		}
	}
	{
		json_t *a = json_object_get(j[0], "scripts"), *b = json_object_get(j[1], "scripts");
		bool empty_a = !a || (json_is_object(a) && json_object_size(a) == 0);
		bool empty_b = !b || (json_is_object(b) && json_object_size(b) == 0);
		if (!(empty_a && empty_b) && !(a && b && json_equal(a, b)))
			why = "package.json scripts changed: run by npm/yarn on install, test, build";
	}
out:
	json_decref(j[0]);
	json_decref(j[1]);
	return why;
}

/* ---- extended attributes --------------------------------------------------- */

static int name_cmp(const void *a, const void *b);

#define XATTR_LIST_MAX_BYTES 65536
#define XATTR_VALUE_MAX 65536
#define XATTR_TOTAL_MAX (256u << 10)

/* The xattrs a change of which is a change of the file. Overlay metadata
 * (trusted.overlay.*, user.overlay.*) and security labels the system sets
 * (security.selinux, …) are not the sandbox's changes. */
static bool xattr_tracked(const char *n)
{
	if (strncmp(n, "trusted.overlay.", 16) == 0 || strncmp(n, "user.overlay.", 13) == 0)
		return false;
	return strncmp(n, "user.", 5) == 0 || strncmp(n, "trusted.", 8) == 0 ||
		streq(n, "security.capability") || strncmp(n, "system.posix_acl_", 17) == 0;
}

static bool xattr_name_clean(const char *n)
{
	for (; *n; n++)
		if (!isalnum((unsigned char)*n) && !strchr("._-@+", *n))
			return false;
	return true;
}

/* The tracked xattrs of fd as "name=hex\n" lines, sorted; *ret NULL when
 * there are none. -E2BIG past the bounds or for a name that is not plain. */
static int xattrs_read(int fd, char **ret)
{
	_cleanup_free_ char *list = NULL, *val = NULL;
	_cleanup_free_ char **names = NULL;
	struct moat_jbuf b;
	size_t nn = 0, total = 0;
	ssize_t n;
	int r = 0;

	*ret = NULL;
	n = flistxattr(fd, NULL, 0);
	if (n < 0)
		return errno == ENOTSUP || errno == EOPNOTSUPP ? 0 : negerrno();
	if (n == 0)
		return 0;
	if (n > XATTR_LIST_MAX_BYTES)
		return -E2BIG;
	if (!(list = malloc((size_t)n + 1)) || !(names = calloc((size_t)n, sizeof(char *))) ||
	    !(val = malloc(XATTR_VALUE_MAX)))
		return -ENOMEM;
	n = flistxattr(fd, list, (size_t)n);
	if (n < 0)
		return errno == ERANGE ? -E2BIG : negerrno();
	list[n] = '\0';
	for (char *s = list; s < list + n; s += strlen(s) + 1)
		if (*s && xattr_tracked(s)) {
			if (!xattr_name_clean(s))
				return -E2BIG;
			names[nn++] = s;
		}
	if (nn == 0)
		return 0;
	qsort(names, nn, sizeof(char *), name_cmp);
	moat_jbuf_init(&b, 2 * XATTR_TOTAL_MAX + 4096);
	for (size_t i = 0; r >= 0 && i < nn; i++) {
		ssize_t v = fgetxattr(fd, names[i], val, XATTR_VALUE_MAX);
		if (v < 0) {
			r = errno == ERANGE ? -E2BIG : errno == ENODATA ? 0 : negerrno();
			if (r == 0)
				continue;
			break;
		}
		total += strlen(names[i]) + (size_t)v;
		if (total > XATTR_TOTAL_MAX) {
			r = -E2BIG;
			break;
		}
		_cleanup_free_ char *h = malloc(2 * (size_t)v + 1);
		if (!h) {
			r = -ENOMEM;
			break;
		}
		moat_fsdiff_hex((const uint8_t *)val, (size_t)v, h);
		r = moat_jbuf_printf(&b, "%s=%s\n", names[i], h);
	}
	if (r < 0) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

/* The value line of name in a "name=hex\n" set, or NULL. */
static const char *xattr_find(const char *set, const char *name, size_t nlen)
{
	for (const char *s = set; s && *s;) {
		const char *eq = strchr(s, '='), *nl = strchr(s, '\n');
		if (!eq || !nl)
			return NULL;
		if ((size_t)(eq - s) == nlen && memcmp(s, name, nlen) == 0)
			return eq + 1;
		s = nl + 1;
	}
	return NULL;
}

static bool xattr_same_value(const char *a, const char *b)
{
	size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
	return la == lb && memcmp(a, b, la) == 0;
}

/* "+name ~name -name" from before to after, NULL (ret) when equal. */
static int xattr_diff(const char *before, const char *after, char **ret)
{
	struct moat_jbuf b;
	int r = 0;
	bool any = false;

	*ret = NULL;
	moat_jbuf_init(&b, 1u << 20);
	for (int pass = 0; pass < 2 && r >= 0; pass++) {
		const char *set = pass ? before : after, *other = pass ? after : before;
		for (const char *s = set; s && *s && r >= 0;) {
			const char *eq = strchr(s, '='), *nl = strchr(s, '\n');
			if (!eq || !nl)
				break;
			size_t nlen = (size_t)(eq - s);
			const char *ov = xattr_find(other, s, nlen);
			char mark = 0;
			if (!ov)
				mark = pass ? '-' : '+';
			else if (!pass && !xattr_same_value(eq + 1, ov))
				mark = '~';
			if (mark) {
				r = moat_jbuf_printf(&b, "%s%c%.*s", any ? " " : "", mark,
						     (int)nlen, s);
				any = true;
			}
			s = nl + 1;
		}
	}
	if (r < 0 || !any) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

/* Does the diff add or change a name of prefix? */
static bool xattr_diff_sets(const char *diff, const char *prefix)
{
	size_t pl = strlen(prefix);
	for (const char *s = diff; s && *s;) {
		if ((*s == '+' || *s == '~') && strncmp(s + 1, prefix, pl) == 0)
			return true;
		s += strcspn(s, " ");
		while (*s == ' ')
			s++;
	}
	return false;
}

/* Make fd's user.* xattrs exactly those of set (the other namespaces are
 * refused or left to the host: ACLs come from the host directory). */
int moat_fsdiff_xattrs_apply(int fd, const char *set)
{
	char list[XATTR_LIST_MAX_BYTES];
	ssize_t n = flistxattr(fd, list, sizeof(list) - 1);
	if (n < 0 && errno != ENOTSUP && errno != EOPNOTSUPP)
		return negerrno();
	for (char *s = list; n > 0 && s < list + n; s += strlen(s) + 1)
		if (strncmp(s, "user.", 5) == 0 && !xattr_find(set, s, strlen(s)) &&
		    fremovexattr(fd, s) < 0 && errno != ENODATA)
			return negerrno();
	for (const char *s = set; s && *s;) {
		const char *eq = strchr(s, '='), *nl = strchr(s, '\n');
		if (!eq || !nl)
			return -EINVAL;
		if (strncmp(s, "user.", 5) == 0) {
			char name[256];
			size_t nlen = (size_t)(eq - s), hl = (size_t)(nl - eq - 1);
			_cleanup_free_ uint8_t *v = malloc(hl / 2 + 1);
			_cleanup_free_ char *h = strndup(eq + 1, hl);
			if (nlen >= sizeof(name) || !v || !h || moat_fsdiff_unhex(h, v, hl / 2) < 0)
				return -EINVAL;
			memcpy(name, s, nlen);
			name[nlen] = '\0';
			if (fsetxattr(fd, name, v, hl / 2, 0) < 0)
				return negerrno();
		}
		s = nl + 1;
	}
	return 0;
}

/* xattrs of the entry's new file at parent/name (a temporary or the final name). */
int moat_fsdiff_xattrs_apply_at(int parent, const char *name, const struct moat_fs_entry *e)
{
	if (!e->xattrs && !e->xattr_diff)
		return 0;
	_cleanup_close_ int fd = openat(parent, name,
					O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
						(S_ISDIR(e->type) ? O_DIRECTORY : 0));
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return negerrno();
	if ((st.st_mode & S_IFMT) != e->type)
		return -ESTALE;
	return moat_fsdiff_xattrs_apply(fd, e->xattrs);
}

/* The class and reason of an entry (docs/FLAGGED.md): a symlink leaving the
 * tree first (wherever it is), then a dependency tree (where nothing runs
 * automatically: a .travis.yml or package.json inside node_modules/ is not
 * the project's), then the path rules, then new executables and the
 * project's own package.json scripts. The git pass may override deps and
 * executable later (a nested repository, a link to a git directory). */
static int flag_entry(struct walk *w, struct moat_fs_entry *e, int upper, int lower,
		      const char *name)
{
	mode_t t = e->type ? e->type : e->old_type;
	enum moat_risk_class cls = MOAT_RISK_NONE;
	const char *why = NULL;

	if (S_ISLNK(e->type) && e->change != MOAT_FS_DELETED &&
	    moat_fsdiff_link_escapes(e->path, e->target)) {
		why = "symlink points outside the workspace";
		cls = MOAT_RISK_SYMLINK_OUT;
	} else if (moat_risk_in_deps(e->path, t)) {
		why = "inside a dependency tree: runs only when the project uses it";
		cls = MOAT_RISK_DEPS;
	} else if ((why = moat_flag_match_class(w->rules, e->path, t, &cls))) {
		/* a path rule */
	} else if (e->change != MOAT_FS_DELETED) {
		if (S_ISREG(e->type) && (e->mode & 0111) &&
		    (!S_ISREG(e->old_type) || !(e->old_mode & 0111))) {
			why = "newly executable";
			cls = MOAT_RISK_EXECUTABLE;
		} else if (S_ISREG(e->type) && strcasecmp(name, "package.json") == 0 &&
			   (why = pkg_json_check(upper, lower, name))) {
			cls = MOAT_RISK_MANIFEST;
		}
	}
	if (why)
		e->cls = cls;
	return moat_fsdiff_set_str(&e->flagged, why);
}

int moat_fsdiff_refuse_entry(struct moat_fs_entry *e)
{
	const char *why = NULL;
	if (e->change == MOAT_FS_DELETED)
		return 0;
	if (S_ISFIFO(e->type))
		why = "FIFO";
	else if (S_ISSOCK(e->type))
		why = "socket";
	else if (S_ISCHR(e->type) || S_ISBLK(e->type))
		why = "device node";
	else if (S_ISREG(e->type) && (e->mode & (S_ISUID | S_ISGID)))
		why = "set-id bits";
	else if (xattr_diff_sets(e->xattr_diff, "security.capability"))
		why = "file capabilities (security.capability xattr)";
	else if (xattr_diff_sets(e->xattr_diff, "trusted."))
		why = "trusted.* extended attribute";
	return moat_fsdiff_set_str(&e->refused, why);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of a directory (without . and ..). */
int moat_fsdiff_list_dir(int dirfd, char ***ret, size_t *ret_n)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char **v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;
	int r = 0;

	if (fd < 0)
		return negerrno();
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((errno = 0, de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			char **nv = reallocarray(v, cap, sizeof(char *));
			if (!nv) {
				r = -ENOMEM;
				break;
			}
			v = nv;
		}
		if (!(v[n] = strdup(de->d_name))) {
			r = -ENOMEM;
			break;
		}
		n++;
	}
	if (r == 0 && errno)
		r = negerrno();
	closedir(d);
	if (r < 0) {
		for (size_t i = 0; i < n; i++)
			free(v[i]);
		free(v);
		return r;
	}
	if (n)
		qsort(v, n, sizeof(char *), name_cmp);
	*ret = v;
	*ret_n = n;
	return 0;
}

void moat_fsdiff_free_names(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int walk_dir(struct walk *w, int upper, int lower, bool hidden, unsigned depth);

static int walk_entry(struct walk *w, int upper, int lower, bool hidden, unsigned depth,
		      const char *name)
{
	struct stat us, ls;
	bool has_lower = false;
	struct moat_fs_entry *e = NULL;
	int r;

	if (fstatat(upper, name, &us, AT_SYMLINK_NOFOLLOW) < 0)
		return negerrno();
	if (lower >= 0) {
		if (fstatat(lower, name, &ls, AT_SYMLINK_NOFOLLOW) == 0)
			has_lower = true;
		else if (errno != ENOENT)
			return negerrno();
	}

	/* a host edit during the run (strictly after its start, ctime's clock) */
	bool host_changed = has_lower && w->lim.since_ns > 0 && !S_ISDIR(ls.st_mode) &&
		(int64_t)ls.st_ctim.tv_sec * 1000000000 + ls.st_ctim.tv_nsec > w->lim.since_ns;

	if (moat_fsdiff_is_whiteout(us.st_mode, us.st_rdev)) {
		if (!has_lower)
			return 0; /* whiteout of nothing visible */
		e = add_entry(w, w->path, MOAT_FS_DELETED);
		if (!e)
			return w->m->n >= w->lim.max_entries ? -E2BIG : -ENOMEM;
		e->host_changed = host_changed;
		e->old_type = ls.st_mode & S_IFMT;
		e->old_mode = ls.st_mode & 07777;
		e->old_size = S_ISREG(ls.st_mode) ? (uint64_t)ls.st_size : 0;
		if (S_ISREG(ls.st_mode) && (uint64_t)ls.st_size <= w->lim.max_file_bytes &&
		    moat_fsdiff_sha256_at(lower, name, e->old_sha256) == 0)
			e->has_old_sha = true;
		return flag_entry(w, e, upper, lower, name);
	}

	mode_t ut = us.st_mode & S_IFMT, lt = has_lower ? (ls.st_mode & S_IFMT) : 0;
	enum moat_fs_change c = !has_lower ? MOAT_FS_CREATED : MOAT_FS_MODIFIED;
	uint8_t usha[32];
	bool have_usha = false, too_big = false, same = false, xbad = false;
	_cleanup_close_ int ufd = -1;
	_cleanup_free_ char *nx = NULL, *ox = NULL, *xdiff = NULL;

	if (ut == S_IFDIR || ut == S_IFREG) {
		/* The sandbox may leave files it owns unreadable (mode 0000) or
		 * directories unsearchable; the upper layer is ours to read now
		 * (the sandbox is gone), so grant the owner access there. The
		 * manifest keeps the original mode. Root reads regardless. */
		mode_t need = ut == S_IFDIR ? 0500 : 0400;
		if ((us.st_mode & need) != need && us.st_uid == geteuid() && geteuid() != 0)
			(void)!fchmodat(upper, name, (us.st_mode & 07777) | need, 0);
		ufd = openat(upper, name,
			     O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
				     (ut == S_IFDIR ? O_DIRECTORY : 0));
		if (ufd < 0)
			return negerrno();
	}

	if (ut == S_IFREG) {
		/* metacopy: the data would be in the lower layer; not supported */
		if (ovl_xattr(ufd, "metacopy", false)) {
			c = has_lower ? MOAT_FS_MODIFIED : MOAT_FS_CREATED;
		} else if ((uint64_t)us.st_size > w->lim.max_file_bytes) {
			/* e.g. a sparse 1 TiB file: never read, never applied */
			too_big = true;
		} else {
			r = sha256_fd(ufd, usha);
			if (r < 0)
				return r;
			have_usha = true;
		}
		if (has_lower && lt == S_IFREG && have_usha && us.st_size == ls.st_size) {
			uint8_t lsha[32];
			if (moat_fsdiff_sha256_at(lower, name, lsha) == 0 &&
			    memcmp(lsha, usha, 32) == 0) {
				if ((us.st_mode & 07777) == (ls.st_mode & 07777))
					same = true; /* copied up: unchanged unless its xattrs */
				else
					c = MOAT_FS_MODE;
			}
		}
	} else if (ut == S_IFDIR) {
		if (has_lower && lt == S_IFDIR)
			c = (us.st_mode & 07777) != (ls.st_mode & 07777)
				? MOAT_FS_MODE
				: (enum moat_fs_change) - 1;
	}
	if (ufd >= 0) {
		/* extended attributes: a change of one is a change */
		r = xattrs_read(ufd, &nx);
		if (r == -E2BIG)
			xbad = true;
		else if (r < 0)
			return r;
		if (has_lower && lt == ut && !xbad) {
			_cleanup_close_ int lfd2 =
				openat(lower, name,
				       O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY |
					       (ut == S_IFDIR ? O_DIRECTORY : 0));
			if (lfd2 >= 0 && xattrs_read(lfd2, &ox) == -E2BIG)
				xbad = true;
		}
		if (!xbad && (r = xattr_diff(ox, nx, &xdiff)) < 0)
			return r;
		if (same && !xdiff && !xbad)
			return 0;
		if ((same || c == (enum moat_fs_change) - 1) && (xdiff || xbad))
			c = MOAT_FS_XATTR;
	}
	if (ut == S_IFLNK) {
		char t[PATH_MAX_BYTES + 1], lt_target[PATH_MAX_BYTES + 1];
		ssize_t n = readlinkat(upper, name, t, sizeof(t) - 1);
		if (n < 0)
			return negerrno();
		t[n] = '\0';
		if (has_lower && lt == S_IFLNK) {
			ssize_t k = readlinkat(lower, name, lt_target, sizeof(lt_target) - 1);
			if (k == n && memcmp(t, lt_target, (size_t)n) == 0)
				return 0;
		}
		e = add_entry(w, w->path, c);
		if (!e)
			return w->m->n >= w->lim.max_entries ? -E2BIG : -ENOMEM;
		if (!(e->target = strdup(t)))
			return -ENOMEM;
	}

	if (!e && c != (enum moat_fs_change) - 1) {
		e = add_entry(w, w->path, c);
		if (!e)
			return w->m->n >= w->lim.max_entries ? -E2BIG : -ENOMEM;
	}
	if (e) {
		e->host_changed = host_changed;
		e->type = ut;
		e->mode = us.st_mode & 07777;
		e->size = ut == S_IFREG ? (uint64_t)us.st_size : 0;
		e->mtime_ns = (int64_t)us.st_mtim.tv_sec * 1000000000 + us.st_mtim.tv_nsec;
		if (has_lower) {
			e->old_type = lt;
			e->old_mode = ls.st_mode & 07777;
			e->old_size = lt == S_IFREG ? (uint64_t)ls.st_size : 0;
			if (lt == S_IFREG && (uint64_t)ls.st_size <= w->lim.max_file_bytes &&
			    moat_fsdiff_sha256_at(lower, name, e->old_sha256) == 0)
				e->has_old_sha = true;
		}
		if (have_usha) {
			memcpy(e->sha256, usha, 32);
			e->has_sha = true;
			if (c != MOAT_FS_MODE && c != MOAT_FS_XATTR)
				w->m->total_bytes += e->size;
		}
		e->xattrs = TAKE_PTR(nx);
		e->xattr_diff = TAKE_PTR(xdiff);
		if (too_big)
			r = moat_fsdiff_set_str(&e->refused, "file larger than the size limit");
		else if (xbad)
			r = moat_fsdiff_set_str(
				&e->refused, "extended attributes too large or with unusual names");
		else if (xattr_diff_sets(e->xattr_diff, "security.capability"))
			r = moat_fsdiff_set_str(&e->refused,
						"file capabilities (security.capability xattr)");
		else if (xattr_diff_sets(e->xattr_diff, "trusted."))
			r = moat_fsdiff_set_str(&e->refused, "trusted.* extended attribute");
		else if (ut == S_IFREG && !have_usha)
			r = moat_fsdiff_set_str(&e->refused,
						"overlay metacopy file (mount with metacopy=off)");
		else
			r = moat_fsdiff_refuse_entry(e);
		if (r < 0)
			return r;
		r = flag_entry(w, e, upper, has_lower ? lower : -1, name);
		if (r < 0)
			return r;
	}

	if (ut != S_IFDIR)
		return 0;

	/* a directory: descend */
	if (ovl_xattr(ufd, "redirect", false)) {
		if (!e && !(e = add_entry(w, w->path, MOAT_FS_MODIFIED)))
			return -ENOMEM;
		e->type = S_IFDIR;
		e->mode = us.st_mode & 07777;
		return moat_fsdiff_set_str(
			&e->refused, "overlay redirected directory (mount with redirect_dir=off)");
	}
	if (depth + 1 > w->lim.max_depth || strlen(w->path) + 2 > PATH_MAX_BYTES) {
		if (!e && !(e = add_entry(w, w->path, MOAT_FS_MODIFIED)))
			return -ENOMEM;
		e->type = S_IFDIR;
		e->mode = us.st_mode & 07777;
		return moat_fsdiff_set_str(&e->refused, "too deep: not descended");
	}
	bool opaque = hidden || ovl_xattr(ufd, "opaque", true);
	_cleanup_close_ int lfd = -1;
	if (has_lower && lt == S_IFDIR) {
		lfd = openat(lower, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (lfd < 0)
			return negerrno();
		if (opaque && e)
			e->opaque = true;
		else if (opaque) {
			/* record it: the old contents are replaced */
			if (!(e = add_entry(w, w->path, MOAT_FS_MODIFIED)))
				return -ENOMEM;
			e->type = e->old_type = S_IFDIR;
			e->mode = us.st_mode & 07777;
			e->old_mode = ls.st_mode & 07777;
			e->opaque = true;
			r = flag_entry(w, e, upper, lower, name);
			if (r < 0)
				return r;
		}
	}
	return walk_dir(w, ufd, lfd, opaque, depth + 1);
}

static int walk_dir(struct walk *w, int upper, int lower, bool opaque, unsigned depth)
{
	char **names = NULL, **lnames = NULL;
	size_t n = 0, ln = 0, base = strlen(w->path);
	int r;

	r = moat_fsdiff_list_dir(upper, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		size_t len = strlen(names[i]);
		if (base + 1 + len > PATH_MAX_BYTES) {
			struct moat_fs_entry *e;
			snprintf(w->path + base, sizeof(w->path) - base, "%s%.*s", base ? "/" : "",
				 (int)(PATH_MAX_BYTES - base - 1), names[i]);
			e = add_entry(w, w->path, MOAT_FS_CREATED);
			r = e ? moat_fsdiff_set_str(&e->refused, "path too long") : -E2BIG;
			w->path[base] = '\0';
			continue;
		}
		snprintf(w->path + base, sizeof(w->path) - base, "%s%s", base ? "/" : "", names[i]);
		r = walk_entry(w, upper, lower, opaque, depth, names[i]);
		w->path[base] = '\0';
	}
	/* opaque: lower names without an upper entry are gone */
	if (r >= 0 && opaque && lower >= 0)
		r = moat_fsdiff_list_dir(lower, &lnames, &ln);
	for (size_t i = 0; r >= 0 && i < ln; i++) {
		struct stat ls;
		struct moat_fs_entry *e;
		if (n && bsearch(&lnames[i], names, n, sizeof(char *), name_cmp))
			continue;
		if (fstatat(lower, lnames[i], &ls, AT_SYMLINK_NOFOLLOW) < 0) {
			r = negerrno();
			break;
		}
		snprintf(w->path + base, sizeof(w->path) - base, "%s%s", base ? "/" : "",
			 lnames[i]);
		e = add_entry(w, w->path, MOAT_FS_DELETED);
		if (!e) {
			r = w->m->n >= w->lim.max_entries ? -E2BIG : -ENOMEM;
		} else {
			e->old_type = ls.st_mode & S_IFMT;
			e->old_mode = ls.st_mode & 07777;
			e->old_size = S_ISREG(ls.st_mode) ? (uint64_t)ls.st_size : 0;
			if (S_ISREG(ls.st_mode) && (uint64_t)ls.st_size <= w->lim.max_file_bytes &&
			    moat_fsdiff_sha256_at(lower, lnames[i], e->old_sha256) == 0)
				e->has_old_sha = true;
			r = flag_entry(w, e, upper, lower, lnames[i]);
		}
		w->path[base] = '\0';
	}
	moat_fsdiff_free_names(names, n);
	moat_fsdiff_free_names(lnames, ln);
	return r;
}

/* ---- entry point ---------------------------------------------------------- */

int moat_fsdiff_compute_ex(int upper_dirfd, int lower_dirfd, const struct moat_flag_rules *rules,
			   const struct moat_fsdiff_limits *limits, struct moat_manifest **ret)
{
	struct walk *w = calloc(1, sizeof(*w));
	int r;

	if (!w)
		return -ENOMEM;
	w->m = calloc(1, sizeof(*w->m));
	if (!w->m) {
		free(w);
		return -ENOMEM;
	}
	w->rules = rules;
	w->lim = limits ? *limits : (struct moat_fsdiff_limits){0};
	if (!w->lim.max_entries)
		w->lim.max_entries = 100000;
	if (!w->lim.max_depth)
		w->lim.max_depth = 128;
	if (!w->lim.max_file_bytes)
		w->lim.max_file_bytes = 4ull << 30;
	r = walk_dir(w, upper_dirfd, lower_dirfd, false, 0);
	if (r >= 0)
		r = moat_fsdiff_git_pass(w, upper_dirfd, lower_dirfd, w->lim.workspace);
	if (r < 0)
		moat_manifest_free(w->m);
	else
		*ret = w->m;
	free(w);
	return r;
}

int moat_fsdiff_compute(int upper_dirfd, int lower_dirfd, const struct moat_flag_rules *rules,
			struct moat_manifest **ret)
{
	return moat_fsdiff_compute_ex(upper_dirfd, lower_dirfd, rules, NULL, ret);
}
