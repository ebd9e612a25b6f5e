/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-031 overwrite the supervisor's binary through /proc/<pid>/exe
 * (CVE-2019-5736). Inside the sandbox the target is pid 1 (moat init); the
 * probe never writes, it only opens for writing and closes. With --control the
 * target is a child running a writable copy of this probe, which then exits:
 * the O_PATH + reopen-after-exit path succeeds there, showing the technique.
 */
#include <signal.h>
#include <sys/sendfile.h>
#include <sys/stat.h>

#include "probe.h"

#define SAFE PROBE_ERRS(ETXTBSY, EACCES, EROFS, EPERM, ENOENT)

static pid_t start_copy(char *path)
{
	int in = open("/proc/self/exe", O_RDONLY | O_CLOEXEC), out;
	struct stat st;
	pid_t pid;

	out = mkstemp(path);
	if (in < 0 || out < 0 || fstat(in, &st) < 0 ||
	    sendfile(out, in, NULL, (size_t)st.st_size) != st.st_size)
		return -1;
	fchmod(out, 0755);
	close(in);
	close(out);
	pid = fork();
	if (pid == 0) {
		/* `__probe rt031_exe` for the copy inside moat (selftest); the
		 * standalone probe only looks at its options. */
		execl(path, path, "__probe", "rt031_exe", "--sleep", (char *)NULL);
		_exit(127);
	}
	usleep(200 * 1000);
	return pid;
}

int main(int argc, char **argv)
{
	char copy[] = "/tmp/rt031.XXXXXX", p[64];
	pid_t target = 1, child = -1;
	int opath;

	probe_init(argc, argv);
	if (probe_flag("--sleep")) {
		sleep(30);
		return 0;
	}
	if (probe_control()) {
		child = start_copy(copy);
		if (child < 0) {
			INCONCL("RT-031/setup", "cannot start a copy: %s", strerror(errno));
			return probe_done();
		}
		target = child;
	}
	errno = 0;
	int fd = open("/proc/self/exe", O_WRONLY | O_CLOEXEC);
	probe_classify("RT-031/open-wr-self-exe", "open(/proc/self/exe, O_WRONLY)", fd, errno,
		       SAFE);
	if (fd >= 0)
		close(fd);
	snprintf(p, sizeof p, "/proc/%d/exe", (int)target);
	errno = 0;
	fd = open(p, O_WRONLY | O_CLOEXEC);
	probe_classify("RT-031/open-wr-init-exe", "open(/proc/init/exe, O_WRONLY)", fd, errno,
		       SAFE);
	if (fd >= 0)
		close(fd);
	errno = 0;
	opath = open(p, O_PATH | O_CLOEXEC);
	if (opath < 0) {
		BLOCKED("RT-031/reopen-init-exe", "open(O_PATH) errno=%s", probe_errname(errno));
	} else {
		if (child > 0) {
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			child = -1;
		}
		snprintf(p, sizeof p, "/proc/self/fd/%d", opath);
		errno = 0;
		fd = open(p, O_WRONLY | O_CLOEXEC);
		probe_classify("RT-031/reopen-init-exe", "reopen O_PATH fd of init's exe O_WRONLY",
			       fd, errno, SAFE);
		if (fd >= 0)
			close(fd);
		close(opath);
	}
	if (child > 0) {
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
	}
	if (probe_control())
		unlink(copy);
	return probe_done();
}
