/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-030 leaked file descriptors and working directory: only fds 0-2 are open
 * at start, the cwd is reachable (getcwd works) and the root is "/".
 */
#include <dirent.h>

#include "probe.h"

int main(int argc, char **argv)
{
	DIR *d;
	struct dirent *e;
	char leaked[512] = "", buf[4096];
	int n = 0;

	probe_init(argc, argv);
	d = opendir("/proc/self/fd");
	if (!d) {
		INCONCL("RT-030/fds", "cannot list /proc/self/fd: %s", strerror(errno));
	} else {
		while ((e = readdir(d))) {
			int fd = atoi(e->d_name);
			char p[300], t[256] = "";
			if (e->d_name[0] == '.' || fd <= 2 || fd == dirfd(d))
				continue;
			snprintf(p, sizeof p, "/proc/self/fd/%d", fd);
			if (readlink(p, t, sizeof t - 1) < 0)
				strcpy(t, "?");
			n++;
			if (strlen(leaked) + strlen(t) + 16 < sizeof leaked) {
				char one[300];
				snprintf(one, sizeof one, " %d->%s", fd, t);
				strcat(leaked, one);
			}
		}
		closedir(d);
		if (n)
			FAILED("RT-030/fds", "%d fd(s) above 2 open at start:%s", n, leaked);
		else
			BLOCKED("RT-030/fds", "only fds 0-2 open");
	}
	if (!getcwd(buf, sizeof buf))
		FAILED("RT-030/cwd", "getcwd failed: %s (cwd outside the root?)",
		       probe_errname(errno));
	else if (buf[0] != '/')
		FAILED("RT-030/cwd", "cwd '%s' is not below the root", buf);
	else
		BLOCKED("RT-030/cwd", "cwd %s", buf);
	ssize_t l = readlink("/proc/self/root", buf, sizeof buf - 1);
	if (l < 0)
		BLOCKED("RT-030/root", "readlink errno=%s", probe_errname(errno));
	else if ((buf[l] = '\0', strcmp(buf, "/") != 0))
		FAILED("RT-030/root", "root is '%s'", buf);
	else
		BLOCKED("RT-030/root", "root is /");
	return probe_done();
}
