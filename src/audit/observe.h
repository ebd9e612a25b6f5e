/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The run's observation layer, called from supervise.c: the audit stream
 * (start/limit/exit events, the alert hook that runs --on-alert), the /output
 * collection and the workspace change manifest with its review and apply.
 * Other layers record through moat_run_audit(r).
 */
#pragma once

#include "supervisor/run.h"

struct moat_audit;

/* Before clone: run directory, audit log, start event, host fds of
 * --workspace (overlay) and --output. Fills r->err on failure. */
int moat_observe_prepare(struct moat_run *r);
/* The start record (after clone, or at the end if the run never started). */
int moat_observe_start(struct moat_run *r);
/* A limit was hit: limit event + alert. path: where (a --disk area's mount
 * point), limit: the limit (0: none said), reason: how (NULL: none). */
void moat_observe_limit(struct moat_run *r, const char *what, const char *path, uint64_t limit,
			const char *reason);
/* After the init exited, the workspace layer's part: /output, the workspace
 * change manifest, its review and apply. */
int moat_observe_finish_workspace(struct moat_run *r, int k);
/* After that, the audit layer's: the exec count and the exit event. */
int moat_observe_finish(struct moat_run *r, int k);
/* Always called last: writes the exit event if finish did not (setup
 * failures), waits briefly for alert commands, frees everything. */
void moat_observe_teardown(struct moat_run *r);
struct moat_seccomp_event;
/* A seccomp notification (restrict.c): an `exec` event, or a `syscall`
 * denial with an alert. PATH-search steps that cannot execute are skipped. */
void moat_observe_seccomp(struct moat_run *r, const struct moat_seccomp_event *ev);
struct moat_manifest;
/* The summary's review list (st->review, n_review, review_more) from the
 * manifest: the entries not applied, the first MOAT_REVIEW_MAX in manifest
 * order, raw. Pure. */
void moat_observe_review_entries(struct moat_status *st, const struct moat_manifest *m);
/* The summary's listed line (st->listed, files_listed) from the manifest. */
void moat_observe_listed(struct moat_status *st, const struct moat_manifest *m);
/* The run's audit writer (NULL if none; moat_audit_event accepts NULL). */
struct moat_audit *moat_run_audit(struct moat_run *r);
