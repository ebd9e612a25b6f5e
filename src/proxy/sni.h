/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Server name (and ALPN) from the TLS ClientHello at the start of a captured
 * or CONNECTed connection. Pure code, no allocation (a 16 KiB scratch buffer
 * on the stack for reassembly).
 *
 * Incremental by re-parsing: call with all the bytes received so far (never
 * consumed: the proxy forwards them unchanged once it has decided). Each call
 * costs O(bytes so far); callers cap the wait with a timeout. The
 * ClientHello may span several TLS records (RFC 8446 5.1 allows handshake
 * messages to be fragmented); they are reassembled up to MOAT_SNI_MAX_HELLO
 * bytes of handshake message. Anything else is refused as MALFORMED:
 * non-handshake records before the hello is complete, empty or over-long
 * records, a first handshake message that is not a ClientHello, inconsistent
 * lengths, duplicate server_name or ALPN extensions, a server_name list with
 * more or fewer than one entry, a name type other than host_name, a host name
 * that moat_host_normalize() refuses or that is an IP literal (RFC 6066 3).
 * An encrypted_client_hello (ECH) or encrypted_server_name (ESNI) extension
 * is reported in ret->ech: the SNI is then not the name the server serves.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proxy/hostmatch.h"

#define MOAT_SNI_MAX_HELLO (16u * 1024u) /* handshake message bytes, header included */
#define MOAT_SNI_ALPN_MAX 128

enum moat_sni_result {
	MOAT_SNI_NEED_MORE = 0, /* incomplete: read more (caller applies a timeout) */
	MOAT_SNI_FOUND = 1, /* ret->host is set */
	MOAT_SNI_NOT_TLS = 2, /* first bytes are not a TLS handshake record */
	MOAT_SNI_NO_SNI = 3, /* a valid ClientHello without server_name */
	MOAT_SNI_MALFORMED = 4, /* a TLS record that breaks the rules above */
};

struct moat_sni_info {
	char host[MOAT_HOST_BUFSZ]; /* normalized, for FOUND */
	/* ALPN protocols joined by ',' ("h2,http/1.1"); bytes other than
	 * printable ASCII and ',' become '?'; truncated to fit; "" if absent. */
	char alpn[MOAT_SNI_ALPN_MAX];
	uint16_t legacy_version; /* ClientHello.legacy_version, e.g. 0x0303 */
	size_t hello_len; /* handshake message length incl. 4-byte header */
	bool ech; /* an ECH (0xfe0d) or ESNI (0xffce) extension is present */
	const char *malformed_why; /* static reason for MALFORMED, else NULL */
};

/*
 * Examine the first @len bytes of a connection. Returns an enum
 * moat_sni_result; @ret is filled for FOUND and NO_SNI (alpn, version), and
 * malformed_why for MALFORMED.
 */
int moat_sni_parse(const uint8_t *buf, size_t len, struct moat_sni_info *ret);

/* "need-more", "found", "not-tls", "no-sni", "malformed". */
const char *moat_sni_result_str(int result);
