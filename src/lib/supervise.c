/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor side of the layers: one table, each layer a row of
 * operations called at fixed points of a sandbox's life (supervise.h). The
 * sandbox-side steps of the layers are the init's hooks (hooks.h).
 *
 *   layer     | prepare            | started          | events            | finish / teardown
 *   limits    | cgroups, state     | (child: attach)  | -                 | accounting, removal
 *   restrict  | seccomp options    | BPF compiled     | seccomp listener  | counters, net top list
 *   network   | proxy config, CA   | proxy helper     | proxy events      | counters, helper gone
 *   audit     | log, /output, ws   | start record     | -                 | /output, review, exit
 */
#include <errno.h>
#include <sys/epoll.h>
#include <string.h>

#include "lib/errors.h"
#include "lib/observe.h"
#include "lib/restrict.h"
#include "lib/supervise.h"
#include "lib/supervise_limits.h"
#include "lib/supervise_net.h"

/* The seccomp listener: restrict's only event. */
static int restrict_watch(struct moat_run *r, int epfd, uint32_t tag)
{
	if (r->notify_fd < 0)
		return 0;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, r->notify_fd, &ev) < 0)
		return moat_error_set(r->err, "seccomp", errno,
				      "cannot watch the seccomp listener: %s", strerror(errno));
	return 0;
}

static void restrict_dispatch(struct moat_run *r, uint32_t sub, uint32_t events)
{
	moat_restrict_notify(r);
}

static void net_dispatch(struct moat_run *r, uint32_t sub, uint32_t events)
{
	moat_net_dispatch(r);
}

static int observe_finish(struct moat_run *r, int k)
{
	return moat_observe_finish(r, k);
}

static void limits_finish(struct moat_run *r)
{
	moat_supervise_limits_finish(r);
}

struct moat_layer_ops {
	const char *name;
	/* before the backend starts (records degraded layers for the start event) */
	int (*prepare)(struct moat_run *r);
	/* the sandbox exists, not yet released */
	int (*child)(struct moat_run *r);
	/* released: overlaps the sandbox's own set-up */
	int (*started)(struct moat_run *r);
	/* an fd the sandbox handed over: 1 taken, 0 not this layer's */
	int (*take_fd)(struct moat_run *r, int kind, int fd);
	/* its fds on the sandbox's epoll set, with tag; then its events */
	int (*watch)(struct moat_run *r, int epfd, uint32_t tag);
	void (*dispatch)(struct moat_run *r, uint32_t sub, uint32_t events);
	/* everything is gone: statistics (the audit layer's also returns the
	 * run's result, and runs last) */
	void (*finish)(struct moat_run *r);
	int (*finish_result)(struct moat_run *r, int k); /* the audit layer's */
	/* remove what it made; safe at any point */
	void (*teardown)(struct moat_run *r);
};

/* Order matters. prepare, child and started go down the table (limits
 * first: they record degraded layers for the start event; the seccomp
 * program before the rest of started: the sandbox waits for it); finish and
 * teardown go up, the audit layer last of all: it writes the exit record
 * and opens (prepare) even when a layer before it failed, so that the
 * failure is recorded. */
static const struct moat_layer_ops layers[] = {
	{
		.name = "limits",
		.prepare = moat_supervise_limits_prepare,
		.child = moat_supervise_limits_child,
		.finish = limits_finish,
		.teardown = moat_supervise_limits_teardown,
	},
	{
		.name = "restrict",
		.prepare = moat_restrict_prepare,
		.started = moat_restrict_compile,
		.watch = restrict_watch,
		.dispatch = restrict_dispatch,
		.finish = moat_restrict_finish,
		.teardown = moat_restrict_teardown,
	},
	{
		.name = "network",
		.prepare = moat_net_prepare,
		.started = moat_net_started,
		.take_fd = moat_net_take_fd,
		.watch = moat_net_start,
		.dispatch = net_dispatch,
		.finish = moat_net_finish,
		.teardown = moat_net_teardown,
	},
	{
		.name = "audit",
		.prepare = moat_observe_prepare,
		.started = moat_observe_start,
		.finish_result = observe_finish,
		.teardown = moat_observe_teardown,
	},
};
#define N_LAYERS (sizeof(layers) / sizeof(layers[0]))
#define TAGS_PER_LAYER 4u

int moat_supervise_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	return moat_net_env(r, push);
}

int moat_supervise_prepare(struct moat_run *r)
{
	int k = 0;
	for (unsigned i = 0; i + 1 < N_LAYERS && k >= 0; i++)
		k = layers[i].prepare ? layers[i].prepare(r) : 0;
	struct moat_error saved = {0};
	if (k < 0 && r->err)
		saved = *r->err;
	int k2 = layers[N_LAYERS - 1].prepare(r); /* the audit log, always */
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
	for (unsigned i = 0; i < N_LAYERS; i++) {
		int k = layers[i].child ? layers[i].child(r) : 0;
		if (k < 0)
			return k;
	}
	return 0;
}

int moat_supervise_started(struct moat_run *r)
{
	int k = 0;
	for (unsigned i = 0; i < N_LAYERS && k >= 0; i++)
		k = layers[i].started ? layers[i].started(r) : 0;
	return k;
}

int moat_supervise_take_fd(struct moat_run *r, int kind, int fd)
{
	for (unsigned i = 0; i < N_LAYERS; i++) {
		int k = layers[i].take_fd ? layers[i].take_fd(r, kind, fd) : 0;
		if (k != 0)
			return k;
	}
	return 0;
}

int moat_supervise_register(struct moat_run *r, int epfd, uint32_t base)
{
	r->tag_base = base;
	for (unsigned i = 0; i < N_LAYERS; i++) {
		int k = layers[i].watch ? layers[i].watch(r, epfd, base + i * TAGS_PER_LAYER) : 0;
		if (k < 0)
			return k;
	}
	return 0;
}

void moat_supervise_dispatch(struct moat_run *r, uint32_t tag, uint32_t events)
{
	uint32_t i = (tag - r->tag_base) / TAGS_PER_LAYER;
	if (tag >= r->tag_base && i < N_LAYERS && layers[i].dispatch)
		layers[i].dispatch(r, (tag - r->tag_base) % TAGS_PER_LAYER, events);
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
	for (unsigned i = N_LAYERS - 1; i-- > 0;)
		if (layers[i].finish)
			layers[i].finish(r);
	return layers[N_LAYERS - 1].finish_result(r, k);
}

void moat_supervise_teardown(struct moat_run *r)
{
	for (unsigned i = N_LAYERS - 1; i-- > 0;)
		if (layers[i].teardown)
			layers[i].teardown(r);
	layers[N_LAYERS - 1].teardown(r);
}
