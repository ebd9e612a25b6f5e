/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The command-line options: one setter per option, the option table (flag,
 * value, single or repeatable, setter, help) and the option API over it. */
#include <ctype.h>

#include "policy/errors.h"
#include "policy/policy.h"
#include "sandbox/paths.h"
#include "policy/policy_int.h"
#include "proxy/addr.h"
#include "proxy/hostmatch.h"
#include "shared/macro.h"
#include "shared/parse.h"
#include "workspace/fsdiff.h"

int moat_pset_workspace_mode(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = moat_policy_keyword(v, moat_ws_mode_names, ELEMENTSOF(moat_ws_mode_names), &m, why,
				    whylen);
	if (r >= 0)
		p->workspace_mode = (enum moat_workspace_mode)m;
	return r;
}

/* ---- the option table -------------------------------------------------------
 * Every option is a (name, value, how often, setter, help). The same setters serve
 * the policy keys that hold strings, so "--ro X" and {"mounts":[{"ro":"X"}]}
 * cannot mean different things. */

int moat_pset_workspace(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *path = strdup(v);
	if (!path)
		return -ENOMEM;
	char *colon = strrchr(path, ':');
	if (colon) {
		int r = moat_pset_workspace_mode(p, colon + 1, why, whylen);
		if (r < 0)
			return r;
		*colon = 0;
	}
	_cleanup_free_ char *abs = NULL;
	int r = moat_policy_host_path_dup(p, path, &abs, why, whylen);
	if (r < 0)
		return r;
	if (streq(abs, "/")) {
		snprintf(why, whylen, "the whole filesystem cannot be the workspace");
		return -EINVAL;
	}
	free(p->workspace);
	p->workspace = TAKE_PTR(abs);
	return 0;
}

static int set_ro(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *src = NULL, *dest = NULL;
	int r = moat_policy_split_src_dest(v, &src, &dest);
	return r < 0 ? r : moat_policy_mount_add(p, MOAT_MOUNT_RO, src, dest, 0, why, whylen);
}

static int set_rw(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *src = NULL, *dest = NULL;
	int r = moat_policy_split_src_dest(v, &src, &dest);
	return r < 0 ? r : moat_policy_mount_add(p, MOAT_MOUNT_RW, src, dest, 0, why, whylen);
}

/* Bounds of the limits (docs/POLICY.md, "Values and units"): values that can
 * mean nothing are refused with the accepted range, never clamped. Sizes end
 * at 16 TiB (no cgroup, tmpfs or file this sandbox manages is larger; a typo
 * such as 100T or 16E is caught), durations at 30 days. */
#define MAX_SIZE (16ull << 40)
#define MAX_DURATION_MS (30ull * 24 * 3600 * 1000)
#define SIZE_SYNTAX \
	"a number with an optional unit K, M, G, T (binary: 1K = 1024; any case), then " \
	"optionally B or iB, e.g. 512M, 4G, 1.5GiB ('b' would be bits)"

static int set_size_range(uint64_t *dst, const char *v, uint64_t min, uint64_t max, char *why,
			  size_t whylen);

static int set_tmpfs(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *dest = NULL, *size_s = NULL;
	uint64_t size = 0;
	int r = moat_policy_split_src_dest(v, &dest, &size_s);
	if (r < 0)
		return r;
	if (strchr(v, ':')) {
		char w[200];
		r = set_size_range(&size, size_s, 4096, MAX_SIZE, w, sizeof(w));
		if (r < 0) {
			snprintf(why, whylen, "size '%s': %s", size_s, w);
			return r;
		}
	}
	return moat_policy_mount_add(p, MOAT_MOUNT_TMPFS, NULL, dest, size, why, whylen);
}

static int set_hide(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return moat_policy_mount_add(p, MOAT_MOUNT_HIDE, NULL, v, 0, why, whylen);
}

static int set_abs_path(char **dst, const char *v, char *why, size_t whylen)
{
	int r = moat_path_check(v, why, whylen);
	return r < 0 ? r : moat_policy_str_set(dst, v);
}

/* a host path (host_path: relative, "..", "~" made absolute) */
static int set_host_path(struct moat_policy *p, char **dst, const char *v, char *why, size_t whylen)
{
	char *abs = NULL;
	int r = moat_policy_host_path_dup(p, v, &abs, why, whylen);
	if (r < 0)
		return r;
	free(*dst);
	*dst = abs;
	return 0;
}

int moat_pset_input(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->input, v, why, whylen);
}

int moat_pset_output(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->output, v, why, whylen);
}

int moat_pset_rootfs(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->rootfs, v, why, whylen);
}

