/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plan (policy/plan.h): the complete text of `moat policy show` for a set of
 * representative policies against golden files (tests/unit/golden/plan_NAME.txt),
 * and each part's content. Pure: no privileges, no sandbox.
 *
 * After an intended change of the plan, regenerate the golden files with
 *   MOAT_GOLDEN_UPDATE=1 build/unit-tests plan_golden
 * and review the diff.
 */
#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "harness/tap.h"
#include "sandbox/isolation.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "shared/macro.h"

#define MAX_OPTS 32

struct opt {
	const char *name, *value;
};

static struct moat_policy *policy_with(const struct opt *o)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_TRUE(p);
	for (unsigned i = 0; o && o[i].name; i++)
		if (moat_policy_set_option(p, o[i].name, o[i].value, &e) < 0)
			moat_tap_fail(__FILE__, __LINE__, "%s %s: %s", o[i].name,
				      o[i].value ? o[i].value : "", e.message);
	ASSERT_EQ(moat_policy_validate(p, &e), 0);
	return p;
}

static struct moat_plan *plan_of(const struct moat_policy *p)
{
	struct moat_plan *pl = malloc(sizeof(*pl));
	ASSERT_TRUE(pl);
	ASSERT_EQ(moat_plan_build(p, pl), 0);
	return pl;
}

static char *plan_text(const struct opt *o)
{
	struct moat_policy *p = policy_with(o);
	char *text = NULL;
	ASSERT_EQ(moat_policy_plan_text(p, &text), 0);
	moat_policy_free(p);
	return text;
}

/* What depends on the machine, replaced by a @NAME@ token: the native
 * architecture (the seccomp part). */
static char *normalize(const char *text)
{
	struct moat_plan *pl = calloc(1, sizeof(*pl));
	struct moat_policy *p = moat_policy_new();
	ASSERT_TRUE(pl && p);
	ASSERT_EQ(moat_plan_build(p, pl), 0);
	char arch[64];
	snprintf(arch, sizeof(arch), "arch         %s ", pl->seccomp.arch);
	const char *tok = "arch         @ARCH@ ";
	size_t cap = strlen(text) + 64;
	char *out = malloc(cap);
	ASSERT_TRUE(out);
	const char *at = strstr(text, arch);
	if (at)
		snprintf(out, cap, "%.*s%s%s", (int)(at - text), text, tok, at + strlen(arch));
	else
		snprintf(out, cap, "%s", text);
	free(pl);
	moat_policy_free(p);
	return out;
}

static char *read_all(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	size_t cap = 1 << 20, len = 0;
	char *buf = malloc(cap + 1);
	ssize_t n;
	while (buf && len < cap && (n = read(fd, buf + len, cap - len)) > 0)
		len += (size_t)n;
	close(fd);
	if (buf)
		buf[len] = 0;
	return buf;
}

static int write_all_file(const char *path, const char *text)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(text);
	ssize_t n = write(fd, text, len);
	close(fd);
	return n == (ssize_t)len ? 0 : -EIO;
}

/* 0 when text equals the file; else prints `diff -u golden actual` as TAP
 * comments and returns 1. */
static int compare_golden(const char *golden_path, const char *text)
{
	char *want = read_all(golden_path);
	if (want && streq(want, text)) {
		free(want);
		return 0;
	}
	char actual[] = "/tmp/moat-plan-actual.XXXXXX";
	int fd = mkstemp(actual);
	if (fd >= 0) {
		close(fd);
		write_all_file(actual, text);
		char cmd[512];
		snprintf(cmd, sizeof(cmd), "diff -u '%s' '%s' 2>&1", golden_path, actual);
		FILE *d = popen(cmd, "r");
		char line[1024];
		printf("# %s differs%s (MOAT_GOLDEN_UPDATE=1 rewrites it):\n", golden_path,
		       want ? "" : " (missing)");
		for (unsigned n = 0; d && fgets(line, sizeof(line), d) && n < 200; n++)
			printf("#   %s%s", line, strchr(line, '\n') ? "" : "\n");
		if (d)
			pclose(d);
		unlink(actual);
	}
	free(want);
	return 1;
}

