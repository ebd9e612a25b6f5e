/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-010 capability sets are empty: CapInh/CapPrm/CapEff/CapBnd/CapAmb all 0,
 * and capability-changing calls fail.
 */
#include <linux/capability.h>
#include <sys/prctl.h>

#include "probe.h"

static int do_setgroups(void *arg)
{
	return (int)syscall(SYS_setgroups, 0, NULL);
}

static int do_ambient(void *arg)
{
	return prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_ADMIN, 0, 0);
}

static int do_setuid_other(void *arg)
{
	/* Becoming another uid needs CAP_SETUID. */
	return (int)syscall(SYS_setresuid, getuid() + 1, getuid() + 1, getuid() + 1);
}

int main(int argc, char **argv)
{
	static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
	char status[8192], val[64], id[64];

	probe_init(argc, argv);
	if (probe_read_file("/proc/self/status", status, sizeof status) < 0) {
		INCONCL("RT-010/status", "cannot read /proc/self/status: %s", strerror(errno));
		return probe_done();
	}
	for (size_t i = 0; i < 5; i++) {
		snprintf(id, sizeof id, "RT-010/%s", sets[i]);
		if (!probe_status_field(status, sets[i], val, sizeof val))
			INCONCL(id, "%s missing from /proc/self/status", sets[i]);
		else if (strspn(val, "0") == strlen(val))
			BLOCKED(id, "%s=%s", sets[i], val);
		else
			FAILED(id, "%s=%s", sets[i], val);
	}
	probe_classify_child("RT-010/setresuid-other", "setresuid(uid+1)",
			     probe_in_child(do_setuid_other, NULL), PROBE_ERRS(EPERM, EINVAL));
	probe_classify_child("RT-010/setgroups", "setgroups(0, NULL)",
			     probe_in_child(do_setgroups, NULL), PROBE_ERRS(EPERM));
	probe_classify_child("RT-010/ambient-raise", "PR_CAP_AMBIENT_RAISE CAP_NET_ADMIN",
			     probe_in_child(do_ambient, NULL), PROBE_ERRS(EPERM));
	return probe_done();
}