int moat_pset_image(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->image, v, why, whylen);
}

int moat_pset_vm_kernel(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->vm_kernel, v, why, whylen);
}

static int set_image_allow_setid(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->image_allow_setid = true;
	return 0;
}

static int set_output_overwrite(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->output_overwrite = true;
	return 0;
}

int moat_pset_cwd(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_abs_path(&p->cwd, v, why, whylen);
}

static int set_id(uint32_t *dst, const char *v, char *why, size_t whylen)
{
	uint64_t n;
	/* 0 is the sandbox's own root: mapped to the sandbox's unprivileged
	 * host uid like any other, with no capability and locked securebits
	 * (sandbox.c), so it is root of nothing. 65534 stays refused: it is the
	 * overflow id that every unmapped host owner shows as. */
	if (moat_parse_u64(v, 0, 65533, &n) < 0) {
		snprintf(why, whylen,
			 "must be a number from 0 to 65533 (65534 is the id unmapped host files "
			 "show as)");
		return -EINVAL;
	}
	*dst = (uint32_t)n;
	return 0;
}

int moat_pset_uid(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_id(&p->uid, v, why, whylen);
}

int moat_pset_gid(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_id(&p->gid, v, why, whylen);
}

static int set_name_like(char **dst, const char *v, const char *what, char *why, size_t whylen)
{
	size_t n = strlen(v);
	if (n == 0 || n > 63) {
		snprintf(why, whylen, "%s must be 1-63 characters", what);
		return -EINVAL;
	}
	for (const char *c = v; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.') {
			snprintf(why, whylen, "%s may contain only letters, digits, '-', '_', '.'",
				 what);
			return -EINVAL;
		}
	return moat_policy_str_set(dst, v);
}

int moat_pset_user(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_name_like(&p->user, v, "user name", why, whylen);
}

int moat_pset_hostname(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_name_like(&p->hostname, v, "hostname", why, whylen);
}

static int set_env(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	const char *eq = strchr(v, '=');
	_cleanup_free_ char *name = eq ? strndup(v, (size_t)(eq - v)) : strdup(v);
	if (!name)
		return -ENOMEM;
	if (moat_policy_env_name_check(name) < 0) {
		snprintf(why, whylen, "'%s' is not a variable name", name);
		return -EINVAL;
	}
	if (eq && strlen(eq + 1) > 128 * 1024) {
		snprintf(why, whylen, "value longer than 128 KiB");
		return -E2BIG;
	}
	int r = moat_policy_env_add(p, name, eq ? eq + 1 : NULL);
	if (r == -E2BIG)
		snprintf(why, whylen, "more than %d variables", MOAT_MAX_ENV);
	return r;
}

static int set_tty(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->tty = MOAT_TTY_ALWAYS;
	return 0;
}

static int set_no_tty(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->tty = MOAT_TTY_NEVER;
	return 0;
}

int moat_pset_tty_mode(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = moat_policy_keyword(v, moat_tty_mode_names, ELEMENTSOF(moat_tty_mode_names), &m,
				    why, whylen);
	if (r >= 0)
		p->tty = (enum moat_tty_mode)m;
	return r;
}

int moat_pset_isolation(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = moat_policy_keyword(v, moat_isolation_names, ELEMENTSOF(moat_isolation_names), &m,
				    why, whylen);
	if (r >= 0)
		p->isolation = (enum moat_isolation)m;
	return r;
}

int moat_pset_vm_accel(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = moat_policy_keyword(v, moat_vm_accel_names, ELEMENTSOF(moat_vm_accel_names), &m,
				    why, whylen);
	if (r >= 0)
		p->vm_accel = (enum moat_vm_accel)m;
	return r;
}

int moat_pset_cpus(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	/* a policy written for a bigger machine still loads (up to 4x the CPUs
	 * online here); more than that can only be a mistake */
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t max = online > 0 ? (uint64_t)online * 4 : 4096;
	uint64_t m;
	int r = moat_parse_milli(v, &m);
	if (max > 4096)
		max = 4096;
	if (r == -EINVAL) {
		snprintf(why, whylen, "not a number of CPUs, e.g. 2 or 0.5");
		return -EINVAL;
	}
	if (r < 0 || m < 10 || m > max * 1000) {
		snprintf(why, whylen,
			 "out of range: from 0.01 to %llu CPUs (4 times the %ld online here)",
			 (unsigned long long)max, online);
		return -ERANGE;
	}
	p->cpus_milli = m;
	p->limits_set |= MOAT_LIMIT_CPUS;
	return 0;
}

