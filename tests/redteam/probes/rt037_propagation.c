/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-037 mount propagation: no mount of the sandbox is in a shared peer group
 * ("shared:N" in /proc/self/mountinfo); private or slave only.
 */
#include "probe.h"

int main(int argc, char **argv)
{
	static char mi[1 << 17];
	char first[300] = "";
	int shared = 0, total = 0;

	probe_init(argc, argv);
	if (probe_read_file("/proc/self/mountinfo", mi, sizeof mi) <= 0) {
		INCONCL("RT-037/shared-mounts", "cannot read /proc/self/mountinfo");
		return probe_done();
	}
	for (char *l = strtok(mi, "\n"); l; l = strtok(NULL, "\n")) {
		total++;
		char *sep = strstr(l, " - ");
		char *sh = strstr(l, " shared:");
		if (sh && (!sep || sh < sep)) {
			if (!shared++) {
				/* the 5th field is the mount point */
				char mp[256] = "?";
				sscanf(l, "%*s %*s %*s %*s %255s", mp);
				snprintf(first, sizeof first, "%s", mp);
			}
		}
	}
	if (shared)
		FAILED("RT-037/shared-mounts", "%d of %d mounts shared, e.g. %s", shared, total,
		       first);
	else
		BLOCKED("RT-037/shared-mounts", "none of %d mounts is shared", total);
	return probe_done();
}
