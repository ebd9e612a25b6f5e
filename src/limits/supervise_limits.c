/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The limits layer's supervisor side and the run's state record. */
#include "limits/supervise_limits.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "limits/cgroup.h"
#include "limits/disk_watch.h"
#include "policy/errors.h"
#include "supervisor/state.h"
#include "audit/observe.h"
#include "shared/macro.h"

static uint64_t realtime_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static uint64_t monotonic_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static void record_fill(struct moat_run *r)
{
	struct moat_state_record *rec = r->state_rec;
	rec->n_cgroups = 0;
	for (unsigned i = 0; i < moat_cgroup_n_dirs(r->limits.cg) && i < MOAT_CGROUP_MAX_HIER; i++)
		snprintf(rec->cgroups[rec->n_cgroups++], MOAT_STATE_PATH, "%s",
			 moat_cgroup_dir(r->limits.cg, i));
}

int moat_supervise_limits_prepare(struct moat_run *r)
{
	char dir[MOAT_STATE_PATH];
	struct moat_state_gc_result g;
	bool have_dir = moat_state_default_dir(dir, sizeof(dir)) >= 0;
	int k;

	/* What crashed runs left (their lock is free): it means a SIGKILLed
	 * moat's empty cgroups are gone by the next run at the latest. The walk
	 * opens every live entry, so a process that holds many sandboxes (moat
	 * serve) walks at most once a second: otherwise its Nth create costs N
	 * entries' opens and locks, and creating N sandboxes costs N^2/2. */
	static uint64_t last_gc_us;
	uint64_t now = monotonic_us();
	if (have_dir && (!last_gc_us || now - last_gc_us >= 1000000u)) {
		(void)moat_state_gc(dir, &g);
		last_gc_us = now;
	}

	k = moat_limits_setup(&r->plan->limits, r->run_id, &r->limits, r->err);
	if (k < 0)
		return k;
	if ((k = moat_disk_watch_prepare(r)) < 0)
		return moat_error_set(r->err, "setup", -k, "out of memory");
	if (r->limits.degraded) {
		r->sb.rlimit_as = r->limits.rl.as;
		r->sb.rlimit_nproc = r->limits.rl.nproc;
	}

	/* The record is bookkeeping for gc/ps, not a restriction: a run whose
	 * state directory cannot be written still runs. */
	r->state_rec = calloc(1, sizeof(*r->state_rec));
	if (!r->state_rec || !have_dir)
		return 0;
	snprintf(r->state_rec->id, sizeof(r->state_rec->id), "%s", r->run_id);
	r->state_rec->pid = getpid();
	r->state_rec->start_us = realtime_us();
	record_fill(r);
	if (moat_state_register(dir, r->state_rec, &r->state) < 0)
		r->state = NULL;
	return 0;
}

/* Names path in the record's slot `slot` (a new one when slot ==
 * rec->n_tmpdirs) and rewrites run.json. */
static int record_tmpdir(struct moat_run *r, const char *stage, unsigned slot, const char *path)
{
	struct moat_state_record *rec = r->state_rec;
	int k;
	/* Fail closed: a temporary that the record does not name is what a
	 * SIGKILL of the supervisor would leave behind for good. */
	if (!rec || !r->state)
		return moat_error_set(r->err, stage, ENOENT,
				      "cannot record the temporary directory %s: the run has no "
				      "state record (its state directory could not be written)",
				      path);
	if (slot >= MOAT_STATE_MAX_TMPDIRS || strlen(path) >= MOAT_STATE_PATH)
		return moat_error_set(r->err, stage, E2BIG,
				      "cannot record the temporary directory %s in the run's state "
				      "record: too many or too long",
				      path);
	snprintf(rec->tmpdirs[slot], MOAT_STATE_PATH, "%s", path);
	unsigned n = rec->n_tmpdirs;
	if (slot == n)
		rec->n_tmpdirs++;
	if ((k = moat_state_update(r->state, rec)) < 0) {
		rec->n_tmpdirs = n;
		return moat_error_set(r->err, stage, -k,
				      "cannot record the temporary directory %s in the run's state "
				      "record: %s",
				      path, strerror(-k));
	}
	return 0;
}

