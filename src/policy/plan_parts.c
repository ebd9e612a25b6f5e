/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The parts of the plan other than the mounts (see plan.h): identity,
 * network, credentials, Landlock, seccomp, limits, audit. Pure code, like
 * plan.c: computed from the policy and the steps, unit-tested without
 * privileges (tests/unit/test_plan.c).
 */
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>

#include "network/netns.h"
#include "policy/plan.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

static void build_identity(const struct moat_policy *p, struct moat_plan *pl)
{
	struct moat_plan_identity *id = &pl->id;
	id->uid = p->uid;
	id->gid = p->gid;
	id->user = moat_policy_user_name(p);
	id->hostname = p->hostname;
	moat_policy_home(p, id->home, sizeof(id->home));
	id->clone_flags = CLONE_NEWUSER | CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS;
	if (p->net != MOAT_NET_HOST)
		id->clone_flags |= CLONE_NEWNET;
	id->root_uid_base = MOAT_PLAN_ROOT_UID_BASE;
	id->root_uid_slots = MOAT_PLAN_ROOT_UID_SLOTS;
}

/* The egress proxy's addresses inside the namespace (netns.h) and the
 * variables that point programs at them. */
static const char *const proxy_env[][2] = {
	{"HTTP_PROXY", "http://127.0.0.1:3128"},
	{"http_proxy", "http://127.0.0.1:3128"},
	{"HTTPS_PROXY", "http://127.0.0.1:3128"},
	{"https_proxy", "http://127.0.0.1:3128"},
	{"ALL_PROXY", "socks5h://127.0.0.1:1080"},
	{"all_proxy", "socks5h://127.0.0.1:1080"},
	{"NO_PROXY", "localhost,127.0.0.1,::1"},
	{"no_proxy", "localhost,127.0.0.1,::1"},
	/* Node trusts only its own roots: the system bundle the host trusts too
	 * (with credentials the same path holds it plus the per-run CA) */
	{"NODE_EXTRA_CA_CERTS", MOAT_PLAN_CA_BUNDLE},
};

/* The vm level: the same proxy, seen from the guest at its gateway (the
 * holder namespace's tap address, MOAT_NETNS_VM_HOST4). */
#define VM_HTTP "http://" MOAT_NETNS_VM_HOST4 ":3128"
static const char *const proxy_env_vm[][2] = {
	{"HTTP_PROXY", VM_HTTP},
	{"http_proxy", VM_HTTP},
	{"HTTPS_PROXY", VM_HTTP},
	{"https_proxy", VM_HTTP},
	{"ALL_PROXY", "socks5h://" MOAT_NETNS_VM_HOST4 ":1080"},
	{"all_proxy", "socks5h://" MOAT_NETNS_VM_HOST4 ":1080"},
	{"NO_PROXY", "localhost,127.0.0.1,::1"},
	{"no_proxy", "localhost,127.0.0.1,::1"},
	{"NODE_EXTRA_CA_CERTS", MOAT_PLAN_CA_BUNDLE},
};

static const struct moat_plan_listener listeners[] = {
	{"http", "127.0.0.1", 3128, "tcp"},
	{"socks5", "127.0.0.1", 1080, "tcp"},
	{"transparent", "127.0.0.1,::1", 3129, "tcp"},
	{"dns", MOAT_NETNS_DNS4, 53, "udp+tcp"},
};

/* A ruleset's text, written fragment by fragment: once one does not fit,
 * the rest are dropped, and buf holds the text cut at len - 1 bytes as a
 * single snprintf would have left it. */
struct nft_text {
	char *buf;
	size_t len, used;
	bool full;
};

static _printf_(2, 3) void nft_add(struct nft_text *t, const char *fmt, ...)
{
	if (t->full)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(t->buf + t->used, t->len - t->used, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= t->len - t->used)
		t->full = true;
	else
		t->used += (size_t)n;
}

static int nft_done(const struct nft_text *t)
{
	return t->full ? -ENOBUFS : 0;
}

/* What no rule before accepted: UDP, ICMP and the rest, each counted,
 * logged to the nflog group the recorder reads, and dropped; match narrows
 * the three rules (the vm level's tap), "" for every packet. */
static void nft_log_drop(struct nft_text *t, const char *match)
{
	nft_add(t,
		"  %smeta l4proto udp counter log group %u drop\n"
		"  %smeta l4proto { icmp, ipv6-icmp } counter log group %u drop\n"
		"  %scounter log group %u drop\n",
		match, MOAT_NETNS_NFLOG_GROUP, match, MOAT_NETNS_NFLOG_GROUP, match,
		MOAT_NETNS_NFLOG_GROUP);
}

