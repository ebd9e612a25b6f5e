/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layers (supervisor/layer.h): the supervisor's table and the init's ordered
 * steps; what each layer derives from the plan for representative policies
 * (pure, no privileges); and the in-sandbox steps that can be applied without
 * host privileges, each in a forked child (harness) inside a throw-away
 * user namespace where it needs one, with a positive control that shows the
 * probe sees the state before the step.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <net/if.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "workspace/fsdiff.h"
#include "kernel/landlock.h"
#include "supervisor/layer.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "sandbox/sandbox.h"
#include "kernel/seccomp.h"
#include "shared/macro.h"

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

/* The plan of a policy; the policy stays allocated (the plan points into it). */
static struct moat_plan *plan_with(const struct opt *o, struct moat_policy **ret_p)
{
	struct moat_policy *p = policy_with(o);
	struct moat_plan *pl = calloc(1, sizeof(*pl));
	ASSERT_TRUE(pl);
	ASSERT_EQ(moat_plan_build(p, pl), 0);
	if (ret_p)
		*ret_p = p;
	return pl;
}

static struct moat_layer_view *derive(const char *layer, const struct opt *o)
{
	const struct moat_layer_ops *l = moat_layer_find(layer);
	struct moat_layer_view *v = calloc(1, sizeof(*v));
	ASSERT_TRUE(l && v);
	struct moat_plan *pl = plan_with(o, NULL);
	ASSERT_EQ(moat_layer_derive(l, pl, v), 0);
	ASSERT_TRUE(v->n_lines > 0);
	return v;
}

#define ASSERT_HAS(v, line) \
	do { \
		if (!moat_layer_view_has((v), (line))) \
			moat_tap_fail(__FILE__, __LINE__, "no line \"%s\" in:\n%s", (line), \
				      (v)->text); \
	} while (0)
#define ASSERT_HASNT(v, line) \
	do { \
		if (moat_layer_view_has((v), (line))) \
			moat_tap_fail(__FILE__, __LINE__, "unexpected line \"%s\" in:\n%s", \
				      (line), (v)->text); \
	} while (0)

static const struct opt o_default[] = {{NULL, NULL}};
static const struct opt o_net_none[] = {{"--net", "none"},
					{"--ro", "/srv/data"},
					{"--allow-syscall", "ptrace"},
					{"--deny-syscall", "personality"},
					{NULL, NULL}};
static const struct opt o_net_allow[] = {{"--net", "allow"},
					 {"--allow-host", "api.example.com"},
					 {"--allow-host", "*.pkg.test:8443"},
					 {"--deny-host", "bad.pkg.test"},
					 {"--allow-cidr", "10.1.0.0/16:5432"},
					 {"--resolve", "api.example.com=192.0.2.10"},
					 {"--secret", "MOAT_LAYER_TOKEN@api.example.com"},
					 {NULL, NULL}};
static const struct opt o_ws[] = {{"--workspace", "/srv/ws"},
				  {"--output", "/srv/out"},
				  {"--apply", "never"},
				  {"--flag-pattern", "*.lock"},
				  {"--held-max", "1m"},
				  {"--hostname", "box"},
				  {"--user", "dev"},
				  {"--uid", "1234"},
				  {NULL, NULL}};
