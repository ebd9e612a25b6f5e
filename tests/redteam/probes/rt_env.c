/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Records the host facts every battery run must carry (catalogue 0.3): kernel
 * release, Landlock ABI, cgroup version and the sysctls that decide which
 * attack paths the host itself closes. Prints "INFO <key> <value>" lines.
 */
#include <sys/statfs.h>
#include <sys/utsname.h>

#include "probe.h"

#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif
#ifndef TMPFS_MAGIC
#define TMPFS_MAGIC 0x01021994
#endif

int main(int argc, char **argv)
{
	static const char *const sysctls[] = {"kernel/unprivileged_userns_clone",
					      "user/max_user_namespaces",
					      "kernel/io_uring_disabled",
					      "kernel/unprivileged_bpf_disabled",
					      "kernel/perf_event_paranoid",
					      "vm/unprivileged_userfaultfd",
					      "dev/tty/legacy_tiocsti",
					      "kernel/yama/ptrace_scope",
					      "kernel/kptr_restrict",
					      "kernel/dmesg_restrict",
					      "fs/protected_hardlinks",
					      "fs/protected_symlinks",
					      "vm/memfd_noexec",
					      "dev/tty/ldisc_autoload",
					      "kernel/core_pattern",
					      "kernel/apparmor_restrict_unprivileged_userns"};
	struct utsname u;
	struct statfs sf;
	long abi;

	probe_init(argc, argv);
	uname(&u);
	printf("INFO kernel %s %s\n", u.release, u.machine);
	abi = syscall(SYS_landlock_create_ruleset, NULL, 0, 1UL /* VERSION */);
	if (abi < 0)
		printf("INFO landlock-abi none(%s)\n", probe_errname(errno));
	else
		printf("INFO landlock-abi %ld\n", abi);
	if (statfs("/sys/fs/cgroup", &sf) == 0)
		printf("INFO cgroup %s\n",
		       sf.f_type == CGROUP2_SUPER_MAGIC	  ? "v2"
			       : sf.f_type == TMPFS_MAGIC ? "v1-or-hybrid"
							  : "unknown");
	for (size_t i = 0; i < sizeof sysctls / sizeof sysctls[0]; i++) {
		char p[256], v[256];
		ssize_t n;
		snprintf(p, sizeof p, "/proc/sys/%s", sysctls[i]);
		n = probe_read_file(p, v, sizeof v);
		if (n < 0)
			snprintf(v, sizeof v, "absent(%s)", probe_errname((int)-n));
		v[strcspn(v, "\n")] = '\0';
		for (char *c = p + 10; *c; c++)
			if (*c == '/')
				*c = '.';
		printf("INFO sysctl.%s %s\n", p + 10, v);
	}
	return 0;
}
