/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Architecture matrix (catalogue 0.4, issue 3): a syscall through the i386
 * entry (int 0x80) and through x32 numbers from this 64-bit binary must kill
 * the process (SIGSYS), not run. Both run in a child.
 */
#include "probe.h"

#if defined(__x86_64__)
static int int80_getpid(void *arg)
{
	long ret;
	/* i386 __NR_getpid = 20 */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory");
	return ret > 0 ? 0 : PROBE_CHILD_UNABLE;
}

static int x32_getpid(void *arg)
{
	long ret = syscall(0x40000000L | 39 /* __NR_getpid */);
	return ret > 0 ? 0 : -1;
}
#endif

int main(int argc, char **argv)
{
	probe_init(argc, argv);
#if defined(__x86_64__)
	probe_classify_child("RT-ARCH/int80", "int 0x80 getpid", probe_in_child(int80_getpid, NULL),
			     PROBE_ERRS(ENOSYS));
	probe_classify_child("RT-ARCH/x32", "x32 getpid", probe_in_child(x32_getpid, NULL),
			     PROBE_ERRS(ENOSYS));
#else
	SKIPPED("RT-ARCH/int80", "not x86_64");
#endif
	return probe_done();
}