static int set_size_range(uint64_t *dst, const char *v, uint64_t min, uint64_t max, char *why,
			  size_t whylen)
{
	uint64_t n;
	int r = moat_parse_size(v, &n);
	if (r == -EINVAL) {
		snprintf(why, whylen, "not a size: %s", SIZE_SYNTAX);
		return -EINVAL;
	}
	if (r < 0 || n < min || n > max) {
		char a[32], b[32];
		snprintf(why, whylen, "out of range: from %s to %s",
			 min ? moat_format_size(min, a, sizeof(a)) : "0",
			 moat_format_size(max, b, sizeof(b)));
		return -ERANGE;
	}
	*dst = n;
	return 0;
}

static int set_size_min(uint64_t *dst, const char *v, uint64_t min, char *why, size_t whylen)
{
	return set_size_range(dst, v, min, MAX_SIZE, why, whylen);
}

/* A duration in [min_ms, max_ms]. */
static int set_duration(uint64_t *dst, const char *v, uint64_t min_ms, uint64_t max_ms,
			const char *maxname, char *why, size_t whylen)
{
	uint64_t ms;
	int r = moat_parse_duration(v, &ms);
	if (r == -EINVAL) {
		snprintf(why, whylen,
			 "not a duration: numbers with units ms, s, m, h, d (lowercase), e.g. "
			 "90s, 10m, 1h30m; a bare number is seconds");
		return -EINVAL;
	}
	if (r < 0 || ms < min_ms || ms > max_ms) {
		snprintf(why, whylen, "out of range: from %s to %s", min_ms ? "1ms" : "0", maxname);
		return -ERANGE;
	}
	*dst = ms;
	return 0;
}

int moat_pset_memory(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = set_size_min(&p->memory, v, 4u << 20, why, whylen);
	if (r >= 0)
		p->limits_set |= MOAT_LIMIT_MEMORY;
	return r;
}

int moat_pset_pids(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (moat_parse_u64(v, 2, 4194304, &p->pids) < 0) {
		snprintf(why, whylen, "must be a number from 2 to 4194304");
		return -EINVAL;
	}
	p->limits_set |= MOAT_LIMIT_PIDS;
	return 0;
}

int moat_pset_timeout(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = set_duration(&p->timeout_ms, v, 1, MAX_DURATION_MS, "30d", why, whylen);
	if (r >= 0)
		p->limits_set |= MOAT_LIMIT_TIMEOUT;
	return r;
}

int moat_pset_kill_grace(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_duration(&p->kill_grace_ms, v, 0, 600000, "10m", why, whylen);
}

int moat_pset_disk(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = set_size_min(&p->disk, v, 1u << 20, why, whylen);
	if (r >= 0)
		p->limits_set |= MOAT_LIMIT_DISK;
	return r;
}

int moat_pset_max_output(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->max_output, v, 0, why, whylen);
}

int moat_pset_fsize(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->fsize, v, 4096, why, whylen);
}

int moat_pset_nofile(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (moat_parse_u64(v, 16, 1048576, &p->nofile) < 0) {
		snprintf(why, whylen, "must be a number from 16 to 1048576");
		return -EINVAL;
	}
	return 0;
}

int moat_pset_allow_degraded(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (streq(v, "landlock"))
		p->allow_degraded |= MOAT_DEGRADE_LANDLOCK;
	else if (streq(v, "cgroup"))
		p->allow_degraded |= MOAT_DEGRADE_CGROUP;
	else if (streq(v, "seccomp-notify"))
		p->allow_degraded |= MOAT_DEGRADE_SECCOMP_NOTIFY;
	else {
		snprintf(why, whylen, "'%s' is not landlock, cgroup or seccomp-notify", v);
		return -EINVAL;
	}
	return 0;
}

static int syscall_list_add(char ***v, unsigned *n, const char *s, char *why, size_t whylen)
{
	if (!moat_policy_syscall_name_ok(s)) {
		snprintf(why, whylen, "'%s' is not a syscall name", s);
		return -EINVAL;
	}
	int r = moat_policy_strv_add(v, n, MOAT_MAX_SYSCALL_NAMES, s);
	if (r == -E2BIG)
		snprintf(why, whylen, "more than %d names", MOAT_MAX_SYSCALL_NAMES);
	return r;
}

int moat_pset_allow_syscall(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return syscall_list_add(&p->allow_syscalls, &p->n_allow_syscalls, v, why, whylen);
}

int moat_pset_deny_syscall(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return syscall_list_add(&p->deny_syscalls, &p->n_deny_syscalls, v, why, whylen);
}

