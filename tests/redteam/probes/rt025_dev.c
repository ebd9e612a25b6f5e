/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-025 device nodes: only the minimal set exists in /dev, dangerous devices
 * cannot be opened (opened read-only and closed at once, never read), and mknod
 * of a device fails.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "probe.h"

int main(int argc, char **argv)
{
	static const char *const allowed[] = {
		"null", "zero",	 "full",   "random", "urandom", "tty",	  "ptmx", "pts", "shm",
		"fd",	"stdin", "stdout", "stderr", "console", "mqueue", "core", NULL};
	static const char *const devs[] = {
		"/dev/mem",	     "/dev/kmem",      "/dev/port",	     "/dev/sda",
		"/dev/vda",	     "/dev/nvme0n1",   "/dev/loop0",	     "/dev/loop-control",
		"/dev/kvm",	     "/dev/fuse",      "/dev/net/tun",	     "/dev/uinput",
		"/dev/input/event0", "/dev/dri/card0", "/dev/vsock",	     "/dev/vhost-net",
		"/dev/userfaultfd",  "/dev/kmsg",      "/dev/btrfs-control", "/dev/autofs",
		"/dev/cpu/0/msr",    "/dev/hwrng",     "/dev/tty0",	     "/dev/tty1",
		"/dev/snd/timer",    "/dev/video0",
	};
	char extra[512] = "";
	int n_extra = 0;
	DIR *d;
	struct dirent *e;

	probe_init(argc, argv);
	d = opendir("/dev");
	while (d && (e = readdir(d))) {
		bool ok = e->d_name[0] == '.';
		for (int i = 0; !ok && allowed[i]; i++)
			ok = strcmp(e->d_name, allowed[i]) == 0;
		if (!ok && n_extra++ < 12 && strlen(extra) + strlen(e->d_name) + 2 < sizeof extra) {
			strcat(extra, " ");
			strcat(extra, e->d_name);
		}
	}
	if (d)
		closedir(d);
	if (n_extra)
		FAILED("RT-025/dev-listing", "%d unexpected entries in /dev:%s", n_extra, extra);
	else
		BLOCKED("RT-025/dev-listing", "only the minimal set in /dev");
	for (size_t i = 0; i < sizeof devs / sizeof devs[0]; i++) {
		char id[96];
		snprintf(id, sizeof id, "RT-025/open%s", devs[i] + 4);
		for (char *p = id; *p; p++)
			if (*p == '/' && p > id + 7)
				*p = '-';
		errno = 0;
		int fd = open(devs[i], O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
		int err = errno;
		if (fd >= 0)
			close(fd);
		probe_classify(id, devs[i], fd, err,
			       PROBE_ERRS(ENOENT, EACCES, EPERM, ENXIO, ENODEV));
	}
	{
		char dir[] = "/tmp/rt025.XXXXXX", p[64];
		if (!mkdtemp(dir)) {
			BLOCKED("RT-025/mknod-char", "no writable /tmp: %s", probe_errname(errno));
		} else {
			snprintf(p, sizeof p, "%s/m", dir);
			TRY("RT-025/mknod-char", mknod(p, S_IFCHR | 0600, makedev(1, 3)), EPERM,
			    EROFS);
			unlink(p);
			snprintf(p, sizeof p, "%s/b", dir);
			TRY("RT-025/mknod-block", mknod(p, S_IFBLK | 0600, makedev(7, 0)), EPERM,
			    EROFS);
			unlink(p);
			rmdir(dir);
		}
	}
	return probe_done();
}
