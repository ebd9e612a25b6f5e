/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The identity drop and seccomp base of moat's confined helpers (confine.h). */
#include "kernel/confine.h"

#include <errno.h>
#include <grp.h>
#include <linux/capability.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shared/macro.h"

#define CONFINE_NOBODY 65534u

int moat_confine_drop_root(void)
{
	if (geteuid() != 0)
		return 0;
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return negerrno();
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return negerrno();
	if (setgroups(0, NULL) < 0 ||
	    setresgid(CONFINE_NOBODY, CONFINE_NOBODY, CONFINE_NOBODY) < 0 ||
	    setresuid(CONFINE_NOBODY, CONFINE_NOBODY, CONFINE_NOBODY) < 0)
		return negerrno();
	struct __user_cap_header_struct hd = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capget, &hd, d) < 0)
		return negerrno();
	if (d[0].permitted || d[1].permitted || d[0].effective || d[1].effective)
		return -EPERM;
	/* a change of credentials clears these */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return negerrno();
	return 0;
}

int moat_confine_seccomp(const int *extra, size_t n_extra, moat_confine_rules_fn rules,
			 void *userdata)
{
	static const int base[] = {
		SCMP_SYS(read),
		SCMP_SYS(write),
		SCMP_SYS(close),
		SCMP_SYS(brk),
		SCMP_SYS(munmap),
		SCMP_SYS(mremap),
		SCMP_SYS(madvise),
		SCMP_SYS(rt_sigreturn),
		SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(exit),
		SCMP_SYS(exit_group),
		SCMP_SYS(restart_syscall),
		SCMP_SYS(futex),
		SCMP_SYS(getrandom),
		SCMP_SYS(clock_gettime),
		SCMP_SYS(getpid),
		SCMP_SYS(gettid),
		/* the calling thread's own signal stack: harmless, and queried by
		 * AddressSanitizer before every noreturn call (the sanitizer build) */
		SCMP_SYS(sigaltstack),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(base); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, base[i], 0);
	for (size_t i = 0; r >= 0 && i < n_extra; i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, extra[i], 0);
	/* Memory may be mapped or change protection, never become executable
	 * (everything the helper runs was loaded before the filter). */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0 && rules)
		r = rules(ctx, userdata);
	/* no_new_privs is the attribute's default (SCMP_FLTATR_CTL_NNP) */
	if (r >= 0)
		r = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return r;
}
