/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Supervisor-side steps of each layer, at fixed points of a run. */
#include <errno.h>
#include <string.h>

#include "lib/errors.h"
#include "lib/supervise.h"
#include "lib/supervise_net.h"

int moat_supervise_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	return moat_net_env(r, push);
}

int moat_supervise_prepare(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	/* Layers not in this build yet are refused, never silently skipped. */
	if (p->output)
		return moat_error_set(r->err, "output", EOPNOTSUPP,
				      "--output is not available in this build");
	if (p->workspace && p->workspace_mode == MOAT_WS_OVERLAY)
		return moat_error_set(r->err, "workspace", EOPNOTSUPP,
				      "--workspace DIR:overlay is not available in this build");
	if (p->limits_set & (MOAT_LIMIT_CPUS | MOAT_LIMIT_MEMORY))
		return moat_error_set(r->err, "cgroup", EOPNOTSUPP,
				      "--cpus/--memory need cgroups, not available in this build");
	return moat_net_prepare(r);
}

void moat_supervise_clone_args(struct moat_run *r, struct clone_args *ca)
{
	(void)r;
	(void)ca;
}

int moat_supervise_child(struct moat_run *r)
{
	(void)r;
	return 0;
}

int moat_supervise_take_fd(struct moat_run *r, int kind, int fd)
{
	return moat_net_take_fd(r, kind, fd);
}

/* Extra epoll tags: base + MOAT_SUPERVISE_TAG_NET is the proxy's event pipe. */
#define MOAT_SUPERVISE_TAG_NET 0
static uint32_t tag_base;

int moat_supervise_register(struct moat_run *r, int epfd, uint32_t base)
{
	tag_base = base;
	return moat_net_start(r, epfd, base + MOAT_SUPERVISE_TAG_NET);
}

void moat_supervise_dispatch(struct moat_run *r, uint32_t tag, uint32_t events)
{
	(void)events;
	if (tag == tag_base + MOAT_SUPERVISE_TAG_NET)
		moat_net_dispatch(r);
}

void moat_supervise_event_limit(struct moat_run *r, const char *what)
{
	(void)r;
	(void)what;
}

void moat_supervise_kill_all(struct moat_run *r)
{
	(void)r;
}

int moat_supervise_finish(struct moat_run *r, int k)
{
	moat_net_finish(r);
	return k;
}

void moat_supervise_teardown(struct moat_run *r)
{
	moat_net_teardown(r);
}
