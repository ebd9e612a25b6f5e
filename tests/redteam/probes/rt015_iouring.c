/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-015 io_uring (its operations bypass per-syscall filtering). try-syscall
 * for the three calls, then a real io_uring_setup: success is FAIL.
 */
#include <linux/io_uring.h>

#include "probe.h"

int main(int argc, char **argv)
{
	struct io_uring_params p;
	long fd;

	probe_init(argc, argv);
	TRY("RT-015/setup-badptr", syscall(SYS_io_uring_setup, 8, (void *)1), ENOSYS, EPERM);
	TRY("RT-015/enter-badfd", syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0), ENOSYS, EPERM);
	TRY("RT-015/register-badfd", syscall(SYS_io_uring_register, -1, 0, NULL, 0), ENOSYS, EPERM);
	memset(&p, 0, sizeof p);
	errno = 0;
	fd = syscall(SYS_io_uring_setup, 8, &p);
	probe_classify("RT-015/setup-real", "io_uring_setup(8)", fd, errno,
		       PROBE_ERRS(ENOSYS, EPERM));
	if (fd >= 0)
		close((int)fd);
	return probe_done();
}
