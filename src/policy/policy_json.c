/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The effective policy as JSON (same keys as the policy file), the plan as
 * text, and the status record. */
#include <fcntl.h>
#include <jansson.h>
#include <stdio.h>

#include "policy/errors.h"
#include "sandbox/paths.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "shared/macro.h"
#include "shared/parse.h"

static json_t *strv_json(char **v, unsigned n)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < n; i++)
		json_array_append_new(a, json_string(v[i]));
	return a;
}

static json_t *rules_json(const struct moat_host_rule *r, unsigned n)
{
	json_t *a = json_array();
	for (unsigned i = 0; i < n; i++) {
		char buf[600];
		size_t len = (size_t)snprintf(buf, sizeof(buf), "%s", r[i].pattern);
		for (unsigned j = 0; j < r[i].n_ports && len < sizeof(buf) - 8; j++)
			len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%c%u", j ? ',' : ':',
						r[i].ports[j]);
		json_array_append_new(a, json_string(buf));
	}
	return a;
}

static json_t *size_json(uint64_t v)
{
	return json_integer((json_int_t)v);
}

static const char *const mount_types[] = {"ro", "rw", "tmpfs", "hide"};
static const char *const secret_sources[] = {"from_env", "from_file", "from_command"};

int moat_policy_to_json(const struct moat_policy *p, char **ret_json)
{
	json_t *root = json_object(), *fs = json_object(), *proc = json_object(),
	       *lim = json_object(), *sys = json_object(), *net = json_object(),
	       *audit = json_object(), *mounts = json_array(), *env = json_object(),
	       *secrets = json_array(), *resolve = json_object(), *deg = json_array();
	json_object_set_new(root, "version", json_integer(p->version));
	json_object_set_new(root, "isolation", json_string(moat_isolation_names[p->isolation]));
	if (p->isolation == MOAT_ISO_VM)
		json_object_set_new(root, "vm_accel",
				    json_string(moat_vm_accel_names[p->vm_accel]));
	if (p->isolation == MOAT_ISO_VM && p->vm_kernel)
		json_object_set_new(root, "vm_kernel", json_string(p->vm_kernel));
	if (p->rootfs)
		json_object_set_new(fs, "rootfs", json_string(p->rootfs));
	if (p->image)
		json_object_set_new(root, "image", json_string(p->image));
	if (p->image_allow_setid)
		json_object_set_new(root, "image_allow_setid", json_true());
	if (p->workspace)
		json_object_set_new(fs, "workspace",
				    json_pack("{s:s,s:s}", "path", p->workspace, "mode",
					      moat_ws_mode_names[p->workspace_mode]));
	if (p->input)
		json_object_set_new(fs, "input", json_string(p->input));
	if (p->output)
		json_object_set_new(fs, "output", json_string(p->output));
	json_object_set_new(fs, "output_overwrite", json_boolean(p->output_overwrite));
	json_object_set_new(fs, "allow_rw_git", json_boolean(p->allow_rw_git));
	json_object_set_new(fs, "allow_hardlinks", json_boolean(p->allow_hardlinks));
	for (unsigned i = 0; i < p->n_mounts; i++) {
		const struct moat_mount *m = &p->mounts[i];
		json_t *o = json_pack("{s:s,s:s}", "type", mount_types[m->kind], "dest", m->dest);
		if (m->src)
			json_object_set_new(o, "src", json_string(m->src));
		if (m->size) {
			char b[32];
			snprintf(b, sizeof(b), "%llu", (unsigned long long)m->size);
			json_object_set_new(o, "size", json_string(b));
		}
		json_array_append_new(mounts, o);
	}
	json_object_set_new(fs, "mounts", mounts);
	json_object_set_new(root, "filesystem", fs);

	json_object_set_new(proc, "uid", json_integer(p->uid));
	json_object_set_new(proc, "gid", json_integer(p->gid));
	json_object_set_new(proc, "user", json_string(p->user));
	json_object_set_new(proc, "hostname", json_string(p->hostname));
	if (p->cwd)
		json_object_set_new(proc, "cwd", json_string(p->cwd));
	for (unsigned i = 0; i < p->n_env; i++)
		json_object_set_new(env, p->env[i].name,
				    p->env[i].value ? json_string(p->env[i].value) : json_null());
	json_object_set_new(proc, "env", env);
	json_object_set_new(proc, "tty", json_string(moat_tty_mode_names[p->tty]));
	json_object_set_new(root, "process", proc);

	if (p->cpus_milli) {
		char b[32];
		snprintf(b, sizeof(b), "%llu.%03llu", (unsigned long long)(p->cpus_milli / 1000),
			 (unsigned long long)(p->cpus_milli % 1000));
		json_object_set_new(lim, "cpus", json_string(b));
	}
	if (p->memory)
		json_object_set_new(lim, "memory", size_json(p->memory));
	json_object_set_new(lim, "pids", size_json(p->pids));
	if (p->timeout_ms) {
		char b[32];
		snprintf(b, sizeof(b), "%llums", (unsigned long long)p->timeout_ms);
		json_object_set_new(lim, "timeout", json_string(b));
	}
	{
		char b[32];
		snprintf(b, sizeof(b), "%llums", (unsigned long long)p->kill_grace_ms);
		json_object_set_new(lim, "kill_grace", json_string(b));
	}
	json_object_set_new(lim, "disk", size_json(p->disk));
	json_object_set_new(lim, "max_output", size_json(p->max_output));
	json_object_set_new(lim, "nofile", size_json(p->nofile));
	if (p->fsize)
		json_object_set_new(lim, "fsize", size_json(p->fsize));
	json_object_set_new(root, "limits", lim);
	if (p->allow_degraded & MOAT_DEGRADE_LANDLOCK)
		json_array_append_new(deg, json_string("landlock"));
	if (p->allow_degraded & MOAT_DEGRADE_CGROUP)
		json_array_append_new(deg, json_string("cgroup"));
	if (p->allow_degraded & MOAT_DEGRADE_SECCOMP_NOTIFY)
		json_array_append_new(deg, json_string("seccomp-notify"));
	json_object_set_new(root, "allow_degraded", deg);

	json_object_set_new(sys, "allow", strv_json(p->allow_syscalls, p->n_allow_syscalls));
	json_object_set_new(sys, "deny", strv_json(p->deny_syscalls, p->n_deny_syscalls));
	json_object_set_new(root, "syscalls", sys);

	json_object_set_new(net, "mode", json_string(moat_net_mode_names[p->net]));
	json_object_set_new(net, "allow_hosts", rules_json(p->allow_hosts, p->n_allow_hosts));
	json_object_set_new(net, "deny_hosts", rules_json(p->deny_hosts, p->n_deny_hosts));
	json_object_set_new(net, "allow_cidrs", rules_json(p->allow_cidrs, p->n_allow_cidrs));
	for (unsigned i = 0; i < p->n_resolve; i++)
		json_object_set_new(resolve, p->resolve[i].name, json_string(p->resolve[i].addr));
	json_object_set_new(net, "resolve", resolve);
	if (p->n_http_rules) {
		json_t *hr = json_array();
		for (unsigned i = 0; i < p->n_http_rules; i++)
			json_array_append_new(hr,
					      json_pack("{s:s,s:o,s:o}", "host",
							p->http_rules[i].host, "methods",
							strv_json(p->http_rules[i].methods,
								  p->http_rules[i].n_methods),
							"paths",
							strv_json(p->http_rules[i].paths,
								  p->http_rules[i].n_paths)));
		json_object_set_new(net, "http_rules", hr);
	}
	if (p->upstream_ca)
		json_object_set_new(net, "upstream_ca", json_string(p->upstream_ca));
	json_object_set_new(net, "inspect_tls", json_string(p->inspect_tls_all ? "all" : "auto"));
	json_object_set_new(net, "no_inspect", strv_json(p->no_inspect, p->n_no_inspect));
	json_object_set_new(root, "network", net);

	for (unsigned i = 0; i < p->n_secrets; i++) {
		const struct moat_secret *s = &p->secrets[i];
		json_t *o = json_pack("{s:s,s:s,s:o}", "name", s->name, secret_sources[s->source],
				      s->from, "hosts", strv_json(s->hosts, s->n_hosts));
		if (s->n_methods)
			json_object_set_new(o, "methods", strv_json(s->methods, s->n_methods));
		if (s->n_paths)
			json_object_set_new(o, "paths", strv_json(s->paths, s->n_paths));
		if (s->header)
			json_object_set_new(o, "header", json_string(s->header));
		if (s->format)
			json_object_set_new(o, "format", json_string(s->format));
		json_array_append_new(secrets, o);
	}
	json_object_set_new(root, "secrets", secrets);

	if (p->log_path)
		json_object_set_new(audit, "log", json_string(p->log_path));
	if (p->on_alert)
		json_object_set_new(audit, "on_alert", json_string(p->on_alert));
	json_object_set_new(audit, "record_exec", json_boolean(p->record_exec));
	json_object_set_new(audit, "apply", json_string(moat_apply_mode_names[p->apply]));
	json_object_set_new(audit, "flag_patterns",
			    strv_json(p->flag_patterns, p->n_flag_patterns));
	json_object_set_new(audit, "accept", strv_json(p->review_accept, p->n_review_accept));
	json_object_set_new(audit, "hold", strv_json(p->review_hold, p->n_review_hold));
	json_object_set_new(audit, "accept_automatic", json_boolean(p->accept_automatic));
	json_object_set_new(audit, "log_sync", json_boolean(p->log_sync));
	json_object_set_new(audit, "held_max", size_json(p->held_max));
	json_object_set_new(audit, "apply_on_failure", json_boolean(p->apply_on_failure));
	if (p->held_exit)
		json_object_set_new(audit, "held_exit", json_integer(p->held_exit));
	json_object_set_new(audit, "runs_max", size_json(p->runs_max));
	{
		char b[32];
		snprintf(b, sizeof(b), "%llums", (unsigned long long)p->retention_ms);
		json_object_set_new(audit, "retention", json_string(b));
	}
	json_object_set_new(root, "audit", audit);

	char *s = json_dumps(root, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	return 0;
}

int moat_policy_plan_text(const struct moat_policy *p, char **ret_text)
{
	struct moat_plan *pl = malloc(sizeof(*pl));
	if (!pl)
		return -ENOMEM;
	int r = moat_plan_build(p, pl);
	if (r >= 0)
		r = moat_plan_format(pl, ret_text);
	free(pl);
	return r;
}

const char *moat_reason_name(enum moat_reason r)
{
	static const char *const names[] = {
		[MOAT_REASON_EXITED] = "exited",
		[MOAT_REASON_SIGNALED] = "signaled",
		[MOAT_REASON_TIMEOUT] = "timeout",
		[MOAT_REASON_MEMORY] = "memory",
		[MOAT_REASON_PIDS] = "pids",
		[MOAT_REASON_SETUP_FAILED] = "setup-failed",
		[MOAT_REASON_NOT_FOUND] = "not-found",
		[MOAT_REASON_CANNOT_EXEC] = "cannot-exec",
		[MOAT_REASON_INTERRUPTED] = "interrupted",
	};
	return (size_t)r < ELEMENTSOF(names) && names[r] ? names[r] : "unknown";
}

/* s as a JSON string can hold it: raw bytes from the sandbox that are not
 * valid UTF-8 go in escaped (moat_escape) into buf, never dropped. */
static const char *json_text(const char *s, char *buf, size_t len)
{
	json_t *j = json_string(s);
	if (j) {
		json_decref(j);
		return s;
	}
	moat_escape(s, strlen(s), buf, len);
	return buf;
}

/* The full --disk areas of st as "disk_full" and "disk_full_more" of o (the
 * status JSON and a session's answer to moat rm). */
void moat_status_disk_full_set(json_t *o, const struct moat_status *st)
{
	json_t *df = json_array();
	for (unsigned i = 0; df && i < st->n_disk_full && i < MOAT_DISK_FULL_MAX; i++)
		json_array_append_new(df,
				      json_pack("{s:s,s:I,s:b,s:b}", "path", st->disk_full[i].path,
						"limit", (json_int_t)st->disk_full[i].limit,
						"inodes", st->disk_full[i].inodes, "tmpfs_size",
						st->disk_full[i].tmpfs_size));
	json_object_set_new(o, "disk_full", df ? df : json_null());
	json_object_set_new(o, "disk_full_more", json_integer(st->disk_full_more));
}

int moat_status_write_json(const struct moat_status *st, const char *path,
			   struct moat_error *ret_err)
{
	json_t *o =
		json_pack("{s:i,s:s,s:s,s:i,s:i,s:i,s:f,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:I,s:s}", "v",
			  1, "run", st->run_id, "reason", moat_reason_name(st->reason), "exit_code",
			  st->exit_code, "status", st->status, "signal", st->signal, "wall_s",
			  (double)st->wall_us / 1e6, "cpu_user_s", (double)st->cpu_user_us / 1e6,
			  "cpu_sys_s", (double)st->cpu_sys_us / 1e6, "mem_peak",
			  (json_int_t)st->mem_peak, "pids_peak", (json_int_t)st->pids_peak,
			  "denied_syscalls", (json_int_t)st->denied_syscalls, "net_allowed",
			  (json_int_t)st->net_allowed, "net_denied", (json_int_t)st->net_denied,
			  "execs", (json_int_t)st->execs, "degraded", st->degraded);
	if (!o)
		return -ENOMEM;
	/* the fields the other layers added to the status */
	json_object_set_new(o, "log", json_string(st->log_path));
	json_object_set_new(o, "files_changed", json_integer((json_int_t)st->files_changed));
	json_object_set_new(o, "files_applied", json_integer((json_int_t)st->files_applied));
	json_object_set_new(o, "files_held", json_integer((json_int_t)st->files_held));
	json_object_set_new(o, "files_listed", json_integer((json_int_t)st->files_listed));
	json_object_set_new(o, "listed", json_string(st->listed));
	json_object_set_new(o, "files_refused", json_integer((json_int_t)st->files_refused));
	json_object_set_new(o, "net_none_attempts",
			    json_integer((json_int_t)st->net_none_attempts));
	json_object_set_new(o, "dns_allowed", json_integer((json_int_t)st->dns_allowed));
	json_object_set_new(o, "dns_denied", json_integer((json_int_t)st->dns_denied));
	json_object_set_new(o, "held_failed", json_boolean(st->held_failed));
	json_object_set_new(o, "pids_limit_hits", json_integer((json_int_t)st->pids_limit_hits));
	json_object_set_new(o, "oom_kills", json_integer((json_int_t)st->oom_kills));
	moat_status_disk_full_set(o, st);
	json_object_set_new(o, "stdio_error",
			    st->stdio_error[0] ? json_string(st->stdio_error) : json_null());
	/* the summary's lists: net_top_denied as the "COUNT DEST\tRULE" strings
	 * of schema 1, top_denied and review as objects */
	json_t *top = json_array(), *topo = json_array(), *rev = json_array();
	/* every byte of the longest field as \ufffd */
	_cleanup_free_ char *b1 = malloc(6 * 1024 + 8), *b2 = malloc(6 * 1024 + 8);
	const size_t bl = 6 * 1024 + 8;
	if (!top || !topo || !rev || !b1 || !b2) {
		json_decref(top);
		json_decref(topo);
		json_decref(rev);
		json_decref(o);
		return -ENOMEM;
	}
	for (unsigned i = 0; i < st->n_top_denied && i < ELEMENTSOF(st->top_denied); i++) {
		const struct moat_denied *d = &st->top_denied[i];
		const char *dest = json_text(d->destination, b1, bl),
			   *rule = json_text(d->rule, b2, bl);
		_cleanup_free_ char *line = NULL;
		if (asprintf(&line, "%llu %s\t%s", (unsigned long long)d->count, dest, rule) >= 0)
			json_array_append_new(top, json_string(line));
		json_t *t = json_pack("{s:I,s:s,s:s,s:b,s:i}", "count", (json_int_t)d->count,
				      "destination", dest, "rule", rule, "dns", d->dns, "port",
				      d->port);
		if (t) {
			json_object_set_new(t, "host", json_string(json_text(d->host, b1, bl)));
			json_object_set_new(t, "addr", json_string(json_text(d->addr, b1, bl)));
			json_object_set_new(t, "proto", json_string(json_text(d->proto, b1, bl)));
			json_object_set_new(t, "reason", json_string(json_text(d->reason, b1, bl)));
			json_array_append_new(topo, t);
		}
	}
	for (unsigned i = 0; i < st->n_review && i < ELEMENTSOF(st->review); i++) {
		const struct moat_review_entry *e = &st->review[i];
		json_array_append_new(rev,
				      json_pack("{s:s,s:s,s:s}", "state",
						moat_review_state_name(e->state), "path",
						json_text(e->path, b1, bl), "reason",
						json_text(e->reason, b2, bl)));
	}
	json_object_set_new(o, "net_top_denied", top);
	json_object_set_new(o, "top_denied", topo);
	json_object_set_new(o, "review", rev);
	json_object_set_new(o, "review_more", json_integer((json_int_t)st->review_more));
	char *s = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(9));
	json_decref(o);
	if (!s)
		return -ENOMEM;
	/* a regular file, never through a symlink a sandbox could have planted
	 * (the run may just have replaced the path: paths.h) */
	struct moat_path_info *why = malloc(sizeof(*why));
	int fd = why ? moat_path_write_file(path, O_TRUNC, 0600, MOAT_PATH_AS_INVOKER, why)
		     : -ENOMEM;
	if (fd < 0) {
		free(s);
		fd = moat_path_error(ret_err, "status", "--json-status", path, fd, why);
		free(why);
		return fd;
	}
	free(why);
	size_t len = strlen(s);
	ssize_t n = write(fd, s, len);
	int e = errno;
	(void)!write(fd, "\n", 1);
	close(fd);
	free(s);
	if (n != (ssize_t)len)
		return moat_error_set(ret_err, "status", n < 0 ? e : EIO, "cannot write status %s",
				      path);
	return 0;
}