static const struct opt o_limits[] = {{"--cpus", "1.5"},
				      {"--memory", "512m"},
				      {"--pids", "100"},
				      {"--timeout", "90s"},
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

/* ---- the tables ------------------------------------------------------------ */

static const char *const layer_order[] = {"workspace", "mount",	      "identity",
					  "limits",    "landlock",    "seccomp",
					  "network",   "credentials", "audit"};

TEST(layers_table_order_and_interface)
{
	size_t n;
	const struct moat_layer_ops *const *t = moat_layers(&n);
	ASSERT_EQ(n, ELEMENTSOF(layer_order));
	for (size_t i = 0; i < n; i++) {
		ASSERT_STREQ(t[i]->name, layer_order[i]);
		ASSERT_TRUE(t[i]->derive != NULL);
		ASSERT_TRUE(moat_layer_find(layer_order[i]) == t[i]);
	}
	/* supervise.c calls the audit layer's prepare, finish and teardown
	 * without a check: it must have them */
	ASSERT_TRUE(t[n - 1]->prepare && t[n - 1]->finish && t[n - 1]->teardown);
	ASSERT_TRUE(moat_layer_find("no-such-layer") == NULL);
}

static int step_index(const char *layer, const char *name)
{
	size_t n;
	const struct moat_init_step *s = moat_init_steps(&n);
	for (size_t i = 0; i < n; i++)
		if (streq(s[i].layer, layer) && streq(s[i].name, name))
			return (int)i;
	moat_tap_fail(__FILE__, __LINE__, "no init step %s/%s", layer, name);
}

#define BEFORE(a, an, b, bn) ASSERT_TRUE(step_index(a, an) < step_index(b, bn))

TEST(layers_init_steps_order)
{
	size_t n;
	const struct moat_init_step *s = moat_init_steps(&n);
	for (size_t i = 0; i < n; i++) {
		ASSERT_TRUE(s[i].apply && s[i].fail && *s[i].fail);
		ASSERT_TRUE(streq(s[i].layer, "init") || moat_layer_find(s[i].layer));
		ASSERT_TRUE(s[i].stage > MOAT_STAGE_NONE && s[i].stage <= MOAT_STAGE_STDIO);
	}
	ASSERT_EQ(step_index("limits", "cgroup"), 0); /* in its groups before any fork */
	BEFORE("credentials", "wipe", "network", "capture"); /* before the first fork */
	BEFORE("network", "capture", "mount", "steps"); /* overlaps the root assembly */
	BEFORE("limits", "ucounts", "mount", "steps"); /* through the host's /proc */
	BEFORE("mount", "sources", "identity", "uid"); /* opened as the caller */
	BEFORE("mount", "sources", "identity", "maps"); /* no map needed before */
	BEFORE("identity", "maps", "identity", "uid"); /* the supervisor wrote them */
	BEFORE("identity", "uid", "mount", "steps");
	BEFORE("mount", "steps", "mount", "root");
	BEFORE("mount", "root", "landlock", "ruleset"); /* paths after pivot_root */
	BEFORE("network", "join", "identity", "bounding"); /* never without capture */
	BEFORE("landlock", "ruleset", "init", "sync");
	BEFORE("init", "sync", "identity", "cgroupns"); /* the supervisor attached us */
	BEFORE("identity", "cgroupns", "identity", "caps"); /* needs CAP_SYS_ADMIN */
	BEFORE("identity", "caps", "landlock", "enforce"); /* no_new_privs first */
	BEFORE("landlock", "enforce", "seccomp", "install");
	ASSERT_EQ(step_index("init", "stdio"), (int)n - 1);
	errno = 0;
	ASSERT_ERRNO(moat_init_step_run(&(struct moat_init){0}, "mount", "nothing"), ENOENT);
}

/* ---- what each layer derives from the plan ------------------------------------ */

TEST(layers_derive_mount)
{
	struct moat_policy *p;
	struct moat_plan *pl = plan_with(o_net_none, &p);
	struct moat_layer_view v = {0};
	ASSERT_EQ(moat_layer_derive(&moat_layer_mount, pl, &v), 0);
	/* one line per step, in the plan's order */
	ASSERT_EQ(moat_layer_view_count(&v, "step "), pl->n_steps);
	ASSERT_HAS(&v, "step bind /srv/data /srv/data ro,user");
	ASSERT_EQ(moat_layer_view_count(&v, "step proc /proc "), 1);
	ASSERT_HAS(&v, "root host");
}

TEST(layers_derive_identity)
{
	struct moat_layer_view *v = derive("identity", o_default);
	ASSERT_HAS(v, "uid 1000");
	ASSERT_HAS(v, "hostname moat");
	ASSERT_HAS(v, "namespace net");
	ASSERT_HAS(v, "namespace user");
	ASSERT_HAS(v, "capabilities none");
	v = derive("identity", o_ws);
	ASSERT_HAS(v, "uid 1234");
	ASSERT_HAS(v, "user dev");
	ASSERT_HAS(v, "home /home/dev");
	ASSERT_HAS(v, "hostname box");
	/* --net host: no network namespace (a weakened, loud mode) */
	v = derive("identity", (const struct opt[]){{"--net", "host"}, {NULL, NULL}});
	ASSERT_HASNT(v, "namespace net");
	ASSERT_HAS(v, "namespace pid");
}

TEST(layers_derive_limits)
{
	struct moat_layer_view *v = derive("limits", o_limits);
	ASSERT_HAS(v, "cgroup cpus_milli=1500 memory=536870912 pids=100");
	ASSERT_HAS(v, "without-cgroup rlimits (--allow-degraded cgroup)");
	ASSERT_HAS(v, "rlimit core=0 nofile=1024 fsize=1073741824");
	ASSERT_HAS(v, "rlimit-degraded as=536870912 nproc=100");
	ASSERT_HAS(v, "timeout_ms 90000 grace_ms 5000");
	ASSERT_HAS(v, "disk 67108864");
	ASSERT_HAS(v, "max_output 10485760");
	v = derive("limits", o_default);
	ASSERT_HAS(v, "without-cgroup refused");
	ASSERT_EQ(moat_layer_view_count(v, "rlimit-degraded"), 0);
}

TEST(layers_derive_landlock)
{
	struct moat_layer_view *v = derive("landlock", o_default);
	ASSERT_HAS(v, "min_abi 1");
	ASSERT_HAS(v, "path / ro");
	ASSERT_HAS(v, "path /tmp rw");
	ASSERT_HAS(v, "path /home/agent rw");
	ASSERT_HAS(v, "tcp any"); /* --net none: the sandbox's own loopback */
	ASSERT_EQ(moat_layer_view_count(v, "path / "), 1);
	/* read-only binds get no rule of their own: "/" covers them read-only */
	v = derive("landlock", o_net_none);
	ASSERT_HASNT(v, "path /srv/data rw");
	ASSERT_HASNT(v, "path /srv/data ro");
	v = derive("landlock", o_ws);
	ASSERT_HAS(v, "path /output rw");
	v = derive("landlock",
		   (const struct opt[]){
			   {"--net", "allow"}, {"--allow-degraded", "landlock"}, {NULL, NULL}});
	ASSERT_HAS(v, "min_abi 0");
	ASSERT_HAS(v, "tcp any");
}

TEST(layers_derive_seccomp)
{
	size_t n;
	const struct moat_seccomp_rule *rules = moat_seccomp_rules(&n);
	struct moat_layer_view *v = derive("seccomp", o_default);
	char line[256];
	/* every table rule, the default program built in */
	ASSERT_EQ(moat_layer_view_count(v, "deny "), n);
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof(line), "deny %s %s%s", rules[i].label,
			 rules[i].err == ENOSYS ? "ENOSYS" : "EPERM",
			 rules[i].notify ? " recorded" : "");
		ASSERT_HAS(v, line);
	}
	ASSERT_HAS(v, "record exec");
	ASSERT_HAS(v, "record net");
	ASSERT_HAS(v, "notify required");
	ASSERT_HAS(v, "program built in");
	/* re-allowed names leave, extra names come in, the program is compiled */
	v = derive("seccomp", o_net_none);
	ASSERT_HAS(v, "allow ptrace");
	ASSERT_HAS(v, "deny personality EPERM recorded");
	ASSERT_EQ(moat_layer_view_count(v, "deny ptrace"), 0);
	ASSERT_HAS(v, "program compiled");
	v = derive("seccomp", o_limits); /* --no-record-exec */
	ASSERT_HASNT(v, "record exec");
	v = derive("seccomp", o_net_allow); /* no --net none: nothing to record */
	ASSERT_HASNT(v, "record net");
}

