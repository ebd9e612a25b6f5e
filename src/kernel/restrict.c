/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Supervisor side of the Landlock and seccomp layers (see restrict.h). */
#include "kernel/restrict.h"

#include <sys/mman.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>

#include "policy/errors.h"
#include "kernel/landlock.h"
#include "network/netrec.h"
#include "audit/observe.h"
#include "policy/policy.h"
#include "supervisor/run.h"
#include "kernel/seccomp.h"
#include "shared/macro.h"

static void degraded_add(struct moat_run *r, const char *what)
{
	char *d = r->st->degraded;
	size_t len = strlen(d);
	snprintf(d + len, sizeof(r->st->degraded) - len, "%s%s", len ? "," : "", what);
}

int moat_restrict_prepare_landlock(struct moat_run *r)
{
	const struct moat_plan_landlock *l = &r->plan->landlock;
	if (!moat_plan_landlock_on(r->plan)) {
		degraded_add(r, "landlock(test)");
		return 0;
	}
	int abi = moat_landlock_abi();
	if (abi >= 1)
		return 0;
	if (l->min_abi > 0)
		return moat_error_set(
			r->err, "landlock", EOPNOTSUPP,
			"Landlock is not available on this kernel (not built in or "
			"disabled at boot); refusing to run without it. Pass "
			"--allow-degraded landlock to run with the other layers only");
	degraded_add(r, "landlock");
	return 0;
}

