/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy parser: good and bad fixtures with the exact line:column, flags. */
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/tap.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "shared/macro.h"

static struct moat_policy *load(const char *name, struct moat_error *err)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/fixtures/policy/%s", moat_tap_dir(), name);
	struct moat_policy *p = moat_policy_new();
	ASSERT_TRUE(p);
	memset(err, 0, sizeof(*err));
	if (moat_policy_load_file(p, path, err) < 0 || moat_policy_validate(p, err) < 0)
		return moat_policy_free(p);
	return p;
}

TEST(policy_good_full)
{
	struct moat_error e;
	struct moat_policy *p = load("good/full.json", &e);
	if (!p)
		moat_tap_fail(__FILE__, __LINE__, "full.json rejected: %s", e.message);
	ASSERT_STREQ(p->workspace, "/srv/project");
	ASSERT_EQ(p->workspace_mode, MOAT_WS_OVERLAY);
	ASSERT_EQ(p->n_mounts, 4);
	ASSERT_STREQ(p->mounts[1].dest, "/srv/cache"); /* dest defaults to src */
	ASSERT_EQ(p->mounts[2].size, 256u << 20);
	ASSERT_EQ(p->mounts[3].kind, MOAT_MOUNT_HIDE);
	ASSERT_EQ(p->cpus_milli, 2000);
	ASSERT_EQ(p->memory, 4ull << 30);
	ASSERT_EQ(p->pids, 256);
	ASSERT_EQ(p->timeout_ms, 600000);
	ASSERT_EQ(p->limits_set & (MOAT_LIMIT_MEMORY | MOAT_LIMIT_PIDS),
		  MOAT_LIMIT_MEMORY | MOAT_LIMIT_PIDS);
	ASSERT_EQ(p->allow_degraded, MOAT_DEGRADE_CGROUP);
	ASSERT_EQ(p->net, MOAT_NET_ALLOW);
	ASSERT_EQ(p->n_allow_hosts, 2);
	ASSERT_STREQ(p->allow_hosts[1].pattern, "*.pythonhosted.org");
	ASSERT_EQ(p->allow_hosts[1].n_ports, 1);
	ASSERT_EQ(p->allow_hosts[1].ports[0], 443);
	ASSERT_EQ(p->allow_cidrs[0].ports[0], 8080);
	ASSERT_STREQ(p->resolve[0].addr, "127.0.0.2");
	ASSERT_EQ(p->n_secrets, 2);
	ASSERT_EQ(p->secrets[1].source, MOAT_SECRET_COMMAND);
	ASSERT_STREQ(p->secrets[0].format, "Bearer %s");
	ASSERT_EQ(p->n_env, 2);
	ASSERT_TRUE(p->env[1].value == NULL);
	ASSERT_EQ(p->tty, MOAT_TTY_NEVER);
	ASSERT_EQ(p->apply, MOAT_APPLY_SAFE);
	moat_policy_free(p);
}

TEST(policy_good_minimal_defaults)
{
	struct moat_error e;
	struct moat_policy *p = load("good/minimal.json", &e);
	ASSERT_TRUE(p);
	ASSERT_EQ(p->uid, 1000);
	ASSERT_EQ(p->net, MOAT_NET_NONE);
	ASSERT_EQ(p->limits_set, 0);
	ASSERT_TRUE(p->workspace == NULL);
	moat_policy_free(p);
}

static void expect_bad(const char *file, unsigned line, unsigned col, const char *frag)
{
	struct moat_error e;
	char name[128];
	snprintf(name, sizeof(name), "bad/%s", file);
	struct moat_policy *p = load(name, &e);
	if (p)
		moat_tap_fail(__FILE__, __LINE__, "%s was accepted", file);
	if (e.line != line || e.column != col || !strstr(e.message, frag))
		moat_tap_fail(__FILE__, __LINE__, "%s: want %u:%u \"%s\", got %u:%u \"%s\"", file,
			      line, col, frag, e.line, e.column, e.message);
}