TEST(layers_derive_network)
{
	struct moat_layer_view *v = derive("network", o_default);
	ASSERT_HAS(v, "mode none");
	ASSERT_HAS(v, "namespace own, lo up");
	ASSERT_HAS(v, "record attempts (seccomp)");
	ASSERT_EQ(moat_layer_view_count(v, "listener "), 0);
	ASSERT_EQ(moat_layer_view_count(v, "nft "), 0);

	v = derive("network", o_net_allow);
	ASSERT_HAS(v, "mode allow");
	ASSERT_HAS(v, "listener http 127.0.0.1:3128 tcp");
	ASSERT_HAS(v, "listener socks5 127.0.0.1:1080 tcp");
	ASSERT_HAS(v, "listener transparent 127.0.0.1,::1:3129 tcp");
	ASSERT_HAS(v, "env HTTPS_PROXY=http://127.0.0.1:3128");
	ASSERT_HAS(v, "env ALL_PROXY=socks5h://127.0.0.1:1080");
	/* the capture rules: every TCP connection to the transparent listener,
	 * everything else dropped and logged */
	ASSERT_HAS(v, "nft meta l4proto tcp ip daddr != 127.0.0.0/8 counter redirect to :3129");
	ASSERT_HAS(v, "nft type filter hook output priority 0; policy drop;");
	ASSERT_HAS(v, "allow api.example.com default");
	ASSERT_HAS(v, "allow *.pkg.test 8443");
	ASSERT_HAS(v, "deny bad.pkg.test default");
	ASSERT_HAS(v, "cidr 10.1.0.0/16 5432");
	ASSERT_HAS(v, "resolve api.example.com 192.0.2.10");
	ASSERT_HAS(v, "rules valid");
	ASSERT_HASNT(v, "record attempts (seccomp)");

	v = derive("network", (const struct opt[]){{"--net", "host"}, {NULL, NULL}});
	ASSERT_HAS(v, "mode host");
	ASSERT_HAS(v, "namespace host's");
}

