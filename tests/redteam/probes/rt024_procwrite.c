/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-024 writes to host-global /proc and /sys knobs. The probe only opens each
 * file for writing (it never writes): an open that succeeds is FAIL.
 * --root DIR prefixes every path: the runner's positive control points it at a
 * directory of writable stand-in files, because the real knobs are writable
 * only by host root, which a control must never be.
 */
#include "probe.h"

int main(int argc, char **argv)
{
	static const struct {
		const char *id, *path;
	} knobs[] = {
		{"RT-024/sysrq-trigger", "/proc/sysrq-trigger"},
		{"RT-024/core_pattern", "/proc/sys/kernel/core_pattern"},
		{"RT-024/uevent_helper", "/sys/kernel/uevent_helper"},
		{"RT-024/drop_caches", "/proc/sys/vm/drop_caches"},
		{"RT-024/sysrq", "/proc/sys/kernel/sysrq"},
		{"RT-024/modprobe", "/proc/sys/kernel/modprobe"},
	};
	const char *root;

	probe_init(argc, argv);
	root = probe_opt("--root") ?: "";
	for (size_t i = 0; i < sizeof knobs / sizeof knobs[0]; i++) {
		char p[4200];
		snprintf(p, sizeof p, "%s%s", root, knobs[i].path);
		errno = 0;
		int fd = open(p, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		int e = errno;
		if (fd >= 0)
			close(fd); /* never write */
		probe_classify(knobs[i].id, knobs[i].path, fd, e,
			       PROBE_ERRS(EROFS, EACCES, EPERM, ENOENT));
	}
	return probe_done();
}
