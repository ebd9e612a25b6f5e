/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/io.h"

#include <errno.h>
#include <unistd.h>

#include "shared/macro.h"

int moat_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? negerrno() : -EIO;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}
