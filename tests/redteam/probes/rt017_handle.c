/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-017 open_by_handle_at ("shocker"): name_to_handle_at with bad pointers,
 * then a real handle of "/" and open_by_handle_at on it (success = FAIL).
 */
#include "probe.h"

int main(int argc, char **argv)
{
	struct {
		struct file_handle fh;
		unsigned char data[MAX_HANDLE_SZ];
	} h;
	int mnt = -1, fd;
	int rootfd = open("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	probe_init(argc, argv);
	TRY("RT-017/name_to_handle_at-badptr",
	    syscall(SYS_name_to_handle_at, AT_FDCWD, "/", (void *)1, (void *)1, 0), EPERM);
	TRY("RT-017/open_by_handle_at-badfd", syscall(SYS_open_by_handle_at, -1, (void *)1, 0),
	    EPERM);
	h.fh.handle_bytes = MAX_HANDLE_SZ;
	if (syscall(SYS_name_to_handle_at, AT_FDCWD, "/", &h.fh, &mnt, 0) < 0) {
		probe_classify("RT-017/open_by_handle_at-root", "name_to_handle_at(/)", -1, errno,
			       PROBE_FILTERED);
		return probe_done();
	}
	errno = 0;
	fd = (int)syscall(SYS_open_by_handle_at, rootfd, &h.fh, O_RDONLY | O_CLOEXEC);
	probe_classify("RT-017/open_by_handle_at-root", "open_by_handle_at(handle of /)", fd, errno,
		       PROBE_ERRS(EPERM));
	if (fd >= 0)
		close(fd);
	return probe_done();
}