static void check_golden(const char *name, const struct opt *o)
{
	char path[512];
	char *raw = plan_text(o);
	char *text = normalize(raw);
	snprintf(path, sizeof(path), "%s/unit/golden/plan_%s.txt", moat_tap_dir(), name);
	const char *upd = getenv("MOAT_GOLDEN_UPDATE");
	if (upd && streq(upd, "1"))
		ASSERT_EQ(write_all_file(path, text), 0);
	if (compare_golden(path, text) != 0)
		moat_tap_fail(__FILE__, __LINE__, "plan %s differs from %s", name, path);
	free(raw);
	free(text);
}

/* A value that must never appear in any plan text. */
#define SECRET_VALUE "s3cr3t-value-never-in-the-plan"

static const struct opt o_default[] = {{NULL, NULL}};
static const struct opt o_net_none[] = {{"--net", "none"},
					{"--ro", "/srv/data"},
					{"--tmpfs", "/scratch:64m"},
					{"--hide", "/srv/data/private"},
					{"--allow-syscall", "ptrace"},
					{"--deny-syscall", "personality"},
					{NULL, NULL}};
static const struct opt o_net_allow[] = {{"--net", "allow"},
					 {"--allow-host", "api.example.com"},
					 {"--allow-host", "*.pkg.test:8443"},
					 {"--deny-host", "bad.pkg.test"},
					 {"--allow-cidr", "10.1.0.0/16:5432"},
					 {"--resolve", "api.example.com=192.0.2.10"},
					 {"--secret", "MOAT_PLAN_TOKEN@api.example.com"},
					 {NULL, NULL}};
static const struct opt o_ws_rw[] = {{"--workspace", "/srv/ws:rw"},
				     {"--input", "/srv/in"},
				     {"--output", "/srv/out"},
				     {"--hostname", "box"},
				     {"--user", "dev"},
				     {"--uid", "1234"},
				     {NULL, NULL}};
static const struct opt o_ws_overlay[] = {{"--workspace", "/srv/ws"},
					  {"--apply", "never"},
					  {"--flag-pattern", "*.lock"},
					  {NULL, NULL}};
static const struct opt o_limits[] = {{"--cpus", "1.5"},
				      {"--memory", "512m"},
				      {"--pids", "100"},
				      {"--timeout", "1h30m"},
				      {"--kill-grace", "5s"},
				      {"--disk", "64m"},
				      {"--max-output", "10m"},
				      {"--nofile", "1024"},
				      {"--fsize", "1g"},
				      {"--allow-degraded", "cgroup"},
				      {"--log", "/var/log/moat/audit.jsonl"},
				      {"--log-sync", NULL},
				      {"--on-alert", "logger -t moat"},
				      {"--no-record-exec", NULL},
				      {NULL, NULL}};
static const struct opt o_rootfs[] = {{"--rootfs", "/srv/rootfs"}, {NULL, NULL}};
static const struct opt o_gvisor[] = {{"--isolation", "gvisor"},
				      {"--net", "allow"},
				      {"--deny-syscall", "personality"},
				      {NULL, NULL}};
/* the vm level's capture rules (moat_plan_nft_ruleset_vm) in full */
static const struct opt o_vm[] = {{"--isolation", "vm"},
				  {"--net", "allow"},
				  {"--allow-host", "api.example.com"},
				  {NULL, NULL}};

TEST(plan_golden)
{
	setenv("MOAT_PLAN_TOKEN", SECRET_VALUE, 1);
	check_golden("default", o_default);
	check_golden("net_none", o_net_none);
	check_golden("net_allow", o_net_allow);
	check_golden("workspace_rw", o_ws_rw);
	check_golden("workspace_overlay", o_ws_overlay);
	check_golden("limits", o_limits);
	check_golden("rootfs", o_rootfs);
	check_golden("gvisor", o_gvisor);
	check_golden("vm", o_vm);
}

/* uid 0 is the sandbox's own root: named root with home /root, in
 * /etc/passwd as the sandbox user (a login shell), its home moat's tmpfs at
 * /root; 65534 (the overflow id) is refused; gvisor and vm refuse uid 0 or
 * gid 0, naming the key. Control: uid 1000 keeps agent and /home/agent. */