#ifdef MOAT_TESTING
/* Test build only (moat-testing): the shipped moat has no such option. */
static int set_test_disable(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	const char *gate = getenv("MOAT_TEST_LAYERS");
	if (!gate || !streq(gate, "1")) {
		snprintf(why, whylen,
			 "a test-only switch: needs MOAT_TEST_LAYERS=1 in the environment");
		return -EPERM;
	}
	if (streq(v, "seccomp"))
		p->test_no_seccomp = true;
	else if (streq(v, "landlock"))
		p->test_no_landlock = true;
	else {
		snprintf(why, whylen, "must be seccomp or landlock");
		return -EINVAL;
	}
	return 0;
}
#endif

int moat_pset_net(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = moat_policy_keyword(v, moat_net_mode_names, ELEMENTSOF(moat_net_mode_names), &m,
				    why, whylen);
	if (r >= 0)
		p->net = (enum moat_net_mode)m;
	return r;
}

int moat_pset_allow_host(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = moat_policy_rule_add(&p->allow_hosts, &p->n_allow_hosts, v, false, why, whylen);
	if (r >= 0 && p->net == MOAT_NET_NONE)
		p->net = MOAT_NET_ALLOW;
	return r;
}

int moat_pset_deny_host(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return moat_policy_rule_add(&p->deny_hosts, &p->n_deny_hosts, v, false, why, whylen);
}

int moat_pset_allow_cidr(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = moat_policy_rule_add(&p->allow_cidrs, &p->n_allow_cidrs, v, true, why, whylen);
	if (r >= 0 && p->net == MOAT_NET_NONE)
		p->net = MOAT_NET_ALLOW;
	return r;
}

int moat_pset_resolve(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	const char *eq = strchr(v, '=');
	if (!eq || eq == v || !eq[1] || moat_policy_has_ctl(v) || strlen(v) > 300) {
		snprintf(why, whylen, "expected NAME=ADDRESS");
		return -EINVAL;
	}
	if (p->n_resolve >= MOAT_MAX_RULES) {
		snprintf(why, whylen, "more than %d entries", MOAT_MAX_RULES);
		return -E2BIG;
	}
	{
		char name[256], host[256];
		struct sockaddr_storage ss;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - v), v);
		if (moat_host_normalize(name, host, sizeof(host)) < 0 ||
		    moat_addr_parse(eq + 1, &ss) < 0) {
			snprintf(why, whylen,
				 "expected NAME=ADDRESS (a host name and an IP address)");
			return -EINVAL;
		}
	}
	struct moat_resolve *nv = realloc(p->resolve, sizeof(*nv) * (p->n_resolve + 1));
	if (!nv)
		return -ENOMEM;
	p->resolve = nv;
	nv[p->n_resolve].name = strndup(v, (size_t)(eq - v));
	nv[p->n_resolve].addr = strdup(eq + 1);
	if (!nv[p->n_resolve].name || !nv[p->n_resolve].addr)
		return -ENOMEM;
	for (char *c = nv[p->n_resolve].name; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	p->n_resolve++;
	return 0;
}

int moat_pset_upstream_ca(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->upstream_ca, v, why, whylen);
}

int moat_pset_inspect_tls(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (streq(v, "all"))
		p->inspect_tls_all = true;
	else if (streq(v, "auto"))
		p->inspect_tls_all = false;
	else {
		snprintf(why, whylen, "must be auto or all");
		return -EINVAL;
	}
	return 0;
}

int moat_pset_no_inspect(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (moat_host_pattern_validate(v, why, whylen) < 0)
		return -EINVAL;
	return moat_policy_strv_add(&p->no_inspect, &p->n_no_inspect, MOAT_MAX_RULES, v);
}

/* --secret NAME@HOST implies --allow-host HOST:443 for each HOST that no
 * allow rule reaches on 443 yet: the value is only ever sent over TLS to
 * port 443 (docs/CREDENTIALS.md), so nothing wider is allowed. Deny rules
 * still win over it in the proxy. */
