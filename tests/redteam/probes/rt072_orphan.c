/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-072 orphans and daemons surviving the sandbox: double fork, setsid, ignore
 * SIGHUP/SIGTERM, and exec this probe again with argv[0] = the marker given by
 * --marker M (then `__probe rt072_orphan`, see below), sleeping --seconds N
 * (default 120). The probe itself exits at
 * once; the runner looks for the marker in the host's process list after the
 * run (only it can see whether the survivor outlived the sandbox).
 * --sleep is the survivor's own mode.
 */
#include <signal.h>

#include "probe.h"

int main(int argc, char **argv)
{
	const char *marker, *secs;
	pid_t pid;

	probe_init(argc, argv);
	secs = probe_opt("--seconds") ?: "120";
	if (probe_flag("--sleep")) {
		signal(SIGHUP, SIG_IGN);
		signal(SIGTERM, SIG_IGN);
		signal(SIGINT, SIG_IGN);
		sleep((unsigned)atoi(secs));
		return 0;
	}
	marker = probe_opt("--marker");
	if (!marker) {
		fprintf(stderr, "usage: rt072_orphan --marker M [--seconds N]\n");
		return 2;
	}
	pid = fork();
	if (pid < 0) {
		INCONCL("RT-072/spawn", "fork: %s", strerror(errno));
		return probe_done();
	}
	if (pid == 0) {
		setsid();
		if (fork() != 0)
			_exit(0);
		int null = open("/dev/null", O_RDWR);
		if (null >= 0) {
			/* No stdio held open: the supervisor must not wait for EOF. */
			dup2(null, 0);
			dup2(null, 1);
			dup2(null, 2);
		}
		/* One argv for both builds: `moat __probe rt072_orphan ...` for the
		 * copy inside moat (selftest), while the standalone probe only looks
		 * at its options and skips the two words. */
		execl("/proc/self/exe", marker, "__probe", "rt072_orphan", "--sleep", "--seconds",
		      secs, (char *)NULL);
		_exit(127);
	}
	waitpid(pid, NULL, 0);
	/* The verdict is the runner's; this line only says the attempt was made. */
	CONTAINED("RT-072/daemon-started", "a setsid'd grandchild named %s was left running",
		  marker);
	return probe_done();
}