TEST(policy_bad_fixtures)
{
	expect_bad("unknown-top.json", 3, 3, "unknown key \"limitz\"");
	expect_bad("bad-size.json", 4, 15, "limits.memory: not a size");
	expect_bad("version.json", 1, 14, "unsupported version");
	expect_bad("uid65534.json", 1, 37, "65534 is the id unmapped");
	expect_bad("mount-nosrc.json", 1, 45, "\"src\" is required");
	expect_bad("mount-proc.json", 1, 45, "cannot mount under /proc");
	expect_bad("host-scheme.json", 2, 31, "no scheme");
	expect_bad("duplicate.json", 1, 25, "duplicate object key");
	expect_bad("secret-nosource.json", 1, 30, "exactly one of from_env");
	expect_bad("tab-col.json", 2, 22, "limits.pids");
	expect_bad("not-object.json", 1, 1, "must be a JSON object");
	expect_bad("no-version.json", 1, 1, "\"version\": 1 is required");
	expect_bad("mount-unknown.json", 1, 78, "unknown key \"bogus\"");
	/* a key spelled with escapes: the enclosing object's position */
	expect_bad("escaped-key.json", 1, 24, "unknown key \"bogus\"");
	expect_bad("negative.json", 1, 31, "must not be negative");
}

TEST(policy_flags)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_EQ(moat_policy_set_option(p, "--ro", "/a:/b", &e), 0);
	ASSERT_STREQ(p->mounts[0].src, "/a");
	ASSERT_STREQ(p->mounts[0].dest, "/b");
	ASSERT_EQ(moat_policy_set_option(p, "--tmpfs", "/t:64M", &e), 0);
	ASSERT_EQ(p->mounts[1].size, 64u << 20);
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", "/w:ro", &e), 0);
	ASSERT_EQ(p->workspace_mode, MOAT_WS_RO);
	ASSERT_EQ(moat_policy_set_option(p, "--allow-host", "api.example.com:443,8443", &e), 0);
	ASSERT_EQ(p->net, MOAT_NET_ALLOW);
	ASSERT_EQ(p->allow_hosts[0].n_ports, 2);
	ASSERT_EQ(moat_policy_set_option(p, "--secret",
					 "GH_TOKEN@api.github.com,uploads.github.com", &e),
		  0);
	ASSERT_EQ(p->secrets[0].n_hosts, 2);
	ASSERT_EQ(moat_policy_set_option(p, "--timeout", "90s", &e), 0);
	ASSERT_EQ(p->timeout_ms, 90000);
	/* bad values name the flag */
	ASSERT_TRUE(moat_policy_set_option(p, "--memory", "lots", &e) < 0);
	ASSERT_CONTAINS(e.message, "--memory lots");
	ASSERT_TRUE(moat_policy_set_option(p, "--ro", "/nonexistent-moat/../etc", &e) < 0);
	ASSERT_CONTAINS(e.message, "/nonexistent-moat (before '..'): No such file");
	ASSERT_TRUE(moat_policy_set_option(p, "--ro", "/a:relative", &e) < 0);
	ASSERT_CONTAINS(e.message, "must be an absolute path");
	ASSERT_TRUE(moat_policy_set_option(p, "--tmpfs", "/proc/x", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--uid", "65534", &e) < 0);
	ASSERT_CONTAINS(e.message, "from 0 to 65533");
	ASSERT_TRUE(moat_policy_set_option(p, "--gid", "65534", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--uid", "-1", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--net", "maybe", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--allow-host", "x.com:0", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--allow-host", "https://x.com", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--env", "1BAD=x", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--allow-syscall", "PTRACE", &e) < 0);
	ASSERT_EQ(moat_policy_set_option(p, "--bogus", NULL, &e), -ENOENT);
	moat_policy_free(p);
}

/* The shipped library has no test switch (issue 13, item 8): the option is
 * unknown whatever the environment says, and no policy key reaches it. The
 * control: a real option of the same table is accepted by the same call, and
 * an unknown key is reported as such (so the rejection below is not a
 * side effect of a broken document). */
TEST(policy_no_test_switch)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_EQ(setenv("MOAT_TEST_LAYERS", "1", 1), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--test-disable-layer", "seccomp", &e), -ENOENT);
	ASSERT_EQ(moat_policy_set_option(p, "--test-disable-layer", "landlock", &e), -ENOENT);
	ASSERT_EQ(moat_policy_option_takes_value("--test-disable-layer"), -ENOENT);
	ASSERT_EQ(moat_policy_set_option(p, "--allow-degraded", "landlock", &e), 0);
	moat_policy_free(p);
	static const char *const docs[] = {
		"{\"version\": 1, \"test_disable_layer\": \"seccomp\"}",
		"{\"version\": 1, \"syscalls\": {\"test_disable_layer\": \"seccomp\"}}",
		"{\"version\": 1, \"test_no_seccomp\": true}",
		"{\"version\": 1, \"syscalls\": {\"test_no_landlock\": true}}",
	};
	for (size_t i = 0; i < sizeof(docs) / sizeof(docs[0]); i++) {
		p = moat_policy_new();
		memset(&e, 0, sizeof(e));
		ASSERT_TRUE(moat_policy_load_string(p, docs[i], strlen(docs[i]), "t", &e) < 0);
		ASSERT_CONTAINS(e.message, "unknown key");
		moat_policy_free(p);
	}
	unsetenv("MOAT_TEST_LAYERS");
}

/* audit.log_sync: off by default, --log-sync and the JSON key turn it on. */
TEST(policy_log_sync)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_TRUE(!p->log_sync);
	ASSERT_EQ(moat_policy_set_option(p, "--log-sync", NULL, &e), 0);
	ASSERT_TRUE(p->log_sync);
	moat_policy_free(p);
	p = moat_policy_new();
	const char js[] = "{\"version\": 1, \"audit\": {\"log_sync\": true}}";
	if (moat_policy_load_string(p, js, strlen(js), "t", &e) < 0)
		moat_tap_fail(__FILE__, __LINE__, "log_sync rejected: %s", e.message);
	ASSERT_TRUE(p->log_sync);
	char *json = NULL;
	ASSERT_EQ(moat_policy_to_json(p, &json), 0);
	ASSERT_CONTAINS(json, "\"log_sync\": true");
	free(json);
	moat_policy_free(p);
}

