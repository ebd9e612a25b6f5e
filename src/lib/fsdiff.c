/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Workspace change manifest, flag rules and safe apply (docs/FLAGGED.md). */
#include "lib/fsdiff.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <jansson.h>
#include <linux/openat2.h>
#include <nettle/sha2.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#include "lib/audit.h"
#include "lib/copytree.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define PATH_MAX_BYTES 4095
#define PKG_JSON_MAX (4u << 20)
#define MANIFEST_MAX_BYTES (256u << 20)

/* ---- flag rules ----------------------------------------------------------- */

/* The table docs/FLAGGED.md documents. Keep them in sync. */
const struct moat_flag_rule moat_flag_builtin[] = {
	/* git: hooks and configuration run or redirect code on the next git command */
	{".git/hooks", "git hook: runs on the next git command on the host", MOAT_FLAG_SUBTREE},
	{".git/config", "git config: can set core.hooksPath, core.fsmonitor, aliases, filters", 0},
	{".git/config.worktree", "git config: can set hooks, fsmonitor, filters", 0},
	{".git/worktrees/*/config.worktree", "git config: can set hooks, fsmonitor, filters", 0},
	{".git/info/attributes", "git attributes: select filter and diff drivers", 0},
	{".git/modules/*/config", "submodule git config", 0},
	{".git/modules/*/hooks", "submodule git hook", MOAT_FLAG_SUBTREE},
	{".git/commondir", "git directory redirection", 0},
	{".git/worktrees/*/gitdir", "git directory redirection", 0},
	{".git/worktrees/*/commondir", "git directory redirection", 0},
	{".git", "gitdir redirection: a .git file or link points git elsewhere", MOAT_FLAG_NOT_DIR},
	{".gitmodules", "git submodules: URLs and paths git fetches and checks out", 0},
	{".gitattributes", "git attributes: select filter and diff drivers", 0},
	{".pre-commit-config.yaml", "pre-commit hooks configuration", 0},
	{".husky", "git hooks (husky)", MOAT_FLAG_SUBTREE},
	/* CI */
	{".github/workflows", "CI workflow", MOAT_FLAG_SUBTREE},
	{".github/actions", "CI action", MOAT_FLAG_SUBTREE},
	{".gitlab-ci.yml", "CI pipeline", 0},
	{".circleci", "CI pipeline", MOAT_FLAG_SUBTREE},
	{"Jenkinsfile", "CI pipeline", 0},
	{".travis.yml", "CI pipeline", 0},
	{"azure-pipelines.yml", "CI pipeline", 0},
	{".buildkite", "CI pipeline", MOAT_FLAG_SUBTREE},
	{".drone.yml", "CI pipeline", 0},
	/* shell start-up files and directory hooks */
	{".bashrc", "shell start-up file", 0},
	{".bash_profile", "shell start-up file", 0},
	{".bash_login", "shell start-up file", 0},
	{".bash_logout", "shell start-up file", 0},
	{".profile", "shell start-up file", 0},
	{".zshrc", "shell start-up file", 0},
	{".zshenv", "shell start-up file", 0},
	{".zprofile", "shell start-up file", 0},
	{".zlogin", "shell start-up file", 0},
	{".zlogout", "shell start-up file", 0},
	{".kshrc", "shell start-up file", 0},
	{".cshrc", "shell start-up file", 0},
	{".tcshrc", "shell start-up file", 0},
	{".config/fish", "shell start-up file", MOAT_FLAG_SUBTREE},
	{".envrc", "direnv: runs when a shell enters the directory", 0},
	/* editors and IDEs */
	{".vscode", "editor tasks and settings: can run commands", MOAT_FLAG_SUBTREE},
	{"*.code-workspace", "editor workspace settings: can run commands", 0},
	{".idea", "IDE configuration: run configurations", MOAT_FLAG_SUBTREE},
	/* agent configuration */
	{".mcp.json", "agent configuration: MCP servers start programs", 0},
	{".claude", "agent configuration", MOAT_FLAG_SUBTREE},
	{".cursor", "agent configuration", MOAT_FLAG_SUBTREE},
	{".cursorrules", "agent instructions", 0},
	{"AGENTS.md", "agent instructions", 0},
	{"CLAUDE.md", "agent instructions", 0},
	{"GEMINI.md", "agent instructions", 0},
	{".github/copilot-instructions.md", "agent instructions", 0},
	/* package managers */
	{".npmrc", "npm configuration: can change scripts and registries", 0},
	{".yarnrc.yml", "yarn configuration", 0},
	/* build hooks */
	{"Makefile", "build hook: run by make", 0},
	{"GNUmakefile", "build hook: run by make", 0},
	{"*.mk", "build hook: included by make", 0},
	{"CMakeLists.txt", "build hook: run by cmake", 0},
	{"*.cmake", "build hook: run by cmake", 0},
	{"meson.build", "build hook: run by meson", 0},
	{"configure", "build hook: configure script", 0},
	{"configure.ac", "build hook: autoconf input", 0},
	{"setup.py", "build hook: run by pip/setuptools", 0},
	{"pyproject.toml", "build hook: selects the Python build backend", 0},
	{"conftest.py", "test hook: imported by pytest", 0},
	{"build.rs", "build hook: run by cargo", 0},
};
const size_t moat_flag_builtin_count = ELEMENTSOF(moat_flag_builtin);

struct moat_flag_rules {
	struct moat_flag_rule *rules;
	size_t n;
	char **owned; /* pattern strings of the extra rules */
	size_t n_owned;
};

int moat_flag_rules_new(const char *const *extra, size_t n_extra, struct moat_flag_rules **ret)
{
	struct moat_flag_rules *r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->rules = calloc(moat_flag_builtin_count + n_extra, sizeof(*r->rules));
	r->owned = calloc(n_extra + 1, sizeof(char *));
	if (!r->rules || !r->owned) {
		moat_flag_rules_free(r);
		return -ENOMEM;
	}
	memcpy(r->rules, moat_flag_builtin, moat_flag_builtin_count * sizeof(*r->rules));
	r->n = moat_flag_builtin_count;
	for (size_t i = 0; i < n_extra; i++) {
		const char *p = extra[i];
		unsigned flags = 0;
		size_t len;
		char *s;

		if (!p || !*p || strlen(p) > 1024) {
			moat_flag_rules_free(r);
			return -EINVAL;
		}
		if (p[0] == '/') {
			flags |= MOAT_FLAG_ANCHORED;
			p++;
		}
		s = strdup(p);
		if (!s) {
			moat_flag_rules_free(r);
			return -ENOMEM;
		}
		len = strlen(s);
		while (len > 0 && s[len - 1] == '/') {
			s[--len] = '\0';
			flags |= MOAT_FLAG_SUBTREE;
		}
		r->owned[r->n_owned++] = s;
		if (len == 0) {
			moat_flag_rules_free(r);
			return -EINVAL;
		}
		r->rules[r->n++] = (struct moat_flag_rule){
			.pattern = s,
			.reason = "matches the policy's flag_patterns",
			.flags = flags,
		};
	}
	*ret = r;
	return 0;
}

struct moat_flag_rules *moat_flag_rules_free(struct moat_flag_rules *r)
{
	if (!r)
		return NULL;
	for (size_t i = 0; i < r->n_owned; i++)
		free(r->owned[i]);
	free(r->owned);
	free(r->rules);
	free(r);
	return NULL;
}

static bool rule_matches(const struct moat_flag_rule *rule, const char *path, mode_t type)
{
	int fl = FNM_PATHNAME | FNM_CASEFOLD |
		((rule->flags & MOAT_FLAG_SUBTREE) ? FNM_LEADING_DIR : 0);

	if ((rule->flags & MOAT_FLAG_NOT_DIR) && S_ISDIR(type))
		return false;
	for (const char *s = path; s; s = strchr(s, '/')) {
		if (*s == '/')
			s++;
		if (fnmatch(rule->pattern, s, fl) == 0)
			return true;
		if (rule->flags & MOAT_FLAG_ANCHORED)
			break;
	}
	return false;
}

const char *moat_flag_match(const struct moat_flag_rules *rules, const char *path, mode_t type)
{
	const struct moat_flag_rule *t = rules ? rules->rules : moat_flag_builtin;
	size_t n = rules ? rules->n : moat_flag_builtin_count;

	for (size_t i = 0; i < n; i++)
		if (rule_matches(&t[i], path, type))
			return t[i].reason;
	return NULL;
}

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

static int openat2_beneath(int dirfd, const char *path, uint64_t flags, mode_t mode)
{
	struct open_how how = {
		.flags = flags | O_CLOEXEC | O_NOFOLLOW,
		.mode = mode,
		/* NO_XDEV: a mount inside the host directory was not visible in
		 * the overlay (overlayfs does not cross mounts), so nothing the
		 * sandbox did may reach into one */
		.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS |
			RESOLVE_NO_XDEV,
	};
	long fd = syscall(SYS_openat2, dirfd, path && *path ? path : ".", &how, sizeof(how));
	return fd < 0 ? negerrno() : (int)fd;
}

/* Split "a/b/c" into the parent ("a/b", or "." for top level) opened beneath
 * root as O_PATH|O_DIRECTORY, and the last component. */
