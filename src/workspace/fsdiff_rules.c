/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Flag rules: the built-in table and extra patterns that decide which
 * changes are held back for review (docs/FLAGGED.md). */
#include "workspace/fsdiff_int.h"

#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include "shared/macro.h"

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