TEST(layers_derive_credentials)
{
	struct moat_layer_view *v = derive("credentials", o_net_allow);
	ASSERT_HAS(v, "intercept yes");
	ASSERT_EQ(moat_layer_view_count(v, "bind /etc/ssl/certs/ca-certificates.crt (per-run CA"),
		  1);
	ASSERT_HAS(v, "env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt");
	ASSERT_HAS(v, "env NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt");
	ASSERT_HAS(v, "placeholder MOAT_LAYER_TOKEN");
	ASSERT_HAS(v, "secret MOAT_LAYER_TOKEN host api.example.com");
	/* no secret, no http rule: no CA, no bind, nothing to replace */
	v = derive("credentials",
		   (const struct opt[]){
			   {"--net", "allow"}, {"--allow-host", "api.example.com"}, {NULL, NULL}});
	ASSERT_HAS(v, "intercept no");
	ASSERT_EQ(moat_layer_view_count(v, "bind "), 0);
	ASSERT_EQ(moat_layer_view_count(v, "placeholder "), 0);
	ASSERT_EQ(moat_layer_view_count(v, "env "), 0);
}

TEST(layers_derive_workspace)
{
	struct moat_layer_view *v = derive("workspace", o_ws);
	ASSERT_EQ(moat_layer_view_count(v, "workspace "), 1);
	ASSERT_EQ(moat_layer_view_count(v, "workspace /srv/ws overlay reviewed"), 1);
	ASSERT_HAS(v, "output /output");
	ASSERT_HAS(v, "apply never");
	ASSERT_HAS(v, "held_max 1048576");
	ASSERT_HAS(v, "flag *.lock (policy)");
	ASSERT_EQ(moat_layer_view_count(v, "flag "), moat_flag_builtin_count + 1);
	v = derive("workspace", (const struct opt[]){{"--workspace", "/srv/ws:rw"}, {NULL, NULL}});
	ASSERT_HAS(v, "workspace /srv/ws bind written directly");
	ASSERT_HAS(v, "apply safe");
	ASSERT_EQ(moat_layer_view_count(v, "flag "), moat_flag_builtin_count);
}

