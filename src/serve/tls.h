/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TLS for `moat serve --tls-cert/--tls-key`, terminated with OpenSSL inside
 * the front (front.c): the front accepts on the TCP listener itself, runs
 * each handshake without blocking, and after it hands libmicrohttpd one end
 * of a socketpair (MHD_add_connection) and relays bytes between the TLS
 * connection and the other end. libmicrohttpd parses the HTTP as on the
 * unix socket; nothing here parses HTTP, and no byte is framed here.
 *
 * TLS 1.2 and 1.3 only, ECDHE with AEAD ciphers for 1.2, no renegotiation,
 * no compression, no session tickets or cache. At most
 * MOAT_FRONT_TLS_MAX_CONNS connections, of which at most
 * MOAT_FRONT_TLS_MAX_HANDSHAKES are in their handshake (a new one ends the
 * oldest handshake); a handshake not done in MOAT_FRONT_TLS_HANDSHAKE_MS is
 * ended, so silent or slow clients cannot hold the front.
 */
#pragma once

#include <poll.h>
#include <stddef.h>

struct MHD_Daemon;

#define MOAT_FRONT_TLS_MAX_CONNS 256u
#define MOAT_FRONT_TLS_MAX_HANDSHAKES 64u
#define MOAT_FRONT_TLS_HANDSHAKE_MS 10000
/* a connection whose plaintext side ended gets this long to deliver the rest */
#define MOAT_FRONT_TLS_LINGER_MS 10000
/* poll entries moat_front_tls_poll fills at most */
#define MOAT_FRONT_TLS_POLLFDS (1u + 2u * MOAT_FRONT_TLS_MAX_CONNS)

struct moat_front_tls;

/* Before confinement: the OpenSSL context from the PEM certificate (chain)
 * and key in memory (an encrypted key is refused: no prompt), checked to
 * match. listen_fd is the TCP listener (made non-blocking), d the
 * libmicrohttpd daemon (without a listener of its own) that gets the
 * plaintext ends. Neither is owned. On failure -errno and a reason in
 * why[why_len]. */
int moat_front_tls_new(int listen_fd, struct MHD_Daemon *d, const char *cert, size_t cert_len,
		       const char *key, size_t key_len, struct moat_front_tls **ret, char *why,
		       size_t why_len);

/* The poll entries of the listener and of every connection into pf (room
 * for MOAT_FRONT_TLS_POLLFDS); lowers *timeout_ms (-1: none) to the next
 * deadline. Returns the number of entries. */
unsigned moat_front_tls_poll(struct moat_front_tls *t, struct pollfd *pf, int *timeout_ms);

/* After poll: accepts, moves handshakes and bytes on, ends connections that
 * are done, failed or past their deadline. pf as filled by
 * moat_front_tls_poll (with revents). */
void moat_front_tls_run(struct moat_front_tls *t, const struct pollfd *pf);
