/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-010 capability sets are empty: CapInh/CapPrm/CapEff/CapBnd/CapAmb all 0,
 * and capability-changing calls fail. For a process that is uid 0 of its
 * namespace (moat run --uid 0, an OCI container's root) also: the securebits
 * are set and locked, they cannot be cleared, capset cannot raise a
 * capability, and an exec as uid 0 regains none (it would without
 * SECBIT_NOROOT and with a bounding set: the control in `unshare -Ur`).
 * --report-exec-caps: the re-executed copy; exits 0 if it holds a permitted,
 * effective or ambient capability after the exec (the attempt succeeded),
 * else EPERM.
 */
#include <linux/capability.h>
#include <linux/securebits.h>
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

static int do_capset_raise(void *arg)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	/* permitted can only shrink: this succeeds only where CAP_SYS_ADMIN is
	 * already held in the permitted set */
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].permitted = CAP_TO_MASK(CAP_SYS_ADMIN);
	d[CAP_TO_INDEX(CAP_SYS_ADMIN)].effective = CAP_TO_MASK(CAP_SYS_ADMIN);
	return (int)syscall(SYS_capset, &h, d);
}

static int do_securebits_clear(void *arg)
{
	return prctl(PR_SET_SECUREBITS, 0, 0, 0, 0);
}

/* Drop every capability (keeping the uid, 0 or not), then exec this probe
 * again: the copy reports whether the exec gave any back. */
static int do_exec_regain(void *arg)
{
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capset, &h, d) < 0)
		return PROBE_CHILD_SETUP;
	/* one argv for both builds (as rt072): `moat __probe rt010_caps ...`
	 * for the copy compiled into moat; the standalone probe skips the words */
	execl("/proc/self/exe", "rt010_caps", "__probe", "rt010_caps", "--report-exec-caps",
	      (char *)NULL);
	return PROBE_CHILD_SETUP;
}

static int report_exec_caps(void)
{
	char status[8192], val[64];
	if (probe_read_file("/proc/self/status", status, sizeof status) < 0)
		return PROBE_CHILD_SETUP;
	static const char *const sets[] = {"CapPrm", "CapEff", "CapAmb"};
	for (size_t i = 0; i < 3; i++) {
		if (!probe_status_field(status, sets[i], val, sizeof val))
			return PROBE_CHILD_SETUP;
		if (strspn(val, "0") != strlen(val))
			return 0;
	}
	return EPERM;
}

int main(int argc, char **argv)
{
	const int locked = SECBIT_NOROOT | SECBIT_NOROOT_LOCKED | SECBIT_NO_SETUID_FIXUP |
		SECBIT_NO_SETUID_FIXUP_LOCKED | SECBIT_KEEP_CAPS_LOCKED |
		SECBIT_NO_CAP_AMBIENT_RAISE | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;
	static const char *const sets[] = {"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"};
	char status[8192], val[64], id[64];

	probe_init(argc, argv);
	if (probe_flag("--report-exec-caps"))
		return report_exec_caps();
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
	int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
	if (bits < 0)
		INCONCL("RT-010/securebits", "PR_GET_SECUREBITS: %s", probe_errname(errno));
	else if ((bits & locked) == locked && !(bits & SECBIT_KEEP_CAPS))
		BLOCKED("RT-010/securebits", "uid %d, securebits %#x: set and locked",
			(int)getuid(), (unsigned)bits);
	else
		FAILED("RT-010/securebits", "uid %d, securebits %#x, not %#x", (int)getuid(),
		       (unsigned)bits, (unsigned)locked);
	probe_classify_child("RT-010/securebits-clear", "PR_SET_SECUREBITS 0",
			     probe_in_child(do_securebits_clear, NULL), PROBE_ERRS(EPERM));
	probe_classify_child("RT-010/capset-raise", "capset CAP_SYS_ADMIN",
			     probe_in_child(do_capset_raise, NULL), PROBE_ERRS(EPERM));
	probe_classify_child("RT-010/exec-regain", "capabilities back after an exec",
			     probe_in_child(do_exec_regain, NULL), PROBE_ERRS(EPERM));
	return probe_done();
}
