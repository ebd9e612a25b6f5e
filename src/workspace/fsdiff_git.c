/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The git pass after the walk: repositories found by structure (gitdir,
 * commondir, includes, config-named programs) and the changes they flag. */
#include "workspace/fsdiff_int.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "shared/macro.h"

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
	_cleanup_close_ int p = moat_fsdiff_open_parent(root, rel, &name);
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
	fd = moat_fsdiff_openat2_beneath(root, rel, O_RDONLY | O_NONBLOCK | O_NOCTTY, 0);
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
				moat_fsdiff_open_parent(layer ? g->lower : g->upper, dg, &name);
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
				_cleanup_close_ int pfd = moat_fsdiff_open_parent(root, pre, &name);
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
	/* (a .bin link to a file of a dependency named like a rule is not) */
	if (!moat_risk_in_deps(f, S_IFREG) && moat_flag_match(g->w->rules, f, S_IFREG))
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

int moat_fsdiff_git_pass(struct walk *w, int upper, int lower, const char *workspace)
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
		bool in_new_repo = false;
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
			if (g->dir_new[j]) {
				why = "inside a git repository created in this run (found by structure)";
				in_new_repo = true;
			} else if (!git_data_path(sub)) {
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
		/* the git pass knows more than a dependency or executable guess: a
		 * repository inside node_modules/, a link into .git */
		if (why && e->flagged && !moat_risk_class_automatic(e->cls)) {
			free(e->flagged);
			e->flagged = NULL;
		}
		if (why && !e->flagged) {
			e->cls = MOAT_RISK_HOOKS;
			r = moat_fsdiff_set_str(&e->flagged, why);
		}
		/* every entry of a new repository shares one decision */
		if (in_new_repo)
			e->cls = MOAT_RISK_REPO;
	}
	for (size_t i = 0; i < g->n_dirs; i++)
		free(g->dirs[i]);
	for (size_t i = 0; i < g->n_refs; i++)
		free(g->refs[i].path);
	strset_done(&g->checked);
	free(g);
	return r;
}