int moat_supervise_state_mkdtemp(struct moat_run *r, const char *stage, char *tmpl)
{
	static const char set[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	size_t len = strlen(tmpl);
	char *x = len >= 6 ? tmpl + len - 6 : NULL;
	unsigned slot = r->state_rec ? r->state_rec->n_tmpdirs : 0;
	int k;
	if (!x || strcmp(x, "XXXXXX") != 0)
		return moat_error_set(r->err, stage, EINVAL, "bad temporary name %s", tmpl);
	for (unsigned tries = 0; tries < 100; tries++) {
		uint8_t b[6];
		if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
			return moat_error_set(r->err, stage, errno, "getrandom: %s",
					      strerror(errno));
		for (unsigned i = 0; i < 6; i++)
			x[i] = set[b[i] % (sizeof(set) - 1)];
		/* named first, made second: a SIGKILL at any point leaves at
		 * most a record naming a directory that does not exist yet */
		if ((k = record_tmpdir(r, stage, slot, tmpl)) < 0)
			return k;
		if (mkdir(tmpl, 0700) == 0)
			return 0;
		if (errno != EEXIST)
			return moat_error_set(r->err, stage, errno,
					      "cannot create the temporary directory %s: %s", tmpl,
					      strerror(errno));
		/* someone else's (planted): another name, in the same slot */
	}
	return moat_error_set(r->err, stage, EEXIST,
			      "cannot create a temporary directory like %s: every name tried "
			      "exists",
			      tmpl);
}

static void close_self_attach(struct moat_run *r)
{
	for (unsigned i = 0; i < r->sb.n_cgroup_self; i++)
		safe_close(r->sb.cgroup_self[i]);
	r->sb.n_cgroup_self = 0;
}

void moat_supervise_limits_clone_args(struct moat_run *r, struct clone_args *ca)
{
	int fd = moat_limits_cgroup_fd(&r->limits);

	/* The v1 groups: the init moves itself by writing "0" to their
	 * `tasks` files, opened here (cgroup.h); if they cannot be opened the
	 * supervisor writes the init's pid to cgroup.procs after clone. */
	close_self_attach(r);
	r->self_attached = false;
	if (r->limits.cg &&
	    moat_cgroup_open_self_attach(r->limits.cg, r->sb.cgroup_self,
					 ELEMENTSOF(r->sb.cgroup_self), &r->sb.n_cgroup_self) == 0)
		r->self_attached = true;
	r->into_cgroup = false;
	if (fd < 0)
		return;
	/* Born inside the group (5.7+): not one instruction outside. */
	ca->flags |= CLONE_INTO_CGROUP;
	ca->cgroup = (uint64_t)fd;
	r->into_cgroup = true;
}

int moat_supervise_limits_child(struct moat_run *r)
{
	unsigned which = 0;
	int k;

	close_self_attach(r);
	if (!r->self_attached)
		which |= MOAT_CGROUP_ATTACH_V1;
	if (!r->into_cgroup)
		which |= MOAT_CGROUP_ATTACH_V2;
	k = moat_limits_attach(&r->limits, r->init_pid, which);
	if (k < 0)
		return moat_error_set(r->err, "cgroup", -k,
				      "cannot move the sandbox into its cgroup: %s", strerror(-k));
	return 0;
}

void moat_supervise_limits_kill(struct moat_run *r)
{
	(void)moat_limits_kill(&r->limits);
}

void moat_supervise_limits_finish(struct moat_run *r)
{
	moat_limits_finish(&r->limits, r->st);
	/* a limit that was hit is an event and an alert, whatever the reason
	 * the run ended with (the command may have survived a refused fork) */
	if (r->st->pids_limit_hits)
		moat_observe_limit(r, "pids", NULL, r->st->pids_limit, NULL);
	if (r->st->oom_kills)
		moat_observe_limit(r, "memory", NULL, r->st->memory_limit, NULL);
	/* a full --disk area: its event was written when it was seen */
	moat_disk_watch_finish(r);
}

void moat_supervise_limits_teardown(struct moat_run *r)
{
	close_self_attach(r);
	moat_disk_watch_teardown(r);
	if (moat_limits_teardown(&r->limits) < 0)
		r->state_keep = true;
}

void moat_supervise_limits_state_end(struct moat_run *r)
{
	/* Something could not be removed: keep the record (lock released), so
	 * the next run or `moat gc` retries. Else it goes only now, after the
	 * backend removed its temporaries (release): a SIGKILL before this
	 * point leaves a record that still names them. */
	if (r->state_keep)
		moat_state_abandon(r->state);
	else
		(void)moat_state_unregister(r->state);
	r->state = NULL;
	r->state_keep = false;
	free(r->state_rec);
	r->state_rec = NULL;
}