TEST(layers_derive_audit)
{
	struct moat_layer_view *v = derive("audit", o_limits);
	ASSERT_HAS(v, "log /var/log/moat/audit.jsonl (synced before exit)");
	ASSERT_HAS(v, "on-alert logger -t moat");
	ASSERT_HAS(v, "record-exec no");
	v = derive("audit", o_default);
	ASSERT_HAS(v, "record-exec yes");
	ASSERT_HAS(v, "on-alert none");
}

TEST(layers_view_bounded)
{
	struct moat_layer_view *v = calloc(1, sizeof(*v));
	ASSERT_TRUE(v);
	char big[1024];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	int k = 0;
	unsigned i;
	for (i = 0; i < 100 && k == 0; i++)
		k = moat_layer_view_add(v, "%s", big);
	ASSERT_EQ(k, -ENOBUFS);
	ASSERT_TRUE(v->truncated);
	ASSERT_EQ(v->n_lines, i - 1);
	ASSERT_TRUE(v->len < sizeof(v->text));
	ASSERT_EQ(strlen(v->text), v->len);
}

/* ---- in-sandbox steps, applied in throw-away namespaces ------------------------ */

/* An init as the supervisor would hand it over, for one step: the plan of
 * the options, the setup pipe a failure would be written to. */
static struct moat_init *init_for(const struct opt *o)
{
	struct moat_policy *p;
	struct moat_init *sb = calloc(1, sizeof(*sb));
	ASSERT_TRUE(sb);
	sb->plan = plan_with(o, &p);
	sb->p = p;
	int pp[2];
	ASSERT_EQ(pipe2(pp, O_CLOEXEC), 0);
	sb->setup_r = pp[0];
	sb->setup_w = pp[1];
	sb->go_r = sb->go_w = sb->sock_child = sb->sock_sup = sb->rootfs_fd = -1;
	sb->landlock_ruleset = -1;
	sb->init_devnull = -1;
	return sb;
}

/* As root or not: a new user namespace (uid 0 inside mapped to the caller,
 * every namespace capability) in which the other namespaces are this
 * test's own (tap.c). */
#define own_namespaces(flags) moat_tap_enter_userns(flags)

TEST(layers_apply_limits_rlimits)
{
	struct moat_init *sb =
		init_for((const struct opt[]){{"--nofile", "77"}, {"--fsize", "8m"}, {NULL, NULL}});
	struct rlimit r;
	/* positive control: the probe sees values other than the plan's */
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
	ASSERT_NE(r.rlim_cur, 77);
	ASSERT_EQ(moat_init_step_run(sb, "limits", "rlimits"), 0);
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &r), 0);
	ASSERT_EQ(r.rlim_cur, 77);
	ASSERT_EQ(r.rlim_max, 77);
	ASSERT_EQ(getrlimit(RLIMIT_FSIZE, &r), 0);
	ASSERT_EQ(r.rlim_max, 8u << 20);
	ASSERT_EQ(getrlimit(RLIMIT_CORE, &r), 0);
	ASSERT_EQ(r.rlim_max, 0);
	/* and it holds: the limit cannot be raised again */
	r = (struct rlimit){78, 78};
	ASSERT_ERRNO(setrlimit(RLIMIT_NOFILE, &r), EPERM);
}

