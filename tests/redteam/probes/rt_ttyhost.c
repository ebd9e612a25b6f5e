/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host-side tty oracle (not a probe): runs COMMAND... on a fresh pty that is its
 * controlling terminal and stdin/stdout/stderr, relays the output, and after the
 * command exits reports whether anything was injected into the terminal's input
 * queue (RT-001) or its modes were changed (RT-004). Stands in for the user's
 * interactive shell. Usage: rt_ttyhost COMMAND [ARG...]
 */
#include <poll.h>
#include <sys/ioctl.h>
#include <termios.h>

#include "probe.h"

/* Copies pty output to stdout without the CRs the terminal adds. */
static void relay(const char *buf, ssize_t n)
{
	for (ssize_t i = 0; i < n; i++)
		if (buf[i] != '\r')
			putchar(buf[i]);
}

int main(int argc, char **argv)
{
	struct termios before, after;
	int m, s, st, avail = 0;
	pid_t pid;
	char buf[4096];

	probe_init(argc, argv);
	if (argc < 2) {
		fprintf(stderr, "usage: rt_ttyhost COMMAND [ARG...]\n");
		return 2;
	}
	m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
		return perror("ptmx"), 2;
	s = open(ptsname(m), O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0 || tcgetattr(s, &before) < 0)
		return perror("pts"), 2;
	pid = fork();
	if (pid < 0)
		return perror("fork"), 2;
	if (pid == 0) {
		setsid();
		if (ioctl(s, TIOCSCTTY, 0) < 0)
			perror("TIOCSCTTY");
		dup2(s, 0);
		dup2(s, 1);
		dup2(s, 2);
		execvp(argv[1], argv + 1);
		perror("exec");
		_exit(127);
	}
	/* Relay until the child is gone and the master has nothing more. */
	for (;;) {
		struct pollfd p = {.fd = m, .events = POLLIN};
		int r = poll(&p, 1, 200);
		if (r > 0 && (p.revents & POLLIN)) {
			ssize_t n = read(m, buf, sizeof buf);
			if (n > 0) {
				relay(buf, n);
				continue;
			}
		}
		if (waitpid(pid, &st, WNOHANG) == pid)
			break;
	}
	fflush(stdout);
	/* Drain what is left of the output. */
	fcntl(m, F_SETFL, O_NONBLOCK);
	for (ssize_t n; (n = read(m, buf, sizeof buf)) > 0;)
		relay(buf, n);
	printf("\n");
	if (tcgetattr(s, &after) < 0)
		return perror("tcgetattr"), 2;
	if (before.c_lflag != after.c_lflag || before.c_iflag != after.c_iflag ||
	    before.c_oflag != after.c_oflag || before.c_cflag != after.c_cflag)
		FAILED("RT-004/host-tty-modes",
		       "host terminal modes changed: lflag %#x->%#x iflag %#x->%#x",
		       (unsigned)before.c_lflag, (unsigned)after.c_lflag, (unsigned)before.c_iflag,
		       (unsigned)after.c_iflag);
	else
		BLOCKED("RT-004/host-tty-modes", "host terminal modes unchanged");
	/* Non-canonical, so a partial line counts too. */
	after.c_lflag &= ~(tcflag_t)ICANON;
	after.c_cc[VMIN] = 0;
	after.c_cc[VTIME] = 0;
	tcsetattr(s, TCSANOW, &after);
	if (ioctl(s, FIONREAD, &avail) < 0)
		return perror("FIONREAD"), 2;
	if (avail > 0)
		FAILED("RT-001/host-tty-input", "%d byte(s) injected into the host terminal",
		       avail);
	else
		BLOCKED("RT-001/host-tty-input", "nothing injected into the host terminal");
	printf("CHILD %s %d\n", WIFEXITED(st) ? "exit" : "signal",
	       WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
	return probe_done();
}
