/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Flag rules: the built-in table and extra patterns that decide which
 * changes are held back for review (docs/FLAGGED.md). */
#include "workspace/fsdiff_int.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "shared/macro.h"

/* ---- flag rules ----------------------------------------------------------- */

/* The table docs/FLAGGED.md documents. Keep them in sync. */
const struct moat_flag_rule moat_flag_builtin[] = {
	/* git: hooks and configuration run or redirect code on the next git command */
	{".git/hooks", "git hook: runs on the next git command on the host", MOAT_FLAG_SUBTREE,
	 MOAT_RISK_HOOKS},
	{".git/config", "git config: can set core.hooksPath, core.fsmonitor, aliases, filters", 0,
	 MOAT_RISK_HOOKS},
	{".git/config.worktree", "git config: can set hooks, fsmonitor, filters", 0,
	 MOAT_RISK_HOOKS},
	{".git/worktrees/*/config.worktree", "git config: can set hooks, fsmonitor, filters", 0,
	 MOAT_RISK_HOOKS},
	{".git/info/attributes", "git attributes: select filter and diff drivers", 0,
	 MOAT_RISK_HOOKS},
	{".git/modules/*/config", "submodule git config", 0, MOAT_RISK_HOOKS},
	{".git/modules/*/hooks", "submodule git hook", MOAT_FLAG_SUBTREE, MOAT_RISK_HOOKS},
	{".git/commondir", "git directory redirection", 0, MOAT_RISK_HOOKS},
	{".git/worktrees/*/gitdir", "git directory redirection", 0, MOAT_RISK_HOOKS},
	{".git/worktrees/*/commondir", "git directory redirection", 0, MOAT_RISK_HOOKS},
	{".git", "gitdir redirection: a .git file or link points git elsewhere", MOAT_FLAG_NOT_DIR,
	 MOAT_RISK_HOOKS},
	{".gitmodules", "git submodules: URLs and paths git fetches and checks out", 0,
	 MOAT_RISK_HOOKS},
	{".gitattributes", "git attributes: select filter and diff drivers", 0, MOAT_RISK_HOOKS},
	{".pre-commit-config.yaml", "pre-commit hooks configuration", 0, MOAT_RISK_HOOKS},
	{".husky", "git hooks (husky)", MOAT_FLAG_SUBTREE, MOAT_RISK_HOOKS},
	/* CI */
	{".github/workflows", "CI workflow", MOAT_FLAG_SUBTREE, MOAT_RISK_CI},
	{".github/actions", "CI action", MOAT_FLAG_SUBTREE, MOAT_RISK_CI},
	{".gitlab-ci.yml", "CI pipeline", 0, MOAT_RISK_CI},
	{".circleci", "CI pipeline", MOAT_FLAG_SUBTREE, MOAT_RISK_CI},
	{"Jenkinsfile", "CI pipeline", 0, MOAT_RISK_CI},
	{".travis.yml", "CI pipeline", 0, MOAT_RISK_CI},
	{"azure-pipelines.yml", "CI pipeline", 0, MOAT_RISK_CI},
	{".buildkite", "CI pipeline", MOAT_FLAG_SUBTREE, MOAT_RISK_CI},
	{".drone.yml", "CI pipeline", 0, MOAT_RISK_CI},
	/* shell start-up files and directory hooks */
	{".bashrc", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".bash_profile", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".bash_login", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".bash_logout", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".profile", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".zshrc", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".zshenv", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".zprofile", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".zlogin", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".zlogout", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".kshrc", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".cshrc", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".tcshrc", "shell start-up file", 0, MOAT_RISK_STARTUP},
	{".config/fish", "shell start-up file", MOAT_FLAG_SUBTREE, MOAT_RISK_STARTUP},
	{".envrc", "direnv: runs when a shell enters the directory", 0, MOAT_RISK_STARTUP},
	/* editors and IDEs */
	{".vscode", "editor tasks and settings: can run commands", MOAT_FLAG_SUBTREE,
	 MOAT_RISK_STARTUP},
	{"*.code-workspace", "editor workspace settings: can run commands", 0, MOAT_RISK_STARTUP},
	{".idea", "IDE configuration: run configurations", MOAT_FLAG_SUBTREE, MOAT_RISK_STARTUP},
	/* agent configuration */
	{".mcp.json", "agent configuration: MCP servers start programs", 0, MOAT_RISK_AGENT},
	{".claude", "agent configuration", MOAT_FLAG_SUBTREE, MOAT_RISK_AGENT},
	{".cursor", "agent configuration", MOAT_FLAG_SUBTREE, MOAT_RISK_AGENT},
	{".cursorrules", "agent instructions", 0, MOAT_RISK_AGENT},
	{"AGENTS.md", "agent instructions", 0, MOAT_RISK_AGENT},
	{"CLAUDE.md", "agent instructions", 0, MOAT_RISK_AGENT},
	{"GEMINI.md", "agent instructions", 0, MOAT_RISK_AGENT},
	{".github/copilot-instructions.md", "agent instructions", 0, MOAT_RISK_AGENT},
	/* package managers */
	{".npmrc", "npm configuration: can change scripts and registries", 0, MOAT_RISK_MANIFEST},
	{".yarnrc.yml", "yarn configuration", 0, MOAT_RISK_MANIFEST},
	{".yarnrc", "yarn configuration", 0, MOAT_RISK_MANIFEST},
	{"pip.conf", "pip configuration: index URLs", 0, MOAT_RISK_MANIFEST},
	{".cargo/config.toml", "cargo configuration: runners, registries", 0, MOAT_RISK_MANIFEST},
	{".cargo/config", "cargo configuration: runners, registries", 0, MOAT_RISK_MANIFEST},
	/* build hooks */
	{"Makefile", "build hook: run by make", 0, MOAT_RISK_MANIFEST},
	{"GNUmakefile", "build hook: run by make", 0, MOAT_RISK_MANIFEST},
	{"*.mk", "build hook: included by make", 0, MOAT_RISK_MANIFEST},
	{"CMakeLists.txt", "build hook: run by cmake", 0, MOAT_RISK_MANIFEST},
	{"*.cmake", "build hook: run by cmake", 0, MOAT_RISK_MANIFEST},
	{"meson.build", "build hook: run by meson", 0, MOAT_RISK_MANIFEST},
	{"configure", "build hook: configure script", 0, MOAT_RISK_MANIFEST},
	{"configure.ac", "build hook: autoconf input", 0, MOAT_RISK_MANIFEST},
	{"setup.py", "build hook: run by pip/setuptools", 0, MOAT_RISK_MANIFEST},
	{"pyproject.toml", "build hook: selects the Python build backend", 0, MOAT_RISK_MANIFEST},
	{"conftest.py", "test hook: imported by pytest", 0, MOAT_RISK_MANIFEST},
	{"build.rs", "build hook: run by cargo", 0, MOAT_RISK_MANIFEST},
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
			.cls = MOAT_RISK_PATTERN,
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

const char *moat_flag_match_class(const struct moat_flag_rules *rules, const char *path,
				  mode_t type, enum moat_risk_class *ret_cls)
{
	const struct moat_flag_rule *t = rules ? rules->rules : moat_flag_builtin;
	size_t n = rules ? rules->n : moat_flag_builtin_count;

	for (size_t i = 0; i < n; i++)
		if (rule_matches(&t[i], path, type)) {
			if (ret_cls)
				*ret_cls = t[i].cls;
			return t[i].reason;
		}
	if (ret_cls)
		*ret_cls = MOAT_RISK_NONE;
	return NULL;
}

const char *moat_flag_match(const struct moat_flag_rules *rules, const char *path, mode_t type)
{
	return moat_flag_match_class(rules, path, type, NULL);
}

/* ---- risk classes ------------------------------------------------------------ */

static const char *const class_names[MOAT_RISK_COUNT] = {
	[MOAT_RISK_NONE] = "",
	[MOAT_RISK_HOOKS] = "hooks",
	[MOAT_RISK_CI] = "ci",
	[MOAT_RISK_STARTUP] = "startup",
	[MOAT_RISK_AGENT] = "agent",
	[MOAT_RISK_MANIFEST] = "manifest",
	[MOAT_RISK_SYMLINK_OUT] = "symlink-out",
	[MOAT_RISK_PATTERN] = "pattern",
	[MOAT_RISK_REPO] = "repo",
	[MOAT_RISK_EXECUTABLE] = "executable",
	[MOAT_RISK_DEPS] = "deps",
};

const char *moat_risk_class_name(enum moat_risk_class c)
{
	return (unsigned)c < MOAT_RISK_COUNT ? class_names[c] : NULL;
}

int moat_risk_class_from_name(const char *s)
{
	for (unsigned c = 1; s && c < MOAT_RISK_COUNT; c++)
		if (streq(s, class_names[c]))
			return (int)c;
	return -ENOENT;
}

bool moat_risk_class_automatic(enum moat_risk_class c)
{
	return c != MOAT_RISK_NONE && c != MOAT_RISK_EXECUTABLE && c != MOAT_RISK_DEPS &&
		(unsigned)c < MOAT_RISK_COUNT;
}

/* Directories whose contents run only when the user runs them (docs/FLAGGED.md
 * says why each is here, and why vendor/, build/, dist/ are not). */
static const char *const deps_dirs[] = {
	"node_modules", "bower_components", ".venv",	     "venv",   "__pycache__", ".tox",
	".nox",		".mypy_cache",	    ".pytest_cache", "target",
};

static bool is_deps_dir(const char *s, size_t n)
{
	for (size_t i = 0; i < ELEMENTSOF(deps_dirs); i++)
		if (strlen(deps_dirs[i]) == n && memcmp(deps_dirs[i], s, n) == 0)
			return true;
	return false;
}

bool moat_risk_in_deps(const char *path, mode_t type)
{
	bool deps = false;

	for (const char *s = path; s && *s;) {
		size_t n = strcspn(s, "/");
		bool last = s[n] == '\0';
		if (n == 4 && strncasecmp(s, ".git", 4) == 0)
			return false; /* a repository (nested or not) is never a dependency */
		if (n == 0 || (n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.'))
			return false; /* not a clean path: never what the walk makes */
		if (is_deps_dir(s, n) && (!last || S_ISDIR(type)))
			deps = true;
		s = last ? NULL : s + n + 1;
	}
	return deps;
}

size_t moat_risk_deps_prefix(const char *path)
{
	for (const char *s = path; s && *s;) {
		size_t n = strcspn(s, "/");
		if (is_deps_dir(s, n))
			return (size_t)(s - path) + n;
		s = s[n] ? s + n + 1 : NULL;
	}
	return 0;
}

/* ---- globs with ** ------------------------------------------------------------ */

#define GLOB_MAX_DEPTH 64

static bool glob_rec(const char *g, const char *p, unsigned depth)
{
	if (depth > GLOB_MAX_DEPTH)
		return false;
	for (;;) {
		size_t gn = strcspn(g, "/");
		if (gn == 2 && g[0] == '*' && g[1] == '*') {
			const char *rest = g[2] == '/' ? g + 3 : g + 2;
			if (!*rest)
				return true; /* trailing **: everything below (and here) */
			/* zero or more whole components */
			for (const char *q = p;; q++) {
				if ((q == p || q[-1] == '/') && glob_rec(rest, q, depth + 1))
					return true;
				if (!*q)
					return false;
			}
		}
		size_t pn = strcspn(p, "/");
		char seg[1025], comp[4096];
		if (gn >= sizeof(seg) || pn >= sizeof(comp))
			return false;
		memcpy(seg, g, gn);
		seg[gn] = '\0';
		memcpy(comp, p, pn);
		comp[pn] = '\0';
		if (!*p || fnmatch(seg, comp, FNM_CASEFOLD) != 0)
			return false;
		g += gn;
		p += pn;
		if (!*g) {
			return !*p;
		}
		g++; /* '/' */
		if (!*p)
			/* a last "**" matches the directory itself */
			return streq(g, "**");
		p++;
	}
}

bool moat_glob_match(const char *glob, const char *path)
{
	if (!glob || !path || !*glob)
		return false;
	if (!strchr(glob, '/')) {
		const char *base = strrchr(path, '/');
		return glob_rec(glob, base ? base + 1 : path, 0);
	}
	return glob_rec(glob, path, 0);
}

/* ---- accept / hold ------------------------------------------------------------ */

/* Paths of the automatic classes an accept glob must not cover silently: one
 * sample per built-in rule (its '*' as "x", a subtree rule with "/x" below)
 * at the top of the workspace, plus what the git pass holds. This is the
 * early, loud check for broad globs (a bare double star, .git and below,
 * "*.yml"); a glob it lets through (src and below) never reaches an entry of an automatic class
 * (moat_review_holds() checks the class), so nothing is weakened silently. */
static bool glob_covers_automatic(const char *glob, char *hit, size_t hitlen)
{
	static const char *const extra[] = {".git/HEAD", ".git/objects/x", ".git/refs/heads/x",
					    "package.json", "x"};
	char buf[1200];

	for (size_t i = 0; i < moat_flag_builtin_count; i++) {
		const struct moat_flag_rule *r = &moat_flag_builtin[i];
		char sample[1040];
		size_t k = 0;
		for (const char *s = r->pattern; *s && k + 2 < sizeof(sample); s++)
			sample[k++] = *s == '*' ? 'x' : *s;
		sample[k] = '\0';
		{
			snprintf(buf, sizeof(buf), "%s%s", sample,
				 (r->flags & MOAT_FLAG_SUBTREE) ? "/x" : "");
			if (moat_glob_match(glob, buf)) {
				(void)!snprintf(hit, hitlen, "%.1100s (%s)", buf,
						class_names[r->cls]);
				return true;
			}
		}
	}
	for (size_t i = 0; i < ELEMENTSOF(extra); i++)
		if (moat_glob_match(glob, extra[i]) &&
		    (!streq(extra[i], "x") || !strchr(glob, '/'))) {
			snprintf(hit, hitlen, "%s", extra[i]);
			return true;
		}
	return false;
}

bool moat_review_item_automatic(const char *item)
{
	char hit[1200];
	int c = moat_risk_class_from_name(item);
	if (c >= 0)
		return moat_risk_class_automatic((enum moat_risk_class)c);
	return glob_covers_automatic(item, hit, sizeof(hit));
}

int moat_review_item_check(const char *item, bool accept, bool accept_automatic, char *why,
			   size_t whylen)
{
	char hit[1200];
	int c;

	if (!item || !*item || strlen(item) > 1024) {
		snprintf(why, whylen, "must be a class name or a path glob of at most 1024 bytes");
		return -EINVAL;
	}
	for (const char *s = item; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f) {
			snprintf(why, whylen, "control characters are not allowed");
			return -EINVAL;
		}
	c = moat_risk_class_from_name(item);
	if (c < 0) {
		if (item[0] == '/' || strstr(item, "//")) {
			snprintf(why, whylen,
				 "a glob is relative to the workspace (no leading or double '/')");
			return -EINVAL;
		}
		for (const char *s = item; *s;) {
			size_t n = strcspn(s, "/");
			if ((n == 2 && s[0] == '.' && s[1] == '.') || (n == 1 && s[0] == '.')) {
				snprintf(why, whylen, "'.' and '..' components are not allowed");
				return -EINVAL;
			}
			s += n;
			s += *s == '/';
		}
		if (!strpbrk(item, "*?[/") && !strchr(item, '.')) {
			snprintf(why, whylen,
				 "unknown class (hooks, ci, startup, agent, manifest, symlink-out, "
				 "pattern, repo, executable, deps) and not a glob");
			return -EINVAL;
		}
	}
	if (!accept || accept_automatic)
		return 0;
	if (c >= 0 && moat_risk_class_automatic((enum moat_risk_class)c)) {
		snprintf(why, whylen,
			 "class %s runs code automatically on the host: accepting it needs "
			 "--accept-automatic (audit.accept_automatic)",
			 item);
		return -EPERM;
	}
	if (c < 0 && glob_covers_automatic(item, hit, sizeof(hit))) {
		snprintf(why, whylen,
			 "the glob covers %s, which runs code automatically on the host: "
			 "accepting it needs --accept-automatic (audit.accept_automatic)",
			 hit);
		return -EPERM;
	}
	return 0;
}

static bool item_selects(const char *item, const struct moat_fs_entry *e, bool *ret_glob)
{
	int c = moat_risk_class_from_name(item);
	*ret_glob = c < 0;
	if (c >= 0)
		return (int)e->cls == c;
	return moat_glob_match(item, e->path);
}

bool moat_review_item_selects(const char *item, const struct moat_fs_entry *e)
{
	bool glob;
	return item_selects(item, e, &glob);
}

/* 1: a glob of v selects e, 2: a class of v does, 0: none */
static int list_selects(const char *const *v, size_t n, const struct moat_fs_entry *e)
{
	int best = 0;
	for (size_t i = 0; i < n; i++) {
		bool glob;
		if (!item_selects(v[i], e, &glob))
			continue;
		if (glob)
			return 1;
		best = 2;
	}
	return best;
}

bool moat_review_holds(const struct moat_review_rules *rr, const struct moat_fs_entry *e)
{
	bool automatic = moat_risk_class_automatic(e->cls);
	int h = 0, a = 0;

	if (e->refused || !e->flagged)
		return false;
	if (rr) {
		h = list_selects(rr->hold, rr->n_hold, e);
		a = list_selects(rr->accept, rr->n_accept, e);
		if (automatic && !rr->accept_automatic)
			a = 0; /* never silently: see moat_review_item_check() */
		if (e->cls == MOAT_RISK_REPO) {
			/* a repository is applied or held as a whole: classes only */
			h = h == 2 ? 2 : 0;
			a = a == 2 ? 2 : 0;
		}
	}
	if (h == 1)
		return true;
	if (a == 1)
		return false;
	if (h == 2)
		return true;
	if (a == 2)
		return false;
	return automatic || e->cls == MOAT_RISK_NONE;
}

static const struct moat_manifest *sort_m;

static int idx_path_cmp(const void *a, const void *b)
{
	return strcmp(sort_m->entries[*(const size_t *)a].path,
		      sort_m->entries[*(const size_t *)b].path);
}

static int key_path_cmp(const void *key, const void *b)
{
	return strcmp((const char *)key, sort_m->entries[*(const size_t *)b].path);
}

void moat_review_decide(const struct moat_review_rules *rr, struct moat_manifest *m)
{
	bool any = false;

	for (size_t i = 0; m && i < m->n; i++) {
		struct moat_fs_entry *e = &m->entries[i];
		e->accepted = e->flagged && !e->refused && !moat_review_holds(rr, e);
		any |= e->accepted;
	}
	if (!any || m->n < 2)
		return;
	/* An accepted entry below a held new directory (--hold deps --accept
	 * node_modules/express/... holds node_modules/ itself) would stay
	 * blocked: its new parent directories are accepted with it. Only new,
	 * plain directories (creating one runs nothing; an opaque one would
	 * delete), never of a new repository (decided whole). */
	_cleanup_free_ size_t *idx = calloc(m->n, sizeof(size_t));
	if (!idx)
		return; /* fail closed: the children stay held */
	for (size_t i = 0; i < m->n; i++)
		idx[i] = i;
	sort_m = m;
	qsort(idx, m->n, sizeof(size_t), idx_path_cmp);
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		char buf[PATH_MAX_BYTES + 1];
		if (!e->accepted || e->state == MOAT_FS_APPLIED || strlen(e->path) > PATH_MAX_BYTES)
			continue;
		memcpy(buf, e->path, strlen(e->path) + 1);
		for (char *slash; (slash = strrchr(buf, '/'));) {
			*slash = '\0';
			size_t *hit = bsearch(buf, idx, m->n, sizeof(size_t), key_path_cmp);
			if (!hit)
				continue;
			struct moat_fs_entry *d = &m->entries[*hit];
			if (d->accepted || !d->flagged)
				break; /* decided above too */
			if (!S_ISDIR(d->type) || d->change != MOAT_FS_CREATED || d->opaque ||
			    d->refused || d->cls == MOAT_RISK_REPO)
				break;
			d->accepted = true;
		}
	}
	sort_m = NULL;
}