static int open_parent(int root, const char *path, const char **ret_name)
{
	const char *slash = strrchr(path, '/');
	if (!slash) {
		*ret_name = path;
		return openat2_beneath(root, ".", O_PATH | O_DIRECTORY, 0);
	}
	_cleanup_free_ char *dir = strndup(path, (size_t)(slash - path));
	if (!dir)
		return -ENOMEM;
	*ret_name = slash + 1;
	return openat2_beneath(root, dir, O_PATH | O_DIRECTORY, 0);
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
static int sha256_at(int dirfd, const char *name, uint8_t out[32])
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

static void hex(const uint8_t *in, size_t n, char *out)
{
	static const char h[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = h[in[i] >> 4];
		out[2 * i + 1] = h[in[i] & 15];
	}
	out[2 * n] = '\0';
}

static int unhex(const char *s, uint8_t *out, size_t n)
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

static const char *type_name(mode_t t)
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

static mode_t type_from_name(const char *s)
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

struct walk {
	struct moat_manifest *m;
	const struct moat_flag_rules *rules;
	struct moat_fsdiff_limits lim;
	char path[PATH_MAX_BYTES + 1];
};

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

static int set_str(char **dst, const char *s)
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
static int unhex(const char *s, uint8_t *out, size_t n);

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
		hex((const uint8_t *)val, (size_t)v, h);
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
static int xattrs_apply(int fd, const char *set)
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
			if (nlen >= sizeof(name) || !v || !h || unhex(h, v, hl / 2) < 0)
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
static int xattrs_apply_at(int parent, const char *name, const struct moat_fs_entry *e)
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
	return xattrs_apply(fd, e->xattrs);
}

static int flag_entry(struct walk *w, struct moat_fs_entry *e, int upper, int lower,
		      const char *name)
{
	const char *why = moat_flag_match(w->rules, e->path, e->type ? e->type : e->old_type);
	if (!why && e->change != MOAT_FS_DELETED) {
		if (S_ISREG(e->type) && (e->mode & 0111) &&
		    (!S_ISREG(e->old_type) || !(e->old_mode & 0111)))
			why = "newly executable";
		else if (S_ISLNK(e->type) && moat_fsdiff_link_escapes(e->path, e->target))
			why = "symlink points outside the workspace";
		else if (S_ISREG(e->type) && strcasecmp(name, "package.json") == 0)
			why = pkg_json_check(upper, lower, name);
	}
	return set_str(&e->flagged, why);
}

static int refuse_entry(struct moat_fs_entry *e)
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
	return set_str(&e->refused, why);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names of a directory (without . and ..). */
static int list_dir(int dirfd, char ***ret, size_t *ret_n)
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

static void free_names(char **v, size_t n)
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

	if (moat_fsdiff_is_whiteout(us.st_mode, us.st_rdev)) {
		if (!has_lower)
			return 0; /* whiteout of nothing visible */
		e = add_entry(w, w->path, MOAT_FS_DELETED);
		if (!e)
			return w->m->n >= w->lim.max_entries ? -E2BIG : -ENOMEM;
		e->old_type = ls.st_mode & S_IFMT;
		e->old_mode = ls.st_mode & 07777;
		e->old_size = S_ISREG(ls.st_mode) ? (uint64_t)ls.st_size : 0;
		if (S_ISREG(ls.st_mode) && (uint64_t)ls.st_size <= w->lim.max_file_bytes &&
		    sha256_at(lower, name, e->old_sha256) == 0)
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
			if (sha256_at(lower, name, lsha) == 0 && memcmp(lsha, usha, 32) == 0) {
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
		e->type = ut;
		e->mode = us.st_mode & 07777;
		e->size = ut == S_IFREG ? (uint64_t)us.st_size : 0;
		e->mtime_ns = (int64_t)us.st_mtim.tv_sec * 1000000000 + us.st_mtim.tv_nsec;
		if (has_lower) {
			e->old_type = lt;
			e->old_mode = ls.st_mode & 07777;
			e->old_size = lt == S_IFREG ? (uint64_t)ls.st_size : 0;
			if (lt == S_IFREG && (uint64_t)ls.st_size <= w->lim.max_file_bytes &&
			    sha256_at(lower, name, e->old_sha256) == 0)
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
			r = set_str(&e->refused, "file larger than the size limit");
		else if (xbad)
			r = set_str(&e->refused,
				    "extended attributes too large or with unusual names");
		else if (xattr_diff_sets(e->xattr_diff, "security.capability"))
			r = set_str(&e->refused, "file capabilities (security.capability xattr)");
		else if (xattr_diff_sets(e->xattr_diff, "trusted."))
			r = set_str(&e->refused, "trusted.* extended attribute");
		else if (ut == S_IFREG && !have_usha)
			r = set_str(&e->refused, "overlay metacopy file (mount with metacopy=off)");
		else
			r = refuse_entry(e);
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
		return set_str(&e->refused,
			       "overlay redirected directory (mount with redirect_dir=off)");
	}
	if (depth + 1 > w->lim.max_depth || strlen(w->path) + 2 > PATH_MAX_BYTES) {
		if (!e && !(e = add_entry(w, w->path, MOAT_FS_MODIFIED)))
			return -ENOMEM;
		e->type = S_IFDIR;
		e->mode = us.st_mode & 07777;
		return set_str(&e->refused, "too deep: not descended");
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

	r = list_dir(upper, &names, &n);
	if (r < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		size_t len = strlen(names[i]);
		if (base + 1 + len > PATH_MAX_BYTES) {
			struct moat_fs_entry *e;
			snprintf(w->path + base, sizeof(w->path) - base, "%s%.*s", base ? "/" : "",
				 (int)(PATH_MAX_BYTES - base - 1), names[i]);
			e = add_entry(w, w->path, MOAT_FS_CREATED);
			r = e ? set_str(&e->refused, "path too long") : -E2BIG;
			w->path[base] = '\0';
			continue;
		}
		snprintf(w->path + base, sizeof(w->path) - base, "%s%s", base ? "/" : "", names[i]);
		r = walk_entry(w, upper, lower, opaque, depth, names[i]);
		w->path[base] = '\0';
	}
	/* opaque: lower names without an upper entry are gone */
	if (r >= 0 && opaque && lower >= 0)
		r = list_dir(lower, &lnames, &ln);
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
			    sha256_at(lower, lnames[i], e->old_sha256) == 0)
				e->has_old_sha = true;
			r = flag_entry(w, e, upper, lower, lnames[i]);
		}
		w->path[base] = '\0';
	}
	free_names(names, n);
	free_names(lnames, ln);
	return r;
}

/* ---- repositories found by structure ---------------------------------------- */

/*
 * git does not find its configuration by the name `.git`: discovery looks at
 * DIR/.git (a directory, or a file "gitdir: X" that sends it anywhere) and at
 * DIR itself (a bare repository: HEAD plus objects/ and refs/, or a commondir
 * file), for DIR = the working directory and each of its parents. A config
 * then includes other files (include.path, includeIf.*.path), names a hooks
 * directory (core.hooksPath) and programs (core.fsmonitor, aliases, filters…).
 *
 * After the walk this pass finds, for the directory of every change and each
 * of its ancestors, the git directories discovery would use there (in the
 * union of both layers, which over-approximates: a whiteout does not hide a
 * lower HEAD), follows gitdir files, commondir files and includes, and flags:
 *   - every change inside a git directory that is not plain object/ref data
 *     (a repository the run created: every change inside it);
 *   - every change at a path a git config there includes or names as hooks
 *     directory or program;
 *   - every symlink (new or changed) whose target, followed through the links
 *     of both layers, lies in a git directory, at a `.git`, at such a
 *     referenced path or at a path the flag rules match.
 */

#define GIT_CFG_MAX (1u << 20)
#define GIT_MAX_DIRS 256
#define GIT_MAX_REFS 1024
#define GIT_MAX_CHECKED 200000
#define GIT_INCLUDE_DEPTH 8
#define LINK_MAX_HOPS 40

struct strset {
	char **v;
	size_t n, cap;
};

