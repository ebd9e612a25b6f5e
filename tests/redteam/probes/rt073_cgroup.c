/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-073 escaping or loosening the cgroup: move ourselves to the root or the
 * parent cgroup, create a child cgroup, raise memory.max and pids.max, on
 * cgroup v2 and on every v1 hierarchy mounted under /sys/fs/cgroup. The probe
 * only opens files for writing and never writes; mkdir is undone. --root DIR
 * prefixes every path (the runner's control points it at writable stand-ins:
 * the host's cgroup files are writable only by host root).
 */
#include <dirent.h>
#include <sys/stat.h>

#include "probe.h"

#define SAFE PROBE_ERRS(EROFS, EACCES, EPERM, ENOENT)

static const char *root = "";

static void try_open(const char *id, const char *rel)
{
	char p[4200];
	snprintf(p, sizeof p, "%s%s", root, rel);
	errno = 0;
	int fd = open(p, O_WRONLY | O_CLOEXEC | O_NONBLOCK);
	int e = errno;
	if (fd >= 0)
		close(fd); /* never write */
	probe_classify(id, rel, fd, e, SAFE);
}

static void try_mkdir(const char *id, const char *rel)
{
	char p[4200];
	snprintf(p, sizeof p, "%s%s", root, rel);
	errno = 0;
	int r = mkdir(p, 0755);
	int e = errno;
	if (r == 0)
		rmdir(p);
	probe_classify(id, rel, r, e, SAFE);
}

int main(int argc, char **argv)
{
	char cg[512] = "", cgpath[600];

	probe_init(argc, argv);
	root = probe_opt("--root") ?: "";
	if (probe_read_file("/proc/self/cgroup", cg, sizeof cg) > 0)
		printf("INFO /proc/self/cgroup %.*s\n", (int)strcspn(cg, "\n"), cg);
	try_open("RT-073/v2-root-procs", "/sys/fs/cgroup/cgroup.procs");
	try_open("RT-073/v2-parent-procs", "/sys/fs/cgroup/../cgroup.procs");
	try_mkdir("RT-073/v2-mkdir", "/sys/fs/cgroup/rt073");
	try_open("RT-073/v2-memory.max", "/sys/fs/cgroup/memory.max");
	try_open("RT-073/v2-pids.max", "/sys/fs/cgroup/pids.max");
	try_open("RT-073/unified-procs", "/sys/fs/cgroup/unified/cgroup.procs");
	try_open("RT-073/v1-memory-limit", "/sys/fs/cgroup/memory/memory.limit_in_bytes");
	try_open("RT-073/v1-memory-procs", "/sys/fs/cgroup/memory/cgroup.procs");
	try_open("RT-073/v1-pids-max", "/sys/fs/cgroup/pids/pids.max");
	try_open("RT-073/v1-release_agent", "/sys/fs/cgroup/memory/release_agent");
	try_mkdir("RT-073/v1-mkdir", "/sys/fs/cgroup/memory/rt073");
	/* Our own cgroup, by the path /proc/self/cgroup gives (v2 line "0::"). */
	{
		char *l = strstr(cg, "0::");
		if (l) {
			l += 3;
			l[strcspn(l, "\n")] = '\0';
			snprintf(cgpath, sizeof cgpath, "/sys/fs/cgroup%s/cgroup.procs",
				 strcmp(l, "/") ? l : "");
			try_open("RT-073/own-v2-procs", cgpath);
		}
	}
	return probe_done();
}