TEST(layers_apply_identity_hostname)
{
	struct moat_init *sb =
		init_for((const struct opt[]){{"--hostname", "layer-box"}, {NULL, NULL}});
	char name[128];
	own_namespaces(CLONE_NEWUTS);
	ASSERT_EQ(gethostname(name, sizeof(name)), 0);
	ASSERT_TRUE(strcmp(name, "layer-box") != 0); /* positive control */
	ASSERT_EQ(moat_init_step_run(sb, "identity", "hostname"), 0);
	ASSERT_EQ(gethostname(name, sizeof(name)), 0);
	ASSERT_STREQ(name, "layer-box");
}

static bool cap_eff_zero(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_TRUE(n > 0);
	buf[n] = 0;
	char *c = strstr(buf, "CapEff:\t");
	ASSERT_TRUE(c);
	return strtoull(c + 8, NULL, 16) == 0;
}

TEST(layers_apply_identity_caps)
{
	struct moat_init *sb = init_for(o_default);
	own_namespaces(CLONE_NEWNS);
	ASSERT_TRUE(!cap_eff_zero()); /* positive control: uid 0 of its namespace */
	ASSERT_EQ(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 0);
	ASSERT_EQ(moat_init_step_run(sb, "identity", "bounding"), 0);
	ASSERT_EQ(moat_init_step_run(sb, "identity", "caps"), 0);
	ASSERT_TRUE(cap_eff_zero());
	ASSERT_EQ(prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0), 1);
	ASSERT_EQ(prctl(PR_CAPBSET_READ, CAP_SYS_ADMIN, 0, 0, 0), 0);
	ASSERT_EQ(prctl(PR_GET_DUMPABLE, 0, 0, 0, 0), 0);
	/* what the capabilities allowed a moment ago is refused now */
	ASSERT_ERRNO(mount("none", "/tmp", "tmpfs", 0, NULL), EPERM);
}

static bool lo_up(void)
{
	int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct ifreq ifr = {0};
	ASSERT_TRUE(s >= 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "lo");
	ASSERT_EQ(ioctl(s, SIOCGIFFLAGS, &ifr), 0);
	close(s);
	return ifr.ifr_flags & IFF_UP;
}

TEST(layers_apply_network_loopback)
{
	struct moat_init *sb = init_for(o_default);
	own_namespaces(CLONE_NEWNET);
	ASSERT_TRUE(!lo_up()); /* positive control: a new namespace's lo is down */
	ASSERT_EQ(moat_init_step_run(sb, "network", "loopback"), 0);
	ASSERT_TRUE(lo_up());
	/* --net allow without its plugin child is not this step's: the capture
	 * step of a plan without --net allow does nothing */
	ASSERT_EQ(moat_init_step_run(sb, "network", "capture"), 0);
	ASSERT_EQ(moat_init_step_run(sb, "network", "join"), 0);
}

