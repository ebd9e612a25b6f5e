/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy object: its defaults (moat_policy_new), freeing it, the words of
 * its enumerated keys and the accessors the CLI reads. */
#include "policy/policy.h"
#include "policy/policy_int.h"
#include "shared/macro.h"

#define DEFAULT_UID 1000
#define DEFAULT_PIDS 4096
#define DEFAULT_DISK (1ull << 30)
#define DEFAULT_MAX_OUTPUT (1ull << 30)
#define DEFAULT_HELD_MAX (256ull << 20)
#define DEFAULT_RUNS_MAX (4ull << 30)
#define DEFAULT_RETENTION_MS (14ull * 24 * 3600 * 1000)
#define DEFAULT_NOFILE 4096
#define DEFAULT_KILL_GRACE_MS 2000

struct moat_policy *moat_policy_new(void)
{
	struct moat_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->version = MOAT_POLICY_VERSION;
	p->uid = DEFAULT_UID;
	p->gid = DEFAULT_UID;
	p->user = strdup("agent");
	p->hostname = strdup("moat");
	if (!p->user || !p->hostname)
		return moat_policy_free(p);
	p->workspace_mode = MOAT_WS_OVERLAY;
	p->net = MOAT_NET_NONE;
	p->tty = MOAT_TTY_AUTO;
	p->pids = DEFAULT_PIDS;
	p->disk = DEFAULT_DISK;
	p->max_output = DEFAULT_MAX_OUTPUT;
	p->nofile = DEFAULT_NOFILE;
	p->kill_grace_ms = DEFAULT_KILL_GRACE_MS;
	p->record_exec = true;
	p->apply = MOAT_APPLY_SAFE;
	p->held_max = DEFAULT_HELD_MAX;
	p->runs_max = DEFAULT_RUNS_MAX;
	p->retention_ms = DEFAULT_RETENTION_MS;
	return p;
}

void moat_policy_strv_free(char **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void rules_free(struct moat_host_rule *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(r[i].pattern);
	free(r);
}

void moat_policy_secret_clear(struct moat_secret *s)
{
	free(s->name);
	free(s->from);
	moat_policy_strv_free(s->hosts, s->n_hosts);
	moat_policy_strv_free(s->methods, s->n_methods);
	moat_policy_strv_free(s->paths, s->n_paths);
	free(s->header);
	free(s->format);
	memset(s, 0, sizeof(*s));
}

const char *moat_policy_user_name(const struct moat_policy *p)
{
	return p->uid == 0 ? "root" : p->user;
}

void moat_policy_home(const struct moat_policy *p, char *ret_home, size_t len)
{
	if (p->uid == 0)
		snprintf(ret_home, len, "/root");
	else
		snprintf(ret_home, len, "/home/%s", p->user);
}

struct moat_policy *moat_policy_free(struct moat_policy *p)
{
	if (!p)
		return NULL;
	free(p->rootfs);
	moat_policy_strv_free(p->rootfs_top, p->n_rootfs_top);
	free(p->image);
	free(p->vm_kernel);
	free(p->image_root);
	free(p->image_digest);
	moat_policy_strv_free(p->image_dirs, p->n_image_dirs);
	free(p->workspace);
	free(p->input);
	free(p->output);
	for (unsigned i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].src);
		free(p->mounts[i].dest);
	}
	free(p->mounts);
	free(p->user);
	free(p->hostname);
	free(p->cwd);
	for (unsigned i = 0; i < p->n_env; i++) {
		free(p->env[i].name);
		free(p->env[i].value);
	}
	free(p->env);
	moat_policy_strv_free(p->allow_syscalls, p->n_allow_syscalls);
	moat_policy_strv_free(p->deny_syscalls, p->n_deny_syscalls);
	rules_free(p->allow_hosts, p->n_allow_hosts);
	rules_free(p->deny_hosts, p->n_deny_hosts);
	rules_free(p->allow_cidrs, p->n_allow_cidrs);
	for (unsigned i = 0; i < p->n_resolve; i++) {
		free(p->resolve[i].name);
		free(p->resolve[i].addr);
	}
	free(p->resolve);
	for (unsigned i = 0; i < p->n_http_rules; i++) {
		free(p->http_rules[i].host);
		moat_policy_strv_free(p->http_rules[i].methods, p->http_rules[i].n_methods);
		moat_policy_strv_free(p->http_rules[i].paths, p->http_rules[i].n_paths);
	}
	free(p->http_rules);
	free(p->upstream_ca);
	moat_policy_strv_free(p->no_inspect, p->n_no_inspect);
	for (unsigned i = 0; i < p->n_secrets; i++)
		moat_policy_secret_clear(&p->secrets[i]);
	free(p->secrets);
	free(p->log_path);
	free(p->cgroup_path);
	free(p->on_alert);
	moat_policy_strv_free(p->flag_patterns, p->n_flag_patterns);
	moat_policy_strv_free(p->review_accept, p->n_review_accept);
	moat_policy_strv_free(p->review_hold, p->n_review_hold);
	free(p->upstream_netns);
	moat_policy_strv_free(p->config_notes, p->n_config_notes);
	free(p);
	return NULL;
}

const char *const moat_ws_mode_names[] = {
	[MOAT_WS_OVERLAY] = "overlay", [MOAT_WS_RW] = "rw", [MOAT_WS_RO] = "ro"};
const char *const moat_net_mode_names[] = {
	[MOAT_NET_NONE] = "none", [MOAT_NET_ALLOW] = "allow", [MOAT_NET_HOST] = "host"};
const char *const moat_tty_mode_names[] = {
	[MOAT_TTY_AUTO] = "auto", [MOAT_TTY_ALWAYS] = "always", [MOAT_TTY_NEVER] = "never"};
const char *const moat_vm_accel_names[] = {
	[MOAT_VM_ACCEL_KVM] = "kvm", [MOAT_VM_ACCEL_ANY] = "any"};
const char *const moat_isolation_names[] = {
	[MOAT_ISO_PROCESS] = "process", [MOAT_ISO_GVISOR] = "gvisor", [MOAT_ISO_VM] = "vm"};
const char *const moat_apply_mode_names[] = {
	[MOAT_APPLY_SAFE] = "safe", [MOAT_APPLY_NEVER] = "never", [MOAT_APPLY_ALL] = "all"};
