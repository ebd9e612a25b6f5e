/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * --disk said when it was hit: the supervisor watches every writable tmpfs of
 * the sandbox (/tmp, /dev/shm, home and --tmpfs: an O_PATH fd of each root,
 * handed over by the init as MOAT_FD_DISK + step; /output and the workspace
 * overlay's upper layer through the fds it holds anyway) with fstatfs(): an
 * area with no free block or no free inode is full, and a write there fails
 * with ENOSPC. It samples every MOAT_DISK_SAMPLE_MS while the sandbox lives
 * (a timerfd on the sandbox's epoll set) and once more at the end, before
 * teardown (the fds keep the filesystems alive after the init is gone).
 *
 * What can be missed: an area that was full for less than the interval and
 * was emptied again before the next sample (a tool that deletes its output
 * right after an ENOSPC); a write refused because it did not fit while the
 * area kept a few free blocks (one large write is cut short at the last
 * page, so the area is full then, but a fallocate() that does not fit is
 * refused whole). The kernel reports no ENOSPC to anyone but the writer.
 * The fds are only ever given to fstatfs(): nothing is opened beneath them.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/statfs.h>

struct moat_run;
struct moat_plan;
struct moat_step;

#define MOAT_DISK_SAMPLE_MS 200

struct moat_disk_area {
	unsigned step; /* its plan step (dest, size) */
	int fd; /* owned; -1: not seen at this isolation level */
	bool full, inodes; /* found full; its inodes (not its blocks) ran out */
};

struct moat_disk_watch {
	struct moat_disk_area *a;
	unsigned n;
	int timerfd; /* -1 when not sampling */
};

/* Pure: whether step s makes a --disk-sized (or --tmpfs-sized) writable area. */
bool moat_disk_step_watched(const struct moat_step *s);
/* Pure: whether sf is a full filesystem; *ret_inodes: by its inodes. */
bool moat_disk_statfs_full(const struct statfs *sf, bool *ret_inodes);

/* Before the backend starts: one area per watched step of r->plan. */
int moat_disk_watch_prepare(struct moat_run *r);
/* MOAT_FD_DISK + step: 1 taken (now owned), 0 not this kind. */
int moat_disk_watch_take_fd(struct moat_run *r, int kind, int fd);
/* The sandbox is up: /output's and the upper layer's fds (copies), the timer
 * on epfd with tag. */
int moat_disk_watch_start(struct moat_run *r, int epfd, uint32_t tag);
/* The timer fired: one sample. */
void moat_disk_watch_tick(struct moat_run *r);
/* The last sample, the full areas into r->st. */
void moat_disk_watch_finish(struct moat_run *r);
/* Closes everything; safe twice. */
void moat_disk_watch_teardown(struct moat_run *r);