int moat_restrict_prepare_seccomp(struct moat_run *r)
{
	const struct moat_plan_seccomp *s = &r->plan->seccomp;
	struct moat_seccomp_probe probe;
	scmp_filter_ctx ctx = NULL;

	if (!moat_plan_seccomp_on(r->plan)) {
		degraded_add(r, "seccomp(test)");
		return 0;
	}
	moat_seccomp_probe(&probe);
	if (!probe.filter)
		return moat_error_set(r->err, "seccomp", EOPNOTSUPP,
				      "seccomp filters are not available on this kernel");
	bool notify = probe.notify && probe.notif_sizes_ok;
	if (!notify) {
		if (!s->notify_optional)
			return moat_error_set(
				r->err, "seccomp", EOPNOTSUPP,
				"seccomp user notification is not available, so denied "
				"syscalls and execs cannot be recorded. Pass "
				"--allow-degraded seccomp-notify to run without the records");
		degraded_add(r, "seccomp-notify");
	}
	for (unsigned i = 0; i < s->n_allow; i++)
		if (moat_seccomp_validate_name(s->allow[i]) < 0)
			return moat_error_set(
				r->err, "seccomp", EINVAL,
				"--allow-syscall %s: not a syscall of this architecture",
				s->allow[i]);
	for (unsigned i = 0; i < s->n_deny; i++)
		if (moat_seccomp_validate_name(s->deny[i]) < 0)
			return moat_error_set(
				r->err, "seccomp", EINVAL,
				"--deny-syscall %s: not a syscall of this architecture",
				s->deny[i]);

	/* The filter itself is compiled after clone (moat_restrict_compile), while
	 * the sandbox assembles its root on the other CPU; it travels to the init
	 * through this shared mapping, which the init reads without allocating. */
	struct moat_shared_filter *sh =
		mmap(NULL, sizeof(*sh), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (sh == MAP_FAILED)
		return moat_error_set(r->err, "seccomp", errno,
				      "cannot map memory for the seccomp filter: %s",
				      strerror(errno));
	sh->prog = (struct moat_seccomp_prog){.insns = sh->insns, .len = 0, .notify = notify};
	r->shared_filter = sh;
	r->sb.seccomp_prog = &sh->prog;
	(void)ctx;
	return 0;
}

int moat_restrict_compile(struct moat_run *r)
{
	struct moat_shared_filter *sh = r->shared_filter;
	scmp_filter_ctx ctx = NULL;
	struct moat_seccomp_prog prog = {0};
	int k;

	if (!sh)
		return 0; /* seccomp disabled for a test */
	bool notify = sh->prog.notify;
	/* the rule set is the plan's (plan_parts.c, build_seccomp); the kernel
	 * decides only whether denials go through a listener */
	struct moat_seccomp_opts o;
	moat_plan_seccomp_opts(r->plan, notify, &o);
	/* Which network calls reaching the listener are records (the others
	 * are denials): the filter's own choice. */
	r->notify_net_mask = moat_seccomp_net_record_mask(&o);
	/* The default filter was compiled when moat was built (seccomp.h). */
	const struct moat_seccomp_baked *b = moat_seccomp_baked_find(&o);
	if (b && b->len <= ELEMENTSOF(sh->insns)) {
		memcpy(sh->insns, b->insns, b->len * sizeof(sh->insns[0]));
		sh->prog.len = b->len;
		return 0;
	}
	k = moat_seccomp_build(&o, &ctx);
	if (k < 0)
		return moat_error_set(r->err, "seccomp", -k, "cannot build the seccomp filter: %s",
				      strerror(-k));
	k = moat_seccomp_export(ctx, notify, &prog);
	seccomp_release(ctx);
	if (k >= 0 && prog.len > ELEMENTSOF(sh->insns))
		k = -E2BIG;
	if (k < 0) {
		moat_seccomp_prog_done(&prog);
		return moat_error_set(r->err, "seccomp", -k,
				      "cannot compile the seccomp filter: %s", strerror(-k));
	}
	memcpy(sh->insns, prog.insns, prog.len * sizeof(sh->insns[0]));
	sh->prog.len = prog.len;
	moat_seccomp_prog_done(&prog);
	return 0;
}

int moat_restrict_prepare(struct moat_run *r)
{
	int k = moat_restrict_prepare_landlock(r);
	return k < 0 ? k : moat_restrict_prepare_seccomp(r);
}

/* One event into the run's records. The audit stream hooks in here. */
static void record(struct moat_run *r, const struct moat_seccomp_event *ev)
{
	if (ev->type == MOAT_SECCOMP_EVENT_NET) {
		if (!ev->n_dests)
			return; /* AF_UNIX, loopback: nothing left the sandbox's reach */
		if (!r->netrec && !(r->netrec = moat_netrec_new()))
			return;
		unsigned k = moat_netrec_record(r->netrec, moat_run_audit(r), ev);
		r->st->net_denied += k;
		r->st->net_none_attempts += k;
		return;
	}
	if (ev->type == MOAT_SECCOMP_EVENT_DENIED)
		r->st->denied_syscalls++;
	else if (!ev->missing) /* PATH search steps are not executions */
		r->st->execs++;
	moat_observe_seccomp(r, ev);
}

/* Whether every process under the filter shares the sandbox's root: they
 * have no capabilities, so only a new user namespace (unshare, clone with
 * namespace flags, clone3, setns) would let one chroot, pivot_root or mount
 * elsewhere, and the filter denies those unless the policy re-allows them. */
static bool root_shared(const struct moat_plan_seccomp *s)
{
	static const char *const escapes[] = {"unshare", "clone",  "clone3",
					      "setns",	 "chroot", "pivot_root"};
	for (unsigned i = 0; i < s->n_allow; i++)
		for (size_t j = 0; j < ELEMENTSOF(escapes); j++)
			if (streq(s->allow[i], escapes[j]))
				return false;
	return true;
}

void moat_restrict_notify(struct moat_run *r)
{
	if (r->notify_fd < 0)
		return;
	/* One event buffer for the run (~45 KiB, too large for each call). */
	if (!r->notify_ev && !(r->notify_ev = malloc(sizeof(*r->notify_ev))))
		return;
	struct moat_seccomp_event *ev = r->notify_ev;
	int *root = root_shared(&r->plan->seccomp) ? &r->notify_root_fd : NULL;
	/* One answered notification per call: the caller's poll or level-triggered
	 * epoll comes back for the next, so a flood cannot starve the rest of the
	 * loop, and a single exec costs no extra empty poll. Calls whose task died
	 * meanwhile (-ENOENT) are skipped, at most 64 at once. */
	for (int i = 0; i < 64; i++) {
		int k = moat_seccomp_notify_handle_net(r->notify_fd, root, r->notify_net_mask, ev);
		if (k == 0) {
			record(r, ev);
			break;
		} else if (k == -ENOTCONN) {
			/* Nobody uses the filter any more: a hung-up fd would keep
			 * waking a level-triggered epoll. */
			if (r->epfd >= 0)
				epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->notify_fd, NULL);
			break;
		} else if (k != -ENOENT && k != -EINTR)
			break; /* -EAGAIN: nothing pending */
	}
}