/* The table and its output chains, as both levels have them: nat/output at
 * -100 runs before filter/output at 0, so the filter sees redirected TCP
 * already aimed at 127.0.0.1 / ::1. Replies to redirected connections go to
 * the source addresses on lo, which stay local. extra: rules of
 * filter/output before its logged drops. The table is left open. */
static void nft_output_chains(struct nft_text *t, uint16_t tport, const char *extra)
{
	nft_add(t,
		"table inet moat {\n"
		" chain nat_output {\n"
		"  type nat hook output priority -100; policy accept;\n"
		"  meta l4proto tcp ip daddr != 127.0.0.0/8 counter redirect to :%u\n"
		"  meta l4proto tcp ip6 daddr != ::1 counter redirect to :%u\n"
		" }\n"
		" chain filter_output {\n"
		"  type filter hook output priority 0; policy drop;\n"
		"  ip daddr { 127.0.0.0/8, %s } accept\n"
		"  ip6 daddr { ::1, %s } accept\n"
		"%s",
		tport, tport, MOAT_NETNS_SRC4, MOAT_NETNS_SRC6, extra);
	nft_log_drop(t, "");
	nft_add(t, " }\n");
}

int moat_plan_nft_ruleset(uint16_t tport, char *buf, size_t len)
{
	struct nft_text t = {.buf = buf, .len = len};
	nft_output_chains(&t, tport, "");
	nft_add(&t, "}\n");
	return nft_done(&t);
}

int moat_plan_nft_ruleset_vm(uint16_t http, uint16_t socks, uint16_t tport, uint16_t dns, char *buf,
			     size_t len)
{
	/* The tap's packets enter at prerouting: DNAT to the listeners on
	 * loopback (the holder sets route_localnet on the tap for it), which
	 * keeps the original destination for the transparent listener
	 * (SO_ORIGINAL_DST) exactly as the redirect of nat/output does. Only
	 * DNATed packets pass filter/prerouting (which runs after the DNAT and
	 * before any routing, so nothing reaches the forward path, where a
	 * namespace without ip_forward would drop it unlogged); the guest's
	 * UDP, ICMP and the rest are logged to the same nflog group and dropped
	 * (the guest's sender sees a timeout where the process level's gets
	 * EPERM). Locally generated packets on the tap are only the replies of
	 * those connections. */
#define T "iifname \"" MOAT_NETNS_VM_TAP "\" "
	struct nft_text t = {.buf = buf, .len = len};
	nft_output_chains(&t, tport,
			  "  oifname \"" MOAT_NETNS_VM_TAP "\" ip daddr " MOAT_NETNS_VM_GUEST4
			  " ct state established accept\n"
			  "  oifname \"" MOAT_NETNS_VM_TAP "\" drop\n");
	nft_add(&t,
		" chain nat_prerouting {\n"
		"  type nat hook prerouting priority -100; policy accept;\n"
		"  " T "ip daddr " MOAT_NETNS_VM_HOST4 " tcp dport %u dnat ip to 127.0.0.1:%u\n"
		"  " T "ip daddr " MOAT_NETNS_VM_HOST4 " tcp dport %u dnat ip to 127.0.0.1:%u\n"
		"  " T "ip daddr " MOAT_NETNS_VM_HOST4 " udp dport %u dnat ip to %s:%u\n"
		"  " T "ip daddr " MOAT_NETNS_VM_HOST4 " tcp dport %u dnat ip to %s:%u\n"
		"  " T "meta nfproto ipv4 meta l4proto tcp counter dnat ip to 127.0.0.1:%u\n"
		" }\n"
		" chain filter_prerouting {\n"
		"  type filter hook prerouting priority 0; policy accept;\n"
		"  " T "ct status dnat accept\n",
		http, http, socks, socks, dns, MOAT_NETNS_DNS4, dns, dns, MOAT_NETNS_DNS4, dns,
		tport);
	nft_log_drop(&t, T);
	nft_add(&t, " }\n}\n");
#undef T
	return nft_done(&t);
}

/* Variables programs read for their CA bundle (OpenSSL, Python requests, curl,
 * Node, git, pip), pointed at the bundle with the per-run CA. */
static const char *const ca_env[] = {
	"SSL_CERT_FILE",
	"REQUESTS_CA_BUNDLE",
	"CURL_CA_BUNDLE",
	"NODE_EXTRA_CA_CERTS",
	"GIT_SSL_CAINFO",
	"PIP_CERT",
	NULL,
};

