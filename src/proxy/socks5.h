/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SOCKS5 (RFC 1928) server side for the egress proxy: greeting and CONNECT
 * request parsers and reply builders. Pure code, no allocation.
 *
 * Both parsers are incremental by re-parsing: call with all bytes received so
 * far for the current phase; they return 0 (need more), the number of bytes
 * consumed (> 0) or a negative enum moat_socks5_err. Protocol flow:
 *   client greeting -> moat_socks5_parse_greeting
 *     ok:                send {5, 0x00}           (MOAT_SOCKS5_METHOD_REPLY_OK)
 *     E_NO_ACCEPTABLE:   send {5, 0xff} and close (MOAT_SOCKS5_METHOD_REPLY_NONE)
 *     E_SOCKS4:          send moat_socks5_build_socks4_reject() and close
 *     other error:       close
 *   client request -> moat_socks5_parse_request
 *     ok:     decide, dial, send moat_socks5_build_reply(SUCCEEDED, bound addr)
 *     error:  send moat_socks5_build_reply(moat_socks5_err_reply(err), NULL),
 *             close (E_COMMAND -> 0x07, E_ATYP -> 0x08, others -> 0x01)
 *     policy denial: reply MOAT_SOCKS5_REP_NOT_ALLOWED (0x02) and close.
 * Only the NO AUTHENTICATION method (0x00) is accepted; only CONNECT.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "proxy/hostmatch.h"

#define MOAT_SOCKS5_METHOD_REPLY_OK ((const uint8_t[2]){0x05, 0x00})
#define MOAT_SOCKS5_METHOD_REPLY_NONE ((const uint8_t[2]){0x05, 0xff})
#define MOAT_SOCKS5_REPLY_MAX 22 /* largest reply (IPv6 bound address) */

enum moat_socks5_rep {
	MOAT_SOCKS5_REP_SUCCEEDED = 0x00,
	MOAT_SOCKS5_REP_GENERAL_FAILURE = 0x01,
	MOAT_SOCKS5_REP_NOT_ALLOWED = 0x02, /* connection not allowed by ruleset */
	MOAT_SOCKS5_REP_NET_UNREACHABLE = 0x03,
	MOAT_SOCKS5_REP_HOST_UNREACHABLE = 0x04,
	MOAT_SOCKS5_REP_CONN_REFUSED = 0x05,
	MOAT_SOCKS5_REP_TTL_EXPIRED = 0x06,
	MOAT_SOCKS5_REP_CMD_UNSUPPORTED = 0x07,
	MOAT_SOCKS5_REP_ATYP_UNSUPPORTED = 0x08,
};

enum moat_socks5_cmd {
	MOAT_SOCKS5_CMD_CONNECT = 0x01,
	MOAT_SOCKS5_CMD_BIND = 0x02,
	MOAT_SOCKS5_CMD_UDP_ASSOCIATE = 0x03,
};

enum moat_socks5_err {
	MOAT_SOCKS5_E_VERSION = 1, /* first byte is not 5 (and not 4) */
	MOAT_SOCKS5_E_SOCKS4, /* SOCKS4 or SOCKS4a request: refused */
	MOAT_SOCKS5_E_NO_METHODS, /* greeting lists zero methods */
	MOAT_SOCKS5_E_NO_ACCEPTABLE, /* NO AUTH (0x00) not offered */
	MOAT_SOCKS5_E_RESERVED, /* RSV byte not zero */
	MOAT_SOCKS5_E_COMMAND, /* BIND, UDP ASSOCIATE or unknown: reply 0x07 */
	MOAT_SOCKS5_E_ATYP, /* unknown address type: reply 0x08 */
	MOAT_SOCKS5_E_NAME, /* domain empty, NUL inside, or not a valid host */
	MOAT_SOCKS5_E_PORT, /* port 0 */
	MOAT_SOCKS5_E_TRAILING, /* bytes after a greeting (client did not wait) */
	MOAT_SOCKS5_E__MAX
};

struct moat_socks5_greeting {
	uint8_t n_methods;
	bool no_auth_offered;
};

struct moat_socks5_request {
	uint8_t cmd; /* enum moat_socks5_cmd, also set when refused with E_COMMAND */
	uint8_t atyp; /* 1 IPv4, 3 domain, 4 IPv6 */
	/* Destination, as moat_host_parse() classifies it: a domain that is
	 * really an IP literal ("127.0.0.1", "0x7f.1", "[::1]") comes out as
	 * MOAT_HOST_IPV4/IPV6, so SOCKS and HTTP share one normalization. */
	enum moat_host_kind host_kind;
	bool host_loose_ipv4;
	char host[MOAT_HOST_BUFSZ];
	char raw_name[256]; /* ATYP domain as sent, non-printables as '?' ("" otherwise) */
	uint16_t port;
	struct sockaddr_storage addr; /* for IP kinds: the address with port; else zero */
};

/*
 * Parse the method-selection greeting {5, N, methods[N]}. A first byte of 4
 * is SOCKS4/4a (E_SOCKS4). Bytes beyond the greeting are an error
 * (E_TRAILING): RFC 1928 clients wait for the method reply. Returns consumed
 * bytes, 0 or -err. @ret may be NULL.
 */
int moat_socks5_parse_greeting(const uint8_t *buf, size_t len, struct moat_socks5_greeting *ret);

/*
 * Parse the request {5, CMD, 0, ATYP, DST.ADDR, DST.PORT}. Returns consumed
 * bytes (> 0; the tunnel payload may follow), 0 or -err. E_COMMAND is only
 * returned once the whole request is present, with @ret->cmd set.
 */
int moat_socks5_parse_request(const uint8_t *buf, size_t len, struct moat_socks5_request *ret);

/* Reply code to send for a request parse error. */
uint8_t moat_socks5_err_reply(int err);
/* Short reason token ("socks4", "command-unsupported", ...). Accepts err or -err. */
const char *moat_socks5_strerror(int err);

/*
 * Build a reply {5, rep, 0, ATYP, BND.ADDR, BND.PORT} into @buf (at least
 * MOAT_SOCKS5_REPLY_MAX bytes). @bound NULL (or not AF_INET/AF_INET6) means
 * 0.0.0.0:0. Returns the length or -ENOBUFS.
 */
int moat_socks5_build_reply(uint8_t *buf, size_t len, uint8_t rep, const struct sockaddr *bound);

/* The 8-byte SOCKS4 "request rejected" (0x5b) reply. Returns 8. */
int moat_socks5_build_socks4_reject(uint8_t buf[8]);
