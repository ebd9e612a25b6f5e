/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plan as text, for `moat policy show`: one section per part, in the
 * order the sandbox is built (mounts, identity, network, credentials,
 * landlock, seccomp, limits, audit). Stable: tests compare it with golden
 * files (tests/unit/golden/). Never a secret's value: the plan has none.
 */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>

#include "sandbox/isolation.h"
#include "policy/plan.h"
#include "shared/macro.h"
#include "shared/parse.h"
#include "workspace/fsdiff.h"

static void put_size(FILE *f, uint64_t v)
{
	char sz[32];
	moat_format_size(v, sz, sizeof(sz));
	fputs(sz, f);
}

static void put_duration(FILE *f, uint64_t ms)
{
	if (ms % 1000) {
		fprintf(f, "%llums", (unsigned long long)ms);
		return;
	}
	uint64_t s = ms / 1000, h = s / 3600, m = s / 60 % 60;
	if (h)
		fprintf(f, "%lluh", (unsigned long long)h);
	if (m)
		fprintf(f, "%llum", (unsigned long long)m);
	if (s % 60 || (!h && !m))
		fprintf(f, "%llus", (unsigned long long)(s % 60));
}

static void put_list(FILE *f, const char *const *v, unsigned n, const char *none)
{
	if (!n)
		fputs(none, f);
	for (unsigned i = 0; i < n; i++)
		fprintf(f, "%s%s", i ? ", " : "", v[i]);
}

static void format_mounts(FILE *f, const struct moat_plan *pl)
{
	fprintf(f, "  0 tmpfs    / (read-only once assembled; entered with pivot_root)\n");
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *s = &pl->steps[i];
		fprintf(f, "%3u %-8s %s", i + 1, moat_step_op_name(s->op), s->dest);
		if (s->op == MOAT_STEP_SYMLINK)
			fprintf(f, " -> %s", s->src);
		else if (s->src)
			fprintf(f, " <- %s", s->src);
		else if (s->flags & MOAT_STEPF_RUNTIME)
			fprintf(f, " <- (made at run time)");
		if (s->op == MOAT_STEP_TMPFS || s->op == MOAT_STEP_UPPER ||
		    (s->op == MOAT_STEP_OVERLAY && !(s->flags & MOAT_STEPF_ROOT_LAYER))) {
			fputs(" size=", f);
			put_size(f, s->size);
		}
		if (s->op == MOAT_STEP_UPPER)
			fputs(" nosuid,nodev (the writable root's upper layers, detached once "
			      "assembled)",
			      f);
		if (s->flags & MOAT_STEPF_ROOT_LAYER)
			fputs(" nosuid,nodev (upper in " MOAT_PLAN_ROOT_UPPER ", lower read-only)",
			      f);
		if (s->op == MOAT_STEP_TMPFS || s->op == MOAT_STEP_MKDIR || s->op == MOAT_STEP_FILE)
			fprintf(f, " mode=%04o", s->mode);
		if (s->op == MOAT_STEP_BIND || s->op == MOAT_STEP_OVERLAY)
			fprintf(f, " %s", s->flags & MOAT_STEPF_RO ? "ro" : "rw");
		if (s->flags & MOAT_STEPF_OPTIONAL)
			fprintf(f, " optional");
		if (s->flags & MOAT_STEPF_DEV)
			fprintf(f, " dev");
		else if (s->op == MOAT_STEP_BIND || s->op == MOAT_STEP_TMPFS)
			fprintf(f, " nosuid,nodev");
		fputc('\n', f);
	}
	fprintf(f, "    chdir    %s\n", pl->cwd);
}