static void build_net(const struct moat_policy *p, struct moat_plan *pl)
{
	struct moat_plan_net *n = &pl->net;
	n->mode = p->net;
	n->record_attempts = p->net == MOAT_NET_NONE;
	n->landlock_no_tcp = false; /* the loopback is the sandbox's own */
	if (p->net != MOAT_NET_ALLOW)
		return;
	bool vm = p->isolation == MOAT_ISO_VM;
	n->env = vm ? proxy_env_vm : proxy_env;
	n->n_env = vm ? ELEMENTSOF(proxy_env_vm) : ELEMENTSOF(proxy_env);
	n->listeners = listeners;
	n->n_listeners = ELEMENTSOF(listeners);
	/* cannot fail: sized for it; an empty ruleset is refused at apply */
	if (vm ? moat_plan_nft_ruleset_vm(listeners[0].port, listeners[1].port, listeners[2].port,
					  listeners[3].port, n->nft, sizeof(n->nft)) < 0
	       : moat_plan_nft_ruleset(listeners[2].port, n->nft, sizeof(n->nft)) < 0)
		n->nft[0] = 0;
	n->allow = p->allow_hosts;
	n->n_allow = p->n_allow_hosts;
	n->deny = p->deny_hosts;
	n->n_deny = p->n_deny_hosts;
	n->cidrs = p->allow_cidrs;
	n->n_cidrs = p->n_allow_cidrs;
	n->resolve = p->resolve;
	n->n_resolve = p->n_resolve;
	n->inspect_all = p->inspect_tls_all;
	n->no_inspect = (const char *const *)p->no_inspect;
	n->n_no_inspect = p->n_no_inspect;
	n->upstream_ca = p->upstream_ca;
	/* the rules as the proxy will read them: an invalid one fails the run
	 * before clone, once */
	struct moat_proxy_config *c = NULL;
	n->rules_error = moat_proxy_config_from_policy(p, &c);
	if (n->rules_error > 0)
		n->rules_error = 0;
	moat_proxy_config_free(c);
}

static void build_creds(const struct moat_policy *p, struct moat_plan *pl)
{
	struct moat_plan_creds *c = &pl->creds;
	/* ca_step was set by moat_plan_build with the steps */
	c->intercept = c->ca_step >= 0;
	if (p->net != MOAT_NET_ALLOW)
		return;
	if (c->intercept) {
		c->ca_dest = MOAT_PLAN_CA_BUNDLE;
		c->ca_env = ca_env;
		c->n_ca_env = ELEMENTSOF(ca_env) - 1;
	}
	c->secrets = p->secrets;
	c->n_secrets = p->n_secrets;
	c->http_rules = p->http_rules;
	c->n_http_rules = p->n_http_rules;
}

/*
 * Landlock rules, with paths as seen after pivot_root:
 *   "/" read-only (read + execute on everything the mount plan made visible);
 *   every writable area of the plan (workspace, /tmp, home, /output, extra
 *   --rw/--tmpfs, /dev/shm), the device nodes and /dev/pts: every right.
 * Anything written elsewhere is denied by Landlock even if a mount went wrong.
 */
static void build_landlock(const struct moat_policy *p, struct moat_plan *pl)
{
	struct moat_plan_landlock *l = &pl->landlock;
	l->enabled = !moat_policy_test_no_landlock(p);
	l->rules[l->n_rules++] =
		(struct moat_plan_landlock_rule){.path = "/", .step = -1, .writable = false};
	for (unsigned i = 0; i < pl->n_steps && l->n_rules < MOAT_PLAN_MAX_LANDLOCK; i++) {
		const struct moat_step *s = &pl->steps[i];
		bool rw = (s->flags & (MOAT_STEPF_WRITABLE | MOAT_STEPF_DEV)) ||
			s->op == MOAT_STEP_DEVPTS;
		if (!rw || s->op == MOAT_STEP_SYMLINK || s->op == MOAT_STEP_HIDE)
			continue;
		l->rules[l->n_rules++] = (struct moat_plan_landlock_rule){
			.path = s->dest,
			.step = (int)i,
			.writable = true,
			.optional = s->flags & MOAT_STEPF_OPTIONAL,
		};
	}
	/* Landlock's TCP rights are not handled, not even under --net none:
	 * there the network namespace has only the sandbox's own loopback,
	 * which test suites use for local servers (Landlock cannot tell
	 * 127.0.0.1 from another address, only ports); every other destination
	 * has no route and is recorded by the seccomp listener. */
	l->net_none = false;
	l->scope = true;
	l->min_abi = (p->allow_degraded & MOAT_DEGRADE_LANDLOCK) ? 0 : 1;
}

