/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-007 other namespace operations: unshare() of each namespace type, setns()
 * on our own namespaces and on a bad fd. Every attempt in a forked child.
 */
#include <sched.h>

#include "probe.h"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static int do_unshare(void *arg)
{
	return unshare((int)(long)arg);
}

static int do_setns(void *arg)
{
	int fd = open((const char *)arg, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return PROBE_CHILD_UNABLE;
	return setns(fd, 0);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		long flag;
	} ns[] = {{"newns", CLONE_NEWNS},    {"newnet", CLONE_NEWNET},
		  {"newpid", CLONE_NEWPID},  {"newipc", CLONE_NEWIPC},
		  {"newuts", CLONE_NEWUTS},  {"newcgroup", CLONE_NEWCGROUP},
		  {"newtime", CLONE_NEWTIME}};
	static const char *const own[] = {"net", "mnt", "uts", "ipc", "pid", "cgroup", "user"};
	char id[128], what[128];

	probe_init(argc, argv);
	for (size_t i = 0; i < sizeof ns / sizeof ns[0]; i++) {
		snprintf(id, sizeof id, "RT-007/unshare-%s", ns[i].name);
		snprintf(what, sizeof what, "unshare(CLONE_%s)", ns[i].name + 0);
		probe_classify_child(id, what, probe_in_child(do_unshare, (void *)ns[i].flag),
				     PROBE_FILTERED);
	}
	for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
		char path[64];
		snprintf(path, sizeof path, "/proc/self/ns/%s", own[i]);
		snprintf(id, sizeof id, "RT-007/setns-own-%s", own[i]);
		snprintf(what, sizeof what, "setns(%s)", path);
		probe_classify_child(id, what, probe_in_child(do_setns, path), PROBE_FILTERED);
	}
	TRY("RT-007/setns-badfd", setns(-1, 0), EPERM);
	return probe_done();
}