static uint64_t str_hash(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* 1 if added, 0 if already there, -ENOMEM/-E2BIG. */
static int strset_add(struct strset *s, const char *k, size_t max)
{
	if (s->n * 2 >= s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 256;
		char **v = calloc(cap, sizeof(char *));
		if (!v)
			return -ENOMEM;
		for (size_t i = 0; i < s->cap; i++)
			if (s->v[i]) {
				size_t j = str_hash(s->v[i]) & (cap - 1);
				while (v[j])
					j = (j + 1) & (cap - 1);
				v[j] = s->v[i];
			}
		free(s->v);
		s->v = v;
		s->cap = cap;
	}
	size_t j = str_hash(k) & (s->cap - 1);
	while (s->v[j]) {
		if (streq(s->v[j], k))
			return 0;
		j = (j + 1) & (s->cap - 1);
	}
	if (s->n >= max)
		return -E2BIG;
	if (!(s->v[j] = strdup(k)))
		return -ENOMEM;
	s->n++;
	return 1;
}

static void strset_done(struct strset *s)
{
	for (size_t i = 0; i < s->cap; i++)
		free(s->v[i]);
	free(s->v);
}

struct gitref {
	char *path; /* relative to the workspace */
	const char *why;
	bool subtree;
};

struct gitscan {
	struct walk *w;
	int upper, lower;
	const char *workspace; /* host path, to map absolute references; may be NULL */
	struct strset checked;
	char *dirs[GIT_MAX_DIRS];
	bool dir_new[GIT_MAX_DIRS];
	size_t n_dirs;
	struct gitref refs[GIT_MAX_REFS];
	size_t n_refs;
	bool overflow; /* a bound was reached: flag what could not be checked */
};

static char *pjoin(const char *a, const char *b)
{
	char *s = NULL;
	if (!*a)
		return strdup(b);
	if (!*b)
		return strdup(a);
	return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

/* dirname of a relative path ("" for a top-level name); caller frees. */
static char *pdir(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? strndup(p, (size_t)(s - p)) : strdup("");
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (n == 0)
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* Normalise target relative to dir (both workspace-relative) lexically;
 * an absolute target is mapped when it lies under the workspace. NULL when
 * it leaves the workspace (or on ENOMEM). */
static char *resolve_in(const struct gitscan *g, const char *dir, const char *target)
{
	size_t wl = g->workspace ? strlen(g->workspace) : 0;
	_cleanup_free_ char *in = NULL;
	char *out;
	size_t o = 0;

	if (target[0] == '/') {
		while (wl > 1 && g->workspace[wl - 1] == '/')
			wl--;
		if (!wl || strncmp(target, g->workspace, wl) != 0 ||
		    (target[wl] != '/' && target[wl] != '\0'))
			return NULL;
		in = strdup(target + wl);
	} else {
		in = pjoin(dir, target);
	}
	if (!in || !(out = malloc(strlen(in) + 1)))
		return NULL;
	for (const char *s = in; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 2 && s[0] == '.' && s[1] == '.') {
			if (o == 0) {
				free(out);
				return NULL;
			}
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
		} else if (n > 0 && !(n == 1 && s[0] == '.')) {
			if (o > 0)
				out[o++] = '/';
			memcpy(out + o, s, n);
			o += n;
		}
		s += n;
		while (*s == '/')
			s++;
	}
	out[o] = '\0';
	return out;
}

/* S_IFMT of rel in one layer (0: absent or a whiteout). */
static mode_t layer_type(int root, const char *rel)
{
	const char *name;
	struct stat st;
	if (root < 0)
		return 0;
	if (!*rel)
		return S_IFDIR;
	_cleanup_close_ int p = open_parent(root, rel, &name);
	if (p < 0 || fstatat(p, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0;
	if (moat_fsdiff_is_whiteout(st.st_mode, st.st_rdev))
		return 0;
	return st.st_mode & S_IFMT;
}

static mode_t git_type(const struct gitscan *g, const char *dir, const char *name, bool lower_only)
{
	_cleanup_free_ char *p = pjoin(dir, name);
	mode_t t;
	if (!p)
		return 0;
	t = lower_only ? 0 : layer_type(g->upper, p);
	return t ? t : layer_type(g->lower, p);
}

/* The content of a regular file rel in one layer (at most max bytes,
 * NUL-terminated), or NULL. */
static char *layer_read(int root, const char *rel, size_t max)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	char *buf;
	ssize_t n;
	if (root < 0)
		return NULL;
	fd = openat2_beneath(root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	if ((uint64_t)st.st_size < max)
		max = (size_t)st.st_size;
	if (!(buf = malloc(max + 1)))
		return NULL;
	n = read(fd, buf, max);
	if (n < 0)
		n = 0;
	buf[n] = '\0';
	return buf;
}

static bool has_core_section(const char *s)
{
	for (; s && (s = strchr(s, '[')); s++) {
		s++;
		while (*s == ' ' || *s == '\t')
			s++;
		if (strncasecmp(s, "core", 4) == 0 && !isalnum((unsigned char)s[4]))
			return true;
	}
	return false;
}

/* Is dir a git directory by structure (what git's is_git_directory accepts,
 * widened: HEAD alone, or a config with a [core] section, is enough)? */
static bool is_gitdir(const struct gitscan *g, const char *dir, bool lower_only)
{
	if (git_type(g, dir, "HEAD", lower_only) ||
	    S_ISREG(git_type(g, dir, "commondir", lower_only)) ||
	    S_ISREG(git_type(g, dir, "gitdir", lower_only)))
		return true;
	if (S_ISDIR(git_type(g, dir, "objects", lower_only)) &&
	    S_ISDIR(git_type(g, dir, "refs", lower_only)))
		return true;
	if (S_ISREG(git_type(g, dir, "config", lower_only))) {
		_cleanup_free_ char *p = pjoin(dir, "config");
		for (int i = lower_only ? 1 : 0; p && i < 2; i++) {
			_cleanup_free_ char *c = layer_read(i ? g->lower : g->upper, p, 65536);
			if (has_core_section(c))
				return true;
		}
	}
	return false;
}

static int add_ref(struct gitscan *g, char *path, const char *why, bool subtree)
{
	if (!path)
		return 0; /* outside the workspace: not ours to flag */
	for (size_t i = 0; i < g->n_refs; i++)
		if (streq(g->refs[i].path, path)) {
			free(path);
			return 0;
		}
	if (g->n_refs >= GIT_MAX_REFS) {
		free(path);
		g->overflow = true;
		return 0;
	}
	g->refs[g->n_refs++] = (struct gitref){.path = path, .why = why, .subtree = subtree};
	return 1;
}

/* ---- git config (the subset of git-config(1) syntax that names files) ---- */

struct cfg_item {
	char sect[64], sub[256], key[64];
	char val[4096];
	bool has_val;
};

/* Next item of buf from *pos; 1 = item, 0 = end. Malformed lines are skipped
 * (git would refuse the file; flagging stays on the path rules). */
static int cfg_next(const char *buf, size_t *pos, struct cfg_item *it)
{
	const char *s = buf + *pos;
	for (;;) {
		while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
			s++;
		if (!*s) {
			*pos = (size_t)(s - buf);
			return 0;
		}
		if (*s == '#' || *s == ';') {
			s += strcspn(s, "\n");
			continue;
		}
		if (*s == '[') {
			size_t n = 0;
			s++;
			while (*s == ' ' || *s == '\t')
				s++;
			it->sect[0] = it->sub[0] = '\0';
			while (*s && (isalnum((unsigned char)*s) || *s == '-' || *s == '.') &&
			       n + 1 < sizeof(it->sect))
				it->sect[n++] = (char)tolower((unsigned char)*s++);
			it->sect[n] = '\0';
			char *dot = strchr(it->sect, '.');
			if (dot) { /* [section.sub] (old syntax) */
				snprintf(it->sub, sizeof(it->sub), "%s", dot + 1);
				*dot = '\0';
			}
			while (*s == ' ' || *s == '\t')
				s++;
			if (*s == '"') {
				n = 0;
				for (s++; *s && *s != '"' && *s != '\n'; s++) {
					if (*s == '\\' && s[1])
						s++;
					if (n + 1 < sizeof(it->sub))
						it->sub[n++] = *s;
				}
				it->sub[n] = '\0';
				if (*s == '"')
					s++;
			}
			s += strcspn(s, "]\n");
			if (*s == ']')
				s++;
			/* a key may follow on the same line */
			continue;
		}
		if (!isalpha((unsigned char)*s)) {
			s += strcspn(s, "\n");
			continue;
		}
		size_t n = 0;
		while (*s && (isalnum((unsigned char)*s) || *s == '-') && n + 1 < sizeof(it->key))
			it->key[n++] = (char)tolower((unsigned char)*s++);
		it->key[n] = '\0';
		while (isalnum((unsigned char)*s) || *s == '-')
			s++;
		while (*s == ' ' || *s == '\t')
			s++;
		it->has_val = *s == '=';
		n = 0;
		if (it->has_val) {
			bool q = false;
			size_t keep = 0; /* length without trailing blanks outside quotes */
			for (s++; *s; s++) {
				char c = *s;
				if (c == '\n' && !q)
					break;
				if (!q && (c == '#' || c == ';')) {
					s += strcspn(s, "\n");
					break;
				}
				if (c == '"') {
					q = !q;
					keep = n;
					continue;
				}
				if (c == '\\') {
					char e = s[1];
					if (!e)
						break;
					s++;
					if (e == '\n')
						continue;
					if (e == '\r' && s[1] == '\n') {
						s++;
						continue;
					}
					c = e == 'n' ? '\n' : e == 't' ? '\t' : e == 'b' ? '\b' : e;
					if (n + 1 < sizeof(it->val))
						it->val[n++] = c;
					keep = n;
					continue;
				}
				if (n == 0 && !q && (c == ' ' || c == '\t'))
					continue;
				if (n + 1 < sizeof(it->val))
					it->val[n++] = c;
				if (q || !(c == ' ' || c == '\t' || c == '\r'))
					keep = n;
			}
			n = keep;
		}
		it->val[n] = '\0';
		*pos = (size_t)(s - buf);
		return 1;
	}
}

/* Keys whose value is a program git runs (git-config(1)); "*" = any subsection. */
static const struct {
	const char *sect, *sub, *key;
} git_cmd_keys[] = {
	{"core", NULL, "fsmonitor"},
	{"core", NULL, "sshcommand"},
	{"core", NULL, "editor"},
	{"core", NULL, "pager"},
	{"core", NULL, "askpass"},
	{"core", NULL, "alternaterefscommand"},
	{"core", NULL, "gitproxy"},
	{"sequence", NULL, "editor"},
	{"diff", NULL, "external"},
	{"diff", "*", "command"},
	{"diff", "*", "textconv"},
	{"merge", "*", "driver"},
	{"filter", "*", "clean"},
	{"filter", "*", "smudge"},
	{"filter", "*", "process"},
	{"alias", NULL, "*"},
	{"credential", NULL, "helper"},
	{"credential", "*", "helper"},
	{"gpg", NULL, "program"},
	{"gpg", "*", "program"},
	{"pager", NULL, "*"},
	{"interactive", NULL, "difffilter"},
	{"uploadpack", NULL, "packobjectshook"},
	{"ssh", NULL, "command"},
	{"difftool", "*", "cmd"},
	{"mergetool", "*", "cmd"},
	{"web", NULL, "browser"},
	{"browser", "*", "cmd"},
	{"man", "*", "cmd"},
	{"sendemail", NULL, "smtpserver"},
	{"sendemail", NULL, "tocmd"},
	{"sendemail", NULL, "cccmd"},
	{"hook", "*", "command"},
};

static bool cfg_is_cmd(const struct cfg_item *it)
{
	if (streq(it->sect, "core") && streq(it->key, "fsmonitor") &&
	    (!it->has_val || !strcasecmp(it->val, "true") || !strcasecmp(it->val, "false")))
		return false; /* the built-in daemon */
	for (size_t i = 0; i < ELEMENTSOF(git_cmd_keys); i++) {
		if (!streq(git_cmd_keys[i].sect, it->sect))
			continue;
		if (git_cmd_keys[i].sub ? !it->sub[0] : it->sub[0] != '\0')
			continue;
		if (streq(git_cmd_keys[i].key, "*") || streq(git_cmd_keys[i].key, it->key))
			return true;
	}
	return false;
}

static const char *cfg_danger(const struct cfg_item *it)
{
	if (streq(it->sect, "include") || streq(it->sect, "includeif"))
		return streq(it->key, "path") ? "include.path" : NULL;
	if (streq(it->sect, "core") && streq(it->key, "hookspath"))
		return "core.hookspath";
	if (streq(it->sect, "core") && streq(it->key, "worktree"))
		return "core.worktree";
	if (cfg_is_cmd(it))
		return it->sect; /* filter, alias, core, … */
	return NULL;
}

/* The program a command value names when it is a path ("./x", "a/b"): the
 * first shell word. NULL for a plain name (found in PATH, not here). */
static char *cmd_path(const char *val, bool alias, char *buf, size_t len)
{
	const char *s = val;
	size_t n;
	if (alias) {
		if (*s != '!')
			return NULL; /* a git alias of git commands */
		s++;
	}
	while (*s == ' ' || *s == '\t')
		s++;
	n = strcspn(s, " \t\n;|&<>()'\"`$");
	if (n == 0 || n >= len)
		return NULL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	return strchr(buf, '/') ? buf : NULL;
}

static int git_add_dir(struct gitscan *g, const char *dir, const char *wt, int depth);

/* Parse one config file (both layers) of the git directory gdir whose
 * worktree is wt; collect what it references. */
/* A host file (the user's and the system's git config), at most max bytes. */
static char *host_read(const char *path, size_t max)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	struct stat st;
	char *buf;
	ssize_t n;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return NULL;
	if ((uint64_t)st.st_size < max)
		max = (size_t)st.st_size;
	if (!(buf = malloc(max + 1)))
		return NULL;
	n = read(fd, buf, max);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

/* A path a config names, as git reads it: "~/" is $HOME, a relative one is
 * relative to base (workspace-relative, or absolute for a host file). The
 * absolute result in *ret_abs (may be NULL); the workspace-relative one
 * returned, NULL when it is not in the workspace. */
static char *cfg_path(const struct gitscan *g, const char *base, const char *v, char **ret_abs)
{
	_cleanup_free_ char *abs = NULL;
	const char *home = getenv("HOME");
	char *rel;
	if (ret_abs)
		*ret_abs = NULL;
	if (v[0] == '~' && v[1] == '/') {
		if (!home || home[0] != '/' || asprintf(&abs, "%s%s", home, v + 1) < 0)
			return NULL;
	} else if (v[0] == '~') {
		return NULL; /* another user's home */
	} else if (v[0] == '/') {
		abs = strdup(v);
	} else if (base[0] == '/') {
		if (asprintf(&abs, "%s/%s", base, v) < 0)
			return NULL;
	} else {
		return resolve_in(g, base, v);
	}
	if (!abs)
		return NULL;
	rel = resolve_in(g, "", abs);
	if (ret_abs)
		*ret_abs = TAKE_PTR(abs);
	return rel;
}

/* Parse one config file (both layers; cfg absolute = a host file) read for
 * the git directory whose worktree is wt; collect what it references. */
static int git_scan_config(struct gitscan *g, const char *cfg, const char *wt, int depth)
{
	_cleanup_free_ char *cdir = pdir(cfg);
	bool host = cfg[0] == '/';
	if (!cdir)
		return -ENOMEM;
	if (depth > GIT_INCLUDE_DEPTH) {
		g->overflow = true;
		return 0;
	}
	for (int layer = 0; layer < (host ? 1 : 2); layer++) {
		_cleanup_free_ char *buf = host
			? host_read(cfg, GIT_CFG_MAX)
			: layer_read(layer ? g->lower : g->upper, cfg, GIT_CFG_MAX);
		struct cfg_item *it = calloc(1, sizeof(*it));
		size_t pos = 0;
		int r = 0;
		if (!it)
			return -ENOMEM;
		while (buf && r >= 0 && cfg_next(buf, &pos, it) == 1) {
			char word[4096];
			const char *d = cfg_danger(it);
			if (!d || !it->has_val || !it->val[0])
				continue;
			if (streq(d, "include.path")) {
				_cleanup_free_ char *abs = NULL;
				char *p = cfg_path(g, cdir, it->val, &abs);
				if (p) {
					_cleanup_free_ char *q = strdup(p);
					r = add_ref(
						g, p,
						"git config file included by a repository's config (include.path)",
						false);
					if (r > 0 && q)
						r = git_scan_config(g, q, wt, depth + 1);
				} else if (abs) {
					/* a host file including another host file */
					r = git_scan_config(g, abs, wt, depth + 1);
				}
			} else if (streq(d, "core.hookspath")) {
				r = add_ref(g, cfg_path(g, wt, it->val, NULL),
					    "git hooks directory (core.hooksPath of a git config)",
					    true);
			} else if (streq(d, "core.worktree")) {
				continue;
			} else if (cmd_path(it->val, streq(it->sect, "alias"), word,
					    sizeof(word))) {
				r = add_ref(g, cfg_path(g, wt, word, NULL),
					    "program run by git (named in a git config)", false);
			}
		}
		free(it);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The worktree root git uses for a git directory: the parent of a `.git`,
 * else the directory itself (bare; core.worktree is treated as a reference). */
static char *git_worktree(const char *dir)
{
	const char *base = strrchr(dir, '/');
	base = base ? base + 1 : dir;
	if (strcasecmp(base, ".git") == 0)
		return pdir(dir);
	return strdup(dir);
}

/* gitdir: / commondir files: "gitdir: X\n" or "X\n" relative to where the
 * file is. Both layers; each target becomes a git directory. */
static int git_follow_file(struct gitscan *g, const char *file, const char *prefix, const char *wt,
			   int depth)
{
	_cleanup_free_ char *fdir = pdir(file);
	if (!fdir)
		return -ENOMEM;
	for (int layer = 0; layer < 2; layer++) {
		_cleanup_free_ char *buf = layer_read(layer ? g->lower : g->upper, file, 4096);
		char *s = buf;
		if (!s)
			continue;
		if (prefix) {
			if (strncmp(s, prefix, strlen(prefix)) != 0)
				continue;
			s += strlen(prefix);
		}
		while (*s == ' ' || *s == '\t')
			s++;
		s[strcspn(s, "\r\n")] = '\0';
		if (!*s)
			continue;
		_cleanup_free_ char *t = resolve_in(g, fdir, s);
		if (t) {
			int r = git_add_dir(g, t, wt, depth + 1);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

static int git_add_dir(struct gitscan *g, const char *dir, const char *wt_in, int depth)
{
	_cleanup_free_ char *wt = NULL, *p = NULL;
	int r;

	for (size_t i = 0; i < g->n_dirs; i++)
		if (streq(g->dirs[i], dir))
			return 0;
	if (g->n_dirs >= GIT_MAX_DIRS || depth > GIT_INCLUDE_DEPTH) {
		g->overflow = true;
		return 0;
	}
	if (!(g->dirs[g->n_dirs] = strdup(dir)))
		return -ENOMEM;
	g->dir_new[g->n_dirs] = !is_gitdir(g, dir, true);
	g->n_dirs++;
	if (!(wt = wt_in ? strdup(wt_in) : git_worktree(dir)))
		return -ENOMEM;
	static const char *const cfgs[] = {"config", "config.worktree"};
	for (size_t i = 0; i < ELEMENTSOF(cfgs); i++) {
		free(p);
		if (!(p = pjoin(dir, cfgs[i])))
			return -ENOMEM;
		if ((r = git_scan_config(g, p, wt, 0)) < 0)
			return r;
	}
	/* the system's and the user's config apply to this repository too */
	const char *home = getenv("HOME"), *xdg = getenv("XDG_CONFIG_HOME");
	char hp[3][4096];
	snprintf(hp[0], sizeof(hp[0]), "/etc/gitconfig");
	snprintf(hp[1], sizeof(hp[1]), "%s/.gitconfig",
		 home && home[0] == '/' ? home : "/nonexistent");
	if (xdg && xdg[0] == '/')
		snprintf(hp[2], sizeof(hp[2]), "%s/git/config", xdg);
	else
		snprintf(hp[2], sizeof(hp[2]), "%s/.config/git/config",
			 home && home[0] == '/' ? home : "/nonexistent");
	for (size_t i = 0; i < ELEMENTSOF(hp); i++)
		if ((r = git_scan_config(g, hp[i], wt, 0)) < 0)
			return r;
	free(p);
	if (!(p = pjoin(dir, "commondir")))
		return -ENOMEM;
	return git_follow_file(g, p, NULL, wt, depth);
}

/* Other tools of docs/FLAGGED.md that name files by path, in the directory
 * of a change or one of its parents: direnv's .envrc (source_env, dotenv,
 * source, `.`), make's include lines, pre-commit's local hook entries. The
 * named files become code (or environment) those tools run. */
static int tool_refs_at(struct gitscan *g, const char *dir)
{
	static const struct {
		const char *file, *why;
		int kind; /* 0 envrc, 1 make, 2 pre-commit */
	} tools[] = {
		{".envrc", "file sourced by an .envrc (direnv runs it)", 0},
		{"Makefile", "file included by a Makefile", 1},
		{"GNUmakefile", "file included by a Makefile", 1},
		{"makefile", "file included by a Makefile", 1},
		{".pre-commit-config.yaml", "local pre-commit hook program", 2},
	};
	for (size_t t = 0; t < ELEMENTSOF(tools); t++) {
		_cleanup_free_ char *f = pjoin(dir, tools[t].file);
		if (!f)
			return -ENOMEM;
		for (int layer = 0; layer < 2; layer++) {
			_cleanup_free_ char *buf =
				layer_read(layer ? g->lower : g->upper, f, GIT_CFG_MAX);
			for (char *line = buf, *next; line && *line; line = next) {
				next = line + strcspn(line, "\n");
				if (*next)
					*next++ = '\0';
				while (*line == ' ' || *line == '\t')
					line++;
				char *arg = NULL, def_env[] = ".env";
				if (tools[t].kind == 0) {
					static const char *const cmds[] = {
						"source_env ",	     "source_env_if_exists ",
						"dotenv ",	     "dotenv_if_exists ",
						"source ",	     ". ",
						"source_up ",	     "source_up_if_exists ",
						"env_vars_required "};
					for (size_t c = 0; !arg && c < ELEMENTSOF(cmds); c++)
						if (strncmp(line, cmds[c], strlen(cmds[c])) == 0)
							arg = line + strlen(cmds[c]);
					if (!arg &&
					    (streq(line, "dotenv") ||
					     streq(line, "dotenv_if_exists")))
						arg = def_env;
				} else if (tools[t].kind == 1) {
					static const char *const cmds[] = {"include ", "-include ",
									   "sinclude "};
					for (size_t c = 0; !arg && c < ELEMENTSOF(cmds); c++)
						if (strncmp(line, cmds[c], strlen(cmds[c])) == 0)
							arg = line + strlen(cmds[c]);
				} else if (strncmp(line, "entry:", 6) == 0) {
					arg = line + 6;
				}
				/* every word that is a plain path (no variables, no quotes) */
				for (char *w = arg; w && *w;) {
					while (*w == ' ' || *w == '\t')
						w++;
					size_t n = strcspn(w, " \t#");
					if (n == 0)
						break;
					char save = w[n];
					w[n] = '\0';
					if (!strpbrk(w, "$`'\"(){}*?[") &&
					    (tools[t].kind != 2 || strchr(w, '/'))) {
						int r = add_ref(g, resolve_in(g, dir, w),
								tools[t].why, false);
						if (r < 0)
							return r;
					}
					w[n] = save;
					if (save == '#' || tools[t].kind == 2)
						break; /* a comment; pre-commit: the program only */
					w += n;
				}
			}
		}
	}
	return 0;
}

/* Discovery at dir: dir itself as a bare repository, dir/.git as a
 * directory, a gitdir file or a symlink. */
static int git_discover_at(struct gitscan *g, const char *dir)
{
	int r = strset_add(&g->checked, dir, GIT_MAX_CHECKED);
	if (r == -E2BIG) {
		g->overflow = true;
		return 0;
	}
	if (r <= 0)
		return r;
	if ((r = tool_refs_at(g, dir)) < 0)
		return r;
	if (is_gitdir(g, dir, false) && (r = git_add_dir(g, dir, NULL, 0)) < 0)
		return r;
	_cleanup_free_ char *dg = pjoin(dir, ".git");
	if (!dg)
		return -ENOMEM;
	/* each layer on its own: an upper file may replace a lower directory */
	for (int layer = 0; layer < 2; layer++) {
		mode_t t = layer_type(layer ? g->lower : g->upper, dg);
		/* a directory named .git counts whatever it holds yet: git init
		 * there keeps its config and hooks */
		if (S_ISDIR(t))
			r = git_add_dir(g, dg, dir, 0);
		else if (S_ISREG(t))
			r = git_follow_file(g, dg, "gitdir:", dir, 0);
		else if (S_ISLNK(t)) {
			char buf[PATH_MAX_BYTES + 1];
			const char *name;
			_cleanup_close_ int pfd =
				open_parent(layer ? g->lower : g->upper, dg, &name);
			ssize_t n = pfd >= 0 ? readlinkat(pfd, name, buf, sizeof(buf) - 1) : -1;
			if (n > 0) {
				buf[n] = '\0';
				_cleanup_free_ char *tgt = resolve_in(g, dir, buf);
				r = tgt ? git_add_dir(g, tgt, dir, 0) : 0;
			}
		}
		if (r < 0)
			return r;
	}
	return 0;
}

/* Plain object and ref data inside an existing git directory: what commits,
 * fetches and checkouts write. Everything else there (config, hooks, info/,
 * modules/, worktrees/, commondir, rebase and sequencer todo lists…) is
 * configuration or code. */
static bool git_data_path(const char *sub)
{
	static const char *const trees[] = {"objects", "refs", "logs"};
	static const char *const files[] = {
		"",
		"index",
		"HEAD",
		"ORIG_HEAD",
		"FETCH_HEAD",
		"MERGE_HEAD",
		"CHERRY_PICK_HEAD",
		"REVERT_HEAD",
		"COMMIT_EDITMSG",
		"MERGE_MSG",
		"SQUASH_MSG",
		"packed-refs",
		"description",
		"shallow",
	};
	for (size_t i = 0; i < ELEMENTSOF(trees); i++)
		if (under(sub, trees[i]))
			return true;
	for (size_t i = 0; i < ELEMENTSOF(files); i++)
		if (streq(sub, files[i]))
			return true;
	return false;
}

/* Follow a symlink at path (target t) through the links of both layers;
 * the workspace-relative result, or NULL when it leaves the workspace or
 * loops. */
static char *link_follow(const struct gitscan *g, const char *path, const char *t)
{
	_cleanup_free_ char *dir = pdir(path);
	char *cur = dir ? resolve_in(g, dir, t) : NULL;
	unsigned hops = 0;

restart:
	for (size_t i = 0; cur; i++) {
		char c = cur[i];
		if (c != '/' && c != '\0')
			continue;
		if (i > 0) {
			_cleanup_free_ char *pre = strndup(cur, i);
			if (!pre) {
				free(cur);
				return NULL;
			}
			for (int layer = 0; layer < 2; layer++) {
				int root = layer ? g->lower : g->upper;
				mode_t lt = layer_type(root, pre);
				if (!lt)
					continue;
				if (!S_ISLNK(lt))
					break;
				char buf[PATH_MAX_BYTES + 1];
				const char *name;
				_cleanup_close_ int pfd = open_parent(root, pre, &name);
				ssize_t n =
					pfd >= 0 ? readlinkat(pfd, name, buf, sizeof(buf) - 1) : -1;
				_cleanup_free_ char *pd = pdir(pre);
				if (n <= 0 || !pd || ++hops > LINK_MAX_HOPS) {
					free(cur);
					return NULL;
				}
				buf[n] = '\0';
				_cleanup_free_ char *base = resolve_in(g, pd, buf);
				char *next = base ? pjoin(base, c ? cur + i + 1 : "") : NULL;
				free(cur);
				cur = next;
				goto restart;
			}
		}
		if (!c)
			break;
	}
	return cur;
}

static const char *link_check(struct gitscan *g, const struct moat_fs_entry *e)
{
	_cleanup_free_ char *f = link_follow(g, e->path, e->target);
	if (!f)
		return NULL; /* leaves the workspace: flagged as "outside" */
	for (const char *s = f; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 4 && strncasecmp(s, ".git", 4) == 0)
			return "symlink points at or into a .git";
		s += n;
		while (*s == '/')
			s++;
	}
	for (size_t i = 0; i < g->n_refs; i++)
		if (g->refs[i].subtree ? under(f, g->refs[i].path) : streq(f, g->refs[i].path))
			return "symlink points at a file git runs or includes";
	for (size_t i = 0; i < g->n_dirs; i++)
		if (under(f, g->dirs[i]))
			return "symlink points into a git directory (found by structure)";
	/* the target itself, or one of its parents, may be a repository no change touched */
	for (size_t i = 0;; i++) {
		if (f[i] == '/' || f[i] == '\0') {
			_cleanup_free_ char *pre = strndup(f, i);
			if (pre && is_gitdir(g, pre, false))
				return "symlink points into a git directory (found by structure)";
		}
		if (!f[i])
			break;
	}
	if (moat_flag_match(g->w->rules, f, S_IFREG))
		return "symlink points at a flagged path";
	return NULL;
}

/* What a changed config inside a git directory sets, for the reason text. */
static const char *git_config_reason(struct gitscan *g, const char *path)
{
	_cleanup_free_ char *buf = layer_read(g->upper, path, GIT_CFG_MAX);
	struct cfg_item it;
	size_t pos = 0;
	if (!buf)
		return NULL;
	while (cfg_next(buf, &pos, &it) == 1) {
		const char *d = cfg_danger(&it);
		if (!d || !it.has_val)
			continue;
		if (streq(d, "include.path"))
			return "git config includes another file (include.path)";
		if (streq(d, "core.hookspath"))
			return "git config sets core.hooksPath: hooks from another directory";
		if (streq(d, "core.worktree"))
			return "git config sets core.worktree";
		if (streq(it.sect, "core") && streq(it.key, "fsmonitor"))
			return "git config sets core.fsmonitor: runs a program on git status";
		return "git config names a program git runs (alias, filter, editor, ssh…)";
	}
	return NULL;
}

static int git_pass(struct walk *w, int upper, int lower, const char *workspace)
{
	struct gitscan *g = calloc(1, sizeof(*g));
	int r = 0;

	if (!g)
		return -ENOMEM;
	g->w = w;
	g->upper = upper;
	g->lower = lower;
	g->workspace = workspace;
	/* discovery points: every directory of a change and each of its parents */
	for (size_t i = 0; r >= 0 && i < w->m->n; i++) {
		const struct moat_fs_entry *e = &w->m->entries[i];
		_cleanup_free_ char *d = S_ISDIR(e->type) ? strdup(e->path) : pdir(e->path);
		if (!d) {
			r = -ENOMEM;
			break;
		}
		for (;;) {
			r = git_discover_at(g, d);
			char *s = strrchr(d, '/');
			if (r < 0 || !*d)
				break;
			if (s)
				*s = '\0';
			else
				d[0] = '\0';
		}
	}
	/* a referenced path reached through a symlink of either layer: the file
	 * git really reads is where the links lead */
	for (size_t i = 0, n = g->n_refs; r >= 0 && i < n; i++) {
		char *real = link_follow(g, "_", g->refs[i].path);
		if (real && !streq(real, g->refs[i].path))
			r = add_ref(g, real, g->refs[i].why, g->refs[i].subtree);
		else
			free(real);
	}
	for (size_t i = 0; r >= 0 && i < w->m->n; i++) {
		struct moat_fs_entry *e = &w->m->entries[i];
		const char *why = NULL;
		/* a symlink that replaces a directory on the way to one of them */
		for (size_t j = 0; S_ISLNK(e->type) && !why && j < g->n_refs; j++)
			if (under(g->refs[j].path, e->path))
				why = "symlink replaces a directory of a file git or another tool reads";
		for (size_t j = 0; S_ISLNK(e->type) && !why && j < g->n_dirs; j++)
			if (under(g->dirs[j], e->path))
				why = "symlink replaces a directory of a git directory";
		for (size_t j = 0; !why && j < g->n_dirs; j++) {
			size_t n = strlen(g->dirs[j]);
			if (!under(e->path, g->dirs[j]))
				continue;
			const char *sub = e->path + n + (n && e->path[n] == '/');
			if (g->dir_new[j])
				why = "inside a git repository created in this run (found by structure)";
			else if (!git_data_path(sub)) {
				const char *base = strrchr(sub, '/');
				base = base ? base + 1 : sub;
				if (e->change != MOAT_FS_DELETED &&
				    (streq(base, "config") || streq(base, "config.worktree")))
					why = git_config_reason(g, e->path);
				if (!why)
					why = "git directory (found by structure): config, hooks and "
					      "redirections run code";
			}
		}
		for (size_t j = 0; !why && j < g->n_refs; j++)
			if (g->refs[j].subtree ? under(e->path, g->refs[j].path)
					       : streq(e->path, g->refs[j].path))
				why = g->refs[j].why;
		if (!why && S_ISLNK(e->type) && e->change != MOAT_FS_DELETED && e->target)
			why = link_check(g, e);
		if (!why && g->overflow)
			why = "too many repositories or references to check: held for review";
		if (why && !e->flagged)
			r = set_str(&e->flagged, why);
	}
	for (size_t i = 0; i < g->n_dirs; i++)
		free(g->dirs[i]);
	for (size_t i = 0; i < g->n_refs; i++)
		free(g->refs[i].path);
	strset_done(&g->checked);
	free(g);
	return r;
}

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
		r = git_pass(w, upper_dirfd, lower_dirfd, w->lim.workspace);
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

/* ---- apply ---------------------------------------------------------------- */

static int remove_tree_at(int dirfd, const char *name, unsigned depth)
{
	char **names = NULL;
	size_t n = 0;
	int r;

	if (unlinkat(dirfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return negerrno();
	if (depth > 256)
		return -ELOOP;
	_cleanup_close_ int fd =
		openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	/* never into another mount (the sandbox could not see inside it) */
	struct stat pst, cst;
	if (fstat(dirfd, &pst) < 0 || fstat(fd, &cst) < 0)
		return negerrno();
	if (pst.st_dev != cst.st_dev)
		return -EXDEV;
	r = list_dir(fd, &names, &n);
	for (size_t i = 0; r >= 0 && i < n; i++)
		r = remove_tree_at(fd, names[i], depth + 1);
	free_names(names, n);
	if (r >= 0 && unlinkat(dirfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		r = negerrno();
	return r;
}

static int tmp_name(char buf[32])
{
	uint8_t rnd[8];
	char h[17];
	if (getrandom(rnd, sizeof(rnd), 0) != (ssize_t)sizeof(rnd))
		return -EIO;
	hex(rnd, sizeof(rnd), h);
	snprintf(buf, 32, ".moat-tmp-%s", h);
	return 0;
}

/* Write the regular file of e from src into parent/tmp, verifying size and
 * SHA-256 against the manifest. */
static int write_file_tmp(const struct moat_manifest *m, const struct moat_fs_entry *e, int src,
			  int parent, const char *tmp, bool with_xattrs)
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
		hex(e->sha256, 32, hx);
		in = openat(src, hx, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
		if (in < 0)
			return negerrno();
	} else {
		in = openat2_beneath(src, e->path, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
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
		r = xattrs_apply(out, e->xattrs);
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
	_cleanup_close_ int parent = open_parent(target, e->path, &name);
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
			r = sha256_at(parent, name, sha);
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
		return S_ISDIR(e->old_type) ? remove_tree_at(parent, name, 0)
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
			return e->xattr_diff ? xattrs_apply(fd, e->xattrs) : 0;
		}
		return 0;
	case MOAT_FS_XATTR:
		return xattrs_apply_at(parent, name, e);
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
		return xattrs_apply_at(parent, name, e);
	}
	if (!S_ISREG(e->type) && !S_ISLNK(e->type))
		return -EPERM; /* refused kinds never get here */
	r = tmp_name(tmp);
	if (r < 0)
		return r;
	if (S_ISREG(e->type)) {
		r = write_file_tmp(m, e, src, parent, tmp, true);
	} else
		r = symlinkat(e->target, parent, tmp) < 0 ? negerrno() : 0;
	if (r >= 0)
		own_like(parent, tmp, exists ? &cur : NULL);
	if (r >= 0 && exists && S_ISDIR(cur.st_mode))
		r = remove_tree_at(parent, name, 0);
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
		if (e->flagged && mode == MOAT_FSAPPLY_SAFE) {
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
		r = apply_entry(m, e, src_dirfd, target_dirfd);
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
		_cleanup_close_ int fd =
			openat2_beneath(target_dirfd, e->path, O_RDONLY | O_DIRECTORY, 0);
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

/* ---- JSON, text, audit ---------------------------------------------------- */

static int put_kv_str(struct moat_jbuf *b, const char *key, const char *s, bool with_hex)
{
	int r = moat_jbuf_printf(b, ",\"%s\":", key);
	if (r >= 0)
		r = moat_jbuf_put_jstr(b, s, strlen(s));
	if (r >= 0 && with_hex && !moat_json_is_clean(s, strlen(s))) {
		size_t n = strlen(s);
		_cleanup_free_ char *h = malloc(2 * n + 1);
		if (!h)
			return -ENOMEM;
		hex((const uint8_t *)s, n, h);
		r = moat_jbuf_printf(b, ",\"%s_hex\":\"%s\"", key, h);
	}
	return r;
}

static int entry_json(struct moat_jbuf *b, const struct moat_fs_entry *e)
{
	char hx[65];
	int r = moat_jbuf_puts(b, "{\"path\":");

	if (r >= 0)
		r = moat_jbuf_put_jstr(b, e->path, strlen(e->path));
	if (r >= 0 && !moat_json_is_clean(e->path, strlen(e->path))) {
		size_t n = strlen(e->path);
		_cleanup_free_ char *h = malloc(2 * n + 1);
		if (!h)
			return -ENOMEM;
		hex((const uint8_t *)e->path, n, h);
		r = moat_jbuf_printf(b, ",\"path_hex\":\"%s\"", h);
	}
	if (r >= 0)
		r = moat_jbuf_printf(b, ",\"change\":\"%s\",\"type\":\"%s\"",
				     moat_fs_change_name(e->change), type_name(e->type));
	if (r >= 0 && e->change != MOAT_FS_DELETED)
		r = moat_jbuf_printf(b, ",\"mode\":\"%04o\"", (unsigned)e->mode);
	if (r >= 0 && S_ISREG(e->type))
		r = moat_jbuf_printf(b, ",\"size\":%" PRIu64, e->size);
	if (r >= 0 && e->has_sha) {
		hex(e->sha256, 32, hx);
		r = moat_jbuf_printf(b, ",\"sha256\":\"%s\"", hx);
	}
	if (r >= 0 && e->mtime_ns)
		r = moat_jbuf_printf(b, ",\"mtime_ns\":%" PRId64, e->mtime_ns);
	if (r >= 0 && e->old_type)
		r = moat_jbuf_printf(b, ",\"old_type\":\"%s\",\"old_mode\":\"%04o\"",
				     type_name(e->old_type), (unsigned)e->old_mode);
	if (r >= 0 && S_ISREG(e->old_type))
		r = moat_jbuf_printf(b, ",\"old_size\":%" PRIu64, e->old_size);
	if (r >= 0 && e->has_old_sha) {
		hex(e->old_sha256, 32, hx);
		r = moat_jbuf_printf(b, ",\"old_sha256\":\"%s\"", hx);
	}
	if (r >= 0 && e->opaque)
		r = moat_jbuf_puts(b, ",\"opaque\":true");
	if (r >= 0 && e->target)
		r = put_kv_str(b, "target", e->target, true);
	if (r >= 0 && e->xattrs)
		r = put_kv_str(b, "xattrs", e->xattrs, false);
	if (r >= 0 && e->xattr_diff)
		r = put_kv_str(b, "xattr_diff", e->xattr_diff, false);
	if (r >= 0 && e->flagged)
		r = put_kv_str(b, "flagged", e->flagged, false);
	if (r >= 0 && e->refused)
		r = put_kv_str(b, "refused", e->refused, false);
	if (r >= 0)
		r = moat_jbuf_printf(b, ",\"state\":\"%s\"", moat_fs_state_name(e->state));
	if (r >= 0 && e->err)
		r = moat_jbuf_printf(b, ",\"error\":\"%s\"", strerrorname_np(e->err) ?: "?");
	if (r >= 0)
		r = moat_jbuf_puts(b, "}");
	return r;
}

int moat_manifest_to_json(const struct moat_manifest *m, char **ret)
{
	struct moat_jbuf b;
	unsigned cnt[5] = {0}, flagged = 0, refused = 0;
	int r;

	moat_jbuf_init(&b, MANIFEST_MAX_BYTES);
	r = moat_jbuf_printf(&b, "{\"v\":1");
	if (r >= 0 && m->workspace)
		r = put_kv_str(&b, "workspace", m->workspace, true);
	if (r >= 0)
		r = moat_jbuf_puts(&b, ",\"entries\":[");
	for (size_t i = 0; r >= 0 && i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		if (i > 0)
			r = moat_jbuf_puts(&b, ",\n");
		else
			r = moat_jbuf_puts(&b, "\n");
		if (r >= 0)
			r = entry_json(&b, e);
		cnt[e->change]++;
		flagged += !!e->flagged;
		refused += !!e->refused;
	}
	if (r >= 0)
		r = moat_jbuf_printf(
			&b,
			"],\n\"summary\":{\"created\":%u,\"modified\":%u,\"deleted\":%u,"
			"\"mode\":%u,\"xattr\":%u,\"flagged\":%u,\"refused\":%u,\"bytes\":%" PRIu64
			"}}\n",
			cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], flagged, refused, m->total_bytes);
	if (r < 0) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

static int put_display(struct moat_jbuf *b, const char *s)
{
	size_t n = strlen(s);
	if (moat_json_is_clean(s, n) && !strchr(s, ' '))
		return moat_jbuf_putn(b, s, n);
	return moat_jbuf_put_jstr(b, s, n);
}

int moat_manifest_to_text(const struct moat_manifest *m, char **ret)
{
	static const char marks[] = "+~-mx";
	struct moat_jbuf b;
	unsigned cnt[5] = {0}, flagged = 0, refused = 0, held = 0;
	int r = 0;

	moat_jbuf_init(&b, MANIFEST_MAX_BYTES);
	for (size_t i = 0; r >= 0 && i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		mode_t t = e->change == MOAT_FS_DELETED ? e->old_type : e->type;
		cnt[e->change]++;
		flagged += !!e->flagged;
		refused += !!e->refused;
		held += e->state == MOAT_FS_HELD;
		r = moat_jbuf_printf(&b, "%c %-8s %-7s ", marks[e->change],
				     moat_fs_change_name(e->change), type_name(t));
		if (r >= 0)
			r = put_display(&b, e->path);
		if (r >= 0 && S_ISDIR(t))
			r = moat_jbuf_puts(&b, "/");
		if (r >= 0 && e->target) {
			r = moat_jbuf_puts(&b, " -> ");
			if (r >= 0)
				r = put_display(&b, e->target);
		}
		if (r >= 0 && S_ISREG(e->type) && e->change != MOAT_FS_MODE &&
		    e->change != MOAT_FS_XATTR)
			r = moat_jbuf_printf(&b, " (%" PRIu64 " bytes)", e->size);
		if (r >= 0 && e->xattr_diff) {
			r = moat_jbuf_puts(&b, " (xattrs ");
			if (r >= 0)
				r = put_display(&b, e->xattr_diff);
			if (r >= 0)
				r = moat_jbuf_puts(&b, ")");
		}
		if (r >= 0 && e->old_type && e->change != MOAT_FS_DELETED && e->old_mode != e->mode)
			r = moat_jbuf_printf(&b, " (mode %04o -> %04o)", (unsigned)e->old_mode,
					     (unsigned)e->mode);
		if (r >= 0 && e->old_type && e->type && e->old_type != e->type)
			r = moat_jbuf_printf(&b, " (was %s)", type_name(e->old_type));
		if (r >= 0 && e->refused)
			r = moat_jbuf_printf(&b, "  REFUSED: %s", e->refused);
		else if (r >= 0 && e->flagged)
			r = moat_jbuf_printf(&b, "  FLAGGED: %s", e->flagged);
		if (r >= 0 && e->state != MOAT_FS_PENDING)
			r = moat_jbuf_printf(&b, "  [%s%s%s]", moat_fs_state_name(e->state),
					     e->err ? ": " : "", e->err ? strerror(e->err) : "");
		if (r >= 0)
			r = moat_jbuf_puts(&b, "\n");
	}
	if (r >= 0)
		r = moat_jbuf_printf(
			&b,
			"%u created, %u modified, %u deleted, %u mode changes, %u xattr changes; "
			"%u flagged, %u refused, %u held back\n",
			cnt[0], cnt[1], cnt[2], cnt[3], cnt[4], flagged, refused, held);
	if (r < 0) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

int moat_manifest_audit(const struct moat_manifest *m, struct moat_audit *a)
{
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		struct moat_audit_field f[13];
		size_t k = 0;
		char hx[65];
		int r;

		f[k++] = (struct moat_audit_field)MOAT_F_STR("path", e->path);
		f[k++] = (struct moat_audit_field)MOAT_F_STR("change",
							     moat_fs_change_name(e->change));
		f[k++] = (struct moat_audit_field)MOAT_F_STR(
			"file_type",
			type_name(e->change == MOAT_FS_DELETED ? e->old_type : e->type));
		if (S_ISREG(e->type))
			f[k++] = (struct moat_audit_field)MOAT_F_UINT("size", e->size);
		if (e->has_sha) {
			hex(e->sha256, 32, hx);
			f[k++] = (struct moat_audit_field)MOAT_F_STR("sha256", hx);
		}
		if (e->change != MOAT_FS_DELETED)
			f[k++] = (struct moat_audit_field)MOAT_F_UINT("mode", e->mode);
		if (e->target)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("target", e->target);
		if (e->xattr_diff)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("xattrs", e->xattr_diff);
		if (e->flagged)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("flagged", e->flagged);
		if (e->refused)
			f[k++] = (struct moat_audit_field)MOAT_F_STR("refused", e->refused);
		f[k++] = (struct moat_audit_field)MOAT_F_STR("state", moat_fs_state_name(e->state));
		if (e->refused || e->state == MOAT_FS_HELD)
			f[k++] = (struct moat_audit_field)MOAT_F_DENIED;
		r = moat_audit_event(a, MOAT_EV_FILE, f, k);
		if (r < 0)
			return r;
		if (e->flagged || e->refused) {
			r = MOAT_AUDIT(
				a, MOAT_EV_ALERT,
				MOAT_F_STR("cause", e->refused ? "refused_file" : "flagged_file"),
				MOAT_F_STR("path", e->path),
				MOAT_F_STR("reason", e->refused ? e->refused : e->flagged),
				MOAT_F_STR("state", moat_fs_state_name(e->state)));
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* ---- save / load ---------------------------------------------------------- */

int moat_fsdiff_open_store(int run_dirfd)
{
	int fd = openat(run_dirfd, "held", O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	return fd < 0 ? negerrno() : fd;
}

static int write_file_atomic(int dirfd, const char *name, const char *data, size_t len)
{
	char tmp[32];
	_cleanup_close_ int fd = -1;
	int r = tmp_name(tmp);

	if (r < 0)
		return r;
	fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return negerrno();
	for (size_t off = 0; off < len;) {
		ssize_t w = write(fd, data + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0) {
			r = negerrno();
			break;
		}
		off += (size_t)w;
	}
	if (r >= 0 && fsync(fd) < 0)
		r = negerrno();
	if (r >= 0 && renameat(dirfd, tmp, dirfd, name) < 0)
		r = negerrno();
	if (r < 0)
		(void)unlinkat(dirfd, tmp, 0);
	return r;
}

static bool keeps_content(const struct moat_fs_entry *e)
{
	return S_ISREG(e->type) && e->has_sha && !e->refused && e->state != MOAT_FS_APPLIED &&
		e->state != MOAT_FS_DROPPED && e->change != MOAT_FS_MODE &&
		e->change != MOAT_FS_DELETED;
}

int moat_fsdiff_save(struct moat_manifest *m, int upper_dirfd, int run_dirfd, uint64_t max_bytes)
{
	return moat_fsdiff_save_ex(m, upper_dirfd, run_dirfd, max_bytes, NULL);
}

int moat_fsdiff_save_ex(struct moat_manifest *m, int upper_dirfd, int run_dirfd, uint64_t max_bytes,
			uint64_t *ret_need)
{
	_cleanup_free_ char *json = NULL;
	uint64_t need = 0;
	int r, first_err = 0;

	if (upper_dirfd >= 0) {
		/* all or nothing: a partial store would let `moat apply` build half a tree */
		for (size_t i = 0; i < m->n; i++)
			if (keeps_content(&m->entries[i]))
				need += m->entries[i].size;
		if (ret_need)
			*ret_need = need;
		if (max_bytes && need > max_bytes) {
			for (size_t i = 0; i < m->n; i++) {
				struct moat_fs_entry *e = &m->entries[i];
				if (!e->refused && e->state != MOAT_FS_APPLIED)
					e->state = MOAT_FS_DROPPED;
			}
			first_err = -EFBIG;
			upper_dirfd = -1;
		}
	}
	if (upper_dirfd >= 0) {
		if (mkdirat(run_dirfd, "held", 0700) < 0 && errno != EEXIST)
			return negerrno();
		_cleanup_close_ int store =
			openat(run_dirfd, "held", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (store < 0)
			return negerrno();
		for (size_t i = 0; i < m->n; i++) {
			const struct moat_fs_entry *e = &m->entries[i];
			struct stat st;
			char hx[65], tmp[32];

			if (!keeps_content(e))
				continue;
			hex(e->sha256, 32, hx);
			if (fstatat(store, hx, &st, AT_SYMLINK_NOFOLLOW) == 0)
				continue; /* same content already held */
			r = tmp_name(tmp);
			if (r >= 0)
				r = write_file_tmp(&(struct moat_manifest){0}, e, upper_dirfd,
						   store, tmp, false);
			/* held copies stay readable whatever mode they will get */
			if (r >= 0 && fchmodat(store, tmp, 0400, 0) < 0)
				r = negerrno();
			if (r >= 0 && renameat(store, tmp, store, hx) < 0)
				r = negerrno();
			if (r < 0) {
				(void)unlinkat(store, tmp, 0);
				first_err = first_err ?: r;
			}
		}
	}
	/* the manifest is written even when some copies failed: `moat diff`
	 * shows everything, `moat apply` fails only those entries */
	r = moat_manifest_to_json(m, &json);
	if (r >= 0)
		r = write_file_atomic(run_dirfd, "manifest.json", json, strlen(json));
	return r < 0 ? r : first_err;
}

static bool rel_path_ok(const char *p)
{
	if (!*p || *p == '/' || strlen(p) > PATH_MAX_BYTES)
		return false;
	for (const char *s = p; *s;) {
		size_t n = strcspn(s, "/");
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false;
		s += n;
		if (*s == '/')
			s++;
		if (!*s && s[-1] == '/')
			return false;
	}
	return true;
}

static int get_str_hex(json_t *o, const char *key, char **ret)
{
	char hk[32];
	json_t *h, *v;

	snprintf(hk, sizeof(hk), "%s_hex", key);
	h = json_object_get(o, hk);
	v = json_object_get(o, key);
	*ret = NULL;
	if (json_is_string(h)) {
		size_t n = json_string_length(h);
		if (n % 2 || n == 0)
			return -EINVAL;
		char *s = calloc(n / 2 + 1, 1);
		if (!s)
			return -ENOMEM;
		if (unhex(json_string_value(h), (uint8_t *)s, n / 2) < 0 || strlen(s) != n / 2) {
			free(s);
			return -EINVAL;
		}
		*ret = s;
		return 0;
	}
	if (!v)
		return 0;
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return -EINVAL;
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : -ENOMEM;
}

static int get_mode(json_t *o, const char *key, mode_t *ret)
{
	json_t *v = json_object_get(o, key);
	char *end;
	unsigned long m;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return -EINVAL;
	errno = 0;
	m = strtoul(json_string_value(v), &end, 8);
	if (errno || *end || m > 07777)
		return -EINVAL;
	*ret = (mode_t)m;
	return 0;
}

static int load_entry(json_t *o, struct moat_fs_entry *e)
{
	const char *s;
	json_t *v;
	int r;

	if (!json_is_object(o))
		return -EINVAL;
	r = get_str_hex(o, "path", &e->path);
	if (r < 0 || !e->path || !rel_path_ok(e->path))
		return -EINVAL;
	s = json_string_value(json_object_get(o, "change"));
	e->change = (enum moat_fs_change) - 1;
	for (unsigned c = 0; s && c <= MOAT_FS_XATTR; c++)
		if (streq(s, moat_fs_change_name(c)))
			e->change = c;
	if ((unsigned)e->change > MOAT_FS_XATTR)
		return -EINVAL;
	e->type = type_from_name(json_string_value(json_object_get(o, "type")));
	e->old_type = json_object_get(o, "old_type")
		? type_from_name(json_string_value(json_object_get(o, "old_type")))
		: 0;
	if (e->type == (mode_t)-1 || e->old_type == (mode_t)-1)
		return -EINVAL;
	if (get_mode(o, "mode", &e->mode) < 0 || get_mode(o, "old_mode", &e->old_mode) < 0)
		return -EINVAL;
	if ((v = json_object_get(o, "size")))
		e->size = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(o, "old_size")))
		e->old_size = (uint64_t)json_integer_value(v);
	if ((v = json_object_get(o, "mtime_ns")))
		e->mtime_ns = json_integer_value(v);
	if ((v = json_object_get(o, "sha256"))) {
		if (!json_is_string(v) || unhex(json_string_value(v), e->sha256, 32) < 0)
			return -EINVAL;
		e->has_sha = true;
	}
	if ((v = json_object_get(o, "old_sha256"))) {
		if (!json_is_string(v) || unhex(json_string_value(v), e->old_sha256, 32) < 0)
			return -EINVAL;
		e->has_old_sha = true;
	}
	e->opaque = json_is_true(json_object_get(o, "opaque"));
	if (get_str_hex(o, "xattrs", &e->xattrs) < 0 ||
	    get_str_hex(o, "xattr_diff", &e->xattr_diff) < 0 ||
	    get_str_hex(o, "target", &e->target) < 0 ||
	    get_str_hex(o, "flagged", &e->flagged) < 0 ||
	    get_str_hex(o, "refused", &e->refused) < 0)
		return -EINVAL;
	if (S_ISLNK(e->type) && e->change != MOAT_FS_DELETED && !e->target)
		return -EINVAL;
	s = json_string_value(json_object_get(o, "state"));
	e->state = (enum moat_fs_state) - 1;
	for (unsigned c = 0; s && c <= MOAT_FS_DROPPED; c++)
		if (streq(s, moat_fs_state_name(c)))
			e->state = c;
	if ((unsigned)e->state > MOAT_FS_DROPPED)
		return -EINVAL;
	/* a failed or conflicting entry may be retried */
	if (e->state == MOAT_FS_FAILED || e->state == MOAT_FS_CONFLICT)
		e->state = MOAT_FS_PENDING;
	/* refusals are recomputed from the data, not trusted from the file */
	if (!e->refused && e->change != MOAT_FS_DELETED)
		return refuse_entry(e);
	return 0;
}

int moat_fsdiff_load(int run_dirfd, struct moat_manifest **ret)
{
	_cleanup_close_ int fd =
		openat(run_dirfd, "manifest.json", O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	_cleanup_free_ char *buf = NULL;
	struct moat_manifest *m = NULL;
	json_error_t err;
	json_t *root, *ents;
	struct stat st;
	ssize_t n;
	int r = 0;

	if (fd < 0)
		return negerrno();
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (!S_ISREG(st.st_mode) || (uint64_t)st.st_size > MANIFEST_MAX_BYTES)
		return -EINVAL;
	buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	n = read(fd, buf, (size_t)st.st_size);
	if (n < 0)
		return negerrno();
	root = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &err);
	if (!root)
		return -EBADMSG;
	ents = json_object_get(root, "entries");
	if (json_integer_value(json_object_get(root, "v")) != 1 || !json_is_array(ents) ||
	    json_array_size(ents) > 1000000) {
		json_decref(root);
		return -EBADMSG;
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->entries = calloc(json_array_size(ents) + 1, sizeof(*m->entries));
	if (!m || !m->entries) {
		json_decref(root);
		moat_manifest_free(m);
		return -ENOMEM;
	}
	m->cap = json_array_size(ents) + 1;
	m->from_store = true;
	r = get_str_hex(root, "workspace", &m->workspace);
	for (size_t i = 0; r >= 0 && i < json_array_size(ents); i++) {
		r = load_entry(json_array_get(ents, i), &m->entries[i]);
		m->n = i + 1;
		if (r >= 0 && S_ISREG(m->entries[i].type) &&
		    m->entries[i].change != MOAT_FS_DELETED &&
		    m->entries[i].change != MOAT_FS_MODE && m->entries[i].change != MOAT_FS_XATTR)
			m->total_bytes += m->entries[i].size;
	}
	json_decref(root);
	if (r < 0) {
		moat_manifest_free(m);
		return r == -ENOMEM ? r : -EBADMSG;
	}
	*ret = m;
	return 0;
}
