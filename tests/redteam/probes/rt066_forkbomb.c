/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-066 fork bomb, bounded: fork up to --max N (default 200) children that
 * just wait, until fork fails. Hitting EAGAIN before N is BLOCKED (the process
 * limit held); N children is FAIL. The probe kills every child it made, so
 * even the positive control outside stays small.
 */
#include <signal.h>

#include "probe.h"

int main(int argc, char **argv)
{
	static pid_t kids[4096];
	int max, n = 0, err = 0;

	probe_init(argc, argv);
	max = atoi(probe_opt("--max") ?: "200");
	if (max < 1 || max > 4096)
		return fprintf(stderr, "rt066_forkbomb: --max 1..4096\n"), 2;
	while (n < max) {
		pid_t p = fork();
		if (p < 0) {
			err = errno;
			break;
		}
		if (p == 0) {
			for (;;)
				pause();
		}
		kids[n++] = p;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid(kids[i], NULL, 0);
	if (n >= max)
		FAILED("RT-066/fork-limit", "%d processes forked, no limit hit", n);
	else if (err == EAGAIN || err == ENOMEM)
		BLOCKED("RT-066/fork-limit", "fork failed with %s after %d children",
			probe_errname(err), n);
	else
		FAILED("RT-066/fork-limit", "fork failed with unexpected %s after %d children",
		       probe_errname(err), n);
	return probe_done();
}
