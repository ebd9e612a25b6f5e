/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy helper's configuration records (net_config.h). */
#include "network/net_config.h"

#include <errno.h>
#include <unistd.h>

#include "shared/macro.h"

static int write_all(int fd, const void *buf, size_t len)
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

int moat_net_cfg_put(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	struct moat_net_cfg_rec h = {.type = type, .len = (uint32_t)(alen + blen)};
	int k;

	if (alen > MOAT_NET_CFG_MAX_BYTES || blen > MOAT_NET_CFG_MAX_BYTES - alen)
		return -E2BIG;
	if ((k = write_all(fd, &h, sizeof(h))) < 0 || (k = write_all(fd, a, alen)) < 0)
		return k;
	return blen ? write_all(fd, b, blen) : 0;
}
