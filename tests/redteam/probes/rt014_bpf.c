/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-014 bpf(), perf_event_open(), userfaultfd(). Bad pointers and flags
 * (EFAULT/EINVAL = reached the kernel), then a real userfaultfd in user-mode-only
 * mode (allowed to unprivileged users whatever vm.unprivileged_userfaultfd says)
 * and a real software perf event on ourselves.
 */
#include <linux/bpf.h>
#include <linux/perf_event.h>
#include <linux/userfaultfd.h>

#include "probe.h"

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

int main(int argc, char **argv)
{
	struct perf_event_attr pa = {.type = PERF_TYPE_SOFTWARE,
				     .size = sizeof pa,
				     .config = PERF_COUNT_SW_TASK_CLOCK,
				     .exclude_kernel = 1,
				     .exclude_hv = 1};
	long fd;

	probe_init(argc, argv);
	TRY("RT-014/bpf-prog-load-badptr", syscall(SYS_bpf, BPF_PROG_LOAD, (void *)1, 128), EPERM);
	TRY("RT-014/bpf-map-create-badptr", syscall(SYS_bpf, BPF_MAP_CREATE, (void *)1, 128),
	    EPERM);
	TRY("RT-014/perf_event_open-badptr", syscall(SYS_perf_event_open, (void *)1, 0, -1, -1, 0),
	    EPERM);
	errno = 0;
	fd = syscall(SYS_perf_event_open, &pa, 0, -1, -1, 0);
	probe_classify("RT-014/perf_event_open-self", "perf_event_open(task clock, self)", fd,
		       errno, PROBE_ERRS(EPERM, EACCES));
	if (fd >= 0)
		close((int)fd);
	TRY("RT-014/userfaultfd-badflags",
	    syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY | 0x4000000), EPERM);
	errno = 0;
	fd = syscall(SYS_userfaultfd, UFFD_USER_MODE_ONLY | O_CLOEXEC);
	probe_classify("RT-014/userfaultfd-real", "userfaultfd(UFFD_USER_MODE_ONLY)", fd, errno,
		       PROBE_ERRS(EPERM));
	if (fd >= 0)
		close((int)fd);
	errno = 0;
	fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
	probe_classify("RT-014/dev-userfaultfd", "open(/dev/userfaultfd)", fd, errno,
		       PROBE_ERRS(ENOENT, EACCES, EPERM));
	if (fd >= 0)
		close((int)fd);
	return probe_done();
}