TEST(policy_validate_cross_keys)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_EQ(moat_policy_set_option(p, "--ro", "/a:/x", &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--rw", "/b:/x", &e), 0);
	ASSERT_TRUE(moat_policy_validate(p, &e) < 0);
	ASSERT_CONTAINS(e.message, "two mounts at /x");
	moat_policy_free(p);
	p = moat_policy_new();
	ASSERT_EQ(moat_policy_set_option(p, "--allow-host", "a.com", &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--net", "none", &e), 0);
	ASSERT_TRUE(moat_policy_validate(p, &e) < 0);
	ASSERT_CONTAINS(e.message, "need network mode");
	moat_policy_free(p);
}

TEST(policy_roundtrip_json)
{
	struct moat_error e;
	struct moat_policy *p = load("good/full.json", &e);
	ASSERT_TRUE(p);
	char *json = NULL;
	ASSERT_EQ(moat_policy_to_json(p, &json), 0);
	struct moat_policy *q = moat_policy_new();
	if (moat_policy_load_string(q, json, strlen(json), "roundtrip", &e) < 0)
		moat_tap_fail(__FILE__, __LINE__, "to_json output does not parse back: %s",
			      e.message);
	char *json2 = NULL;
	ASSERT_EQ(moat_policy_to_json(q, &json2), 0);
	ASSERT_STREQ(json, json2);
	free(json);
	free(json2);
	moat_policy_free(p);
	moat_policy_free(q);
}

TEST(plan_default_layout)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_plan *pl = malloc(sizeof(*pl));
	struct moat_error e = {0};
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", "/srv/w", &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--output", "/srv/out", &e), 0);
	ASSERT_EQ(moat_plan_build(p, pl), 0);
	int seen_usr = -1, seen_etc_ro = -1, seen_tmp = -1, seen_ws = -1, seen_out = -1;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (s->op == MOAT_STEP_BIND && !strcmp(s->dest, "/usr")) {
			seen_usr = (int)i;
			ASSERT_TRUE(s->flags & MOAT_STEPF_RO);
		}
		/* /etc and /dev are directories of the root tmpfs (read-only
		 * with it), not tmpfs mounts of their own */
		if (s->op == MOAT_STEP_MKDIR && !strcmp(s->dest, "/etc"))
			seen_etc_ro = (int)i;
		ASSERT_TRUE(!(s->op == MOAT_STEP_TMPFS &&
			      (!strcmp(s->dest, "/etc") || !strcmp(s->dest, "/dev"))));
		if (s->op == MOAT_STEP_TMPFS && !strcmp(s->dest, "/tmp"))
			seen_tmp = (int)i;
		if (!strcmp(s->dest, "/srv/w")) {
			seen_ws = (int)i;
			ASSERT_EQ(s->op, MOAT_STEP_OVERLAY); /* the default: writes are reviewed */
			ASSERT_TRUE(!(s->flags & MOAT_STEPF_RO));
		}
		if (!strcmp(s->dest, "/output")) {
			seen_out = (int)i;
			ASSERT_TRUE(s->flags & MOAT_STEPF_OUTPUT);
		}
		/* never the secrets of the host's /etc */
		ASSERT_TRUE(!s->src || !strstr(s->src, "shadow"));
		ASSERT_TRUE(!s->src || !strstr(s->src, "/etc/ssh"));
	}
	ASSERT_TRUE(seen_usr >= 0 && seen_etc_ro >= 0 && seen_tmp >= 0 && seen_ws >= 0 &&
		    seen_out >= 0);
	/* the workspace comes after /tmp so it can live below it */
	ASSERT_TRUE(seen_ws > seen_tmp);
	ASSERT_STREQ(pl->cwd, "/srv/w");
	char *text = NULL;
	ASSERT_EQ(moat_plan_format(pl, &text), 0);
	ASSERT_CONTAINS(text, "overlay  /srv/w <- /srv/w size=1.0 GiB rw");
	free(text);
	free(pl);
	moat_policy_free(p);
}

