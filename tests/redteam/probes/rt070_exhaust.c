/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-070 exhausting fds and kernel objects. Each flood is bounded (--max N,
 * default 20000) and reports where it stopped:
 *   raise-nofile   setrlimit(RLIMIT_NOFILE) to the hard limit + 1: FAIL if it
 *                  works (the limit is not a limit), BLOCKED on EPERM/EINVAL
 *   nofile-hard    FAIL if the hard limit is above --nofile-cap (default 65536):
 *                  the fds a process may hold are then bounded only by the host
 *   open-flood, eventfd-flood, epoll-flood, timerfd-flood, inotify-flood:
 *                  CONTAINED when stopped by EMFILE/ENFILE/ENOSPC/EPERM/ENOMEM,
 *                  FAIL when --max objects were made without any limit
 *   pipe-size      F_SETPIPE_SZ to 1 MiB: informational (CONTAINED either way)
 *   shm, msg       SysV objects created with key --key K (left behind on purpose:
 *                  the runner checks the host's ipc namespace, then removes them)
 *   mq             POSIX message queue /rt070-<key> (left behind the same way)
 * --hold S: after the inotify flood keep its instances for S seconds (prints
 * "HOLDING"), so the runner can check that the host user's own inotify still
 * works (instances are charged to the host uid through ucounts).
 * --cleanup K: remove the SysV objects and the queue of key K, nothing else.
 */
#include <mqueue.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/ipc.h>
#include <sys/msg.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/stat.h>
#include <sys/timerfd.h>

#include "probe.h"

#define LIMIT_ERRS PROBE_ERRS(EMFILE, ENFILE, ENOSPC, EPERM, ENOMEM, EACCES)

static long max_objs = 20000;
static int fds[200000];
static long n_fds;

static int hold_s;

static void close_all(void)
{
	while (n_fds > 0)
		close(fds[--n_fds]);
}

/* Calls make() until it fails or max_objs objects exist. */
static void flood(const char *id, const char *what, int (*make)(void), bool hold)
{
	int e = 0;
	long n = 0;
	for (; n < max_objs && n_fds < (long)(sizeof fds / sizeof fds[0]); n++) {
		errno = 0;
		int fd = make();
		if (fd < 0) {
			e = errno;
			break;
		}
		fds[n_fds++] = fd;
	}
	if (n >= max_objs)
		FAILED(id, "%ld %s without reaching any limit", n, what);
	else if (probe_errno_in(e, LIMIT_ERRS))
		CONTAINED(id, "%ld %s, then errno=%s", n, what, probe_errname(e));
	else
		INCONCL(id, "%ld %s, then errno=%s", n, what, probe_errname(e));
	if (hold && hold_s > 0) {
		printf("HOLDING\n");
		fflush(stdout);
		sleep((unsigned)hold_s);
	}
	close_all();
}

static int mk_open(void)
{
	return open("/dev/null", O_RDONLY | O_CLOEXEC);
}
static int mk_eventfd(void)
{
	return eventfd(0, EFD_CLOEXEC);
}
static int mk_epoll(void)
{
	return epoll_create1(EPOLL_CLOEXEC);
}
static int mk_timerfd(void)
{
	return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
}
static int mk_inotify(void)
{
	return inotify_init1(IN_CLOEXEC);
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	long cap, key;
	char mqname[64];

	probe_init(argc, argv);
	max_objs = atol(probe_opt("--max") ?: "20000");
	cap = atol(probe_opt("--nofile-cap") ?: "65536");
	key = atol(probe_opt("--key") ?: "0");
	hold_s = atoi(probe_opt("--hold") ?: "0");
	if (probe_opt("--cleanup")) {
		key = atol(probe_opt("--cleanup"));
		int id = shmget((key_t)key, 0, 0);
		if (id >= 0)
			shmctl(id, IPC_RMID, NULL);
		id = msgget((key_t)key, 0);
		if (id >= 0)
			msgctl(id, IPC_RMID, NULL);
		snprintf(mqname, sizeof mqname, "/rt070-%ld", key);
		mq_unlink(mqname);
		return 0;
	}
	if (max_objs <= 0 || max_objs > (long)(sizeof fds / sizeof fds[0]))
		max_objs = 20000;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
		if (rl.rlim_max == RLIM_INFINITY || (long long)rl.rlim_max > cap)
			FAILED("RT-070/nofile-hard", "hard RLIMIT_NOFILE %llu above %ld",
			       (unsigned long long)rl.rlim_max, cap);
		else
			BLOCKED("RT-070/nofile-hard", "hard RLIMIT_NOFILE %llu",
				(unsigned long long)rl.rlim_max);
		struct rlimit up = {rl.rlim_max + 1, rl.rlim_max + 1};
		errno = 0;
		int r = rl.rlim_max == RLIM_INFINITY ? -1 : setrlimit(RLIMIT_NOFILE, &up);
		probe_classify("RT-070/raise-nofile", "setrlimit(NOFILE, hard+1)", r, errno,
			       PROBE_ERRS(EPERM, EINVAL));
		/* the soft limit up to the hard one is allowed, and makes the
		 * floods below meet the real limit */
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	} else {
		INCONCL("RT-070/nofile-hard", "getrlimit: %s", strerror(errno));
	}

	flood("RT-070/open-flood", "open fds", mk_open, false);
	flood("RT-070/eventfd-flood", "eventfds", mk_eventfd, false);
	flood("RT-070/epoll-flood", "epoll instances", mk_epoll, false);
	flood("RT-070/timerfd-flood", "timerfds", mk_timerfd, false);
	flood("RT-070/inotify-flood", "inotify instances", mk_inotify, true);

	int p[2];
	if (pipe2(p, O_CLOEXEC) == 0) {
		errno = 0;
		int r = fcntl(p[1], F_SETPIPE_SZ, 1 << 20);
		CONTAINED("RT-070/pipe-size", "F_SETPIPE_SZ 1 MiB: rc=%d errno=%s", r,
			  probe_errname(r < 0 ? errno : 0));
		close(p[0]);
		close(p[1]);
	}

	if (key) {
		errno = 0;
		int shm = shmget((key_t)key, 1 << 20, IPC_CREAT | IPC_EXCL | 0600);
		if (shm >= 0)
			CONTAINED("RT-070/shm", "SysV shm key %ld created (id %d)", key, shm);
		else
			BLOCKED("RT-070/shm", "shmget: errno=%s", probe_errname(errno));
		errno = 0;
		int msq = msgget((key_t)key, IPC_CREAT | IPC_EXCL | 0600);
		if (msq >= 0)
			CONTAINED("RT-070/msg", "SysV msg key %ld created (id %d)", key, msq);
		else
			BLOCKED("RT-070/msg", "msgget: errno=%s", probe_errname(errno));
		snprintf(mqname, sizeof mqname, "/rt070-%ld", key);
		errno = 0;
		struct mq_attr a = {.mq_maxmsg = 1, .mq_msgsize = 64};
		mqd_t q = mq_open(mqname, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600, &a);
		if (q != (mqd_t)-1) {
			CONTAINED("RT-070/mq", "POSIX mq %s created", mqname);
			mq_close(q);
		} else {
			BLOCKED("RT-070/mq", "mq_open: errno=%s", probe_errname(errno));
		}
	}
	return probe_done();
}
