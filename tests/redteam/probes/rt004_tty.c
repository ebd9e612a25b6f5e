/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-004 other dangerous tty ioctls: a line discipline change (N_HDLC, N_GSM:
 * module autoload and their CVEs) on a pty the probe owns, TIOCCONS, and
 * tcsetattr on the inherited terminal (fd 0) -- whether that one hit the
 * user's terminal is judged by the rt_ttyhost oracle around the run.
 */
#include <sys/ioctl.h>
#include <termios.h>

#include "probe.h"

#ifndef N_HDLC
#define N_HDLC 13
#endif
#ifndef N_GSM0710
#define N_GSM0710 21
#endif

static void setd(const char *id, int ldisc)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	int s;

	if (m < 0) {
		BLOCKED(id, "no pty: errno=%s", probe_errname(errno));
		return;
	}
	grantpt(m);
	unlockpt(m);
	s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		BLOCKED(id, "open pts errno=%s", probe_errname(errno));
		close(m);
		return;
	}
	/* EINVAL: the discipline is neither built in nor loadable. */
	TRY(id, ioctl(s, TIOCSETD, &ldisc), EPERM, EINVAL);
	close(s);
	close(m);
}

int main(int argc, char **argv)
{
	struct termios t;

	probe_init(argc, argv);
	setd("RT-004/tiocsetd-n_hdlc", N_HDLC);
	setd("RT-004/tiocsetd-n_gsm", N_GSM0710);
	{
		/* TIOCCONS needs CAP_SYS_ADMIN in the initial namespace. */
		int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
		int s = m < 0 ? -1 : (grantpt(m), unlockpt(m), open(ptsname(m), O_RDWR | O_NOCTTY));
		if (s < 0)
			BLOCKED("RT-004/tioccons", "no pty: errno=%s", probe_errname(errno));
		else
			TRY("RT-004/tioccons", ioctl(s, TIOCCONS), EPERM);
	}
	if (isatty(0) && tcgetattr(0, &t) == 0) {
		t.c_lflag &= ~(tcflag_t)(ECHO | ICANON);
		if (tcsetattr(0, TCSANOW, &t) == 0)
			CONTAINED("RT-004/tcsetattr-fd0",
				  "changed the modes of fd 0; rt_ttyhost judges whose terminal");
		else
			BLOCKED("RT-004/tcsetattr-fd0", "errno=%s", probe_errname(errno));
	} else {
		BLOCKED("RT-004/tcsetattr-fd0", "fd 0 is not a terminal");
	}
	return probe_done();
}
