/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* SOCKS5 server-side parsers and reply builders (see socks5.h). */
#include "proxy/socks5.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>

#include "shared/macro.h"

int moat_socks5_parse_greeting(const uint8_t *buf, size_t len, struct moat_socks5_greeting *ret)
{
	size_t need;

	if (ret)
		*ret = (struct moat_socks5_greeting){0};
	if (!buf || len == 0)
		return 0;
	if (buf[0] == 0x04)
		return -MOAT_SOCKS5_E_SOCKS4;
	if (buf[0] != 0x05)
		return -MOAT_SOCKS5_E_VERSION;
	if (len < 2)
		return 0;
	if (buf[1] == 0)
		return -MOAT_SOCKS5_E_NO_METHODS;
	need = 2 + (size_t)buf[1];
	if (len < need)
		return 0;
	if (len > need)
		return -MOAT_SOCKS5_E_TRAILING;
	bool no_auth = memchr(buf + 2, 0x00, buf[1]) != NULL;
	if (ret) {
		ret->n_methods = buf[1];
		ret->no_auth_offered = no_auth;
	}
	if (!no_auth)
		return -MOAT_SOCKS5_E_NO_ACCEPTABLE;
	return (int)need;
}

int moat_socks5_parse_request(const uint8_t *buf, size_t len, struct moat_socks5_request *ret)
{
	struct moat_socks5_request tmp = {0};
	struct moat_socks5_request *r = ret ? ret : &tmp;
	size_t need;
	int e;

	memset(r, 0, sizeof(*r));
	if (!buf || len == 0)
		return 0;
	if (buf[0] == 0x04)
		return -MOAT_SOCKS5_E_SOCKS4;
	if (buf[0] != 0x05)
		return -MOAT_SOCKS5_E_VERSION;
	if (len < 4)
		return 0;
	if (buf[2] != 0x00)
		return -MOAT_SOCKS5_E_RESERVED;
	r->cmd = buf[1];
	r->atyp = buf[3];
	switch (buf[3]) {
	case 0x01:
		need = 4 + 4 + 2;
		break;
	case 0x04:
		need = 4 + 16 + 2;
		break;
	case 0x03:
		if (len < 5)
			return 0;
		if (buf[4] == 0)
			return -MOAT_SOCKS5_E_NAME;
		need = 5 + (size_t)buf[4] + 2;
		break;
	default:
		return -MOAT_SOCKS5_E_ATYP;
	}
	if (len < need)
		return 0;
	r->port = (uint16_t)((buf[need - 2] << 8) | buf[need - 1]);

	if (r->cmd != MOAT_SOCKS5_CMD_CONNECT)
		return -MOAT_SOCKS5_E_COMMAND;

	if (buf[3] == 0x01) {
		struct sockaddr_in *sin = (struct sockaddr_in *)&r->addr;
		sin->sin_family = AF_INET;
		memcpy(&sin->sin_addr, buf + 4, 4);
		sin->sin_port = htons(r->port);
		r->host_kind = MOAT_HOST_IPV4;
		if (!inet_ntop(AF_INET, &sin->sin_addr, r->host, sizeof(r->host)))
			return -MOAT_SOCKS5_E_NAME;
	} else if (buf[3] == 0x04) {
		struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&r->addr;
		sin6->sin6_family = AF_INET6;
		memcpy(&sin6->sin6_addr, buf + 4, 16);
		sin6->sin6_port = htons(r->port);
		r->host_kind = MOAT_HOST_IPV6;
		if (!inet_ntop(AF_INET6, &sin6->sin6_addr, r->host, sizeof(r->host)))
			return -MOAT_SOCKS5_E_NAME;
	} else {
		const char *name = (const char *)buf + 5;
		size_t nlen = buf[4];
		for (size_t i = 0; i < nlen; i++)
			r->raw_name[i] = (name[i] >= 0x20 && name[i] < 0x7f) ? name[i] : '?';
		r->raw_name[nlen] = '\0';
		if (memchr(name, '\0', nlen))
			return -MOAT_SOCKS5_E_NAME;
		/* a "domain" may really be an address ("127.0.0.1", "0x7f.1",
		 * "[::1]", "::1"): classify it like the HTTP path does */
		e = moat_host_parse(name, nlen, true, r->host, sizeof(r->host), &r->host_kind,
				    &r->host_loose_ipv4);
		if (e < 0) {
			r->host[0] = '\0';
			return -MOAT_SOCKS5_E_NAME;
		}
		if (r->host_kind == MOAT_HOST_IPV4) {
			struct sockaddr_in *sin = (struct sockaddr_in *)&r->addr;
			sin->sin_family = AF_INET;
			if (inet_pton(AF_INET, r->host, &sin->sin_addr) != 1)
				return -MOAT_SOCKS5_E_NAME;
			sin->sin_port = htons(r->port);
		} else if (r->host_kind == MOAT_HOST_IPV6) {
			struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)&r->addr;
			sin6->sin6_family = AF_INET6;
			if (inet_pton(AF_INET6, r->host, &sin6->sin6_addr) != 1)
				return -MOAT_SOCKS5_E_NAME;
			sin6->sin6_port = htons(r->port);
		}
	}
	if (r->port == 0)
		return -MOAT_SOCKS5_E_PORT;
	return (int)need;
}

