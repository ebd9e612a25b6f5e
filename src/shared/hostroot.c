/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat_host_root() (moat.h): uid 0 of the initial user namespace, or of one
 * whose uid 0 is the parent's uid 0, is root; uid 0 of a user namespace an
 * unprivileged user made (rootless podman: uid 0 is the user's own uid
 * outside) is that user, and moat takes its unprivileged path there: the
 * sandbox's user maps onto that uid, state lives under XDG_RUNTIME_DIR, no
 * uid pool and no /run/moat. Decided once per process from
 * /proc/self/{uid,gid}_map. */
#include "shared/hostroot.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "moat/moat.h"

bool moat_hostroot_map_is_zero(const char *map, size_t len, unsigned long id)
{
	/* lines "INSIDE OUTSIDE COUNT" (kernel's format: decimal, spaces) */
	size_t i = 0;
	while (i < len) {
		unsigned long v[3];
		for (int f = 0; f < 3; f++) {
			while (i < len && map[i] == ' ')
				i++;
			if (i >= len || map[i] < '0' || map[i] > '9')
				return true;
			unsigned long n = 0;
			while (i < len && map[i] >= '0' && map[i] <= '9') {
				if (n > 0xfffffffful)
					return true;
				n = n * 10 + (unsigned long)(map[i++] - '0');
			}
			v[f] = n;
		}
		while (i < len && map[i] == ' ')
			i++;
		if (i < len && map[i] != '\n')
			return true;
		i++;
		if (id >= v[0] && id - v[0] < v[2])
			return v[1] + (id - v[0]) == 0;
	}
	return true; /* the id is not mapped: unknown */
}

static bool map_zero(const char *path, unsigned long id)
{
	char buf[4096];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return true; /* no /proc: assume the privileged path */
	ssize_t n = read(fd, buf, sizeof(buf));
	close(fd);
	if (n <= 0 || (size_t)n >= sizeof(buf))
		return true;
	return moat_hostroot_map_is_zero(buf, (size_t)n, id);
}

bool moat_host_root(void)
{
	static int cached = -1;
	/* the euid can change (helpers drop it): only uid 0 is ever root */
	if (geteuid() != 0)
		return false;
	if (cached < 0)
		cached = map_zero("/proc/self/uid_map", 0) ||
			map_zero("/proc/self/gid_map", (unsigned long)getegid());
	return cached;
}
