/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-020 ptrace and process memory of the sandbox's init. Inside the sandbox the
 * target is pid 1 (moat init); with --control the target is a child of our own,
 * which shows that every path works against a dumpable, same-user process.
 * Also ptrace of our own child and PTRACE_TRACEME (ptrace must be denied).
 */
#include <linux/kcmp.h>
#include <sys/ptrace.h>
#include <sys/uio.h>

#include "probe.h"

static int do_traceme(void *arg)
{
	return (int)ptrace(PTRACE_TRACEME, 0, NULL, NULL);
}

static void attach(const char *id, pid_t pid)
{
	errno = 0;
	long r = ptrace(PTRACE_SEIZE, pid, NULL, NULL);
	int e = errno;
	if (r == 0)
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	probe_classify(id, "ptrace(PTRACE_SEIZE)", r, e, PROBE_ERRS(EPERM, ESRCH, EACCES));
}

int main(int argc, char **argv)
{
	pid_t child, target;
	char path[64], buf[256];
	struct iovec local = {.iov_base = buf, .iov_len = 16};
	struct iovec remote = {.iov_base = (void *)&local, .iov_len = 16};
	ssize_t n;
	long fd;

	probe_init(argc, argv);
	child = probe_sleeper();
	target = probe_control() ? probe_sleeper() : 1;
	if (child < 0 || target < 0) {
		INCONCL("RT-020/fork", "fork failed");
		return probe_done();
	}
	attach("RT-020/seize-own-child", child);
	probe_classify_child("RT-020/traceme", "PTRACE_TRACEME", probe_in_child(do_traceme, NULL),
			     PROBE_ERRS(EPERM));
	attach("RT-020/seize-init", target);
	/* Our own address: readable if the call is allowed at all. */
	errno = 0;
	n = syscall(SYS_process_vm_readv, target, &local, 1, &remote, 1, 0);
	probe_classify("RT-020/process_vm_readv-init", "process_vm_readv(init)", n, errno,
		       PROBE_ERRS(EPERM, ESRCH, EACCES));
	snprintf(path, sizeof path, "/proc/%d/mem", (int)target);
	errno = 0;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	probe_classify("RT-020/proc-mem-init", "open(/proc/init/mem)", fd, errno,
		       PROBE_ERRS(EPERM, EACCES, ENOENT));
	if (fd >= 0)
		close((int)fd);
	snprintf(path, sizeof path, "/proc/%d/environ", (int)target);
	n = probe_read_file(path, buf, sizeof buf);
	if (n > 0)
		FAILED("RT-020/proc-environ-init", "read %zd bytes of init's environment", n);
	else
		BLOCKED("RT-020/proc-environ-init", "errno=%s",
			n < 0 ? probe_errname((int)-n) : "empty");
	TRY("RT-020/kcmp-init", syscall(SYS_kcmp, target, getpid(), KCMP_FILE, 0, 0), EPERM, ESRCH,
	    EBADF, ENOSYS);
	fd = syscall(SYS_pidfd_open, target, 0);
	if (fd < 0) {
		BLOCKED("RT-020/pidfd_getfd-init", "pidfd_open errno=%s", probe_errname(errno));
	} else {
		errno = 0;
		long got = syscall(SYS_pidfd_getfd, fd, 0, 0);
		probe_classify("RT-020/pidfd_getfd-init", "pidfd_getfd(init, 0)", got, errno,
			       PROBE_ERRS(EPERM, EACCES, ESRCH));
		if (got >= 0)
			close((int)got);
		close((int)fd);
	}
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	if (target != 1) {
		kill(target, SIGKILL);
		waitpid(target, NULL, 0);
	}
	return probe_done();
}
