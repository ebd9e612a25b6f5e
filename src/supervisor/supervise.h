/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor-side steps of the layers (the table of layer.h modules in
 * supervise.c), called by the lifecycle (spawn.c, backend_ns.c, proc.c) at
 * fixed points of a sandbox's life. Each returns >= 0 or -errno with r->err
 * filled.
 */
#pragma once

#include <linux/sched.h>
#include <stdint.h>

#include "supervisor/run.h"

/* Add variables to the sandbox's environment (proxy settings, placeholders). */
int moat_supervise_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *));
/* Before clone: cgroups, audit log, proxy configuration. */
int moat_supervise_prepare(struct moat_run *r);
/* Adjust clone3 arguments (CLONE_INTO_CGROUP). */
void moat_supervise_clone_args(struct moat_run *r, struct clone_args *ca);
/* After clone, before the sandbox proceeds: cgroup attach. */
int moat_supervise_child(struct moat_run *r);
/* After the sandbox was released, while it sets itself up: the seccomp
 * filter's compilation and the audit start record (they overlap its work). */
int moat_supervise_started(struct moat_run *r);
/* An fd the sandbox handed over that spawn.c does not know: 1 if taken (now
 * owned), 0 if not (the caller closes it). */
int moat_supervise_take_fd(struct moat_run *r, int kind, int fd);
/* Register extra fds on the epoll set with tags >= base. */
int moat_supervise_register(struct moat_run *r, int epfd, uint32_t base);
void moat_supervise_dispatch(struct moat_run *r, uint32_t tag, uint32_t events);
/* Serve what the layers have pending now (the seccomp listener), without
 * waiting: for loops that wait on something else while the sandbox may be
 * blocked on a layer (the setup's fd hand-over, a process's start). */
void moat_supervise_pending(struct moat_run *r);
/* A limit was hit ("timeout", ...). */
void moat_supervise_event_limit(struct moat_run *r, const char *what);
/* Kill every process of the sandbox now. */
void moat_supervise_kill_all(struct moat_run *r);
/* After the init exited: statistics, /output, workspace changes, exit event.
 * `k` is the loop's result; returns the run's result. */
int moat_supervise_finish(struct moat_run *r, int k);
/* Remove everything of the run (cgroups, the layers' temporaries). Safe to
 * call at any point. */
void moat_supervise_teardown(struct moat_run *r);
/* After the backend's release (its temporaries gone): the run's state
 * record goes last. Safe to call at any point, and twice. */
void moat_supervise_released(struct moat_run *r);
