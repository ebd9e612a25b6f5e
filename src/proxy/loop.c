/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "proxy/loop.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "shared/macro.h"

#define LOOP_BATCH 256

struct reg {
	moat_loop_fd_fn fn;
	void *data;
	uint32_t events;
	bool used;
};

struct moat_loop {
	int epfd;
	unsigned max_fd;
	struct reg *regs; /* indexed by fd */
	moat_loop_tick_fn tick;
	void *tick_data;
	unsigned tick_ms;
	uint64_t next_tick;
	bool stop;
	volatile int *stop_flag;
};

uint64_t moat_loop_now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

int moat_loop_new(unsigned max_fd, struct moat_loop **ret)
{
	struct moat_loop *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->regs = calloc(max_fd, sizeof(*l->regs));
	l->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (!l->regs || l->epfd < 0) {
		int r = l->regs ? negerrno() : -ENOMEM;
		moat_loop_free(l);
		return r;
	}
	l->max_fd = max_fd;
	*ret = l;
	return 0;
}

struct moat_loop *moat_loop_free(struct moat_loop *l)
{
	if (!l)
		return NULL;
	if (l->epfd >= 0)
		close(l->epfd);
	free(l->regs);
	free(l);
	return NULL;
}

int moat_loop_add(struct moat_loop *l, int fd, uint32_t events, moat_loop_fd_fn fn, void *data)
{
	struct epoll_event ev = {.events = events, .data.fd = fd};

	if (fd < 0 || (unsigned)fd >= l->max_fd)
		return -EMFILE;
	if (l->regs[fd].used)
		return -EEXIST;
	if (epoll_ctl(l->epfd, EPOLL_CTL_ADD, fd, &ev) < 0)
		return negerrno();
	l->regs[fd] = (struct reg){.fn = fn, .data = data, .events = events, .used = true};
	return 0;
}

int moat_loop_mod(struct moat_loop *l, int fd, uint32_t events)
{
	struct epoll_event ev = {.events = events, .data.fd = fd};

	if (fd < 0 || (unsigned)fd >= l->max_fd || !l->regs[fd].used)
		return -ENOENT;
	if (l->regs[fd].events == events)
		return 0;
	if (epoll_ctl(l->epfd, EPOLL_CTL_MOD, fd, &ev) < 0)
		return negerrno();
	l->regs[fd].events = events;
	return 0;
}

void moat_loop_del(struct moat_loop *l, int fd)
{
	if (fd < 0 || (unsigned)fd >= l->max_fd || !l->regs[fd].used)
		return;
	(void)epoll_ctl(l->epfd, EPOLL_CTL_DEL, fd, NULL);
	l->regs[fd] = (struct reg){0};
}

void moat_loop_set_tick(struct moat_loop *l, unsigned interval_ms, moat_loop_tick_fn fn, void *data)
{
	l->tick = fn;
	l->tick_data = data;
	l->tick_ms = interval_ms;
	l->next_tick = moat_loop_now_ms() + interval_ms;
}

void moat_loop_set_stop_flag(struct moat_loop *l, volatile int *flag)
{
	l->stop_flag = flag;
}

void moat_loop_stop(struct moat_loop *l)
{
	l->stop = true;
}

int moat_loop_run(struct moat_loop *l)
{
	struct epoll_event evs[LOOP_BATCH];

	while (!l->stop && !(l->stop_flag && *l->stop_flag)) {
		int timeout = -1, n;
		uint64_t now = moat_loop_now_ms();

		if (l->tick) {
			if (now >= l->next_tick) {
				l->next_tick = now + l->tick_ms;
				l->tick(l, now, l->tick_data);
				continue;
			}
			timeout = (int)(l->next_tick - now);
		}
		n = epoll_wait(l->epfd, evs, LOOP_BATCH, timeout);
		if (l->stop_flag && *l->stop_flag)
			break;
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		for (int i = 0; i < n && !l->stop; i++) {
			int fd = evs[i].data.fd;
			/* A handler earlier in this batch may have dropped it. */
			if (!l->regs[fd].used)
				continue;
			l->regs[fd].fn(l, fd, evs[i].events, l->regs[fd].data);
		}
	}
	return 0;
}
