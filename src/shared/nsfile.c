/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat_nsfile_open (nsfile.h). */
#include "shared/nsfile.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "shared/macro.h"

int moat_nsfile_open(const char *path, int nstype)
{
	_cleanup_close_ int pfd = open(path, O_PATH | O_CLOEXEC);
	struct statfs sf;
	struct stat st;
	char proc[40];
	if (pfd < 0)
		return negerrno();
	if (fstat(pfd, &st) < 0 || !S_ISREG(st.st_mode) || fstatfs(pfd, &sf) < 0 ||
	    sf.f_type != NSFS_MAGIC)
		return -EINVAL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", pfd);
	int fd = open(proc, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	if (ioctl(fd, NS_GET_NSTYPE) != nstype) {
		close(fd);
		return -EPROTOTYPE;
	}
	return fd;
}
