/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy worker's own seccomp filter, installed once it holds every
 * descriptor it needs: sockets, pipes and epoll only, nothing executable. */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <seccomp.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include "shared/macro.h"

int moat_proxy_install_seccomp(void)
{
	static const int allow[] = {
		SCMP_SYS(read),
		SCMP_SYS(write),
		SCMP_SYS(close),
		SCMP_SYS(recvfrom),
		SCMP_SYS(sendto),
		SCMP_SYS(recvmsg),
		SCMP_SYS(sendmsg),
		SCMP_SYS(connect),
		SCMP_SYS(accept4),
		SCMP_SYS(shutdown),
		SCMP_SYS(setsockopt),
		SCMP_SYS(getsockopt),
		SCMP_SYS(getsockname),
		SCMP_SYS(getpeername),
		SCMP_SYS(epoll_wait),
		SCMP_SYS(epoll_pwait),
		SCMP_SYS(epoll_ctl),
		SCMP_SYS(splice),
		SCMP_SYS(pipe2),
		SCMP_SYS(fcntl),
		SCMP_SYS(clock_gettime),
		SCMP_SYS(brk),
		SCMP_SYS(munmap),
		SCMP_SYS(mremap),
		SCMP_SYS(madvise),
		SCMP_SYS(rt_sigreturn),
		SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(exit),
		SCMP_SYS(exit_group),
		SCMP_SYS(restart_syscall),
		SCMP_SYS(getpid),
		SCMP_SYS(gettid),
		SCMP_SYS(tgkill),
		SCMP_SYS(futex),
		SCMP_SYS(getrandom),
		/* the calling thread's own signal stack: harmless, and queried by
		 * AddressSanitizer before every noreturn call (the sanitizer build) */
		SCMP_SYS(sigaltstack),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(allow); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0);
	/* New sockets: only TCP/IP streams, exactly as moat_proxy_dial() makes them (the
	 * exec'd helper has every other socket it needs before the filter). */
	if (r >= 0)
		r = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_INET),
			SCMP_A1(SCMP_CMP_EQ, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
	if (r >= 0)
		r = seccomp_rule_add(
			ctx, SCMP_ACT_ALLOW, SCMP_SYS(socket), 2, SCMP_A0(SCMP_CMP_EQ, AF_INET6),
			SCMP_A1(SCMP_CMP_EQ, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC));
	/* Memory may be mapped or change protection, never become executable
	 * (everything it runs was loaded before the filter). */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return r;
}
