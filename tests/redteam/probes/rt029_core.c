/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-029 core dumps: the hard RLIMIT_CORE is 0 and cannot be raised, and a
 * dumpable child that aborts leaves no core file (its cwd is a fresh directory
 * that is checked afterwards). core_pattern is reported in the details.
 */
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>

#include "probe.h"

static char dir[] = "/tmp/rt029.XXXXXX";

static int dump(void *arg)
{
	struct rlimit rl;
	if (chdir(dir) < 0)
		return PROBE_CHILD_SETUP;
	getrlimit(RLIMIT_CORE, &rl);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_CORE, &rl);
	prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	signal(SIGABRT, SIG_DFL);
	abort();
}

int main(int argc, char **argv)
{
	struct rlimit rl;
	char pattern[256] = "?";
	int st, cores = 0;
	DIR *d;
	struct dirent *e;

	probe_init(argc, argv);
	probe_read_file("/proc/sys/kernel/core_pattern", pattern, sizeof pattern);
	pattern[strcspn(pattern, "\n")] = '\0';
	getrlimit(RLIMIT_CORE, &rl);
	if (rl.rlim_max != 0)
		FAILED("RT-029/hard-limit", "hard RLIMIT_CORE=%llu (core_pattern '%s')",
		       (unsigned long long)rl.rlim_max, pattern);
	else
		BLOCKED("RT-029/hard-limit", "hard RLIMIT_CORE=0 (core_pattern '%s')", pattern);
	rl.rlim_max = RLIM_INFINITY;
	rl.rlim_cur = RLIM_INFINITY;
	errno = 0;
	int r = setrlimit(RLIMIT_CORE, &rl);
	if (r == 0 && getrlimit(RLIMIT_CORE, &rl) == 0 && rl.rlim_max == RLIM_INFINITY)
		FAILED("RT-029/raise-hard", "raised the hard limit to unlimited");
	else
		probe_classify("RT-029/raise-hard", "setrlimit(RLIMIT_CORE, unlimited)",
			       r ? -1 : -1, r ? errno : EPERM, PROBE_ERRS(EPERM));
	if (!mkdtemp(dir)) {
		INCONCL("RT-029/dump", "mkdtemp: %s", strerror(errno));
		return probe_done();
	}
	st = probe_in_child(dump, NULL);
	d = opendir(dir);
	while (d && (e = readdir(d))) {
		char p[300];
		if (e->d_name[0] == '.')
			continue;
		cores++;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		unlink(p);
	}
	if (d)
		closedir(d);
	rmdir(dir);
	if (cores || (st != -1 && WIFSIGNALED(st) && WCOREDUMP(st)))
		FAILED("RT-029/dump", "core dumped (%d file(s) in cwd, core_pattern '%s')", cores,
		       pattern);
	else
		BLOCKED("RT-029/dump", "no core dumped");
	return probe_done();
}
