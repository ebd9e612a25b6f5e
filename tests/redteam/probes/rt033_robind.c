/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-033 read-only binds resist every mutation. --dir D names a directory the
 * runner bound read-only (inside) or the same writable directory (control):
 * D/f is a world-writable file, D/sub a world-writable directory holding D/sub/g
 * and D/sub/h.
 * Every mutation that succeeds is FAIL (the control recreates D each run). Also
 * access(W_OK) on the system binds.
 */
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/xattr.h>

#include "probe.h"

#define SAFE PROBE_ERRS(EROFS, EACCES, EPERM)

static char f[4200], g[4200], h[4200], n1[4200], n2[4200], n3[4200], r[4200];

int main(int argc, char **argv)
{
	const char *d;
	int fd;

	probe_init(argc, argv);
	d = probe_opt("--dir");
	if (d) {
		snprintf(f, sizeof f, "%s/f", d);
		snprintf(g, sizeof g, "%s/sub/g", d);
		snprintf(h, sizeof h, "%s/sub/h", d);
		snprintf(n1, sizeof n1, "%s/new1", d);
		snprintf(n2, sizeof n2, "%s/new2", d);
		snprintf(n3, sizeof n3, "%s/new3", d);
		snprintf(r, sizeof r, "%s/sub/g.renamed", d);
		TRY("RT-033/append", open(f, O_WRONLY | O_APPEND | O_CLOEXEC), EROFS, EACCES,
		    EPERM);
		TRY("RT-033/create", open(n1, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644), EROFS,
		    EACCES, EPERM);
		TRY("RT-033/mkdir", mkdir(n2, 0755), EROFS, EACCES, EPERM);
		TRY("RT-033/rename", rename(g, r), EROFS, EACCES, EPERM);
		TRY("RT-033/unlink", unlink(h), EROFS, EACCES, EPERM);
		TRY("RT-033/chmod", chmod(f, 0666), EROFS, EACCES, EPERM);
		TRY("RT-033/chown-noop", chown(f, (uid_t)-1, (gid_t)-1), EROFS, EACCES, EPERM);
		TRY("RT-033/utimensat", utimensat(AT_FDCWD, f, NULL, 0), EROFS, EACCES, EPERM);
		TRY("RT-033/truncate", truncate(f, 0), EROFS, EACCES, EPERM);
		TRY("RT-033/setxattr", setxattr(f, "user.rt", "x", 1, 0), EROFS, EACCES, EPERM,
		    ENOTSUP);
		TRY("RT-033/symlink", symlink("/etc/passwd", n3), EROFS, EACCES, EPERM);
		errno = 0;
		fd = open(f, O_RDWR | O_CLOEXEC);
		if (fd < 0) {
			probe_classify("RT-033/mmap-shared-write", "open(O_RDWR) for mmap", -1,
				       errno, SAFE);
		} else {
			void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
			probe_classify("RT-033/mmap-shared-write", "mmap(PROT_WRITE, MAP_SHARED)",
				       m == MAP_FAILED ? -1 : 0, errno, SAFE);
			if (m != MAP_FAILED)
				munmap(m, 4096);
			close(fd);
		}
		fd = open(f, O_RDONLY | O_CLOEXEC);
		if (fd >= 0) {
			int flags = 0;
			if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0)
				BLOCKED("RT-033/setflags",
					"FS_IOC_GETFLAGS errno=%s (no flags here)",
					probe_errname(errno));
			else
				TRY("RT-033/setflags", ioctl(fd, FS_IOC_SETFLAGS, &flags), EROFS,
				    EACCES, EPERM);
			close(fd);
		}
		TRY("RT-033/remount-rw", mount(NULL, d, NULL, MS_REMOUNT | MS_BIND, NULL), EPERM,
		    EROFS);
	}
	TRY("RT-033/access-w-usr", access("/usr", W_OK), EROFS, EACCES, EPERM, ENOENT);
	TRY("RT-033/access-w-usr-bin", access("/usr/bin", W_OK), EROFS, EACCES, EPERM, ENOENT);
	TRY("RT-033/access-w-etc-passwd", access("/etc/passwd", W_OK), EROFS, EACCES, EPERM,
	    ENOENT);
	TRY("RT-033/access-w-lib", access("/lib", W_OK), EROFS, EACCES, EPERM, ENOENT);
	return probe_done();
}