TEST(plan_rootfs_sources)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_plan *pl = malloc(sizeof(*pl));
	struct moat_error e = {0};
	ASSERT_EQ(moat_policy_set_option(p, "--rootfs", "/srv/rootfs", &e), 0);
	ASSERT_EQ(moat_plan_build(p, pl), 0);
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (s->op == MOAT_STEP_BIND && !strcmp(s->dest, "/usr"))
			ASSERT_STREQ(s->src, "/srv/rootfs/usr");
		if (s->op == MOAT_STEP_BIND && !strcmp(s->dest, "/etc/ld.so.cache"))
			ASSERT_STREQ(s->src, "/srv/rootfs/etc/ld.so.cache");
	}
	free(pl);
	moat_policy_free(p);
}

/* network.inspect_tls / no_inspect: flags and keys, shown, and refused where
 * they would hide a secret's host from placeholder detection. */
TEST(policy_inspect_tls)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	char *json = NULL;

	ASSERT_TRUE(!p->inspect_tls_all);
	ASSERT_TRUE(moat_policy_set_option(p, "--inspect-tls", "some", &e) < 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--no-inspect", "https://x.test", &e) < 0);
	ASSERT_EQ(moat_policy_set_option(p, "--allow-host", "pinned.test", &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--no-inspect", "pinned.test", &e), 0);
	/* --no-inspect alone has no meaning: refused */
	ASSERT_TRUE(moat_policy_validate(p, &e) < 0);
	ASSERT_CONTAINS(e.message, "needs --inspect-tls all");
	ASSERT_EQ(moat_policy_set_option(p, "--inspect-tls", "all", &e), 0);
	ASSERT_EQ(moat_policy_validate(p, &e), 0);
	ASSERT_EQ(moat_policy_to_json(p, &json), 0);
	ASSERT_CONTAINS(json, "\"inspect_tls\": \"all\"");
	ASSERT_CONTAINS(json, "\"pinned.test\"");
	free(json);
	/* overlapping a secret's host, in any spelling or through a wildcard */
	static const char *const bad[] = {"API.github.test.", "*.github.test",
					  "*.test.github.test"};
	static const char *const secret_hosts[] = {"api.github.test", "api.github.test",
						   "*.github.test"};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		struct moat_policy *q = moat_policy_new();
		char sec[128];
		snprintf(sec, sizeof(sec), "GH@%s", secret_hosts[i]);
		ASSERT_EQ(moat_policy_set_option(q, "--secret", sec, &e), 0);
		ASSERT_EQ(moat_policy_set_option(q, "--net", "allow", &e), 0);
		ASSERT_EQ(moat_policy_set_option(q, "--inspect-tls", "all", &e), 0);
		ASSERT_EQ(moat_policy_set_option(q, "--no-inspect", bad[i], &e), 0);
		if (moat_policy_validate(q, &e) >= 0)
			moat_tap_fail(__FILE__, __LINE__, "--no-inspect %s with secret %s accepted",
				      bad[i], secret_hosts[i]);
		ASSERT_CONTAINS(e.message, "a host of secret GH");
		moat_policy_free(q);
	}
	/* positive control: another host is fine */
	ASSERT_EQ(moat_policy_set_option(p, "--secret", "GH@api.github.test", &e), 0);
	ASSERT_EQ(moat_policy_validate(p, &e), 0);
	moat_policy_free(p);
	/* the JSON keys */
	p = moat_policy_new();
	const char js[] = "{\"version\": 1, \"network\": {\"mode\": \"allow\", \"inspect_tls\": "
			  "\"all\", \"no_inspect\": [\"a.test\"]}}";
	if (moat_policy_load_string(p, js, strlen(js), "t", &e) < 0)
		moat_tap_fail(__FILE__, __LINE__, "inspect keys rejected: %s", e.message);
	ASSERT_TRUE(p->inspect_tls_all);
	ASSERT_EQ(p->n_no_inspect, 1);
	moat_policy_free(p);
}

/* Host paths as users type them (issue 18): relative to the working
 * directory, "..", trailing and doubled slashes, "~" unexpanded by a shell;
 * what is stored (and shown in the plan and the audit start) is absolute. */
TEST(policy_host_paths_relative)
{
	char dir[] = "/tmp/moat-hp-XXXXXX", buf[600];
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	snprintf(buf, sizeof(buf), "%s/proj", dir);
	ASSERT_EQ(mkdir(buf, 0700), 0);
	snprintf(buf, sizeof(buf), "%s/proj/sub", dir);
	ASSERT_EQ(mkdir(buf, 0700), 0);
	snprintf(buf, sizeof(buf), "%s/proj", dir);
	ASSERT_EQ(chdir(buf), 0);
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	/* the README's own example */
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", ".", &e), 0);
	ASSERT_STREQ(p->workspace, buf);
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", "./sub/:ro", &e), 0);
	snprintf(buf, sizeof(buf), "%s/proj/sub", dir);
	ASSERT_STREQ(p->workspace, buf);
	ASSERT_EQ(p->workspace_mode, MOAT_WS_RO);
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", "sub/..//sub/./", &e), 0);
	ASSERT_STREQ(p->workspace, buf);
	ASSERT_EQ(moat_policy_set_option(p, "--workspace", "..", &e), 0);
	ASSERT_STREQ(p->workspace, dir);
	/* --ro without a destination: the same absolute path inside */
	ASSERT_EQ(moat_policy_set_option(p, "--ro", "sub", &e), 0);
	ASSERT_STREQ(p->mounts[0].src, buf);
	ASSERT_STREQ(p->mounts[0].dest, buf);
	ASSERT_EQ(moat_policy_set_option(p, "--ro", "sub:/opt/sub", &e), 0);
	ASSERT_STREQ(p->mounts[1].src, buf);
	ASSERT_STREQ(p->mounts[1].dest, "/opt/sub");
	/* "~" and "~/x" where no shell expanded them */
	ASSERT_EQ(setenv("HOME", dir, 1), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--output", "~/out", &e), 0);
	snprintf(buf, sizeof(buf), "%s/out", dir);
	ASSERT_STREQ(p->output, buf);
	ASSERT_EQ(moat_policy_set_option(p, "--input", "~", &e), 0);
	ASSERT_STREQ(p->input, dir);
	ASSERT_TRUE(moat_policy_set_option(p, "--input", "~root/x", &e) < 0);
	ASSERT_CONTAINS(e.message, "--input ~root/x: '~NAME' is not expanded");
	/* the whole filesystem is still refused, however spelled */
	ASSERT_TRUE(moat_policy_set_option(p, "--workspace", "../../../../../../..", &e) < 0);
	ASSERT_CONTAINS(e.message, "the whole filesystem");
	/* ".." after a symlink: the kernel would go through the link, so moat
	 * refuses rather than guess (positive control: the same path without
	 * the link is accepted above) */
	ASSERT_EQ(symlink("/usr", "lnk"), 0);
	ASSERT_TRUE(moat_policy_set_option(p, "--ro", "lnk/../sub", &e) < 0);
	ASSERT_CONTAINS(e.message, "lnk is a symlink: moat resolves '..' by name");
	ASSERT_TRUE(moat_policy_set_option(p, "--ro", "gone/../sub", &e) < 0);
	ASSERT_CONTAINS(e.message, "gone (before '..'): No such file or directory");
	moat_policy_free(p);
}

/* In a policy file, relative paths are relative to the file's directory. */
TEST(policy_host_paths_policy_dir)
{
	struct moat_error e;
	char want[PATH_MAX + 64];
	char *w = realpath(moat_tap_dir(), NULL);
	ASSERT_TRUE(w != NULL);
	ASSERT_EQ(setenv("MOAT_TEST_DIR", w, 1), 0);
	ASSERT_EQ(chdir("/"), 0); /* not the working directory's */
	struct moat_policy *p = load("good/relative.json", &e);
	ASSERT_TRUE(p != NULL);
	snprintf(want, sizeof(want), "%s/fixtures/policy/good/relative/path", w);
	free(w);
	ASSERT_STREQ(p->workspace, want);
	moat_policy_free(p);
}

/* Flag values with bounds (issue 18): the user's exact values, the message
 * names the flag, the value and the range; the valid spellings pass. */
static void expect_flag(const char *opt, const char *val, const char *msg)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	int r = moat_policy_set_option(p, opt, val, &e);
	if (msg) {
		ASSERT_TRUE(r < 0);
		ASSERT_CONTAINS(e.message, msg);
	} else {
		ASSERT_EQ(r, 0);
	}
	moat_policy_free(p);
}

TEST(policy_flag_bounds)
{
	expect_flag("--memory", "1Gb", "--memory 1Gb: not a size");
	expect_flag("--memory", "16E", "--memory 16E: out of range: from 4.0 MiB to 16.0 TiB");
	expect_flag("--memory", "1M", "--memory 1M: out of range: from 4.0 MiB");
	expect_flag("--disk", "100T", "--disk 100T: out of range: from 1.0 MiB to 16.0 TiB");
	expect_flag("--timeout", "99999999999h",
		    "--timeout 99999999999h: out of range: from 1ms to 30d");
	expect_flag("--timeout", "0", "out of range");
	expect_flag("--timeout", "10M", "not a duration");
	expect_flag("--cpus", "1000", "--cpus 1000: out of range: from 0.01 to");
	expect_flag("--cpus", "0.001", "out of range");
	expect_flag("--cpus", "many", "not a number of CPUs");
	expect_flag("--tmpfs", "/scratch:1Gb", "size '1Gb': not a size");
	expect_flag("--kill-grace", "1h", "out of range: from 0 to 10m");
	/* positive controls */
	expect_flag("--memory", "1g", NULL);
	expect_flag("--memory", "1GiB", NULL);
	expect_flag("--memory", "512MB", NULL);
	expect_flag("--disk", "16T", NULL);
	expect_flag("--timeout", "30d", NULL);
	expect_flag("--timeout", "1h30m", NULL);
	expect_flag("--cpus", "0.5", NULL);
	expect_flag("--cpus", "1", NULL);
	expect_flag("--tmpfs", "/scratch:64M", NULL);
}

/* The "single value" column of the option table (moat_policy_option_single,
 * which the CLI uses to refuse a second --memory) against what each setter
 * does: an option is single exactly when its second value replaces the
 * first, i.e. when giving v1 then v2 yields the same effective policy as v2
 * alone. Every option that takes a value needs a pair of valid values here,
 * so a new option fails this test until it is listed, and then is checked.
 * Both outcomes occur below (list options keep v1, scalar ones lose it), so
 * the comparison can tell them apart; a scalar option marked as a list, or a
 * list marked single, fails. */
static const struct {
	const char *flag, *v1, *v2;
} option_samples[] = {
	{"--workspace", "/tmp/ws-a", "/tmp/ws-b"},
	{"--ro", "/tmp/a", "/tmp/b"},
	{"--rw", "/tmp/a", "/tmp/b"},
	{"--tmpfs", "/tmp/a", "/tmp/b"},
	{"--hide", "/tmp/a", "/tmp/b"},
	{"--input", "/tmp/a", "/tmp/b"},
	{"--output", "/tmp/a", "/tmp/b"},
	{"--rootfs", "/tmp/a", "/tmp/b"},
	{"--image", "/tmp/a", "/tmp/b"},
	{"--cwd", "/a", "/b"},
	{"--uid", "1001", "1002"},
	{"--gid", "1001", "1002"},
	{"--user", "alice", "bob"},
	{"--hostname", "h1", "h2"},
	{"--env", "A=1", "B=2"},
	{"--tty-mode", "always", "never"},
	{"--isolation", "gvisor", "process"},
	{"--vm-accel", "any", "kvm"},
	{"--vm-kernel", "/tmp/vmlinuz-1", "/tmp/vmlinuz-2"},
	{"--cpus", "1", "0.5"},
	{"--memory", "64M", "128M"},
	{"--pids", "10", "20"},
	{"--timeout", "10s", "20s"},
	{"--kill-grace", "1s", "3s"},
	{"--disk", "2M", "4M"},
	{"--max-output", "1M", "2M"},
	{"--nofile", "100", "200"},
	{"--fsize", "1M", "2M"},
	{"--allow-degraded", "landlock", "cgroup"},
	{"--allow-syscall", "ptrace", "kcmp"},
	{"--deny-syscall", "ptrace", "kcmp"},
	{"--net", "allow", "host"},
	{"--allow-host", "a.example.com", "b.example.com"},
	{"--deny-host", "a.example.com", "b.example.com"},
	{"--allow-cidr", "10.0.0.0/8", "192.168.0.0/16"},
	{"--resolve", "a.example=127.0.0.2", "b.example=127.0.0.3"},
	{"--upstream-ca", "/tmp/a.pem", "/tmp/b.pem"},
	{"--inspect-tls", "all", "auto"},
	{"--no-inspect", "a.example.com", "b.example.com"},
	{"--secret", "A@a.example.com", "B@b.example.com"},
	{"--log", "/tmp/a.log", "/tmp/b.log"},
	{"--on-alert", "cat", "true"},
	{"--apply", "never", "all"},
	{"--flag-pattern", "*.a", "*.b"},
	{"--accept", "deps", "build/**"},
	{"--hold", "executable", "*.sh"},
	{"--held-max", "2M", "4M"},
	{"--held-exit", "3", "4"},
	{"--runs-max", "2M", "4M"},
	{"--retention", "1d", "2d"},
};

static char *policy_after(const char *flag, const char *v1, const char *v2)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	char *json = NULL;
	ASSERT_TRUE(p);
	if (v1 && moat_policy_set_option(p, flag, v1, &e) < 0)
		moat_tap_fail(__FILE__, __LINE__, "%s %s: %s", flag, v1, e.message);
	if (moat_policy_set_option(p, flag, v2, &e) < 0)
		moat_tap_fail(__FILE__, __LINE__, "%s %s: %s", flag, v2, e.message);
	ASSERT_EQ(moat_policy_to_json(p, &json), 0);
	moat_policy_free(p);
	return json;
}

