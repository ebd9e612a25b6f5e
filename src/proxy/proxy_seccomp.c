/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy worker's own seccomp filter, installed once it holds every
 * descriptor it needs: sockets, pipes and epoll only, nothing executable
 * (the base every confined helper shares is kernel/confine.c's). */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <seccomp.h>
#include <sys/socket.h>

#include "kernel/confine.h"
#include "shared/macro.h"

/* New sockets: only TCP/IP streams, exactly as moat_proxy_dial() makes them (the
 * exec'd helper has every other socket it needs before the filter). */
static int socket_rules(scmp_filter_ctx ctx, void *userdata)
{
	int r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2,
				 SCMP_A0(SCMP_CMP_EQ, AF_INET),
				 SCMP_A1(SCMP_CMP_EQ, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
	if (r >= 0)
		r = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_INET6),
			SCMP_A1(SCMP_CMP_EQ, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
	return r;
}

int moat_proxy_install_seccomp(void)
{
	static const int allow[] = {
		SCMP_SYS(recvfrom),    SCMP_SYS(sendto),      SCMP_SYS(recvmsg),
		SCMP_SYS(sendmsg),     SCMP_SYS(connect),     SCMP_SYS(accept4),
		SCMP_SYS(shutdown),    SCMP_SYS(setsockopt),  SCMP_SYS(getsockopt),
		SCMP_SYS(getsockname), SCMP_SYS(getpeername), SCMP_SYS(epoll_wait),
		SCMP_SYS(epoll_pwait), SCMP_SYS(epoll_ctl),   SCMP_SYS(splice),
		SCMP_SYS(pipe2),       SCMP_SYS(fcntl),	      SCMP_SYS(tgkill),
	};
	return moat_confine_seccomp(allow, ELEMENTSOF(allow), socket_rules, NULL);
}