static const char *native_arch(void)
{
#if defined(__x86_64__) && defined(__ILP32__)
	return "x32";
#elif defined(__x86_64__)
	return "x86_64";
#elif defined(__i386__)
	return "x86";
#elif defined(__aarch64__)
	return "aarch64";
#elif defined(__arm__)
	return "arm";
#elif defined(__riscv) && __riscv_xlen == 64
	return "riscv64";
#elif defined(__s390x__)
	return "s390x";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	return "ppc64le";
#elif defined(__powerpc64__)
	return "ppc64";
#elif defined(__loongarch64)
	return "loongarch64";
#else
	return "native";
#endif
}

static void build_seccomp(const struct moat_policy *p, struct moat_plan *pl)
{
	struct moat_plan_seccomp *s = &pl->seccomp;
	s->enabled = !moat_policy_test_no_seccomp(p);
	s->arch = native_arch();
	s->allow = (const char *const *)p->allow_syscalls;
	s->n_allow = p->n_allow_syscalls;
	s->deny = (const char *const *)p->deny_syscalls;
	s->n_deny = p->n_deny_syscalls;
	s->record_exec = p->record_exec;
	/* Only loopback exists in the sandbox's network namespace: every other
	 * destination is refused by the kernel, and recorded. */
	s->record_net = p->net == MOAT_NET_NONE;
	s->notify_optional = p->allow_degraded & MOAT_DEGRADE_SECCOMP_NOTIFY;
}

void moat_plan_seccomp_opts(const struct moat_plan *pl, bool notify, struct moat_seccomp_opts *ret)
{
	const struct moat_plan_seccomp *s = &pl->seccomp;
	*ret = (struct moat_seccomp_opts){
		.allow = s->allow,
		.n_allow = s->n_allow,
		.deny = s->deny,
		.n_deny = s->n_deny,
		.notify = notify,
		.record_exec = notify && s->record_exec,
		.record_net = notify && s->record_net,
	};
}

void moat_plan_build_limits(const struct moat_policy *p, struct moat_plan_limits *l)
{
	l->cg = (struct moat_cgroup_limits){.cpus_milli = p->cpus_milli,
					    .memory = p->memory,
					    .pids = p->pids,
					    .path = p->cgroup_path,
					    .oom_kill_disable = p->oom_kill_disable,
					    .freezer = p->cgroup_freezer};
	l->asked = p->limits_set;
	l->may_degrade = p->allow_degraded & MOAT_DEGRADE_CGROUP;
	moat_rlimits_plan(&l->cg, p->nofile, p->fsize, false, &l->rl);
	moat_rlimits_plan(&l->cg, p->nofile, p->fsize, true, &l->rl_degraded);
	l->timeout_ms = p->timeout_ms;
	l->kill_grace_ms = p->kill_grace_ms;
	l->disk = p->disk;
	l->max_output = p->max_output;
}

static void build_audit(const struct moat_policy *p, struct moat_plan *pl)
{
	struct moat_plan_audit *a = &pl->audit;
	a->log_path = p->log_path;
	a->on_alert = p->on_alert;
	a->record_exec = p->record_exec;
	a->log_sync = p->log_sync;
	a->apply = p->apply;
	a->flag_patterns = (const char *const *)p->flag_patterns;
	a->n_flag_patterns = p->n_flag_patterns;
	a->review_accept = (const char *const *)p->review_accept;
	a->n_review_accept = p->n_review_accept;
	a->review_hold = (const char *const *)p->review_hold;
	a->n_review_hold = p->n_review_hold;
	a->accept_automatic = p->accept_automatic;
	a->held_max = p->held_max;
	a->held_exit = p->held_exit;
	a->apply_on_failure = p->apply_on_failure;
}

int moat_plan_build_parts(const struct moat_policy *p, struct moat_plan *pl)
{
	build_identity(p, pl);
	build_net(p, pl);
	build_creds(p, pl);
	build_landlock(p, pl);
	build_seccomp(p, pl);
	moat_plan_build_limits(p, &pl->limits);
	build_audit(p, pl);
	return 0;
}

int moat_plan_check_runtime(const struct moat_plan *pl)
{
	for (unsigned i = 0; i < pl->n_steps; i++)
		if ((pl->steps[i].flags & MOAT_STEPF_RUNTIME) && !pl->steps[i].src)
			return -EPROTO;
	return 0;
}

const char *const *moat_plan_ca_env(void)
{
	return ca_env;
}
