/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-023 /proc and /sys information leaks and RT-076 system secrets: files
 * must be absent, unreadable or empty; kallsyms addresses zero. --leak STRING (repeatable): a host path
 * looked for in /proc/self/mountinfo. moat binds the workspace and --ro/--rw
 * paths at their host path by design, so host path names of what was bound in
 * are visible anyway: the catalogue's "document as an accepted leak" case,
 * reported as CONTAINED (visible, nothing else reachable), never hidden.
 */
#include <dirent.h>

#include "probe.h"

static char mountinfo[1 << 16];
static bool have_mountinfo;

static void read_leak(const char *id, const char *path)
{
	char buf[4096];
	ssize_t n = probe_read_file(path, buf, sizeof buf);
	if (n < 0)
		BLOCKED(id, "%s errno=%s", path, probe_errname((int)-n));
	else if (n == 0)
		BLOCKED(id, "%s is empty", path);
	else
		FAILED(id, "%s readable (%zd bytes)", path, n);
}

static void list_leak(const char *id, const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;
	if (!d) {
		BLOCKED(id, "%s errno=%s", path, probe_errname(errno));
		return;
	}
	while ((e = readdir(d)))
		if (e->d_name[0] != '.')
			n++;
	closedir(d);
	if (n)
		FAILED(id, "%s lists %d entries", path, n);
	else
		BLOCKED(id, "%s is empty", path);
}

static void check_leak(const char *s)
{
	char id[160];
	snprintf(id, sizeof id, "RT-023/mountinfo-leak:%s", s);
	if (!have_mountinfo)
		INCONCL(id, "no /proc/self/mountinfo");
	else if (strstr(mountinfo, s))
		CONTAINED(id, "accepted leak: host path '%s' visible in /proc/self/mountinfo", s);
	else
		BLOCKED(id, "'%s' not in /proc/self/mountinfo", s);
}

int main(int argc, char **argv)
{
	char buf[8192];
	ssize_t n;

	probe_init(argc, argv);
	n = probe_read_file("/proc/kallsyms", buf, sizeof buf);
	if (n <= 0) {
		BLOCKED("RT-023/kallsyms", "%s", n < 0 ? probe_errname((int)-n) : "empty");
	} else {
		/* Any non-zero address on the first lines is a leak. */
		bool leak = false;
		for (char *l = buf; l && *l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
			if (strspn(l, "0") < 16 && strchr(l, ' ') == l + 16)
				leak = true;
		if (leak)
			FAILED("RT-023/kallsyms", "kernel addresses visible");
		else
			BLOCKED("RT-023/kallsyms", "addresses are zero");
	}
	read_leak("RT-023/sched_debug", "/proc/sched_debug");
	read_leak("RT-023/timer_list", "/proc/timer_list");
	read_leak("RT-023/keys", "/proc/keys");
	read_leak("RT-023/latency_stats", "/proc/latency_stats");
	read_leak("RT-023/kcore", "/proc/kcore");
	read_leak("RT-023/kmsg", "/proc/kmsg");
	list_leak("RT-023/sys-firmware", "/sys/firmware");
	list_leak("RT-023/sys-kernel-debug", "/sys/kernel/debug");
	list_leak("RT-023/sys-powercap", "/sys/devices/virtual/powercap");
	/* RT-076 system secrets: absent or unreadable. */
	read_leak("RT-076/etc-shadow", "/etc/shadow");
	read_leak("RT-076/etc-gshadow", "/etc/gshadow");
	read_leak("RT-076/etc-sudoers", "/etc/sudoers");
	read_leak("RT-076/ssh-host-ed25519-key", "/etc/ssh/ssh_host_ed25519_key");
	read_leak("RT-076/ssh-host-rsa-key", "/etc/ssh/ssh_host_rsa_key");
	read_leak("RT-076/machine-id", "/etc/machine-id");
	read_leak("RT-076/dmi-product-uuid", "/sys/devices/virtual/dmi/id/product_uuid");
	list_leak("RT-076/root-home", "/root");
	list_leak("RT-076/var-lib-docker", "/var/lib/docker");
	list_leak("RT-076/run-secrets", "/run/secrets");
	list_leak("RT-076/k8s-serviceaccount", "/var/run/secrets/kubernetes.io/serviceaccount");
	n = probe_read_file("/proc/self/mountinfo", mountinfo, sizeof mountinfo);
	have_mountinfo = n > 0;
	probe_each_opt("--leak", check_leak);
	return probe_done();
}
