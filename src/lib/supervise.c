/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Supervisor-side steps of each layer, at fixed points of a run. */
#include <errno.h>
#include <sys/epoll.h>
#include <string.h>

#include "lib/errors.h"
#include "lib/observe.h"
#include "lib/restrict.h"
#include "lib/supervise.h"
#include "lib/supervise_limits.h"
#include "lib/supervise_net.h"

int moat_supervise_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	return moat_net_env(r, push);
}

int moat_supervise_prepare(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	(void)p;
	/* limits, restrict and net first (they record degraded layers for the start
	 * event); the audit log opens even when one fails, so it is recorded */
	int k = moat_supervise_limits_prepare(r);
	if (k >= 0)
		k = moat_restrict_prepare(r);
	if (k >= 0)
		k = moat_net_prepare(r);
	struct moat_error saved = {0};
	if (k < 0 && r->err)
		saved = *r->err;
	int k2 = moat_observe_prepare(r);
	if (k < 0 && r->err)
		*r->err = saved;
	return k < 0 ? k : k2;
}

void moat_supervise_clone_args(struct moat_run *r, struct clone_args *ca)
{
	moat_supervise_limits_clone_args(r, ca);
}

int moat_supervise_child(struct moat_run *r)
{
	return moat_supervise_limits_child(r);
}

int moat_supervise_started(struct moat_run *r)
{
	int k = moat_restrict_compile(r);
	if (k >= 0)
		k = moat_net_started(r);
	if (k < 0)
		return k;
	return moat_observe_start(r);
}

int moat_supervise_take_fd(struct moat_run *r, int kind, int fd)
{
	return moat_net_take_fd(r, kind, fd);
}

/* base + MOAT_SUPERVISE_TAG_NET: the proxy worker's event pipe. */
#define MOAT_SUPERVISE_TAG_NET 0

int moat_supervise_register(struct moat_run *r, int epfd, uint32_t base)
{
	r->tag_base = base; /* tags of this file are base + offset */
	if (r->notify_fd >= 0) {
		struct epoll_event ev = {.events = EPOLLIN,
					 .data.u32 = base + MOAT_RESTRICT_TAG_NOTIFY};
		if (epoll_ctl(epfd, EPOLL_CTL_ADD, r->notify_fd, &ev) < 0)
			return moat_error_set(r->err, "seccomp", errno,
					      "cannot watch the seccomp listener: %s",
					      strerror(errno));
	}
	return moat_net_start(r, epfd, base + MOAT_SUPERVISE_TAG_NET);
}

void moat_supervise_dispatch(struct moat_run *r, uint32_t tag, uint32_t events)
{
	(void)events;
	if (tag == r->tag_base + MOAT_RESTRICT_TAG_NOTIFY)
		moat_restrict_notify(r);
	else if (tag == r->tag_base + MOAT_SUPERVISE_TAG_NET)
		moat_net_dispatch(r);
}

void moat_supervise_event_limit(struct moat_run *r, const char *what)
{
	moat_observe_limit(r, what);
}

void moat_supervise_kill_all(struct moat_run *r)
{
	moat_supervise_limits_kill(r);
}

int moat_supervise_finish(struct moat_run *r, int k)
{
	moat_net_finish(r);
	moat_restrict_finish(r);
	moat_supervise_limits_finish(r);
	return moat_observe_finish(r, k);
}

void moat_supervise_teardown(struct moat_run *r)
{
	moat_net_teardown(r);
	moat_restrict_teardown(r);
	moat_supervise_limits_teardown(r);
	moat_observe_teardown(r);
}
