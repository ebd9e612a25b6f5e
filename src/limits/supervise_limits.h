/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Supervisor-side steps of the limits layer (cgroups, rlimit fallback) and the
 * state-directory record of the run, called from supervise.c.
 */
#pragma once

#include <linux/sched.h>

#include "supervisor/run.h"

/* Before clone: collect garbage of crashed runs, create the cgroup (fail
 * closed), record the run in the state directory. */
int moat_supervise_limits_prepare(struct moat_run *r);
/* CLONE_INTO_CGROUP when there is a v2 group. */
void moat_supervise_limits_clone_args(struct moat_run *r, struct clone_args *ca);
/* After clone, before the sandbox proceeds: attach the init to every group. */
int moat_supervise_limits_child(struct moat_run *r);
void moat_supervise_limits_kill(struct moat_run *r);
/* Statistics and reasons into r->st. */
void moat_supervise_limits_finish(struct moat_run *r);
/* Kill and remove the groups. Idempotent. */
void moat_supervise_limits_teardown(struct moat_run *r);
/* After the backend released what it kept (its temporaries removed): drop
 * the state record, or keep it for gc when a group could not be removed.
 * Idempotent. */
void moat_supervise_limits_state_end(struct moat_run *r);
/* mkdtemp() of a host temporary directory of the run (tmpl ends in
 * "XXXXXX", filled in), named in the run's state record first, so that
 * `moat gc` or the next run's sweep removes it after a crash (its last
 * component must start with "moat-"; gc removes it only if it is the
 * caller's euid's). The record is on disk (rewritten under a temporary name,
 * renamed into place) before the directory exists, so a SIGKILL at any point
 * leaves nothing the record does not name. Fails closed: no record, or one
 * that cannot be rewritten, is < 0 with r->err naming `stage`, and no
 * directory was made. */
int moat_supervise_state_mkdtemp(struct moat_run *r, const char *stage, char *tmpl);