static void format_identity(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_identity *id = &pl->id;
	static const struct {
		uint64_t flag;
		const char *name;
	} ns[] = {{CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mount"}, {CLONE_NEWPID, "pid"},
		  {CLONE_NEWIPC, "ipc"},   {CLONE_NEWUTS, "uts"},  {CLONE_NEWNET, "net"}};
	fprintf(f, "user         %s (uid %u, gid %u), home %s\n", id->user, (unsigned)id->uid,
		(unsigned)id->gid, id->home);
	fprintf(f, "groups       none (setgroups denied)\n");
	fprintf(f, "hostname     %s\n", id->hostname);
	fputs("namespaces  ", f);
	for (size_t i = 0; i < ELEMENTSOF(ns); i++)
		if (id->clone_flags & ns[i].flag)
			fprintf(f, " %s", ns[i].name);
	if (!(id->clone_flags & CLONE_NEWNET))
		fputs(" (no net namespace: --net host)", f);
	fputc('\n', f);
	fprintf(f, "host uid     unprivileged: the invoker's uid and gid\n");
	fprintf(f,
		"             as root: one free uid of %u..%u per sandbox, held for the run; "
		"the user's directories through idmapped mounts\n",
		id->root_uid_base, id->root_uid_base + id->root_uid_slots - 1);
}

static void put_rule(FILE *f, const struct moat_host_rule *r, const char *dflt)
{
	fputs(r->pattern, f);
	if (!r->n_ports) {
		fprintf(f, " ports %s", dflt);
		return;
	}
	fputs(" ports ", f);
	for (unsigned i = 0; i < r->n_ports; i++)
		fprintf(f, "%s%u", i ? "," : "", r->ports[i]);
}

static void format_net(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_net *n = &pl->net;
	switch (n->mode) {
	case MOAT_NET_NONE:
		fprintf(f,
			"mode         none: loopback only (the sandbox's own: servers on "
			"127.0.0.1 and ::1 work), no DNS\n");
		fprintf(f,
			"attempts     refused by the kernel (no route); recorded through "
			"seccomp notification\n");
		return;
	case MOAT_NET_HOST:
		fprintf(f, "mode         host: no network namespace (weakened)\n");
		return;
	case MOAT_NET_ALLOW:
		break;
	}
	fprintf(f, "mode         allow: every connection through the egress proxy\n");
	for (unsigned i = 0; i < n->n_listeners; i++)
		fprintf(f, "listener     %-11s %s:%u %s\n", n->listeners[i].what,
			n->listeners[i].addr, n->listeners[i].port, n->listeners[i].proto);
	/* the capture rules, line by line, as loaded */
	for (const char *l = n->nft; *l;) {
		const char *e = strchr(l, '\n');
		size_t len = e ? (size_t)(e - l) : strlen(l);
		fprintf(f, "nft          %.*s\n", (int)len, l);
		l += len + (e ? 1 : 0);
	}
	for (unsigned i = 0; i < n->n_env; i++)
		fprintf(f, "env          %s=%s\n", n->env[i][0], n->env[i][1]);
	if (!n->n_allow && !n->n_cidrs)
		fprintf(f, "allow        nothing (every destination denied)\n");
	for (unsigned i = 0; i < n->n_allow; i++) {
		fputs("allow host   ", f);
		put_rule(f, &n->allow[i], "80,443");
		if (n->allow[i].implied_by[0])
			fprintf(f, " (implied by --secret %s@%s)", n->allow[i].implied_by,
				n->allow[i].pattern);
		fputc('\n', f);
	}
	for (unsigned i = 0; i < n->n_cidrs; i++) {
		fputs("allow cidr   ", f);
		put_rule(f, &n->cidrs[i], "any");
		fputc('\n', f);
	}
	for (unsigned i = 0; i < n->n_deny; i++)
		fprintf(f, "deny host    %s\n", n->deny[i].pattern);
	for (unsigned i = 0; i < n->n_resolve; i++)
		fprintf(f, "dns answer   %s -> %s\n", n->resolve[i].name, n->resolve[i].addr);
	fprintf(f,
		"dns          the stub answers names the rules allow (deny-host first), "
		"refuses the others\n");
	fprintf(f, "tls          %s",
		n->inspect_all ? "every allowed host terminated"
			       : "passed through unless a secret or http rule "
				 "names the host");
	if (n->n_no_inspect) {
		fputs("; never inspected: ", f);
		put_list(f, n->no_inspect, n->n_no_inspect, "");
	}
	fputc('\n', f);
	if (n->upstream_ca)
		fprintf(f, "upstream ca  %s\n", n->upstream_ca);
}

static void format_creds(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_creds *c = &pl->creds;
	static const char *const src_names[] = {"env", "file", "command"};
	if (!c->intercept && !c->n_secrets) {
		fprintf(f, "none\n");
		return;
	}
	if (c->intercept) {
		fprintf(f, "ca           per-run CA, bundle bound at %s (plan step %d)\n",
			c->ca_dest, c->ca_step + 1);
		fputs("ca env       ", f);
		put_list(f, c->ca_env, c->n_ca_env, "");
		fputc('\n', f);
	}
	for (unsigned i = 0; i < c->n_secrets; i++) {
		const struct moat_secret *s = &c->secrets[i];
		/* the source is named (a variable, a file, a command), never read */
		fprintf(f,
			"secret       %s: placeholder in the environment (random per run), value "
			"from %s %s, sent only to ",
			s->name,
			(size_t)s->source < ELEMENTSOF(src_names) ? src_names[s->source] : "?",
			s->from);
		put_list(f, (const char *const *)s->hosts, s->n_hosts, "(no host)");
		if (s->n_methods) {
			fputs(" methods ", f);
			put_list(f, (const char *const *)s->methods, s->n_methods, "");
		}
		if (s->n_paths) {
			fputs(" paths ", f);
			put_list(f, (const char *const *)s->paths, s->n_paths, "");
		}
		if (s->header)
			fprintf(f, " as header %s: %s", s->header, s->format ? s->format : "%s");
		fputc('\n', f);
	}
	for (unsigned i = 0; i < c->n_http_rules; i++) {
		const struct moat_http_rule *h = &c->http_rules[i];
		fprintf(f, "http rule    %s methods ", h->host);
		put_list(f, (const char *const *)h->methods, h->n_methods, "any");
		fputs(" paths ", f);
		put_list(f, (const char *const *)h->paths, h->n_paths, "any");
		fputc('\n', f);
	}
}

static void format_landlock(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_landlock *l = &pl->landlock;
	if (!moat_plan_landlock_on(pl)) {
		fprintf(f, "off (test build: --test-disable-layer landlock)\n");
		return;
	}
	fprintf(f, "required     %s\n",
		l->min_abi ? "yes (ABI >= 1)" : "no (--allow-degraded landlock)");
	for (unsigned i = 0; i < l->n_rules; i++) {
		const struct moat_plan_landlock_rule *r = &l->rules[i];
		fprintf(f, "path         %-24s %s", r->path,
			r->writable ? "all rights" : "read,execute");
		if (r->step >= 0)
			fprintf(f, " (plan step %d%s)", r->step + 1,
				r->optional ? ", if present" : "");
		fputc('\n', f);
	}
	fprintf(f, "tcp          %s\n",
		l->net_none ? "bind and connect denied (ABI >= 4)" : "not restricted by Landlock");
	fprintf(f, "scope        %s\n",
		l->scope ? "abstract unix sockets and signals (ABI >= 6)" : "none");
}

static const char *match_name(enum moat_seccomp_match m)
{
	return m == MOAT_SECCOMP_MATCH_ALL ? "" : " (argument filter)";
}

static bool listed(const char *const *v, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (streq(v[i], name))
			return true;
	return false;
}

static void format_seccomp(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_seccomp *s = &pl->seccomp;
	size_t n_rules;
	const struct moat_seccomp_rule *rules = moat_seccomp_rules(&n_rules);
	if (!moat_plan_seccomp_on(pl)) {
		fprintf(f, "off (test build: --test-disable-layer seccomp)\n");
		return;
	}
	fprintf(f, "arch         %s only (any other: process killed)\n", s->arch);
	fprintf(f, "default      allow\n");
	fprintf(f, "notify       %s\n",
		s->notify_optional
			? "if the kernel has it (--allow-degraded seccomp-notify)"
			: "required: denials recorded through the listener, then refused");
	for (size_t i = 0; i < n_rules; i++) {
		const struct moat_seccomp_rule *r = &rules[i];
		if (listed(s->allow, s->n_allow, r->name))
			continue;
		fprintf(f, "%-12s %s%s%s%s\n", r->err == ENOSYS ? "enosys" : "eperm", r->label,
			match_name(r->match), r->notify ? ", recorded" : "",
			r->optional ? ", where the arch has it" : "");
	}
	fputs("allowed      ", f);
	put_list(f, s->allow, s->n_allow, "(no table rule lifted)");
	fputc('\n', f);
	for (unsigned i = 0; i < s->n_deny; i++)
		fprintf(f, "eperm        %s (--deny-syscall), recorded\n", s->deny[i]);
	if (s->record_exec)
		fprintf(f, "record       execve, execveat (continued)\n");
	if (s->record_net)
		fprintf(f,
			"record       connect, sendto with an address, sendmsg, sendmmsg "
			"(continued: the kernel decides)\n");
}

static void format_limits(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_limits *l = &pl->limits;
	fputs("cpus         ", f);
	if (l->cg.cpus_milli)
		fprintf(f, "%llu.%02llu", (unsigned long long)(l->cg.cpus_milli / 1000),
			(unsigned long long)(l->cg.cpus_milli % 1000 / 10));
	else
		fputs("no limit", f);
	fputs(l->asked & MOAT_LIMIT_CPUS ? " (asked)\n" : "\n", f);
	fputs("memory       ", f);
	if (l->cg.memory)
		put_size(f, l->cg.memory);
	else
		fputs("no limit", f);
	fputs(l->asked & MOAT_LIMIT_MEMORY ? " (asked), swap off\n" : "\n", f);
	fprintf(f, "pids         %llu%s\n", (unsigned long long)l->cg.pids,
		l->asked & MOAT_LIMIT_PIDS ? " (asked)" : "");
	fprintf(f, "cgroup       %s\n",
		(l->asked & (MOAT_LIMIT_CPUS | MOAT_LIMIT_MEMORY | MOAT_LIMIT_PIDS))
			? (l->may_degrade ? "required for the asked limits unless --allow-degraded "
					    "cgroup: then rlimits"
					  : "required for the asked limits")
			: "default limits: a cgroup when one can be made, else rlimits (as root: "
			  "RLIMIT_NPROC for pids, no cgroup)");
	fputs("rlimits      core 0", f);
	if (l->rl.nofile)
		fprintf(f, ", nofile %llu", (unsigned long long)l->rl.nofile);
	if (l->rl.fsize) {
		fputs(", fsize ", f);
		put_size(f, l->rl.fsize);
	}
	fputc('\n', f);
	fputs("without cgroup  ", f);
	if (l->rl_degraded.as) {
		fputs("as ", f);
		put_size(f, l->rl_degraded.as);
		fputs(", ", f);
	}
	fprintf(f, "nproc %llu\n", (unsigned long long)l->rl_degraded.nproc);
	fputs("timeout      ", f);
	if (l->timeout_ms)
		put_duration(f, l->timeout_ms);
	else
		fputs("none", f);
	fputs(", kill grace ", f);
	put_duration(f, l->kill_grace_ms);
	fputc('\n', f);
	fputs("disk         ", f);
	put_size(f, l->disk);
	fputs(" per tmpfs\nmax output   ", f);
	put_size(f, l->max_output);
	fputc('\n', f);
}

static void format_audit(FILE *f, const struct moat_plan *pl)
{
	const struct moat_plan_audit *a = &pl->audit;
	static const char *const apply[] = {"safe", "never", "all"};
	fprintf(f, "log          %s%s\n", a->log_path ? a->log_path : "none",
		a->log_path && a->log_sync ? " (synced before exit)" : "");
	fprintf(f, "on alert     %s\n", a->on_alert ? a->on_alert : "none");
	fprintf(f, "record exec  %s\n", a->record_exec ? "yes" : "no");
	fprintf(f, "apply        %s", (size_t)a->apply < ELEMENTSOF(apply) ? apply[a->apply] : "?");
	fputs(a->apply_on_failure ? "; also after a failed command"
				  : "; nothing after a failed command (--apply-on-failure)",
	      f);
	if (a->held_exit)
		fprintf(f, "; a run that holds changes back exits %d", a->held_exit);
	fputc('\n', f);
	fputs("flag         ", f);
	put_list(f, a->flag_patterns, a->n_flag_patterns, "(built-in patterns only)");
	/* the effective action of each class (moat_review_holds() on a sample
	 * entry of the class: the same decision the review makes) */
	fputs("\nreview       ", f);
	for (unsigned c = 1; c < MOAT_RISK_COUNT; c++) {
		const struct moat_review_rules rr = {
			.accept = a->review_accept,
			.n_accept = a->n_review_accept,
			.hold = a->review_hold,
			.n_hold = a->n_review_hold,
			.accept_automatic = a->accept_automatic,
		};
		char path[] = "", why[] = "x";
		struct moat_fs_entry e = {.path = path, .flagged = why, .cls = c};
		fprintf(f, "%s%s %s", c > 1 ? ", " : "", moat_risk_class_name(c),
			moat_review_holds(&rr, &e) ? "held" : "applied+listed");
	}
	for (unsigned i = 0; i < a->n_review_hold; i++)
		if (moat_risk_class_from_name(a->review_hold[i]) < 0)
			fprintf(f, "\n  hold       %s", a->review_hold[i]);
	for (unsigned i = 0; i < a->n_review_accept; i++)
		if (moat_risk_class_from_name(a->review_accept[i]) < 0)
			fprintf(f, "\n  accept     %s", a->review_accept[i]);
	if (a->accept_automatic)
		fputs("\n  WARNING    --accept-automatic: accepted classes run code on the host "
		      "automatically",
		      f);
	fputs("\nheld max     ", f);
	put_size(f, a->held_max);
	fputc('\n', f);
}

static void format_isolation(FILE *f, const struct moat_plan *pl)
{
	if (pl->policy)
		moat_isolation_format(f, pl->policy);
}

/* Only with --image (the section is left out otherwise). */
static void format_image(FILE *f, const struct moat_plan *pl)
{
	const struct moat_policy *p = pl->policy;
	fprintf(f, "source       %s\n", p->image);
	fprintf(f, "digest       %s\n", p->image_digest ? p->image_digest : "(not opened)");
	fprintf(f, "root         %s (read-only, shared)\n",
		p->image_root ? p->image_root : "(not opened)");
	fprintf(f, "set-id bits  %s\n", p->image_allow_setid ? "allowed" : "refused");
}

int moat_plan_format(const struct moat_plan *pl, char **ret_text)
{
	static const struct {
		const char *name;
		void (*fn)(FILE *, const struct moat_plan *);
	} parts[] = {
		{"isolation", format_isolation}, {"image", format_image},
		{"mounts", format_mounts},	 {"identity", format_identity},
		{"network", format_net},	 {"credentials", format_creds},
		{"landlock", format_landlock},	 {"seccomp", format_seccomp},
		{"limits", format_limits},	 {"audit", format_audit},
	};
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	if (!f)
		return -ENOMEM;
	for (size_t i = 0; i < ELEMENTSOF(parts); i++) {
		if (parts[i].fn == format_image && (!pl->policy || !pl->policy->image))
			continue;
		fprintf(f, "%s## %s\n", i ? "\n" : "", parts[i].name);
		parts[i].fn(f, pl);
	}
	if (fclose(f) != 0) {
		free(buf);
		return -ENOMEM;
	}
	*ret_text = buf;
	return 0;
}
