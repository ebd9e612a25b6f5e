/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Network namespace setup beyond loopback: the egress proxy's capture rules
 * and listeners (--net allow).
 *
 * It runs in a child of the sandbox's init, at the same time as the init
 * builds the root: libnftables parses the ruleset and talks to the kernel for
 * 1.5-5 ms, which would otherwise add to the start-up (issue 9). The child
 * is cloned while the init still holds the namespace capabilities, into its
 * own copy of the mount table (what it loads and reads from /etc stays the
 * host's view while the init replaces the root underneath), hands
 * the listeners to the supervisor over the init's socket
 * (moat_net_sandbox_setup, netns_send.c), and reports success or an errno on
 * a pipe. The init waits for that report before it drops its capabilities
 * (moat_hook_network_join), so the command never starts without the capture
 * rules, and the supervisor has every listener before the init's "done".
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sandbox/hooks.h"
#include "network/netns.h"
#include "sandbox/sandbox.h"
#include "shared/fdset.h"
#include "shared/macro.h"

static int net_status_fd = -1;

int moat_hook_network(struct moat_init *sb)
{
	int p[2];
	pid_t pid;

	if (sb->plan->net.mode != MOAT_NET_ALLOW)
		return 0;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -1;
	/* the child's own copy of the mount table from its first instruction:
	 * after this the init may replace the root at any time */
	struct clone_args ca = {.flags = CLONE_NEWNS, .exit_signal = SIGCHLD};
	pid = (pid_t)syscall(SYS_clone3, &ca, sizeof(ca));
	if (pid < 0) {
		int e = errno;
		close(p[0]);
		close(p[1]);
		errno = e;
		return -1;
	}
	if (pid == 0) {
		int32_t e = 0;
		close(p[0]);
		/* dies with the init (and with its pid namespace anyway) */
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0)
			e = errno;
		/* Exactly what it needs, before it loads or parses anything: the
		 * init's socket to the supervisor (3), its report pipe (4), and
		 * /dev/null; none of the init's sources, pipes or the caller's
		 * descriptors. Checked against the kernel's table: fails closed. */
		int null_fd = e ? -1 : open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
		if (!e && null_fd < 0)
			e = errno;
		if (!e) {
			const int keep[] = {null_fd, null_fd, null_fd, sb->sock_child, p[1]};
			e = -moat_fdset_compact(keep, ELEMENTSOF(keep));
			p[1] = 4;
			sb->sock_child = 3;
		}
		if (!e) {
			static const enum moat_fdset_kind want[] = {
				MOAT_FDSET_NULL, MOAT_FDSET_NULL, MOAT_FDSET_NULL,
				MOAT_FDSET_SOCKET, MOAT_FDSET_PIPE};
			e = -moat_fdset_check(want, ELEMENTSOF(want), NULL, 0);
		}
		if (!e)
			e = -moat_net_sandbox_setup(sb);
		(void)!write(p[1], &e, sizeof(e));
		_exit(0);
	}
	close(p[1]);
	net_status_fd = p[0];
	return 0;
}

int moat_hook_network_join(struct moat_init *sb)
{
	int32_t e = 0;
	ssize_t n;

	if (sb->plan->net.mode != MOAT_NET_ALLOW)
		return 0;
	if (net_status_fd < 0) {
		errno = EPROTO;
		return -1;
	}
	while ((n = read(net_status_fd, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(net_status_fd);
	net_status_fd = -1;
	if (n != (ssize_t)sizeof(e))
		e = EPROTO; /* the child died before it reported */
	if (e != 0) {
		errno = e > 0 ? e : EPROTO;
		return -1;
	}
	return 0;
}