static int imply_secret_hosts(struct moat_policy *p, const struct moat_secret *s, char *why,
			      size_t whylen)
{
	for (unsigned i = 0; i < s->n_hosts; i++) {
		bool covered = false;
		for (unsigned j = 0; j < p->n_allow_hosts && !covered; j++) {
			const struct moat_host_rule *a = &p->allow_hosts[j];
			if (strcasecmp(a->pattern, s->hosts[i]) != 0)
				continue;
			covered = a->n_ports == 0;
			for (unsigned k = 0; k < a->n_ports; k++)
				covered = covered || a->ports[k] == 443;
		}
		if (covered)
			continue;
		char rule[300];
		if ((size_t)snprintf(rule, sizeof(rule), "%s:443", s->hosts[i]) >= sizeof(rule)) {
			snprintf(why, whylen, "'%s' is not a host name", s->hosts[i]);
			return -EINVAL;
		}
		int r = moat_policy_rule_add(&p->allow_hosts, &p->n_allow_hosts, rule, false, why,
					     whylen);
		if (r < 0)
			return r;
		snprintf(p->allow_hosts[p->n_allow_hosts - 1].implied_by,
			 sizeof(p->allow_hosts[0].implied_by), "%s", s->name);
	}
	return 0;
}

/* --secret NAME@HOST[,HOST...]: the value comes from moat's environment variable NAME. */
static int set_secret(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	struct moat_secret s = {.source = MOAT_SECRET_ENV};
	const char *at = strchr(v, '@');
	_cleanup_free_ char *hosts = NULL;
	char *save = NULL;
	int r = -EINVAL;
	if (!at || at == v || !at[1]) {
		snprintf(why, whylen, "expected NAME@HOST[,HOST...]");
		return -EINVAL;
	}
	s.name = strndup(v, (size_t)(at - v));
	if (!s.name)
		return -ENOMEM;
	if (moat_policy_env_name_check(s.name) < 0) {
		snprintf(why, whylen, "'%s' is not a variable name", s.name);
		goto out;
	}
	if (!(s.from = strdup(s.name)))
		goto out;
	hosts = strdup(at + 1);
	if (!hosts)
		goto out;
	for (char *t = strtok_r(hosts, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (moat_policy_has_ctl(t) || strchr(t, '/') || strchr(t, ':')) {
			snprintf(why, whylen, "'%s' is not a host name", t);
			goto out;
		}
		r = moat_policy_strv_add(&s.hosts, &s.n_hosts, MOAT_MAX_RULES, t);
		if (r < 0)
			goto out;
	}
	/* (before the secret is handed over: an error leaves neither) */
	r = imply_secret_hosts(p, &s, why, whylen);
	if (r < 0)
		goto out;
	r = moat_policy_secret_add(p, &s);
	if (r == -E2BIG)
		snprintf(why, whylen, "more than %d secrets", MOAT_MAX_SECRETS);
	if (r >= 0 && p->net == MOAT_NET_NONE)
		p->net = MOAT_NET_ALLOW;
out:
	moat_policy_secret_clear(&s);
	return r;
}

int moat_pset_log(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->log_path, v, why, whylen);
}

int moat_pset_on_alert(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (!*v || strlen(v) > MOAT_MAX_STRING) {
		snprintf(why, whylen, "must be a command line up to %d bytes", MOAT_MAX_STRING);
		return -EINVAL;
	}
	return moat_policy_str_set(&p->on_alert, v);
}

static int set_no_record_exec(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->record_exec = false;
	return 0;
}

int moat_pset_apply(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = moat_policy_keyword(v, moat_apply_mode_names, ELEMENTSOF(moat_apply_mode_names), &m,
				    why, whylen);
	if (r >= 0)
		p->apply = (enum moat_apply_mode)m;
	return r;
}

int moat_pset_flag_pattern(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (!*v || moat_policy_has_ctl(v) || v[0] == '/') {
		snprintf(why, whylen, "must be a relative glob pattern");
		return -EINVAL;
	}
	return moat_policy_strv_add(&p->flag_patterns, &p->n_flag_patterns, MOAT_MAX_RULES, v);
}

/* The class/automatic check waits for validation (--accept-automatic may come
 * later on the command line); here only the form. */
int moat_pset_review_accept(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = moat_review_item_check(v, false, false, why, whylen);
	if (r < 0)
		return r;
	return moat_policy_strv_add(&p->review_accept, &p->n_review_accept, MOAT_MAX_RULES, v);
}

int moat_pset_review_hold(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = moat_review_item_check(v, false, false, why, whylen);
	if (r < 0)
		return r;
	return moat_policy_strv_add(&p->review_hold, &p->n_review_hold, MOAT_MAX_RULES, v);
}

static int set_accept_automatic(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->accept_automatic = true;
	return 0;
}

static int set_apply_on_failure(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->apply_on_failure = true;
	return 0;
}

static int set_log_sync(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->log_sync = true;
	return 0;
}

static int set_allow_rw_git(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->allow_rw_git = true;
	return 0;
}

static int set_allow_hardlinks(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->allow_hardlinks = true;
	return 0;
}

int moat_pset_held_max(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->held_max, v, 1u << 20, why, whylen);
}