TEST(policy_option_single_matches_setter)
{
	unsigned checked = 0, singles = 0;
	for (const char *const *h = moat_policy_option_help(); *h; h++) {
		char flag[64];
		snprintf(flag, sizeof(flag), "%.*s", (int)strcspn(*h, " \t"), *h);
		int single = moat_policy_option_single(flag);
		ASSERT_GE(single, 0);
		if (moat_policy_option_takes_value(flag) != 1) {
			/* a switch may be repeated */
			if (single)
				moat_tap_fail(__FILE__, __LINE__, "%s takes no value but is single",
					      flag);
			continue;
		}
		size_t i = 0;
		while (i < ELEMENTSOF(option_samples) && !streq(option_samples[i].flag, flag))
			i++;
		if (i == ELEMENTSOF(option_samples))
			moat_tap_fail(__FILE__, __LINE__,
				      "%s: no sample values in option_samples (add two)", flag);
		char *both = policy_after(flag, option_samples[i].v1, option_samples[i].v2);
		char *second = policy_after(flag, NULL, option_samples[i].v2);
		bool replaced = streq(both, second);
		free(both);
		free(second);
		if (replaced != (single == 1))
			moat_tap_fail(__FILE__, __LINE__,
				      "%s: a second value %s the first, but the table says %s",
				      flag, replaced ? "replaces" : "adds to",
				      single ? "single" : "repeatable");
		checked++;
		singles += replaced;
	}
	ASSERT_EQ(checked, ELEMENTSOF(option_samples));
	/* both kinds were seen: the comparison distinguishes them */
	ASSERT_GE(singles, 20);
	ASSERT_GE(checked - singles, 10);
	ASSERT_EQ(moat_policy_option_single("--ro"), 0);
	ASSERT_EQ(moat_policy_option_single("--allow-host"), 0);
	ASSERT_EQ(moat_policy_option_single("--memory"), 1);
	ASSERT_EQ(moat_policy_option_single("--bogus"), -ENOENT);
}

/* What the sandbox's init itself calls cannot be denied: the run would hang
 * or fail in its set-up instead of being refused with the reason. */
TEST(policy_deny_syscall_init_needs_refused)
{
	static const char *const needed[] = {"prctl",  "sendmsg", "prlimit64", "wait4",
					     "execve", "kill",	  "munmap"};
	for (size_t i = 0; i < sizeof(needed) / sizeof(needed[0]); i++) {
		struct moat_policy *p = moat_policy_new();
		struct moat_error e = {0};
		ASSERT_TRUE(p);
		ASSERT_EQ(moat_policy_set_option(p, "--deny-syscall", needed[i], &e), 0);
		ASSERT_TRUE(moat_policy_validate(p, &e) < 0);
		ASSERT_CONTAINS(e.message, needed[i]);
		ASSERT_CONTAINS(e.message, "init needs it");
		moat_policy_free(p);
	}
	/* control: a syscall the init never makes is denied as asked */
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_TRUE(p);
	ASSERT_EQ(moat_policy_set_option(p, "--deny-syscall", "ptrace", &e), 0);
	ASSERT_EQ(moat_policy_validate(p, &e), 0);
	moat_policy_free(p);
}
