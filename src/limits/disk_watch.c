/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The writable tmpfs areas of a sandbox, sampled for being full (disk_watch.h). */
#include "limits/disk_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "audit/observe.h"
#include "policy/plan.h"
#include "sandbox/sandbox.h"
#include "shared/macro.h"
#include "supervisor/run.h"

bool moat_disk_step_watched(const struct moat_step *s)
{
	return s->op == MOAT_STEP_OVERLAY ||
		(s->op == MOAT_STEP_TMPFS && (s->flags & MOAT_STEPF_WRITABLE));
}

bool moat_disk_statfs_full(const struct statfs *sf, bool *ret_inodes)
{
	/* tmpfs: f_blocks is size= in pages, f_files nr_inodes (0: unlimited) */
	bool inodes = sf->f_files > 0 && sf->f_ffree == 0;
	*ret_inodes = inodes && sf->f_bfree > 0;
	return (sf->f_blocks > 0 && sf->f_bfree == 0) || inodes;
}

int moat_disk_watch_prepare(struct moat_run *r)
{
	struct moat_disk_watch *w = &r->disk;
	unsigned n = 0;
	for (unsigned i = 0; i < r->plan->n_steps; i++)
		n += moat_disk_step_watched(&r->plan->steps[i]);
	if (!n || w->a)
		return 0;
	w->a = calloc(n, sizeof(*w->a));
	if (!w->a)
		return -ENOMEM;
	for (unsigned i = 0; i < r->plan->n_steps; i++)
		if (moat_disk_step_watched(&r->plan->steps[i]))
			w->a[w->n++] = (struct moat_disk_area){.step = i, .fd = -1};
	return 0;
}

static struct moat_disk_area *area_of(struct moat_disk_watch *w, unsigned step)
{
	for (unsigned i = 0; i < w->n; i++)
		if (w->a[i].step == step)
			return &w->a[i];
	return NULL;
}

int moat_disk_watch_take_fd(struct moat_run *r, int kind, int fd)
{
	if (kind < MOAT_FD_DISK || kind >= MOAT_FD_DISK + MOAT_PLAN_MAX_STEPS)
		return 0;
	struct moat_disk_area *a = area_of(&r->disk, (unsigned)(kind - MOAT_FD_DISK));
	if (!a || a->fd >= 0)
		return 0; /* not an area of this plan: the caller closes it */
	a->fd = fd;
	return 1;
}

/* One fstatfs per area; a newly full one is a limit event and an alert at
 * once (a session's alert comes while it runs, not at its removal). */
static void sample(struct moat_run *r)
{
	struct moat_disk_watch *w = &r->disk;
	for (unsigned i = 0; i < w->n; i++) {
		struct moat_disk_area *a = &w->a[i];
		struct statfs sf;
		bool inodes;
		if (a->full || a->fd < 0 || fstatfs(a->fd, &sf) < 0 ||
		    !moat_disk_statfs_full(&sf, &inodes))
			continue;
		a->full = true;
		a->inodes = inodes;
		const struct moat_step *s = &r->plan->steps[a->step];
		moat_observe_limit(r, "disk", s->dest, s->size, inodes ? "inodes" : "blocks");
	}
}

int moat_disk_watch_start(struct moat_run *r, int epfd, uint32_t tag)
{
	struct moat_disk_watch *w = &r->disk;
	bool any = false;
	for (unsigned i = 0; i < w->n; i++) {
		struct moat_disk_area *a = &w->a[i];
		const struct moat_step *s = &r->plan->steps[a->step];
		int have = s->op == MOAT_STEP_OVERLAY	 ? r->upper_fd
			: (s->flags & MOAT_STEPF_OUTPUT) ? r->output_fd
							 : -1;
		if (a->fd < 0 && have >= 0)
			a->fd = fcntl(have, F_DUPFD_CLOEXEC, 3);
		any |= a->fd >= 0;
	}
	if (!any || w->timerfd >= 0)
		return 0;
	/* A sampler that cannot be set up costs the live samples only: the one
	 * at the end still says a limit that was hit then. */
	w->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (w->timerfd < 0)
		return 0;
	struct itimerspec its = {.it_value.tv_nsec = MOAT_DISK_SAMPLE_MS * 1000000L,
				 .it_interval.tv_nsec = MOAT_DISK_SAMPLE_MS * 1000000L};
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	if (timerfd_settime(w->timerfd, 0, &its, NULL) < 0 ||
	    epoll_ctl(epfd, EPOLL_CTL_ADD, w->timerfd, &ev) < 0)
		w->timerfd = safe_close(w->timerfd);
	return 0;
}

void moat_disk_watch_tick(struct moat_run *r)
{
	uint64_t x;
	if (r->disk.timerfd < 0 || read(r->disk.timerfd, &x, sizeof(x)) != sizeof(x))
		return;
	sample(r);
}

void moat_disk_watch_finish(struct moat_run *r)
{
	struct moat_disk_watch *w = &r->disk;
	struct moat_status *st = r->st;
	sample(r);
	w->timerfd = safe_close(w->timerfd);
	st->n_disk_full = st->disk_full_more = 0;
	for (unsigned i = 0; i < w->n; i++) {
		const struct moat_disk_area *a = &w->a[i];
		if (!a->full)
			continue;
		if (st->n_disk_full >= MOAT_DISK_FULL_MAX) {
			st->disk_full_more++;
			continue;
		}
		const struct moat_step *s = &r->plan->steps[a->step];
		struct moat_disk_full *f = &st->disk_full[st->n_disk_full++];
		snprintf(f->path, sizeof(f->path), "%s", s->dest);
		f->limit = s->size;
		f->inodes = a->inodes;
		f->tmpfs_size = s->op == MOAT_STEP_TMPFS && s->size != r->p->disk;
	}
}

void moat_disk_watch_teardown(struct moat_run *r)
{
	struct moat_disk_watch *w = &r->disk;
	w->timerfd = safe_close(w->timerfd);
	for (unsigned i = 0; i < w->n; i++)
		safe_close(w->a[i].fd);
	free(w->a);
	w->a = NULL;
	w->n = 0;
}