/* --held-exit N: 1-255, but not moat's own codes (124 timeout, 125 set-up,
 * 126 cannot execute, 127 not found), so that a held run cannot be taken for
 * one of them */
int moat_pset_held_exit(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	char *end = NULL;
	errno = 0;
	long n = strtol(v, &end, 10);
	if (!*v || *end || errno || n < 1 || n > 255 || (n >= 124 && n <= 127)) {
		snprintf(why, whylen,
			 "expected an exit status 1-255 other than moat's own 124-127");
		return -EINVAL;
	}
	p->held_exit = (int)n;
	return 0;
}

int moat_pset_runs_max(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->runs_max, v, 1u << 20, why, whylen);
}

int moat_pset_retention(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	size_t n = strlen(v);
	/* days: the unit retention is thought in ("14d") */
	if (n > 1 && n < 12 && v[n - 1] == 'd' && strspn(v, "0123456789") == n - 1) {
		p->retention_ms = strtoull(v, NULL, 10) * 24 * 3600 * 1000;
		if (p->retention_ms)
			return 0;
	}
	if (moat_parse_duration(v, &p->retention_ms) < 0 || p->retention_ms == 0) {
		snprintf(why, whylen, "expected a duration such as 14d, 36h");
		return -EINVAL;
	}
	return 0;
}

/* How often an option may be given. ONE: it holds one value, so a second
 * would silently replace the first, and the CLI refuses it
 * (moat_policy_option_single). MANY: it adds to a list, sets bits or is a
 * switch, and may be repeated. A column of the table, so a new option cannot
 * be added without saying which (tests/unit/test_policy.c checks each against
 * what its setter does). */
enum option_count {
	MANY,
	ONE
};

struct option_def {
	const char *flag;
	const char *arg; /* NULL: takes no value */
	enum option_count count;
	moat_policy_setter set;
	const char *help;
};