static size_t environ_bytes(void)
{
	char buf[65536];
	int fd = open("/proc/self/environ", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	ASSERT_TRUE(n >= 0);
	size_t nonzero = 0;
	for (ssize_t i = 0; i < n; i++)
		nonzero += buf[i] != 0;
	return nonzero;
}

TEST(layers_apply_credentials_wipe)
{
	struct moat_init *sb = init_for(o_default);
	/* positive control: this process's environment area (what
	 * /proc/PID/environ shows, inherited from whoever ran the tests) is
	 * not empty before the step */
	if (environ_bytes() == 0)
		SKIP("the test runs with an empty environment");
	ASSERT_EQ(moat_init_step_run(sb, "credentials", "wipe"), 0);
	ASSERT_EQ(environ_bytes(), 0);
	char cmd[64] = {0};
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(read(fd, cmd, sizeof(cmd) - 1) >= 0);
	close(fd);
	ASSERT_STREQ(cmd, "moat-init");
}

TEST(layers_apply_landlock)
{
	int abi = moat_landlock_abi();
	if (abi < 1)
		SKIP("Landlock is not enabled on this kernel");
	char in[] = "/tmp/moat-layer-in.XXXXXX", out[] = "/tmp/moat-layer-out.XXXXXX";
	ASSERT_TRUE(mkdtemp(in) && mkdtemp(out));
	struct moat_init *sb = init_for(o_default);
	/* the plan's rule set, reduced to "/" read-only and one writable dir
	 * (the plan's own paths are those of the sandbox's root, not of this
	 * machine) */
	struct moat_plan_landlock *l = &sb->plan->landlock;
	l->n_rules = 0;
	l->rules[l->n_rules++] = (struct moat_plan_landlock_rule){.path = "/", .step = -1};
	l->rules[l->n_rules++] =
		(struct moat_plan_landlock_rule){.path = in, .step = -1, .writable = true};
	l->rules[l->n_rules++] = (struct moat_plan_landlock_rule){
		.path = "/nonexistent/moat", .step = -1, .writable = true, .optional = true};
	char pin[64], pout[64];
	snprintf(pin, sizeof(pin), "%s/f", in);
	snprintf(pout, sizeof(pout), "%s/f", out);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		int fd = open(pout, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
		if (fd < 0) /* positive control: writable before the step */
			_exit(10);
		close(fd);
		unlink(pout);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    moat_init_step_run(sb, "landlock", "ruleset") < 0 ||
		    moat_init_step_run(sb, "landlock", "enforce") < 0)
			_exit(11);
		if ((fd = open(pin, O_WRONLY | O_CREAT | O_CLOEXEC, 0600)) < 0)
			_exit(12); /* the rule's directory stays writable */
		close(fd);
		if (open(pout, O_WRONLY | O_CREAT | O_CLOEXEC, 0600) >= 0 || errno != EACCES)
			_exit(13); /* elsewhere: refused */
		if (open("/etc/hostname", O_RDONLY | O_CLOEXEC) < 0 && errno == EACCES)
			_exit(14); /* "/" stays readable */
		_exit(0);
	}
	int st;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	unlink(pin);
	rmdir(in);
	rmdir(out);
	ASSERT_TRUE(WIFEXITED(st));
	ASSERT_EQ(WEXITSTATUS(st), 0);
}

TEST(layers_apply_landlock_refuses_missing_ruleset)
{
	/* enforce without a prepared ruleset: refused, never a run without it */
	struct moat_init *sb = init_for(o_default);
	sb->landlock_ready = false;
	if (!moat_plan_landlock_on(sb->plan))
		SKIP("Landlock is off in this build's plan");
	ASSERT_ERRNO(moat_init_step_run(sb, "landlock", "enforce"), EPROTO);
	/* and seccomp without its program the same */
	sb->seccomp_prog = NULL;
	ASSERT_ERRNO(moat_init_step_run(sb, "seccomp", "install"), EPROTO);
}

TEST(layers_apply_seccomp)
{
	struct moat_init *sb =
		init_for((const struct opt[]){{"--deny-syscall", "uname"}, {NULL, NULL}});
	struct moat_seccomp_opts o;
	scmp_filter_ctx ctx = NULL;
	struct moat_seccomp_prog prog = {0};
	/* the program the plan's rule set compiles to, without a listener */
	moat_plan_seccomp_opts(sb->plan, false, &o);
	ASSERT_EQ(moat_seccomp_build(&o, &ctx), 0);
	ASSERT_EQ(moat_seccomp_export(ctx, false, &prog), 0);
	seccomp_release(ctx);
	sb->seccomp_prog = &prog;
	struct utsname u;
	ASSERT_EQ(uname(&u), 0); /* positive control */
	ASSERT_EQ(prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), 0);
	ASSERT_EQ(moat_init_step_run(sb, "seccomp", "install"), 0);
	ASSERT_ERRNO(uname(&u), EPERM);
	ASSERT_ERRNO(unshare(CLONE_NEWUSER), EPERM); /* a table rule */
}
