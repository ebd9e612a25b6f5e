/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-026 signals and scheduling calls against a host process: --pid N is the
 * runner's canary. Every call must fail with ESRCH (the pid does not exist in
 * the sandbox's pid namespace) or EPERM. --kill-all additionally sends
 * kill(-1, SIGKILL) (only inside the sandbox; the runner checks the canary
 * survives); without it kill(-1, 0) only tests whether anything is reachable.
 */
#include <sched.h>
#include <signal.h>
#include <sys/resource.h>

#include "probe.h"

#define SAFE PROBE_ERRS(ESRCH, EPERM)

int main(int argc, char **argv)
{
	const char *ps = NULL;
	pid_t pid;
	int p[2];
	cpu_set_t cpus;

	probe_init(argc, argv);
	ps = probe_opt("--pid");
	if (!ps) {
		fprintf(stderr, "usage: rt026_signal --pid HOSTPID [--kill-all]\n");
		return 2;
	}
	pid = (pid_t)atoi(ps);
	TRY("RT-026/kill-host-pid", kill(pid, SIGTERM), ESRCH, EPERM);
	TRY("RT-026/pidfd_open-host-pid", syscall(SYS_pidfd_open, pid, 0), ESRCH, EPERM);
	TRY("RT-026/setpriority-host-pid", setpriority(PRIO_PROCESS, (id_t)pid, 19), ESRCH, EPERM);
	CPU_ZERO(&cpus);
	CPU_SET(0, &cpus);
	TRY("RT-026/sched_setaffinity-host-pid", sched_setaffinity(pid, sizeof cpus, &cpus), ESRCH,
	    EPERM);
	TRY("RT-026/ioprio_set-host-pid", syscall(SYS_ioprio_set, 1 /* WHO_PROCESS */, pid, 0),
	    ESRCH, EPERM, EINVAL);
	if (pipe(p) == 0) {
		TRY("RT-026/f_setown-host-pid", fcntl(p[0], F_SETOWN, pid), ESRCH, EPERM);
		close(p[0]);
		close(p[1]);
	}
	if (probe_flag("--kill-all")) {
		errno = 0;
		int r = kill(-1, SIGKILL);
		CONTAINED("RT-026/kill-all",
			  "kill(-1, SIGKILL) rc=%d errno=%s; the runner checks "
			  "the host canary",
			  r, probe_errname(errno));
	} else {
		/* ESRCH: nothing outside ourselves could be signalled. */
		TRY("RT-026/kill-all", kill(-1, 0), ESRCH, EPERM);
	}
	return probe_done();
}
