/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small epoll event loop in the spirit of redis' ae.c: file events keyed by
 * fd (level-triggered), one periodic tick for timeouts, stop from a handler.
 * Single-threaded; handlers may add, change and delete registrations freely.
 */
#pragma once

#include <stdint.h>
#include <sys/epoll.h>

struct moat_loop;

/* events: EPOLLIN / EPOLLOUT / EPOLLERR / EPOLLHUP as reported. */
typedef void (*moat_loop_fd_fn)(struct moat_loop *l, int fd, uint32_t events, void *data);
typedef void (*moat_loop_tick_fn)(struct moat_loop *l, uint64_t now_ms, void *data);

/* max_fd: fds must be below it (the RLIMIT_NOFILE soft limit is a good value). */
int moat_loop_new(unsigned max_fd, struct moat_loop **ret);
struct moat_loop *moat_loop_free(struct moat_loop *l);

/* Register fd (events: EPOLLIN|EPOLLOUT, may be 0). -EEXIST if already there. */
int moat_loop_add(struct moat_loop *l, int fd, uint32_t events, moat_loop_fd_fn fn, void *data);
/* Change the interest set (no syscall if unchanged). */
int moat_loop_mod(struct moat_loop *l, int fd, uint32_t events);
/* Forget fd (before closing it). Safe for unknown fds. */
void moat_loop_del(struct moat_loop *l, int fd);

void moat_loop_set_tick(struct moat_loop *l, unsigned interval_ms, moat_loop_tick_fn fn,
			void *data);
/* Run until moat_loop_stop(). Returns 0, or -errno if epoll_wait fails. */
int moat_loop_run(struct moat_loop *l);
void moat_loop_stop(struct moat_loop *l);

/* Also stop when *flag becomes non-zero (set from a signal handler; checked
 * whenever epoll_wait returns, including EINTR). */
void moat_loop_set_stop_flag(struct moat_loop *l, volatile int *flag);

/* CLOCK_MONOTONIC in milliseconds. */
uint64_t moat_loop_now_ms(void);