uint8_t moat_socks5_err_reply(int err)
{
	if (err < 0)
		err = -err;
	switch (err) {
	case MOAT_SOCKS5_E_COMMAND:
		return MOAT_SOCKS5_REP_CMD_UNSUPPORTED;
	case MOAT_SOCKS5_E_ATYP:
		return MOAT_SOCKS5_REP_ATYP_UNSUPPORTED;
	default:
		return MOAT_SOCKS5_REP_GENERAL_FAILURE;
	}
}

const char *moat_socks5_strerror(int err)
{
	static const char *const names[MOAT_SOCKS5_E__MAX] = {
		[MOAT_SOCKS5_E_VERSION] = "not-socks5",
		[MOAT_SOCKS5_E_SOCKS4] = "socks4",
		[MOAT_SOCKS5_E_NO_METHODS] = "no-methods",
		[MOAT_SOCKS5_E_NO_ACCEPTABLE] = "no-acceptable-method",
		[MOAT_SOCKS5_E_RESERVED] = "reserved-byte",
		[MOAT_SOCKS5_E_COMMAND] = "command-unsupported",
		[MOAT_SOCKS5_E_ATYP] = "address-type-unsupported",
		[MOAT_SOCKS5_E_NAME] = "invalid-host",
		[MOAT_SOCKS5_E_PORT] = "invalid-port",
		[MOAT_SOCKS5_E_TRAILING] = "trailing-bytes",
	};
	if (err < 0)
		err = -err;
	if (err <= 0 || err >= MOAT_SOCKS5_E__MAX || !names[err])
		return "unknown";
	return names[err];
}

int moat_socks5_build_reply(uint8_t *buf, size_t len, uint8_t rep, const struct sockaddr *bound)
{
	size_t n;

	if (!buf)
		return -ENOBUFS;
	if (bound && bound->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)bound;
		n = 4 + 16 + 2;
		if (len < n)
			return -ENOBUFS;
		buf[3] = 0x04;
		memcpy(buf + 4, &sin6->sin6_addr, 16);
		memcpy(buf + 20, &sin6->sin6_port, 2);
	} else {
		n = 4 + 4 + 2;
		if (len < n)
			return -ENOBUFS;
		buf[3] = 0x01;
		if (bound && bound->sa_family == AF_INET) {
			const struct sockaddr_in *sin = (const struct sockaddr_in *)bound;
			memcpy(buf + 4, &sin->sin_addr, 4);
			memcpy(buf + 8, &sin->sin_port, 2);
		} else {
			memset(buf + 4, 0, 6);
		}
	}
	buf[0] = 0x05;
	buf[1] = rep;
	buf[2] = 0x00;
	return (int)n;
}

int moat_socks5_build_socks4_reject(uint8_t buf[8])
{
	static const uint8_t reject[8] = {0x00, 0x5b, 0, 0, 0, 0, 0, 0};
	memcpy(buf, reject, 8);
	return 8;
}
