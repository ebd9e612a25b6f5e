/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-012 rare socket families: socket(family, <invalid type>, 0) reaches the
 * kernel as EINVAL unless a family allowlist answers first (EAFNOSUPPORT or
 * EPERM); then a real socket of a usable type (success = FAIL). Also DCCP and
 * SCTP on AF_INET.
 */
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "probe.h"

#ifndef AF_XDP
#define AF_XDP 44
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_MCTP
#define AF_MCTP 45
#endif

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		int family, type, proto;
	} fam[] = {
		{"vsock", AF_VSOCK, SOCK_STREAM, 0},
		{"tipc", AF_TIPC, SOCK_RDM, 0},
		{"rds", AF_RDS, SOCK_SEQPACKET, 0},
		{"packet", AF_PACKET, SOCK_RAW, 0},
		{"key", AF_KEY, SOCK_RAW, 2 /* PF_KEY_V2 */},
		{"alg", AF_ALG, SOCK_SEQPACKET, 0},
		{"bluetooth", AF_BLUETOOTH, SOCK_RAW, 0},
		{"can", AF_CAN, SOCK_RAW, 1},
		{"xdp", AF_XDP, SOCK_RAW, 0},
		{"nfc", AF_NFC, SOCK_SEQPACKET, 0},
		{"pppox", AF_PPPOX, SOCK_STREAM, 0},
		{"llc", AF_LLC, SOCK_DGRAM, 0},
		{"appletalk", AF_APPLETALK, SOCK_DGRAM, 0},
		{"x25", AF_X25, SOCK_SEQPACKET, 0},
		{"ax25", AF_AX25, SOCK_SEQPACKET, 0},
		{"mctp", AF_MCTP, SOCK_DGRAM, 0},
		{"qipcrtr", AF_QIPCRTR, SOCK_DGRAM, 0},
	};
	char id[96];

	probe_init(argc, argv);
	for (size_t i = 0; i < sizeof fam / sizeof fam[0]; i++) {
		snprintf(id, sizeof id, "RT-012/%s-badtype", fam[i].name);
		TRY(id, socket(fam[i].family, 0x7f, 0), EAFNOSUPPORT, EPERM);
		snprintf(id, sizeof id, "RT-012/%s", fam[i].name);
		errno = 0;
		int fd = socket(fam[i].family, fam[i].type | SOCK_CLOEXEC, fam[i].proto);
		int e = errno;
		if (fd >= 0)
			close(fd);
		/* Any errno: a real socket that failed is not a working attack path. */
		if (fd >= 0)
			FAILED(id, "socket(AF %d) created", fam[i].family);
		else
			BLOCKED(id, "socket(AF %d) errno=%s", fam[i].family, probe_errname(e));
	}
	TRY("RT-012/inet-dccp", socket(AF_INET, SOCK_DCCP, IPPROTO_DCCP), EPERM, EAFNOSUPPORT,
	    EPROTONOSUPPORT, ESOCKTNOSUPPORT, EINVAL);
	TRY("RT-012/inet-sctp", socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP), EPERM, EAFNOSUPPORT,
	    EPROTONOSUPPORT, ESOCKTNOSUPPORT, EINVAL);
	return probe_done();
}