static const struct option_def options[] = {
	{"--isolation", "process|gvisor|vm", ONE, moat_pset_isolation,
	 "isolation level (default process; docs/ISOLATION.md)"},
	{"--vm-accel", "kvm|any", ONE, moat_pset_vm_accel,
	 "--isolation vm: require KVM (default), or accept TCG where KVM does not work"},
	{"--vm-kernel", "PATH", ONE, moat_pset_vm_kernel,
	 "--isolation vm: the guest kernel, .../vmlinuz-VERSION with /lib/modules/VERSION "
	 "(default: the newest of /boot)"},
	{"--workspace", "DIR[:MODE]", ONE, moat_pset_workspace,
	 "the project directory, at the same path, the working directory (MODE rw, ro, overlay)"},
	{"--ro", "PATH[:DEST]", MANY, set_ro,
	 "bind PATH read-only at DEST (default: the same path)"},
	{"--rw", "PATH[:DEST]", MANY, set_rw, "bind PATH read-write at DEST"},
	{"--tmpfs", "DEST[:SIZE]", MANY, set_tmpfs, "a fresh tmpfs at DEST (size default: --disk)"},
	{"--hide", "PATH", MANY, set_hide, "an empty read-only file or directory over PATH"},
	{"--input", "DIR", ONE, moat_pset_input, "DIR read-only at /data"},
	{"--output", "DIR", ONE, moat_pset_output,
	 "an empty writable /output, copied to DIR after the run"},
	{"--output-overwrite", NULL, MANY, set_output_overwrite,
	 "allow --output into a non-empty DIR"},
	{"--rootfs", "DIR", ONE, moat_pset_rootfs,
	 "use DIR (e.g. a debootstrap tree) as the read-only system"},
	{"--image", "PATH", ONE, moat_pset_image,
	 "use an OCI image (layout dir, oci-archive or docker-archive) as the root"},
	{"--image-allow-setid", NULL, MANY, set_image_allow_setid,
	 "unpack an --image whose files have set-user-ID or set-group-ID bits"},
	{"--cwd", "DIR", ONE, moat_pset_cwd,
	 "working directory inside (default: the workspace or the home)"},
	{"--uid", "N", ONE, moat_pset_uid,
	 "uid inside, 0-65533 (default 1000; 0: root of the sandbox only)"},
	{"--gid", "N", ONE, moat_pset_gid, "gid inside, 0-65533 (default 1000)"},
	{"--user", "NAME", ONE, moat_pset_user, "user name inside (default agent; uid 0 is root)"},
	{"--hostname", "NAME", ONE, moat_pset_hostname, "hostname inside (default moat)"},
	{"--env", "NAME[=VALUE]", MANY, set_env,
	 "set NAME inside (without =VALUE: copy moat's own NAME)"},
	{"--tty", NULL, MANY, set_tty, "always give the command a pseudo-terminal"},
	{"--no-tty", NULL, MANY, set_no_tty, "never give the command a pseudo-terminal"},
	{"--tty-mode", "auto|always|never", ONE, moat_pset_tty_mode, "pseudo-terminal mode"},
	{"--cpus", "N", ONE, moat_pset_cpus, "CPU limit, fractional allowed"},
	{"--memory", "SIZE", ONE, moat_pset_memory, "memory limit (swap off)"},
	{"--pids", "N", ONE, moat_pset_pids, "process limit (default 4096)"},
	{"--timeout", "DURATION", ONE, moat_pset_timeout,
	 "wall-clock limit (exit 124), e.g. 90s, 10m"},
	{"--kill-grace", "DURATION", ONE, moat_pset_kill_grace,
	 "time between SIGTERM and SIGKILL at the limit (default 2s)"},
	{"--disk", "SIZE", ONE, moat_pset_disk, "size of every writable tmpfs (default 1G)"},
	{"--max-output", "SIZE", ONE, moat_pset_max_output,
	 "bytes collected from /output, and of stdout+stderr (default 1G)"},
	{"--nofile", "N", ONE, moat_pset_nofile, "open file limit (default 4096)"},
	{"--fsize", "SIZE", ONE, moat_pset_fsize, "largest file the command may write"},
	{"--allow-degraded", "LAYER", MANY, moat_pset_allow_degraded,
	 "run even if LAYER (landlock, cgroup, seccomp-notify) cannot be applied"},
	{"--allow-syscall", "NAME", MANY, moat_pset_allow_syscall,
	 "allow a syscall the default filter denies (e.g. ptrace)"},
	{"--deny-syscall", "NAME", MANY, moat_pset_deny_syscall, "deny one more syscall (EPERM)"},
#ifdef MOAT_TESTING
	{"--test-disable-layer", "seccomp|landlock", MANY, set_test_disable,
	 "test build only (MOAT_TEST_LAYERS=1)"},
#endif
	{"--net", "none|allow|host", ONE, moat_pset_net,
	 "network mode (default none: loopback only)"},
	{"--allow-host", "PATTERN[:PORTS]", MANY, moat_pset_allow_host,
	 "allow a destination by name (*.x.com = subdomains); implies --net allow"},
	{"--deny-host", "PATTERN", MANY, moat_pset_deny_host,
	 "deny a destination by name (wins over allow)"},
	{"--allow-cidr", "CIDR[:PORTS]", MANY, moat_pset_allow_cidr,
	 "allow destinations by address"},
	{"--resolve", "NAME=ADDR", MANY, moat_pset_resolve,
	 "map NAME to ADDR (also allows that address)"},
	{"--upstream-ca", "FILE", ONE, moat_pset_upstream_ca,
	 "verify TLS upstreams with this CA instead of the system store"},
	{"--inspect-tls", "auto|all", ONE, moat_pset_inspect_tls,
	 "all: intercept every allowed TLS host (placeholder and http rules everywhere)"},
	{"--no-inspect", "HOST", MANY, moat_pset_no_inspect,
	 "with --inspect-tls all: pass TLS to HOST through (pinned clients)"},
	{"--secret", "NAME@HOST[,HOST]", MANY, set_secret,
	 "inject moat's $NAME for HOST; the sandbox sees a placeholder"},
	{"--log", "FILE", ONE, moat_pset_log, "write the audit stream (JSON lines) to FILE"},
	{"--on-alert", "COMMAND", ONE, moat_pset_on_alert,
	 "run COMMAND on the host with each alert as JSON on stdin"},
	{"--no-record-exec", NULL, MANY, set_no_record_exec, "do not record every exec"},
	{"--apply", "never|safe|all", ONE, moat_pset_apply,
	 "how overlay workspace changes are applied (default safe)"},
	{"--apply-on-failure", NULL, MANY, set_apply_on_failure,
	 "apply workspace changes also when the command failed, timed out or was interrupted"},
	{"--flag-pattern", "GLOB", MANY, moat_pset_flag_pattern,
	 "hold back changes to paths matching GLOB"},
	{"--accept", "CLASS|GLOB", MANY, moat_pset_review_accept,
	 "apply (and list) changes of CLASS or matching GLOB that are held by default"},
	{"--hold", "CLASS|GLOB", MANY, moat_pset_review_hold,
	 "hold back changes of CLASS (e.g. deps, executable) or matching GLOB"},
	{"--accept-automatic", NULL, MANY, set_accept_automatic,
	 "let --accept name classes that run code automatically (hooks, ci, ...): loud"},
	{"--allow-rw-git", NULL, MANY, set_allow_rw_git,
	 "allow --workspace DIR:rw over a git repository (no review of hooks and config)"},
	{"--allow-hardlinks", NULL, MANY, set_allow_hardlinks,
	 "allow --workspace DIR:rw with files that have other names outside"},
	{"--held-max", "SIZE", ONE, moat_pset_held_max,
	 "held-back workspace data kept per run (default 256M; over it none is kept)"},
	{"--held-exit", "N", ONE, moat_pset_held_exit,
	 "a run that held any workspace change back exits N (default: the command's status)"},
	{"--runs-max", "SIZE", ONE, moat_pset_runs_max,
	 "total size of the runs directory (default 4G; moat gc trims to it)"},
	{"--retention", "DURATION", ONE, moat_pset_retention,
	 "age past which moat gc removes a run's logs and held data (default 14d)"},
	{"--log-sync", NULL, MANY, set_log_sync,
	 "wait until the audit stream is on disk before exiting (fdatasync)"},
};

