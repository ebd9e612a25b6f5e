/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Risk classes, the ** glob matcher and the accept/hold decisions of
 * workspace review (docs/FLAGGED.md). */
#include "harness/tap.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>

#include "shared/macro.h"
#include "workspace/fsdiff.h"

TEST(risk_glob_double_star)
{
	ASSERT_TRUE(moat_glob_match("node_modules/**", "node_modules/a/b/c.js"));
	ASSERT_TRUE(moat_glob_match("node_modules/**", "node_modules")); /* the dir itself */
	ASSERT_TRUE(!moat_glob_match("node_modules/**", "a/node_modules/x")); /* anchored */
	ASSERT_TRUE(moat_glob_match("**/node_modules/**", "a/node_modules/x"));
	ASSERT_TRUE(moat_glob_match("**/node_modules/**", "node_modules/x")); /* zero dirs */
	ASSERT_TRUE(moat_glob_match("a/**/b", "a/b"));
	ASSERT_TRUE(moat_glob_match("a/**/b", "a/x/y/b"));
	ASSERT_TRUE(!moat_glob_match("a/**/b", "a/x/yb"));
	ASSERT_TRUE(!moat_glob_match("a/*/b", "a/x/y/b")); /* '*' stays in one component */
	ASSERT_TRUE(moat_glob_match("a/*/b", "a/x/b"));
	ASSERT_TRUE(moat_glob_match("*.sh", "deep/down/x.sh")); /* no '/': any depth */
	ASSERT_TRUE(!moat_glob_match("*.sh", "x.sh/y"));
	ASSERT_TRUE(moat_glob_match("build/**", "BUILD/app")); /* case-insensitive */
	ASSERT_TRUE(!moat_glob_match("build", "build/app"));
	ASSERT_TRUE(moat_glob_match("**", "anything/at/all"));
	ASSERT_TRUE(!moat_glob_match("", "x"));
	/* pathological: many ** stay bounded */
	ASSERT_TRUE(!moat_glob_match("**/**/**/**/**/**/**/**/**/**/z",
				     "a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/a/y"));
}

TEST(risk_deps_paths)
{
	ASSERT_TRUE(moat_risk_in_deps("node_modules/express/package.json", S_IFREG));
	ASSERT_TRUE(moat_risk_in_deps("node_modules", S_IFDIR));
	ASSERT_TRUE(!moat_risk_in_deps("node_modules", S_IFLNK)); /* a link is no tree */
	ASSERT_TRUE(moat_risk_in_deps("pkg/a/node_modules/.bin/x", S_IFLNK));
	ASSERT_TRUE(moat_risk_in_deps(".venv/bin/activate", S_IFREG));
	ASSERT_TRUE(moat_risk_in_deps("target/debug/app", S_IFREG));
	/* a repository inside a dependency is never a dependency */
	ASSERT_TRUE(!moat_risk_in_deps("node_modules/foo/.git/hooks/x", S_IFREG));
	ASSERT_TRUE(!moat_risk_in_deps("node_modules/foo/.GIT/config", S_IFREG));
	ASSERT_TRUE(!moat_risk_in_deps("node_modules/foo/.git", S_IFREG));
	/* not clean paths, and look-alikes */
	ASSERT_TRUE(!moat_risk_in_deps("node_modules/../.git/hooks/x", S_IFREG));
	ASSERT_TRUE(!moat_risk_in_deps("node_modules//x", S_IFREG));
	ASSERT_TRUE(!moat_risk_in_deps("my_node_modules/x", S_IFREG));
	ASSERT_TRUE(!moat_risk_in_deps("vendor/x/Makefile", S_IFREG));
	ASSERT_TRUE(!moat_risk_in_deps(".git/hooks/pre-commit", S_IFREG));
	ASSERT_EQ(moat_risk_deps_prefix("a/node_modules/x/y"), strlen("a/node_modules"));
	ASSERT_EQ(moat_risk_deps_prefix("src/x"), 0);
}

