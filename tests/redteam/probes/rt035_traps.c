/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-035 traps for host-side tools: plants, in --dir D (the sandbox's /output
 * or its workspace), every kind of file a host-side copy, diff or apply could
 * be fooled by:
 *   link-secret -> --target T (an absolute path to a host canary)
 *   link-etc    -> /etc
 *   link-up     -> ../../../..
 *   hard-secret    a hard link to T (only possible where T is reachable)
 *   out.log        a FIFO (a reader that opens it blocks)
 *   x.sock         a bound unix socket
 *   dev-null       a character device (mknod)
 *   suid, sgid     regular files with mode 04755 and 02755
 *   sgid-dir/      a directory with mode 02777
 * Each planted trap is CONTAINED (it exists only here: the runner's host oracle
 * decides whether the host-side copy fell for it); a trap that cannot even be
 * planted is BLOCKED. Never writes outside D.
 */
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>

#include "probe.h"

static char dir[2048];

static const char *at(const char *name)
{
	static char p[4200];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

static void planted(const char *id, const char *what, int rc, int err)
{
	if (rc == 0)
		CONTAINED(id, "%s planted", what);
	else
		BLOCKED(id, "%s not planted: errno=%s", what, probe_errname(err));
}

int main(int argc, char **argv)
{
	const char *d, *target;
	int rc, fd;

	probe_init(argc, argv);
	d = probe_opt("--dir");
	target = probe_opt("--target");
	if (!d || !target) {
		fprintf(stderr, "usage: rt035_traps --dir D --target HOST-FILE\n");
		return 2;
	}
	snprintf(dir, sizeof dir, "%s", d);

	errno = 0;
	rc = symlink(target, at("link-secret"));
	planted("RT-035/plant-link-secret", "symlink to the host canary", rc, errno);
	errno = 0;
	rc = symlink("/etc", at("link-etc"));
	planted("RT-035/plant-link-etc", "symlink to /etc", rc, errno);
	errno = 0;
	rc = symlink("../../../..", at("link-up"));
	planted("RT-035/plant-link-up", "symlink ../../../..", rc, errno);
	errno = 0;
	rc = link(target, at("hard-secret"));
	planted("RT-035/plant-hardlink-secret", "hard link to the host canary", rc, errno);
	errno = 0;
	rc = mkfifo(at("out.log"), 0644);
	planted("RT-035/plant-fifo", "FIFO", rc, errno);
	errno = 0;
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd >= 0) {
		struct sockaddr_un a = {.sun_family = AF_UNIX};
		snprintf(a.sun_path, sizeof a.sun_path, "%s", at("x.sock"));
		rc = bind(fd, (struct sockaddr *)&a, sizeof a);
		planted("RT-035/plant-socket", "unix socket", rc, errno);
		close(fd);
	} else {
		planted("RT-035/plant-socket", "unix socket", -1, errno);
	}
	errno = 0;
	rc = mknod(at("dev-null"), S_IFCHR | 0666, makedev(1, 3));
	planted("RT-035/plant-device", "character device 1:3", rc, errno);
	errno = 0;
	fd = open(at("suid"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	rc = fd < 0 ? -1 : 0;
	if (fd >= 0) {
		(void)!write(fd, "#!/bin/sh\nid\n", 13);
		rc = fchmod(fd, 04755);
		close(fd);
	}
	planted("RT-035/plant-setuid", "setuid file", rc, errno);
	errno = 0;
	fd = open(at("sgid"), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0755);
	rc = fd < 0 ? -1 : 0;
	if (fd >= 0) {
		rc = fchmod(fd, 02755);
		close(fd);
	}
	planted("RT-035/plant-setgid", "setgid file", rc, errno);
	errno = 0;
	rc = mkdir(at("sgid-dir"), 0777);
	if (rc == 0)
		rc = chmod(at("sgid-dir"), 02777);
	planted("RT-035/plant-setgid-dir", "setgid directory", rc, errno);
	return probe_done();
}