static const struct option_def *option_find(const char *flag)
{
	for (size_t i = 0; i < ELEMENTSOF(options); i++)
		if (streq(options[i].flag, flag))
			return &options[i];
	return NULL;
}

int moat_policy_option_takes_value(const char *option)
{
	const struct option_def *o = option_find(option);
	return o ? (o->arg != NULL) : -ENOENT;
}

int moat_policy_option_single(const char *option)
{
	const struct option_def *o = option_find(option);
	return o ? (o->count == ONE) : -ENOENT;
}

const char *const *moat_policy_option_help(void)
{
	static char *lines[ELEMENTSOF(options) + 1];
	static char storage[ELEMENTSOF(options)][192];
	if (!lines[0]) {
		for (size_t i = 0; i < ELEMENTSOF(options); i++) {
			snprintf(storage[i], sizeof(storage[i]), "%s%s%s\t%s", options[i].flag,
				 options[i].arg ? " " : "", options[i].arg ? options[i].arg : "",
				 options[i].help);
			lines[i] = storage[i];
		}
	}
	return (const char *const *)lines;
}

int moat_policy_option_info(size_t i, struct moat_option_info *ret)
{
	if (i >= ELEMENTSOF(options) || !ret)
		return -ENOENT;
	*ret = (struct moat_option_info){options[i].flag, options[i].arg, options[i].help};
	return 0;
}

int moat_policy_set_option(struct moat_policy *p, const char *option, const char *value,
			   struct moat_error *ret_err)
{
	const struct option_def *o = option_find(option);
	char why[256] = "";
	if (!o)
		return moat_error_set(ret_err, "usage", ENOENT, "unknown option %s", option),
		       -ENOENT;
	if (o->arg && !value)
		return moat_error_set(ret_err, "usage", EINVAL, "%s needs a value: %s %s", option,
				      option, o->arg);
	if (value && strlen(value) > MOAT_MAX_PATH + 256)
		return moat_error_set(ret_err, "usage", E2BIG, "%s: value too long", option);
	int r = o->set(p, value ? value : "", why, sizeof(why));
	if (r < 0)
		return moat_error_set(ret_err, "usage", -r, "%s %s: %s", option, value ? value : "",
				      why[0] ? why : strerror(-r));
	return 0;
}

int moat_status_path_check(const char *path, char **ret_path, struct moat_error *ret_err)
{
	char why[256] = "";
	char *abs = NULL;
	*ret_path = NULL;
	if (!path || !*path || moat_policy_has_ctl(path))
		return moat_error_set(ret_err, "usage", EINVAL,
				      "--json-status: must be a file name");
	struct moat_policy *base = moat_policy_new(); /* no policy file: the working directory */
	if (!base)
		return -ENOMEM;
	int k = moat_policy_host_path_dup(base, path, &abs, why, sizeof(why));
	moat_policy_free(base);
	if (k < 0)
		return moat_error_set(ret_err, "usage", -k, "--json-status %s: %s", path, why);
	struct moat_path_info *info = malloc(sizeof(*info));
	if (!info) {
		free(abs);
		return -ENOMEM;
	}
	k = moat_path_check_writable(abs, MOAT_PATH_AS_INVOKER, info);
	if (k < 0)
		k = moat_path_error(ret_err, "status", "--json-status", abs, k, info);
	free(info);
	if (k < 0) {
		free(abs);
		return k;
	}
	*ret_path = abs;
	return 0;
}
