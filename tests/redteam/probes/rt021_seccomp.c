/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-021 seccomp and NoNewPrivs on every thread, the prctls that would undo
 * them, and a stacked allow-everything filter that must not loosen the policy.
 */
#include <dirent.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/mount.h>
#include <sys/prctl.h>

#include "probe.h"

static void *idle(void *arg)
{
	pause();
	return NULL;
}

static int stacked(void *arg)
{
	struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
	struct sock_fprog prog = {.len = 1, .filter = &allow};

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0)
		return PROBE_CHILD_UNABLE;
	return mount((void *)1, (void *)1, (void *)1, 0, NULL);
}

int main(int argc, char **argv)
{
	pthread_t t[3];
	DIR *d;
	struct dirent *e;
	int threads = 0, bad_nnp = 0, bad_sc = 0;
	char first_bad[400] = "";

	probe_init(argc, argv);
	for (int i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, idle, NULL);
	d = opendir("/proc/self/task");
	while (d && (e = readdir(d))) {
		char path[300], st[8192], nnp[32], sc[32];
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/status", e->d_name);
		if (probe_read_file(path, st, sizeof st) < 0)
			continue;
		threads++;
		if (!probe_status_field(st, "NoNewPrivs", nnp, sizeof nnp) || strcmp(nnp, "1")) {
			bad_nnp++;
			snprintf(first_bad, sizeof first_bad, "tid %s NoNewPrivs=%s", e->d_name,
				 nnp);
		}
		if (!probe_status_field(st, "Seccomp", sc, sizeof sc) || strcmp(sc, "2")) {
			bad_sc++;
			snprintf(first_bad, sizeof first_bad, "tid %s Seccomp=%s", e->d_name, sc);
		}
	}
	if (d)
		closedir(d);
	if (threads < 4)
		INCONCL("RT-021/threads", "saw %d threads, want 4", threads);
	if (bad_nnp)
		FAILED("RT-021/all-threads-nnp", "%d of %d threads lack NoNewPrivs (%s)", bad_nnp,
		       threads, first_bad);
	else
		BLOCKED("RT-021/all-threads-nnp", "NoNewPrivs=1 on all %d threads", threads);
	if (bad_sc)
		FAILED("RT-021/all-threads-seccomp", "%d of %d threads not in filter mode (%s)",
		       bad_sc, threads, first_bad);
	else
		BLOCKED("RT-021/all-threads-seccomp", "Seccomp=2 on all %d threads", threads);
	TRY("RT-021/clear-nnp", prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0), EINVAL, EPERM);
	TRY("RT-021/seccomp-disable", prctl(PR_SET_SECCOMP, SECCOMP_MODE_DISABLED, 0, 0, 0), EINVAL,
	    EPERM);
	probe_classify_child("RT-021/stacked-allow-filter", "mount() under an extra allow filter",
			     probe_in_child(stacked, NULL), PROBE_ERRS(EPERM));
	return probe_done();
}
