/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp layer: the plan's rule set (plan_parts.c) compiled by the
 * supervisor while the init builds its root (restrict.c), installed by the
 * init last of all (hook_restrict.c, sandbox.c step "seccomp"); its listener
 * served by the supervisor (records of execs, denials, --net none's
 * attempts).
 */
#include <errno.h>
#include <sys/epoll.h>
#include <string.h>

#include "policy/errors.h"
#include "supervisor/layer.h"
#include "policy/plan.h"
#include "kernel/restrict.h"
#include "supervisor/run.h"

static bool listed(const char *const *v, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (!strcmp(v[i], name))
			return true;
	return false;
}

/* What the compiler gets: the options the supervisor passes (with a
 * listener, as on any kernel that has one) and the rules they select. */
static int seccomp_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	struct moat_seccomp_opts o;
	size_t n_rules;
	const struct moat_seccomp_rule *rules = moat_seccomp_rules(&n_rules);

	if (!moat_plan_seccomp_on(pl))
		return moat_layer_view_add(v, "off (test build)");
	moat_plan_seccomp_opts(pl, true, &o);
	int k = moat_layer_view_add(v, "arch %s", pl->seccomp.arch);
	for (size_t i = 0; i < n_rules && k >= 0; i++) {
		const struct moat_seccomp_rule *r = &rules[i];
		if (listed(o.allow, o.n_allow, r->name))
			continue;
		k = moat_layer_view_add(v, "deny %s %s%s", r->label,
					r->err == ENOSYS ? "ENOSYS" : "EPERM",
					r->notify && o.notify ? " recorded" : "");
	}
	for (unsigned i = 0; i < o.n_allow && k >= 0; i++)
		k = moat_layer_view_add(v, "allow %s", o.allow[i]);
	for (unsigned i = 0; i < o.n_deny && k >= 0; i++)
		k = moat_layer_view_add(v, "deny %s EPERM recorded", o.deny[i]);
	if (k >= 0 && o.record_exec)
		k = moat_layer_view_add(v, "record exec");
	if (k >= 0 && o.record_net)
		k = moat_layer_view_add(v, "record net");
	if (k >= 0)
		k = moat_layer_view_add(v, "notify %s",
					pl->seccomp.notify_optional ? "optional" : "required");
	if (k >= 0)
		k = moat_layer_view_add(v, "program %s",
					moat_seccomp_baked_find(&o) ? "built in" : "compiled");
	return k;
}

/* The seccomp listener: this layer's only event. */
static int seccomp_watch(struct moat_run *r, int epfd, uint32_t tag)
{
	if (r->notify_fd < 0)
		return 0;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, r->notify_fd, &ev) < 0)
		return moat_error_set(r->err, "seccomp", errno,
				      "cannot watch the seccomp listener: %s", strerror(errno));
	return 0;
}

static void seccomp_dispatch(struct moat_run *r, uint32_t sub, uint32_t events)
{
	moat_restrict_notify(r);
}

static int seccomp_finish(struct moat_run *r, int k)
{
	moat_restrict_finish(r);
	return k;
}

const struct moat_layer_ops moat_layer_seccomp = {
	.name = "seccomp",
	.derive = seccomp_derive,
	.prepare = moat_restrict_prepare_seccomp,
	.started = moat_restrict_compile,
	.watch = seccomp_watch,
	.dispatch = seccomp_dispatch,
	.pending = moat_restrict_notify,
	.finish = seccomp_finish,
	.teardown = moat_restrict_teardown,
};
