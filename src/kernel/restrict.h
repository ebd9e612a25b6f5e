/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/kernel/: the kernel layers: the seccomp filter and its listener, Landlock,
 * their supervisor side (restrict.c) and their steps inside the sandbox
 */
/*
 * Supervisor side of the kernel restriction layers for one run: checks that
 * Landlock and seccomp notification exist (or were let go with
 * --allow-degraded), compiles the seccomp filter before clone so the sandbox
 * installs it without allocating (hook_restrict.c), and answers the seccomp
 * notifications (denied dangerous syscalls, execs) during the run.
 */
#pragma once

#include <stdint.h>

struct moat_run;

/* Epoll tag of the notification listener, relative to EV_EXTRA. */
#define MOAT_RESTRICT_TAG_NOTIFY 16

/* After clone, before the sandbox needs it: compile the filter into the shared
 * mapping prepared by moat_restrict_prepare(). */
int moat_restrict_compile(struct moat_run *r);

/* Before clone. Prepares r->sb.seccomp_prog (filled after clone), adds degraded layers to the status.
 * Fails (r->err filled) when a layer the run needs is missing. */
int moat_restrict_prepare(struct moat_run *r);
/* Its two halves, one per layer (layer_landlock.c, layer_seccomp.c). */
int moat_restrict_prepare_landlock(struct moat_run *r);
int moat_restrict_prepare_seccomp(struct moat_run *r);
/* Answer every pending notification (non-blocking). */
void moat_restrict_notify(struct moat_run *r);
/* After the run: the network attempts into the status (summary). Also done
 * by teardown. */
void moat_restrict_finish(struct moat_run *r);
/* Free what prepare made. Safe to call twice. */
void moat_restrict_teardown(struct moat_run *r);

/* `moat doctor`: the Landlock rights and the seccomp filter this kernel gets. */
#include <jansson.h>
#include <stdio.h>
void moat_restrict_doctor(json_t *o);
void moat_restrict_doctor_text(FILE *t, json_t *o);