TEST(plan_uid0_is_root)
{
	static const struct opt o_root[] = {{"--uid", "0"}, {"--gid", "0"}, {NULL, NULL}};
	static const struct opt o_user[] = {{"--uid", "1000"}, {NULL, NULL}};
	struct moat_policy *p = policy_with(o_root);
	struct moat_plan *pl = plan_of(p);
	struct moat_error e = {0};
	ASSERT_STREQ(pl->id.user, "root");
	ASSERT_STREQ(pl->id.home, "/root");
	ASSERT_EQ(pl->id.uid, 0);
	ASSERT_STREQ(pl->cwd, "/root");
	ASSERT_TRUE(strncmp(pl->passwd, "root:x:0:0:root:/root:/bin/sh\n", 30) == 0);
	ASSERT_TRUE(strstr(pl->passwd, "agent") == NULL);
	ASSERT_STREQ(pl->group, "root:x:0:\nnogroup:x:65534:\n");
	bool home = false;
	for (unsigned i = 0; i < pl->n_steps; i++)
		if (pl->steps[i].op == MOAT_STEP_TMPFS && streq(pl->steps[i].dest, "/root"))
			home = true;
	ASSERT_TRUE(home);
	ASSERT_EQ(moat_isolation_check(p, &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--isolation", "gvisor", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), -EOPNOTSUPP);
	ASSERT_CONTAINS(e.message, "process uid or gid 0");
	ASSERT_EQ(moat_policy_set_option(p, "--isolation", "vm", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), -EOPNOTSUPP);
	ASSERT_CONTAINS(e.message, "process uid or gid 0");
	/* gid 0 alone is refused there too */
	ASSERT_EQ(moat_policy_set_option(p, "--uid", "1000", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), -EOPNOTSUPP);
	free(pl);
	moat_policy_free(p);

	p = policy_with(o_user);
	pl = plan_of(p);
	ASSERT_STREQ(pl->id.user, "agent");
	ASSERT_STREQ(pl->id.home, "/home/agent");
	ASSERT_TRUE(strstr(pl->passwd, "agent:x:1000:1000:agent:/home/agent:/bin/sh\n") != NULL);
	ASSERT_TRUE(strstr(pl->passwd, "root:x:0:0:root:/root:/usr/sbin/nologin\n") != NULL);
	ASSERT_EQ(moat_policy_set_option(p, "--isolation", "gvisor", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), 0);
	free(pl);
	moat_policy_free(p);
}

/* The isolation table (isolation.c): a key the level cannot honour fails
 * closed naming it; the same policy at the process level passes; vm always
 * fails closed; every row says how each level honours it or why not. */
TEST(isolation_table_fails_closed)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e = {0};
	ASSERT_TRUE(p);
	ASSERT_EQ(moat_isolation_check(p, &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--deny-syscall", "personality", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), 0); /* process: honoured */
	ASSERT_EQ(moat_policy_set_option(p, "--isolation", "gvisor", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), -EOPNOTSUPP);
	ASSERT_STREQ(e.stage, "isolation");
	ASSERT_TRUE(strstr(e.message, "syscalls.deny") != NULL);
	/* the vm level honours it (the guest's copy of the filter), and
	 * --net allow (its tap), not --net host */
	ASSERT_EQ(moat_policy_set_option(p, "--isolation", "vm", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--allow-host", "example.test:443", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), 0);
	ASSERT_EQ(moat_policy_set_option(p, "--net", "host", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), -EOPNOTSUPP);
	ASSERT_TRUE(strstr(e.message, "isolation vm") != NULL);
	ASSERT_TRUE(strstr(e.message, "network.mode host") != NULL);
	moat_policy_free(p);
	p = moat_policy_new();
	ASSERT_EQ(moat_policy_set_option(p, "--isolation", "gvisor", &e), 0);
	ASSERT_EQ(moat_isolation_check(p, &e), 0); /* the defaults are all honoured */
	moat_policy_free(p);
	unsigned n;
	const struct moat_iso_key *k = moat_isolation_keys(&n);
	ASSERT_TRUE(n > 0);
	for (unsigned i = 0; i < n; i++) {
		ASSERT_TRUE(k[i].how[MOAT_ISO_PROCESS] != NULL);
		ASSERT_TRUE(k[i].how[MOAT_ISO_GVISOR] != NULL);
		/* a refused row must know when it is in use */
		if (k[i].level[MOAT_ISO_GVISOR] == MOAT_ISO_REFUSED)
			ASSERT_TRUE(k[i].used != NULL);
	}
}

/* Positive control: the comparison notices one changed byte. */
TEST(plan_golden_detects_a_change)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/unit/golden/plan_default.txt", moat_tap_dir());
	char *raw = plan_text(o_default);
	char *text = normalize(raw);
	free(raw);
	ASSERT_EQ(compare_golden(path, text), 0);
	char *nl = strstr(text, "hostname     moat");
	ASSERT_TRUE(nl);
	nl[13] = 'M';
	ASSERT_EQ(compare_golden(path, text), 1);
	free(text);
}

TEST(plan_sections_in_order)
{
	char *text = plan_text(o_net_allow);
	static const char *const sections[] = {"## mounts\n",	   "## identity\n", "## network\n",
					       "## credentials\n", "## landlock\n", "## seccomp\n",
					       "## limits\n",	   "## audit\n"};
	const char *at = text;
	for (size_t i = 0; i < ELEMENTSOF(sections); i++) {
		const char *s = strstr(at, sections[i]);
		if (!s)
			moat_tap_fail(__FILE__, __LINE__, "no section %s after offset %td",
				      sections[i], at - text);
		at = s;
	}
	free(text);
}

TEST(plan_identity)
{
	struct moat_policy *p = policy_with(o_ws_rw);
	struct moat_plan *pl = plan_of(p);
	ASSERT_EQ(pl->id.uid, 1234);
	ASSERT_STREQ(pl->id.user, "dev");
	ASSERT_STREQ(pl->id.hostname, "box");
	ASSERT_STREQ(pl->id.home, "/home/dev");
	ASSERT_TRUE(pl->id.clone_flags & CLONE_NEWNET);
	ASSERT_TRUE(pl->id.clone_flags & CLONE_NEWUSER);
	free(pl);
	moat_policy_free(p);

	/* --net host: no network namespace, said in the plan */
	static const struct opt host[] = {{"--net", "host"}, {NULL, NULL}};
	p = policy_with(host);
	pl = plan_of(p);
	ASSERT_TRUE(!(pl->id.clone_flags & CLONE_NEWNET));
	ASSERT_TRUE(pl->id.clone_flags & CLONE_NEWPID);
	char *text = NULL;
	ASSERT_EQ(moat_plan_format(pl, &text), 0);
	ASSERT_CONTAINS(text, "no net namespace: --net host");
	free(text);
	free(pl);
	moat_policy_free(p);
}

TEST(plan_network)
{
	struct moat_policy *p = policy_with(o_net_allow);
	struct moat_plan *pl = plan_of(p);
	const struct moat_plan_net *n = &pl->net;
	ASSERT_EQ(n->mode, MOAT_NET_ALLOW);
	ASSERT_EQ(n->n_env, 9);
	ASSERT_STREQ(n->env[8][0], "NODE_EXTRA_CA_CERTS");
	ASSERT_STREQ(n->env[0][0], "HTTP_PROXY");
	ASSERT_STREQ(n->env[0][1], "http://127.0.0.1:3128");
	ASSERT_EQ(n->n_listeners, 4);
	ASSERT_EQ(n->listeners[3].port, 53);
	/* the capture rules netns.c loads: redirect to the transparent port */
	ASSERT_CONTAINS(n->nft, "redirect to :3129");
	ASSERT_CONTAINS(n->nft, "policy drop;");
	ASSERT_EQ(n->n_allow, 2);
	ASSERT_STREQ(n->allow[1].pattern, "*.pkg.test");
	ASSERT_EQ(n->allow[1].n_ports, 1);
	ASSERT_EQ(n->allow[1].ports[0], 8443);
	ASSERT_EQ(n->n_deny, 1);
	ASSERT_EQ(n->n_cidrs, 1);
	ASSERT_EQ(n->n_resolve, 1);
	ASSERT_STREQ(n->resolve[0].addr, "192.0.2.10");
	ASSERT_TRUE(!n->record_attempts);
	/* the proxy's variables are nowhere but with --net allow */
	free(pl);
	moat_policy_free(p);
	p = policy_with(o_net_none);
	pl = plan_of(p);
	ASSERT_EQ(pl->net.n_env, 0);
	ASSERT_EQ(pl->net.n_listeners, 0);
	ASSERT_STREQ(pl->net.nft, "");
	ASSERT_TRUE(pl->net.record_attempts);
	ASSERT_TRUE(!pl->net.landlock_no_tcp); /* the sandbox's own loopback works (issue 18) */
	free(pl);
	moat_policy_free(p);
}

/* --isolation vm: the guest sees the proxy at its gateway, and the capture
 * rules also take the tap's packets (docs/ISOLATION.md); the process
 * level's plan (the control) has none of it. */
TEST(plan_network_vm)
{
	static const struct opt vm[] = {{"--net", "allow"},
					{"--isolation", "vm"},
					{"--allow-host", "a.test"},
					{NULL, NULL}};
	struct moat_policy *p = policy_with(vm);
	struct moat_plan *pl = plan_of(p);
	const struct moat_plan_net *n = &pl->net;
	ASSERT_EQ(n->n_env, 9);
	ASSERT_STREQ(n->env[0][1], "http://10.0.2.2:3128");
	ASSERT_STREQ(n->env[4][1], "socks5h://10.0.2.2:1080");
	ASSERT_CONTAINS(pl->resolv, "nameserver 10.0.2.2");
	/* the tap's TCP DNATed to the listeners, the rest logged and dropped
	 * before routing; the process level's output rules kept */
	ASSERT_CONTAINS(n->nft,
			"iifname \"moat0\" ip daddr 10.0.2.2 tcp dport 3128 dnat ip to "
			"127.0.0.1:3128");
	ASSERT_CONTAINS(n->nft, "udp dport 53 dnat ip to 127.0.0.53:53");
	ASSERT_CONTAINS(n->nft, "meta l4proto tcp counter dnat ip to 127.0.0.1:3129");
	ASSERT_CONTAINS(n->nft, "type filter hook prerouting priority 0");
	ASSERT_CONTAINS(n->nft, "iifname \"moat0\" counter log group 7 drop");
	ASSERT_CONTAINS(n->nft, "oifname \"moat0\" drop");
	ASSERT_CONTAINS(n->nft, "redirect to :3129");
	free(pl);
	moat_policy_free(p);
	static const struct opt proc[] = {
		{"--net", "allow"}, {"--allow-host", "a.test"}, {NULL, NULL}};
	p = policy_with(proc);
	pl = plan_of(p);
	ASSERT_TRUE(strstr(pl->net.nft, "moat0") == NULL);
	ASSERT_STREQ(pl->net.env[0][1], "http://127.0.0.1:3128");
	ASSERT_CONTAINS(pl->resolv, "nameserver 127.0.0.53");
	free(pl);
	moat_policy_free(p);
}

TEST(plan_credentials)
{
	setenv("MOAT_PLAN_TOKEN", SECRET_VALUE, 1);
	struct moat_policy *p = policy_with(o_net_allow);
	struct moat_plan *pl = plan_of(p);
	const struct moat_plan_creds *c = &pl->creds;
	ASSERT_TRUE(c->intercept);
	ASSERT_GE(c->ca_step, 0);
	/* the bundle's bind is a plan step, last, with its source made at run time */
	const struct moat_step *s = &pl->steps[c->ca_step];
	ASSERT_EQ((unsigned)c->ca_step, pl->n_steps - 1);
	ASSERT_EQ(s->op, MOAT_STEP_BIND);
	ASSERT_STREQ(s->dest, "/etc/ssl/certs/ca-certificates.crt");
	ASSERT_TRUE(s->flags & MOAT_STEPF_RO);
	ASSERT_TRUE(s->flags & MOAT_STEPF_RUNTIME);
	ASSERT_TRUE(!s->src);
	/* a run cannot start with the source missing; it can once it is made */
	ASSERT_EQ(moat_plan_check_runtime(pl), -EPROTO);
	pl->steps[c->ca_step].src = "/tmp/moat-ca-x/ca-bundle.crt";
	ASSERT_EQ(moat_plan_check_runtime(pl), 0);
	ASSERT_STREQ(c->ca_dest, s->dest);
	ASSERT_EQ(c->n_ca_env, 6);
	ASSERT_STREQ(c->ca_env[0], "SSL_CERT_FILE");
	ASSERT_TRUE(!c->ca_env[c->n_ca_env]);
	ASSERT_EQ(c->n_secrets, 1);
	ASSERT_STREQ(c->secrets[0].name, "MOAT_PLAN_TOKEN");
	/* never the value: not in the text, whatever part */
	char *text = NULL;
	ASSERT_EQ(moat_plan_format(pl, &text), 0);
	ASSERT_CONTAINS(text, "MOAT_PLAN_TOKEN: placeholder");
	ASSERT_TRUE(!strstr(text, SECRET_VALUE));
	free(text);
	free(pl);
	moat_policy_free(p);

	/* without a secret, an http rule or --inspect-tls all: no CA, no step */
	static const struct opt plain[] = {
		{"--net", "allow"}, {"--allow-host", "a.test"}, {NULL, NULL}};
	p = policy_with(plain);
	pl = plan_of(p);
	ASSERT_TRUE(!pl->creds.intercept);
	ASSERT_EQ(pl->creds.ca_step, -1);
	ASSERT_EQ(moat_plan_check_runtime(pl), 0);
	for (unsigned i = 0; i < pl->n_steps; i++)
		ASSERT_TRUE(!(pl->steps[i].flags & MOAT_STEPF_RUNTIME));
	free(pl);
	moat_policy_free(p);
}

static const struct moat_plan_landlock_rule *ll_rule(const struct moat_plan *pl, const char *path)
{
	for (unsigned i = 0; i < pl->landlock.n_rules; i++)
		if (streq(pl->landlock.rules[i].path, path))
			return &pl->landlock.rules[i];
	return NULL;
}

TEST(plan_landlock)
{
	struct moat_policy *p = policy_with(o_ws_rw);
	struct moat_plan *pl = plan_of(p);
	const struct moat_plan_landlock_rule *r = ll_rule(pl, "/");
	ASSERT_TRUE(r && !r->writable && r->step == -1);
	ASSERT_TRUE((r = ll_rule(pl, "/srv/ws")) && r->writable);
	ASSERT_EQ(pl->steps[r->step].op, MOAT_STEP_BIND);
	ASSERT_TRUE((r = ll_rule(pl, "/tmp")) && r->writable);
	ASSERT_TRUE((r = ll_rule(pl, "/output")) && r->writable);
	ASSERT_TRUE(ll_rule(pl, "/dev/pts"));
	/* read-only binds get no rule of their own (read + execute from "/") */
	ASSERT_TRUE(!ll_rule(pl, "/data"));
	ASSERT_TRUE(!ll_rule(pl, "/usr"));
	/* --net none (the default): loopback is the sandbox's own, TCP on it
	 * works (issue 18), so Landlock handles no TCP right */
	ASSERT_TRUE(!pl->landlock.net_none);
	free(pl);
	moat_policy_free(p);

	static const struct opt ro[] = {{"--workspace", "/srv/ws:ro"},
					{"--allow-degraded", "landlock"},
					{"--net", "allow"},
					{NULL, NULL}};
	p = policy_with(ro);
	pl = plan_of(p);
	ASSERT_TRUE(!ll_rule(pl, "/srv/ws"));
	ASSERT_EQ(pl->landlock.min_abi, 0);
	ASSERT_TRUE(!pl->landlock.net_none);
	ASSERT_TRUE(pl->landlock.scope);
	free(pl);
	moat_policy_free(p);

	p = policy_with(o_default);
	pl = plan_of(p);
	ASSERT_TRUE(!pl->landlock.net_none);
	ASSERT_EQ(pl->landlock.min_abi, 1);
	ASSERT_TRUE(pl->landlock.enabled);
	free(pl);
	moat_policy_free(p);
}

TEST(plan_seccomp)
{
	struct moat_policy *p = policy_with(o_net_none);
	struct moat_plan *pl = plan_of(p);
	struct moat_seccomp_opts o;
	ASSERT_TRUE(pl->seccomp.enabled);
	moat_plan_seccomp_opts(pl, true, &o);
	ASSERT_EQ(o.n_allow, 1);
	ASSERT_STREQ(o.allow[0], "ptrace");
	ASSERT_EQ(o.n_deny, 1);
	ASSERT_STREQ(o.deny[0], "personality");
	ASSERT_TRUE(o.notify && o.record_exec && o.record_net);
	/* without notification nothing is recorded, whatever the plan wants */
	moat_plan_seccomp_opts(pl, false, &o);
	ASSERT_TRUE(!o.notify && !o.record_exec && !o.record_net);
	/* the text: the re-allowed rule is gone, the user's denial is there */
	char *text = NULL;
	ASSERT_EQ(moat_plan_format(pl, &text), 0);
	ASSERT_TRUE(!strstr(text, "eperm        ptrace,"));
	ASSERT_CONTAINS(text, "eperm        process_vm_readv, recorded");
	ASSERT_CONTAINS(text, "allowed      ptrace");
	ASSERT_CONTAINS(text, "eperm        personality (--deny-syscall), recorded");
	ASSERT_CONTAINS(text, "record       connect");
	free(text);
	free(pl);
	moat_policy_free(p);

	/* --net allow: network calls are the proxy's, not recorded by seccomp */
	p = policy_with(o_net_allow);
	pl = plan_of(p);
	moat_plan_seccomp_opts(pl, true, &o);
	ASSERT_TRUE(o.record_exec && !o.record_net);
	ASSERT_EQ(o.n_allow, 0);
	free(pl);
	moat_policy_free(p);
}

TEST(plan_limits)
{
	struct moat_policy *p = policy_with(o_limits);
	struct moat_plan *pl = plan_of(p);
	const struct moat_plan_limits *l = &pl->limits;
	ASSERT_EQ(l->cg.cpus_milli, 1500);
	ASSERT_EQ(l->cg.memory, 512u << 20);
	ASSERT_EQ(l->cg.pids, 100);
	ASSERT_TRUE(l->asked & MOAT_LIMIT_MEMORY);
	ASSERT_TRUE(l->may_degrade);
	ASSERT_EQ(l->rl.nofile, 1024);
	ASSERT_EQ(l->rl.fsize, 1u << 30);
	ASSERT_EQ(l->rl.as, 0); /* with the cgroup, memory is the cgroup's */
	ASSERT_EQ(l->rl_degraded.as, 512u << 20);
	ASSERT_EQ(l->rl_degraded.nproc, 100);
	ASSERT_EQ(l->timeout_ms, 90 * 60 * 1000);
	ASSERT_EQ(l->kill_grace_ms, 5000);
	ASSERT_EQ(l->disk, 64u << 20);
	ASSERT_EQ(l->max_output, 10u << 20);
	/* the tmpfs steps take the disk size */
	for (unsigned i = 0; i < pl->n_steps; i++)
		if (streq(pl->steps[i].dest, "/tmp"))
			ASSERT_EQ(pl->steps[i].size, 64u << 20);
	ASSERT_STREQ(pl->audit.log_path, "/var/log/moat/audit.jsonl");
	ASSERT_TRUE(pl->audit.log_sync);
	ASSERT_STREQ(pl->audit.on_alert, "logger -t moat");
	ASSERT_TRUE(!pl->audit.record_exec);
	ASSERT_TRUE(!pl->seccomp.record_exec);
	free(pl);
	moat_policy_free(p);
}

/* Plans keep their own storage: two built one after the other both hold. */
TEST(plan_two_coexist)
{
	static const struct opt a[] = {{"--rootfs", "/srv/a"}, {NULL, NULL}};
	static const struct opt b[] = {{"--rootfs", "/srv/bb"}, {NULL, NULL}};
	struct moat_policy *pa = policy_with(a), *pb = policy_with(b);
	struct moat_plan *la = plan_of(pa), *lb = plan_of(pb);
	ASSERT_STREQ(la->steps[0].src, "/srv/a/usr");
	ASSERT_STREQ(lb->steps[0].src, "/srv/bb/usr");
	free(la);
	free(lb);
	moat_policy_free(pa);
	moat_policy_free(pb);
}

/* The default plan's rule set is the one compiled when moat was built (the
 * filter is taken as is, not compiled at run time): the plan and the baked
 * filter agree. A re-allowed name needs a compiled filter, which builds. */
TEST(plan_seccomp_opts_compile)
{
	struct moat_policy *p = policy_with(o_default);
	struct moat_plan *pl = plan_of(p);
	struct moat_seccomp_opts o;
	moat_plan_seccomp_opts(pl, true, &o);
	ASSERT_TRUE(moat_seccomp_baked_find(&o) != NULL);
	free(pl);
	moat_policy_free(p);

	p = policy_with(o_net_none);
	pl = plan_of(p);
	moat_plan_seccomp_opts(pl, true, &o);
	ASSERT_TRUE(moat_seccomp_baked_find(&o) == NULL);
	scmp_filter_ctx ctx = NULL;
	ASSERT_EQ(moat_seccomp_build(&o, &ctx), 0);
	seccomp_release(ctx);
	free(pl);
	moat_policy_free(p);
}

/* The OCI runtime's top names of --rootfs (docs/OCI.md "root.path"): each a
 * read-only bind beneath the rootfs, a symlink made again, missing skipped;
 * without --rootfs none (the host's root is never listed). */
TEST(plan_rootfs_top_names)
{
	static const struct opt o[] = {{"--rootfs", "/srv/b"}, {NULL, NULL}};
	struct moat_policy *p = policy_with(o);
	static char name0[] = "runtimetest", name1[] = "srv";
	char *names[] = {name0, name1};
	p->rootfs_top = names;
	p->n_rootfs_top = 2;
	struct moat_plan *pl = plan_of(p);
	unsigned seen = 0;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (!s->dest || (!streq(s->dest, "/runtimetest") && !streq(s->dest, "/srv")))
			continue;
		seen++;
		ASSERT_EQ(s->op, MOAT_STEP_BIND);
		ASSERT_STREQ(s->src, streq(s->dest, "/srv") ? "/srv/b/srv" : "/srv/b/runtimetest");
		ASSERT_EQ(s->flags &
				  (MOAT_STEPF_RO | MOAT_STEPF_SYSROOT | MOAT_STEPF_MIRROR_LINK |
				   MOAT_STEPF_OPTIONAL | MOAT_STEPF_WRITABLE),
			  MOAT_STEPF_RO | MOAT_STEPF_SYSROOT | MOAT_STEPF_MIRROR_LINK |
				  MOAT_STEPF_OPTIONAL);
	}
	ASSERT_EQ(seen, 2u);
	free(pl);
	p->rootfs_top = NULL;
	p->n_rootfs_top = 0;
	moat_policy_free(p);

	/* no --rootfs: the names are not used */
	p = policy_with(o_default);
	p->rootfs_top = names;
	p->n_rootfs_top = 2;
	pl = plan_of(p);
	for (unsigned i = 0; i < pl->n_steps; i++)
		ASSERT_TRUE(!pl->steps[i].dest || !streq(pl->steps[i].dest, "/runtimetest"));
	free(pl);
	p->rootfs_top = NULL;
	p->n_rootfs_top = 0;
	moat_policy_free(p);
}

/* OCI root.readonly false (docs/OCI.md "root.readonly"): one upper step
 * first (its size run.moat.root-size, else --disk), then each tree of the
 * root an overlay over the same source, writable for Landlock; "/" itself
 * stays read-only for Landlock (no new name at the top). */
TEST(plan_rootfs_writable)
{
	static const struct opt o[] = {{"--rootfs", "/srv/b"}, {"--disk", "64M"}, {NULL, NULL}};
	struct moat_policy *p = policy_with(o);
	static char name0[] = "srv";
	char *names[] = {name0};
	p->rootfs_top = names;
	p->n_rootfs_top = 1;
	p->rootfs_rw = true;
	struct moat_plan *pl = plan_of(p);
	ASSERT_EQ(pl->steps[0].op, MOAT_STEP_UPPER);
	ASSERT_STREQ(pl->steps[0].dest, MOAT_PLAN_ROOT_UPPER);
	ASSERT_EQ(pl->steps[0].size, 64ull << 20);
	unsigned seen = 0;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		if (!s->dest || (!streq(s->dest, "/usr") && !streq(s->dest, "/srv")))
			continue;
		seen++;
		ASSERT_EQ(s->op, MOAT_STEP_OVERLAY);
		ASSERT_STREQ(s->src, streq(s->dest, "/srv") ? "/srv/b/srv" : "/srv/b/usr");
		ASSERT_EQ(s->flags &
				  (MOAT_STEPF_RO | MOAT_STEPF_ROOT_LAYER | MOAT_STEPF_WRITABLE |
				   MOAT_STEPF_SYSROOT),
			  MOAT_STEPF_ROOT_LAYER | MOAT_STEPF_WRITABLE | MOAT_STEPF_SYSROOT);
	}
	ASSERT_EQ(seen, 2u);
	ASSERT_STREQ(pl->landlock.rules[0].path, "/");
	ASSERT_TRUE(!pl->landlock.rules[0].writable);
	/* /etc stays moat's own, read-only: no writable rule for it */
	for (unsigned i = 0; i < pl->landlock.n_rules; i++)
		ASSERT_TRUE(!streq(pl->landlock.rules[i].path, "/etc") ||
			    !pl->landlock.rules[i].writable);
	free(pl);
	/* run.moat.root-size over --disk */
	p->rootfs_rw_size = 2u << 20;
	pl = plan_of(p);
	ASSERT_EQ(pl->steps[0].size, 2ull << 20);
	free(pl);
	/* read-only (the default): no upper step, binds */
	p->rootfs_rw = false;
	pl = plan_of(p);
	for (unsigned i = 0; i < pl->n_steps; i++)
		ASSERT_TRUE(pl->steps[i].op != MOAT_STEP_UPPER &&
			    !(pl->steps[i].flags & MOAT_STEPF_ROOT_LAYER));
	free(pl);
	p->rootfs_top = NULL;
	p->n_rootfs_top = 0;
	moat_policy_free(p);
}
