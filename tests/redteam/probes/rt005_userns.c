/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-005 nested user namespace: unshare(CLONE_NEWUSER), clone(CLONE_NEWUSER)
 * and clone3 (expected ENOSYS so libc falls back to clone). Each attempt runs in
 * a forked child, so a success changes nothing but that child.
 */
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>

#include "probe.h"

static int do_unshare(void *arg)
{
	return unshare(CLONE_NEWUSER);
}

static int do_clone(void *arg)
{
	long pid = syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0);
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return -1;
	waitpid((pid_t)pid, NULL, 0);
	return 0;
}

static int do_clone3(void *arg)
{
	struct clone_args ca = {.flags = (unsigned long)arg, .exit_signal = SIGCHLD};
	long pid = syscall(SYS_clone3, &ca, sizeof ca);
	if (pid == 0)
		_exit(0);
	if (pid < 0)
		return -1;
	waitpid((pid_t)pid, NULL, 0);
	return 0;
}

int main(int argc, char **argv)
{
	char before[128] = "", after[128] = "";

	probe_init(argc, argv);
	readlink("/proc/self/ns/user", before, sizeof before - 1);
	probe_classify_child("RT-005/unshare-newuser", "unshare(CLONE_NEWUSER)",
			     probe_in_child(do_unshare, NULL), PROBE_FILTERED);
	probe_classify_child("RT-005/clone-newuser", "clone(CLONE_NEWUSER)",
			     probe_in_child(do_clone, NULL), PROBE_FILTERED);
	probe_classify_child("RT-005/clone3-newuser", "clone3(CLONE_NEWUSER)",
			     probe_in_child(do_clone3, (void *)(unsigned long)CLONE_NEWUSER),
			     PROBE_FILTERED);
	/* try-syscall: a NULL clone_args reaches the kernel as EFAULT/EINVAL. */
	TRY("RT-005/clone3-badptr", syscall(SYS_clone3, NULL, 0), ENOSYS, EPERM);
	readlink("/proc/self/ns/user", after, sizeof after - 1);
	if (strcmp(before, after) != 0)
		FAILED("RT-005/ns-unchanged", "user ns changed: %s -> %s", before, after);
	else
		BLOCKED("RT-005/ns-unchanged", "user ns still %s", before);
	return probe_done();
}