TEST(risk_class_names)
{
	for (unsigned c = 1; c < MOAT_RISK_COUNT; c++)
		ASSERT_EQ(moat_risk_class_from_name(moat_risk_class_name(c)), (int)c);
	ASSERT_EQ(moat_risk_class_from_name("nope"), -ENOENT);
	ASSERT_TRUE(moat_risk_class_automatic(MOAT_RISK_HOOKS));
	ASSERT_TRUE(moat_risk_class_automatic(MOAT_RISK_REPO));
	ASSERT_TRUE(moat_risk_class_automatic(MOAT_RISK_SYMLINK_OUT));
	ASSERT_TRUE(!moat_risk_class_automatic(MOAT_RISK_DEPS));
	ASSERT_TRUE(!moat_risk_class_automatic(MOAT_RISK_EXECUTABLE));
	/* every built-in rule has an automatic class */
	for (size_t i = 0; i < moat_flag_builtin_count; i++)
		ASSERT_TRUE(moat_risk_class_automatic(moat_flag_builtin[i].cls));
	enum moat_risk_class cls;
	ASSERT_TRUE(moat_flag_match_class(NULL, ".github/workflows/x.yml", S_IFREG, &cls));
	ASSERT_EQ(cls, MOAT_RISK_CI);
	ASSERT_TRUE(moat_flag_match_class(NULL, ".bashrc", S_IFREG, &cls));
	ASSERT_EQ(cls, MOAT_RISK_STARTUP);
	ASSERT_TRUE(moat_flag_match_class(NULL, ".mcp.json", S_IFREG, &cls));
	ASSERT_EQ(cls, MOAT_RISK_AGENT);
	ASSERT_TRUE(moat_flag_match_class(NULL, "pip.conf", S_IFREG, &cls));
	ASSERT_EQ(cls, MOAT_RISK_MANIFEST);
}

TEST(risk_accept_checks)
{
	char why[1400];
	/* without --accept-automatic: automatic classes and globs covering them refused */
	ASSERT_EQ(moat_review_item_check("hooks", true, false, why, sizeof(why)), -EPERM);
	ASSERT_CONTAINS(why, "--accept-automatic");
	ASSERT_EQ(moat_review_item_check("repo", true, false, why, sizeof(why)), -EPERM);
	static const char *const bad[] = {
		"**",	  ".git/**", ".git/hooks/*", ".git/config", "*.yml",	  ".github/**",
		".bash*", "*.md",    "**/.husky/**", "*",	    ".vscode/**", "**/Makefile"};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ASSERT_EQ(moat_review_item_check(bad[i], true, false, why, sizeof(why)), -EPERM);
	static const char *const good[] = {"deps",     "executable", "node_modules/**",
					   "build/**", "**/*.js",    "dist/app"};
	for (size_t i = 0; i < ELEMENTSOF(good); i++)
		ASSERT_EQ(moat_review_item_check(good[i], true, false, why, sizeof(why)), 0);
	/* the loud form lets them through; hold never needs it */
	ASSERT_EQ(moat_review_item_check("hooks", true, true, why, sizeof(why)), 0);
	ASSERT_EQ(moat_review_item_check(".git/**", false, false, why, sizeof(why)), 0);
	/* malformed */
	ASSERT_EQ(moat_review_item_check("/abs/**", false, false, why, sizeof(why)), -EINVAL);
	ASSERT_EQ(moat_review_item_check("a/../b", false, false, why, sizeof(why)), -EINVAL);
	ASSERT_EQ(moat_review_item_check("a\nb", false, false, why, sizeof(why)), -EINVAL);
	ASSERT_EQ(moat_review_item_check("hookz", false, false, why, sizeof(why)), -EINVAL);
	ASSERT_EQ(moat_review_item_check("", false, false, why, sizeof(why)), -EINVAL);
}

static struct moat_fs_entry ent(const char *path, enum moat_risk_class c)
{
	return (struct moat_fs_entry){.path = (char *)(uintptr_t)path,
				      .flagged = (char *)(uintptr_t) "why",
				      .cls = c,
				      .type = S_IFREG};
}