void moat_restrict_finish(struct moat_run *r)
{
	/* --net none: the summary's "tried the network" list (with --net allow
	 * the proxy's records fill it, supervise_net.c) */
	if (r->netrec && !r->st->n_top_denied)
		r->st->n_top_denied = moat_netrec_top(r->netrec, r->st->top_denied,
						      ELEMENTSOF(r->st->top_denied));
}

void moat_restrict_teardown(struct moat_run *r)
{
	moat_restrict_finish(r);
	r->netrec = moat_netrec_free(r->netrec);
	free(r->notify_ev);
	r->notify_ev = NULL;
	safe_close(r->notify_root_fd);
	r->notify_root_fd = -1;
	if (r->shared_filter) {
		munmap(r->shared_filter, sizeof(*r->shared_filter));
		r->shared_filter = NULL;
		r->sb.seccomp_prog = NULL;
	}
}

/* ---- doctor ---------------------------------------------------------------- */

void moat_restrict_doctor(json_t *o)
{
	struct moat_landlock_report ll;
	struct moat_seccomp_probe sc;
	char fs[512], net[64], scope[64], buf[32];

	moat_landlock_probe(NULL, &ll);
	json_t *l =
		json_pack("{s:i, s:i, s:s, s:s, s:s}", "abi", ll.abi, "errata", ll.errata, "fs",
			  moat_landlock_rights_str('f', ll.handled_fs, fs, sizeof(fs)), "net",
			  moat_landlock_rights_str('n', ll.handled_net, net, sizeof(net)), "scope",
			  moat_landlock_rights_str('s', ll.scoped, scope, sizeof(scope)));
	if (l)
		json_object_set_new(o, "landlock_rights", l);
	moat_seccomp_probe(&sc);
	snprintf(buf, sizeof(buf), "%u.%u.%u", sc.lib_major, sc.lib_minor, sc.lib_micro);
	json_t *s =
		json_pack("{s:b, s:b, s:b, s:b, s:i, s:s, s:i, s:i}", "filter", sc.filter,
			  "kill_process", sc.kill_process, "notify", sc.notify, "notif_sizes_ok",
			  sc.notif_sizes_ok, "api_level", (int)sc.api_level, "libseccomp", buf,
			  "rules", (int)sc.n_rules, "rules_total", (int)sc.n_rules_total);
	if (s)
		json_object_set_new(o, "seccomp_filter", s);
}

void moat_restrict_doctor_text(FILE *t, json_t *o)
{
	json_t *l = json_object_get(o, "landlock_rights");
	json_t *s = json_object_get(o, "seccomp_filter");
	if (l && json_integer_value(json_object_get(l, "abi")) > 0) {
		fprintf(t, "  [info] %-26s fs: %s\n", "landlock rights enforced",
			json_string_value(json_object_get(l, "fs")));
		fprintf(t, "  %34s net: %s (with --net none)\n", "",
			json_string_value(json_object_get(l, "net")));
		fprintf(t, "  %34s scope: %s\n", "",
			json_string_value(json_object_get(l, "scope")));
	}
	if (s)
		fprintf(t,
			"  [info] %-26s %d of %d rules on this architecture, libseccomp %s (API %d)\n",
			"seccomp filter", (int)json_integer_value(json_object_get(s, "rules")),
			(int)json_integer_value(json_object_get(s, "rules_total")),
			json_string_value(json_object_get(s, "libseccomp")),
			(int)json_integer_value(json_object_get(s, "api_level")));
}
