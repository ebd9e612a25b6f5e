/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one write-until-done loop (see io.h), for the library, the supervisor,
 * the sandbox's init before exec and the proxy worker alike. */
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
