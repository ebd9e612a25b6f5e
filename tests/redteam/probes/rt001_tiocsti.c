/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-001 TIOCSTI and RT-003 TIOCLINUX terminal injection.
 * try-syscall on fd -1 (EBADF = the ioctl reached the kernel), with and without
 * garbage in the upper 32 bits of the request (CVE-2019-10063), a real
 * injection into a pty this probe owns, and a bad-pointer TIOCSTI on fds 0-2 and
 * /dev/tty (EFAULT = it was our controlling tty and nothing stopped it).
 * --inject: really push one byte into fd 0 (only under the rt_ttyhost oracle).
 */
#include <sys/ioctl.h>
#include <termios.h>

#include "probe.h"

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static int pty_inject(void *arg)
{
	int m, s;
	char c = 'x';

	(void)arg;
	if (setsid() < 0)
		return -1;
	m = posix_openpt(O_RDWR | O_NOCTTY);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return -1;
	s = open(ptsname(m), O_RDWR); /* becomes our controlling tty */
	if (s < 0)
		return -1;
	ioctl(s, TIOCSCTTY, 0);
	return ioctl(s, TIOCSTI, &c);
}

int main(int argc, char **argv)
{
	const unsigned long hi = 1UL << 32;
	int st;

	probe_init(argc, argv);
	TRY("RT-001/ioctl-badfd", syscall(SYS_ioctl, -1, (unsigned long)TIOCSTI, 0), EPERM);
	TRY("RT-001/ioctl-badfd-hibits", syscall(SYS_ioctl, -1, (unsigned long)TIOCSTI | hi, 0),
	    EPERM);
	TRY("RT-003/ioctl-badfd", syscall(SYS_ioctl, -1, (unsigned long)TIOCLINUX, 0), EPERM);
	TRY("RT-003/ioctl-badfd-hibits", syscall(SYS_ioctl, -1, (unsigned long)TIOCLINUX | hi, 0),
	    EPERM);

	st = probe_in_child(pty_inject, NULL);
	if (st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == ENOENT)
		BLOCKED("RT-001/own-pty-inject", "no /dev/ptmx: ENOENT");
	else
		probe_classify_child("RT-001/own-pty-inject", "TIOCSTI on own pty", st,
				     PROBE_ERRS(EPERM, EIO));

	for (int fd = 0; fd <= 3; fd++) {
		char id[64];
		int tfd = fd;

		snprintf(id, sizeof id, "RT-001/%s",
			 fd == 3 ? "dev-tty" : (const char *[]){"fd0", "fd1", "fd2"}[fd]);
		if (fd == 3) {
			tfd = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
			if (tfd < 0) {
				if (errno == ENXIO || errno == ENOENT || errno == EACCES)
					BLOCKED(id, "open /dev/tty errno=%s", probe_errname(errno));
				else
					FAILED(id, "open /dev/tty errno=%s", probe_errname(errno));
				continue;
			}
		}
		if (!isatty(tfd)) {
			SKIPPED(id, "not a terminal");
			continue;
		}
		TRY(id, syscall(SYS_ioctl, tfd, (unsigned long)TIOCSTI, (void *)1), EPERM, EIO,
		    ENOTTY);
	}
	if (probe_flag("--inject") && isatty(0)) {
		char c = '#';
		errno = 0;
		int r = ioctl(0, TIOCSTI, &c);
		int e = errno;
		/* The terminal echoes an injected byte: keep it off the RESULT line. */
		printf("\n");
		probe_classify("RT-001/fd0-inject", "ioctl(0, TIOCSTI, \"#\")", r, e,
			       PROBE_ERRS(EPERM, EIO, ENOTTY));
	}
	return probe_done();
}