TEST(risk_decisions)
{
	struct moat_fs_entry hook = ent(".git/hooks/pre-commit", MOAT_RISK_HOOKS),
			     dep = ent("node_modules/a/package.json", MOAT_RISK_DEPS),
			     exp = ent("node_modules/express/index.js", MOAT_RISK_DEPS),
			     exe = ent("build/app", MOAT_RISK_EXECUTABLE),
			     repo = ent("new/.git/config", MOAT_RISK_REPO),
			     none = ent("x", MOAT_RISK_NONE);
	/* defaults */
	ASSERT_TRUE(moat_review_holds(NULL, &hook));
	ASSERT_TRUE(!moat_review_holds(NULL, &dep));
	ASSERT_TRUE(!moat_review_holds(NULL, &exe));
	ASSERT_TRUE(moat_review_holds(NULL, &repo));
	ASSERT_TRUE(moat_review_holds(NULL, &none)); /* unknown class: fail closed */
	/* hold class; a more specific accept glob wins over it */
	const char *hold[] = {"deps", "executable"}, *acc[] = {"node_modules/express/**"};
	struct moat_review_rules rr = {.hold = hold, .n_hold = 2, .accept = acc, .n_accept = 1};
	ASSERT_TRUE(moat_review_holds(&rr, &dep));
	ASSERT_TRUE(!moat_review_holds(&rr, &exp));
	ASSERT_TRUE(moat_review_holds(&rr, &exe));
	/* hold glob beats accept glob */
	const char *hold2[] = {"node_modules/express/*.js"};
	struct moat_review_rules rr2 = {.hold = hold2, .n_hold = 1, .accept = acc, .n_accept = 1};
	ASSERT_TRUE(moat_review_holds(&rr2, &exp));
	/* an accept glob never reaches an automatic class without the flag,
	 * even if it was not refused up front (defence in depth) */
	const char *acc3[] = {".git/hooks/*", "hooks", "repo", "new/**"};
	struct moat_review_rules rr3 = {.accept = acc3, .n_accept = 4};
	ASSERT_TRUE(moat_review_holds(&rr3, &hook));
	ASSERT_TRUE(moat_review_holds(&rr3, &repo));
	rr3.accept_automatic = true;
	ASSERT_TRUE(!moat_review_holds(&rr3, &hook));
	/* a repository follows classes only: a glob neither splits it ... */
	const char *acc4[] = {"new/**"};
	struct moat_review_rules rr4 = {.accept = acc4, .n_accept = 1, .accept_automatic = true};
	ASSERT_TRUE(moat_review_holds(&rr4, &repo));
	/* ... nor holds part of an accepted one */
	const char *acc5[] = {"repo"}, *hold5[] = {"new/.git/config"};
	struct moat_review_rules rr5 = {.accept = acc5,
					.n_accept = 1,
					.hold = hold5,
					.n_hold = 1,
					.accept_automatic = true};
	ASSERT_TRUE(!moat_review_holds(&rr5, &repo));
	/* refused stays refused */
	struct moat_fs_entry dev = ent("node_modules/dev", MOAT_RISK_DEPS);
	dev.refused = (char *)(uintptr_t) "device node";
	ASSERT_TRUE(!moat_review_holds(NULL, &dev));
	struct moat_manifest m = {.entries = &dev, .n = 1};
	moat_review_decide(NULL, &m);
	ASSERT_TRUE(!dev.accepted);
}

TEST(risk_decide_parents)
{
	struct moat_fs_entry v[] = {
		ent("node_modules", MOAT_RISK_DEPS),
		ent("node_modules/express", MOAT_RISK_DEPS),
		ent("node_modules/express/index.js", MOAT_RISK_DEPS),
		ent("node_modules/other", MOAT_RISK_DEPS),
	};
	v[0].type = v[1].type = v[3].type = S_IFDIR;
	const char *hold[] = {"deps"}, *acc[] = {"node_modules/express/*.js"};
	struct moat_review_rules rr = {.hold = hold, .n_hold = 1, .accept = acc, .n_accept = 1};
	struct moat_manifest m = {.entries = v, .n = ELEMENTSOF(v)};
	moat_review_decide(&rr, &m);
	ASSERT_TRUE(v[2].accepted);
	ASSERT_TRUE(v[1].accepted); /* new parents come along */
	ASSERT_TRUE(v[0].accepted);
	ASSERT_TRUE(!v[3].accepted); /* a sibling does not */
	/* an opaque parent (replaces old contents) does not */
	v[0].accepted = v[1].accepted = false;
	v[1].opaque = true;
	moat_review_decide(&rr, &m);
	ASSERT_TRUE(!v[1].accepted);
	ASSERT_TRUE(!v[0].accepted);
}
