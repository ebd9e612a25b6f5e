/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-016 kernel modules, kexec, reboot, swap, accounting, clock, syslog,
 * quotactl, uselib, modify_ldt: try-syscall with bad pointers, fds and magic
 * numbers. Nothing here can have an effect: every argument is invalid.
 */
#include <sys/quota.h>

#include "probe.h"

int main(int argc, char **argv)
{
	probe_init(argc, argv);
	TRY("RT-016/finit_module", syscall(SYS_finit_module, -1, "", 0), EPERM, ENOSYS);
	TRY("RT-016/init_module", syscall(SYS_init_module, (void *)1, 0, ""), EPERM, ENOSYS);
	TRY("RT-016/delete_module", syscall(SYS_delete_module, (void *)1, 0), EPERM, ENOSYS);
	TRY("RT-016/kexec_load", syscall(SYS_kexec_load, 0, 0, NULL, 0x7fff0000), EPERM, ENOSYS);
	TRY("RT-016/kexec_file_load", syscall(SYS_kexec_file_load, -1, -1, 0, "", 0x7fff0000),
	    EPERM, ENOSYS);
	/* Wrong magic numbers: EINVAL once past the capability check. */
	TRY("RT-016/reboot-badmagic", syscall(SYS_reboot, 0, 0, 0, NULL), EPERM);
	TRY("RT-016/swapon-badptr", syscall(SYS_swapon, (void *)1, 0), EPERM);
	TRY("RT-016/swapoff-badptr", syscall(SYS_swapoff, (void *)1), EPERM);
	TRY("RT-016/acct-badptr", syscall(SYS_acct, (void *)1), EPERM);
	TRY("RT-016/settimeofday-badptr", syscall(SYS_settimeofday, (void *)1, NULL), EPERM);
	TRY("RT-016/clock_settime-badptr", syscall(SYS_clock_settime, 0, (void *)1), EPERM);
	TRY("RT-016/adjtimex-badptr", syscall(SYS_adjtimex, (void *)1), EPERM);
	TRY("RT-016/clock_adjtime-badptr", syscall(SYS_clock_adjtime, 0, (void *)1), EPERM);
	TRY("RT-016/syslog-read-all", syscall(SYS_syslog, 3 /* READ_ALL */, (void *)1, 16), EPERM);
	TRY("RT-016/quotactl-badptr",
	    syscall(SYS_quotactl, QCMD(Q_GETQUOTA, USRQUOTA), (void *)1, 0, (void *)1), EPERM,
	    ENOSYS);
	TRY("RT-016/uselib-badptr", syscall(SYS_uselib, (void *)1), EPERM, ENOSYS);
	TRY("RT-016/modify_ldt-read", syscall(SYS_modify_ldt, 0, (void *)1, 16), EPERM);
	return probe_done();
}
