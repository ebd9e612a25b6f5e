/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * TLS for the credential proxy (OpenSSL 3.0).
 *
 * The egress proxy worker terminates TLS only for hosts that need inspection
 * (secret hosts, hosts with method/path rules). For those it needs:
 *   - a per-run certificate authority whose private key lives only in the
 *     proxy worker's memory (moat_tls_ca_new), and whose public certificate is
 *     appended to the system roots in the bundle the sandbox trusts
 *     (moat_tls_write_bundle);
 *   - a server SSL_CTX per name with a freshly minted leaf certificate, kept
 *     in a bounded LRU cache (moat_tls_leaf_ctx);
 *   - a client SSL_CTX that verifies the real upstream against the host's
 *     trust store or a CA file named by the policy (moat_tls_client_ctx), and
 *     per-connection hostname verification + SNI (moat_tls_client_new). There
 *     is no switch to turn verification off.
 *
 * Everything here is used from one thread (the proxy's event loop); nothing
 * is locked.
 *
 * Order of calls in the proxy worker (it has no filesystem once its sandbox
 * is applied, so everything that reads files happens first):
 *   moat_tls_ca_new()           before fork or in the worker, at start
 *   moat_tls_write_bundle()     supervisor side, into a file bound into the sandbox
 *   moat_tls_client_ctx()       loads the trust store into memory (reads files)
 *   ... drop filesystem access ...
 *   per connection: moat_tls_leaf_ctx() + moat_tls_server_new() toward the
 *   sandbox, moat_tls_client_new() toward the upstream, then drive both with
 *   moat_tls_handshake/read/write/shutdown (non-blocking, see below).
 *
 * Non-blocking use: every fd handed to these helpers is O_NONBLOCK. Each
 * helper returns -EAGAIN and sets *ret_want to MOAT_TLS_WANT_READ or
 * MOAT_TLS_WANT_WRITE when OpenSSL needs the fd readable or writable (note: a
 * read can want a write and the other way round, during handshakes and key
 * updates); the event loop then waits for exactly that and calls the same
 * helper again with the same arguments (for writes: the same buffer, or a
 * moved one, SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER is set). SSL_pending() bytes
 * may be buffered inside OpenSSL after a read: call moat_tls_read() again
 * until it returns -EAGAIN before waiting on the fd.
 */
#pragma once

#include <openssl/ssl.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define MOAT_TLS_LEAF_CACHE 256 /* names kept in the leaf LRU */
#define MOAT_TLS_MAX_BUNDLE (16u << 20) /* largest system bundle we copy */
#define MOAT_TLS_MAX_NAME 253

enum {
	MOAT_TLS_WANT_READ = 1,
	MOAT_TLS_WANT_WRITE = 2,
};

struct moat_tls_ca;

/* A new per-run CA: EC P-256 key, self-signed certificate
 * "CN=moat per-run CA <run_id>", basicConstraints CA:TRUE critical with
 * pathlen 0, keyUsage keyCertSign critical, valid from now-1h to now+24h,
 * random serial. A second P-256 key is generated for all leaves of this CA
 * (minting is then one signature). run_id may be NULL (a random one is used).
 * Caller owns *ret; free with moat_tls_ca_free() (keys are zeroised). */
int moat_tls_ca_new(const char *run_id, struct moat_tls_ca **ret);
struct moat_tls_ca *moat_tls_ca_free(struct moat_tls_ca *ca);

/* The CA certificate as PEM (public part only). Caller frees *ret_pem. */
int moat_tls_ca_cert_pem(const struct moat_tls_ca *ca, char **ret_pem);
/* The CA (both keys, the certificate and its validity) as bytes for the exec'd
 * proxy helper (supervise_net.c): [u32 len, DER]x3 (CA key, leaf key,
 * certificate), native byte order, same build only. *ret is cleared and freed
 * with moat_tls_ca_blob_free(). moat_tls_ca_from_blob() parses such bytes
 * defensively (every length checked, the key must match the certificate). */
int moat_tls_ca_to_blob(const struct moat_tls_ca *ca, unsigned char **ret, size_t *ret_len);
void moat_tls_ca_blob_free(unsigned char *blob, size_t len);
int moat_tls_ca_from_blob(const void *blob, size_t len, struct moat_tls_ca **ret);
/* Borrowed pointer to the CA certificate (e.g. for a test's X509_STORE). */
X509 *moat_tls_ca_cert(const struct moat_tls_ca *ca);

/* Write the system roots (the file system_bundle, e.g.
 * /etc/ssl/certs/ca-certificates.crt, copied verbatim, at most
 * MOAT_TLS_MAX_BUNDLE bytes) followed by the per-run CA certificate to out_fd.
 * system_bundle NULL writes the CA alone. The result is meant to be bound
 * where the system bundle is and named by SSL_CERT_FILE, REQUESTS_CA_BUNDLE,
 * CURL_CA_BUNDLE, NODE_EXTRA_CA_CERTS, GIT_SSL_CAINFO and PIP_CERT
 * (the plan's credentials part lists them: moat_plan_ca_env, policy/plan.h). */
int moat_tls_write_bundle(const struct moat_tls_ca *ca, const char *system_bundle, int out_fd);

/* A server SSL_CTX presenting a leaf certificate for hostname (a DNS name or
 * an IPv4/IPv6 literal, without brackets or port): SAN dNSName (or
 * iPAddress), EKU serverAuth, valid now-1h .. min(now+24h, CA expiry),
 * signed by ca, TLS 1.2+ only, the CA certificate sent as chain. A client
 * whose SNI names another host is refused during the handshake.
 * Contexts are cached per normalised name (lowercase, no trailing dot), LRU,
 * MOAT_TLS_LEAF_CACHE entries. *ret is a new reference: the caller
 * SSL_CTX_free()s it (SSL_new() takes its own). -EINVAL for a malformed name. */
int moat_tls_leaf_ctx(struct moat_tls_ca *ca, const char *hostname, SSL_CTX **ret);
/* Cache statistics (tests, benchmarks). */
void moat_tls_leaf_stats(const struct moat_tls_ca *ca, unsigned *ret_entries,
			 unsigned long *ret_minted);

/* A client SSL_CTX for upstream connections: TLS 1.2+, peer verification
 * always on, trust store loaded into memory now from ca_file, or when ca_file
 * is NULL from the system bundle (OpenSSL's default cert file, else
 * /etc/ssl/certs/ca-certificates.crt; SSL_CERT_FILE in moat's environment is
 * deliberately not consulted). ALPN offers http/1.1 only. Caller frees with
 * SSL_CTX_free(). Fails if the trust store cannot be loaded. */
int moat_tls_client_ctx(const char *ca_file, SSL_CTX **ret);

/* A client SSL on fd toward hostname: SNI (for DNS names), hostname or IP
 * verification against the certificate, no partial wildcards. Caller owns
 * *ret (SSL_free). The fd stays owned by the caller. */
int moat_tls_client_new(SSL_CTX *ctx, int fd, const char *hostname, SSL **ret);
/* A server SSL on fd with a context from moat_tls_leaf_ctx(). */
int moat_tls_server_new(SSL_CTX *ctx, int fd, SSL **ret);
/* The same, when the proxy already read the first bytes of the client's
 * handshake off fd (to inspect the ClientHello): they are replayed to
 * OpenSSL before anything else is read from fd. */
int moat_tls_server_new_prefixed(SSL_CTX *ctx, int fd, const void *prefix, size_t len, SSL **ret);

/* Drive the handshake: 0 when done, -EAGAIN with *ret_want set, -EPROTO on a
 * TLS failure (including certificate verification: see moat_tls_error). */
int moat_tls_handshake(SSL *ssl, unsigned *ret_want);
/* Read up to n bytes: > 0 bytes read, 0 on a clean close_notify, -EAGAIN with
 * *ret_want, -ECONNRESET when the peer closed without close_notify,
 * -EPROTO on a TLS error. */
ssize_t moat_tls_read(SSL *ssl, void *buf, size_t n, unsigned *ret_want);
/* Write up to n bytes (partial writes allowed): > 0 bytes written, -EAGAIN
 * with *ret_want, -EPIPE / -EPROTO on failure. */
ssize_t moat_tls_write(SSL *ssl, const void *buf, size_t n, unsigned *ret_want);
/* Send close_notify: 0 done, -EAGAIN with *ret_want, < 0 error (the caller
 * may simply close the fd then). */
int moat_tls_shutdown(SSL *ssl, unsigned *ret_want);

/* A one-line description of why the last operation on ssl failed, for the
 * event log: the verification result if verification failed (e.g.
 * "certificate verify failed: hostname mismatch"), else the OpenSSL error
 * queue's first entry. Clears the thread's error queue. */
const char *moat_tls_error(SSL *ssl, char *buf, size_t len);

/* Normalise a host name or IP literal for certificates and caches:
 * lowercase, one trailing dot removed, labels of 1..63 characters of
 * [a-z0-9-_], at most 253 characters; IP literals in canonical inet_ntop
 * form. *ret_is_ip tells which. Returns 0 or -EINVAL. out must hold
 * MOAT_TLS_MAX_NAME + 1 bytes (an IPv6 literal fits). */
int moat_tls_normalize_host(const char *host, char *out, bool *ret_is_ip);
