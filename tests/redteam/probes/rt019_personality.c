/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* RT-019 personality(): only the harmless values are allowed. */
#include <sys/personality.h>

#include "probe.h"

static int set_pers(void *arg)
{
	unsigned long p = (unsigned long)arg;
	if (syscall(SYS_personality, p) < 0)
		return -1;
	/* The kernel accepts any value: check that it really took. */
	return (unsigned long)syscall(SYS_personality, 0xffffffffUL) == p ? 0 : PROBE_CHILD_UNABLE;
}

int main(int argc, char **argv)
{
	long cur;

	probe_init(argc, argv);
	cur = syscall(SYS_personality, 0xffffffffUL);
	if (cur < 0)
		FAILED("RT-019/query", "personality(0xffffffff) is denied: errno=%s (breaks tools)",
		       probe_errname(errno));
	else
		BLOCKED("RT-019/query", "query allowed (harmless): %#lx", cur);
	probe_classify_child("RT-019/addr_no_randomize", "personality(ADDR_NO_RANDOMIZE)",
			     probe_in_child(set_pers, (void *)(unsigned long)ADDR_NO_RANDOMIZE),
			     PROBE_ERRS(EPERM));
	probe_classify_child("RT-019/read_implies_exec", "personality(READ_IMPLIES_EXEC)",
			     probe_in_child(set_pers, (void *)(unsigned long)READ_IMPLIES_EXEC),
			     PROBE_ERRS(EPERM));
	probe_classify_child("RT-019/per_bsd", "personality(PER_BSD)",
			     probe_in_child(set_pers, (void *)(unsigned long)PER_BSD),
			     PROBE_ERRS(EPERM));
	return probe_done();
}
