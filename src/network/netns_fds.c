/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The listener set of a sandbox's network namespace (netns.h): kept apart
 * from netns.c, whose nftables part is only in the moat-nft.so plugin,
 * because the supervisor and the proxy handle these fds too. */
#include <errno.h>

#include "network/netns.h"
#include "shared/macro.h"

void moat_netns_fds_init(struct moat_netns_fds *fds)
{
	fds->http = fds->socks = fds->transparent4 = fds->transparent6 = -1;
	fds->dns_udp = fds->dns_tcp = fds->nflog = -1;
}

void moat_netns_fds_close(struct moat_netns_fds *fds)
{
	fds->http = safe_close(fds->http);
	fds->socks = safe_close(fds->socks);
	fds->transparent4 = safe_close(fds->transparent4);
	fds->transparent6 = safe_close(fds->transparent6);
	fds->dns_udp = safe_close(fds->dns_udp);
	fds->dns_tcp = safe_close(fds->dns_tcp);
	fds->nflog = safe_close(fds->nflog);
}

unsigned moat_netns_fds_to_array(const struct moat_netns_fds *fds, int ret_array[MOAT_NETNS_N_FDS])
{
	ret_array[0] = fds->http;
	ret_array[1] = fds->socks;
	ret_array[2] = fds->transparent4;
	ret_array[3] = fds->transparent6;
	ret_array[4] = fds->dns_udp;
	ret_array[5] = fds->dns_tcp;
	ret_array[6] = fds->nflog;
	return fds->nflog >= 0 ? 7 : 6;
}

int moat_netns_fds_from_array(const int *array, unsigned n, struct moat_netns_fds *ret)
{
	moat_netns_fds_init(ret);
	if (n != 6 && n != 7) {
		for (unsigned i = 0; i < n; i++)
			safe_close(array[i]);
		return -EBADMSG;
	}
	ret->http = array[0];
	ret->socks = array[1];
	ret->transparent4 = array[2];
	ret->transparent6 = array[3];
	ret->dns_udp = array[4];
	ret->dns_tcp = array[5];
	ret->nflog = n == 7 ? array[6] : -1;
	return 0;
}
