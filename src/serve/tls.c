/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* TLS with OpenSSL in the front of `moat serve` (tls.h). */
#include "serve/tls.h"

#include <errno.h>
#include <microhttpd.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>

#include "shared/macro.h"

/* one TLS record's worth of plaintext each way */
#define TLS_BUF 16384u
/* connections accepted per turn of the loop */
#define ACCEPT_BURST 16

/* ECDHE (forward secrecy) with AEAD for TLS 1.2; TLS 1.3 has only such */
#define TLS12_CIPHERS "ECDHE+AESGCM:ECDHE+CHACHA20"

struct tconn {
	int fd; /* the client's TCP connection */
	int pfd; /* our end of the plaintext socketpair; -1 in the handshake */
	SSL *ssl;
	int64_t deadline; /* monotonic ms; 0: none */
	bool rd_done; /* nothing more comes from the client */
	bool plain_shut; /* libmicrohttpd was told so (SHUT_WR) */
	bool plain_eof; /* libmicrohttpd closed its end */
	short ev_fd, ev_pfd; /* what the connection waits for */
	int pi_fd, pi_pfd; /* its entries in the poll array, -1: none */
	size_t in_len; /* decrypted, for libmicrohttpd */
	size_t out_off, out_len; /* from libmicrohttpd, for the client */
	char in[TLS_BUF], out[TLS_BUF];
};

struct moat_front_tls {
	SSL_CTX *ctx;
	struct MHD_Daemon *d;
	int lfd, pi_lfd;
	unsigned n, n_hs; /* connections, of which in the handshake */
	struct tconn *c[MOAT_FRONT_TLS_MAX_CONNS];
};

static int64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* an encrypted key is refused, never asked for */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	return -1;
}

static int fail(char *why, size_t why_len, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char ossl[160] = "";
	if (e)
		ERR_error_string_n(e, ossl, sizeof(ossl));
	snprintf(why, why_len, "tls: %s%s%s", what, e ? ": " : "", ossl);
	ERR_clear_error();
	return -EINVAL;
}

static int load_material(SSL_CTX *ctx, const char *cert, size_t cert_len, const char *key,
			 size_t key_len, char *why, size_t why_len)
{
	if (cert_len > INT32_MAX || key_len > INT32_MAX)
		return fail(why, why_len, "the certificate or key is too large");
	BIO *b = BIO_new_mem_buf(cert, (int)cert_len);
	X509 *x = b ? PEM_read_bio_X509_AUX(b, NULL, no_passphrase, NULL) : NULL;
	int ok = x && SSL_CTX_use_certificate(ctx, x) == 1;
	X509_free(x);
	if (!ok) {
		BIO_free(b);
		return fail(why, why_len, "--tls-cert holds no usable PEM certificate");
	}
	/* the rest of the file: the chain, in order */
	while ((x = PEM_read_bio_X509(b, NULL, no_passphrase, NULL)))
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1) {
			X509_free(x);
			BIO_free(b);
			return fail(why, why_len, "--tls-cert: a chain certificate is not usable");
		}
	unsigned long e = ERR_peek_last_error();
	BIO_free(b);
	if (ERR_GET_LIB(e) == ERR_LIB_PEM && ERR_GET_REASON(e) == PEM_R_NO_START_LINE)
		ERR_clear_error(); /* the end of the file */
	else if (e)
		return fail(why, why_len, "--tls-cert: a chain certificate does not parse");

	b = BIO_new_mem_buf(key, (int)key_len);
	EVP_PKEY *k = b ? PEM_read_bio_PrivateKey(b, NULL, no_passphrase, NULL) : NULL;
	BIO_free(b);
	if (!k)
		return fail(why, why_len, "--tls-key holds no unencrypted PEM private key");
	ok = SSL_CTX_use_PrivateKey(ctx, k) == 1;
	EVP_PKEY_free(k);
	if (!ok)
		return fail(why, why_len, "--tls-key does not match --tls-cert, or is too weak");
	if (SSL_CTX_check_private_key(ctx) != 1)
		return fail(why, why_len, "--tls-key does not match --tls-cert");
	return 0;
}

int moat_front_tls_new(int listen_fd, struct MHD_Daemon *d, const char *cert, size_t cert_len,
		       const char *key, size_t key_len, struct moat_front_tls **ret, char *why,
		       size_t why_len)
{
	/* no configuration file: what is set here is all there is */
	if (OPENSSL_init_ssl(OPENSSL_INIT_NO_LOAD_CONFIG, NULL) != 1)
		return fail(why, why_len, "OpenSSL does not initialise");
	struct moat_front_tls *t = calloc(1, sizeof(*t));
	if (!t)
		return fail(why, why_len, "out of memory");
	t->d = d;
	t->lfd = listen_fd;
	t->ctx = SSL_CTX_new(TLS_server_method());
	int k = -EINVAL;
	if (!t->ctx) {
		k = fail(why, why_len, "no context");
		goto err;
	}
	if (SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION) != 1 ||
	    SSL_CTX_set_max_proto_version(t->ctx, 0) != 1 ||
	    SSL_CTX_set_cipher_list(t->ctx, TLS12_CIPHERS) != 1 ||
	    SSL_CTX_set_num_tickets(t->ctx, 0) != 1) {
		k = fail(why, why_len, "the protocol settings are refused");
		goto err;
	}
	SSL_CTX_set_security_level(t->ctx, 2);
	SSL_CTX_set_options(t->ctx,
			    SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_NO_TICKET |
				    SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_cache_mode(t->ctx, SSL_SESS_CACHE_OFF);
	SSL_CTX_set_mode(t->ctx,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				 SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_verify(t->ctx, SSL_VERIFY_NONE, NULL);
	if ((k = load_material(t->ctx, cert, cert_len, key, key_len, why, why_len)) < 0)
		goto err;
	/* the random generator is seeded now (getrandom), not first in a handshake */
	unsigned char seed[16];
	if (RAND_bytes(seed, sizeof(seed)) != 1) {
		k = fail(why, why_len, "no random numbers");
		goto err;
	}
	int fl = fcntl(listen_fd, F_GETFL);
	if (fl < 0 || fcntl(listen_fd, F_SETFL, fl | O_NONBLOCK) < 0) {
		k = -errno;
		snprintf(why, why_len, "tls: the listener: %s", strerror(errno));
		goto err;
	}
	*ret = t;
	return 0;
err:
	SSL_CTX_free(t->ctx);
	free(t);
	return k;
}

static void conn_close(struct moat_front_tls *t, unsigned i)
{
	struct tconn *c = t->c[i];
	if (c->pfd < 0)
		t->n_hs--;
	SSL_free(c->ssl);
	safe_close(c->fd);
	safe_close(c->pfd);
	explicit_bzero(c, sizeof(*c));
	free(c);
	t->c[i] = t->c[--t->n];
	t->c[t->n] = NULL;
}

/* what OpenSSL waits for on the client's connection */
static void want(struct tconn *c, int ssl_err)
{
	c->ev_fd |= ssl_err == SSL_ERROR_WANT_WRITE ? POLLOUT : POLLIN;
}

/* Both directions as far as they go without blocking. 0: go on; -1: the
 * connection is done or broken (closed by the caller). */
static int relay(struct tconn *c, int64_t now)
{
	c->ev_fd = c->ev_pfd = 0;
	/* the client's bytes, decrypted, to libmicrohttpd */
	for (;;) {
		if (c->in_len) {
			ssize_t k = send(c->pfd, c->in, c->in_len, MSG_NOSIGNAL | MSG_DONTWAIT);
			if (k < 0 && errno == EINTR)
				continue;
			if (k < 0 && errno == EAGAIN) {
				c->ev_pfd |= POLLOUT;
				break;
			}
			if (k <= 0) {
				/* libmicrohttpd is done with it: what it
				 * wrote before is still delivered below */
				c->in_len = 0;
				c->rd_done = true;
				continue;
			}
			memmove(c->in, c->in + k, c->in_len - (size_t)k);
			c->in_len -= (size_t)k;
			continue;
		}
		if (c->rd_done) {
			if (!c->plain_shut)
				shutdown(c->pfd, SHUT_WR);
			c->plain_shut = true;
			break;
		}
		ERR_clear_error();
		int r = SSL_read(c->ssl, c->in, (int)sizeof(c->in));
		if (r > 0) {
			c->in_len = (size_t)r;
			continue;
		}
		int e = SSL_get_error(c->ssl, r);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			want(c, e);
			break;
		}
		if (e != SSL_ERROR_ZERO_RETURN)
			return -1; /* broken, reset or cut short: all of it ends */
		c->rd_done = true; /* close_notify: the client sends no more */
	}
	/* libmicrohttpd's bytes, encrypted, to the client */
	for (;;) {
		if (c->out_off < c->out_len) {
			ERR_clear_error();
			int r = SSL_write(c->ssl, c->out + c->out_off,
					  (int)(c->out_len - c->out_off));
			if (r > 0) {
				c->out_off += (size_t)r;
				continue;
			}
			int e = SSL_get_error(c->ssl, r);
			if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
				return -1;
			want(c, e);
			break;
		}
		c->out_off = c->out_len = 0;
		if (c->plain_eof) {
			ERR_clear_error();
			SSL_shutdown(c->ssl); /* close_notify, once, without waiting */
			return -1;
		}
		ssize_t k = read(c->pfd, c->out, sizeof(c->out));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && errno == EAGAIN) {
			c->ev_pfd |= POLLIN;
			break;
		}
		if (k > 0) {
			c->out_len = (size_t)k;
			continue;
		}
		/* libmicrohttpd closed the connection: what is left goes out
		 * within the linger time, or not at all */
		c->plain_eof = true;
		c->deadline = now + MOAT_FRONT_TLS_LINGER_MS;
	}
	return 0;
}

static int handshake(struct moat_front_tls *t, struct tconn *c, int64_t now)
{
	c->ev_fd = c->ev_pfd = 0;
	ERR_clear_error();
	int r = SSL_accept(c->ssl);
	if (r != 1) {
		int e = SSL_get_error(c->ssl, r);
		if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE)
			return -1; /* e.g. TLS 1.1, plaintext HTTP, no shared cipher */
		want(c, e);
		return 0;
	}
	/* The plaintext side: an anonymous socketpair, one end for
	 * libmicrohttpd (which owns and closes it, even on failure), one here. */
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if (MHD_add_connection(t->d, sv[1], (const struct sockaddr *)&sa, sizeof(sa)) != MHD_YES) {
		safe_close(sv[0]);
		return -1;
	}
	c->pfd = sv[0];
	c->deadline = 0;
	t->n_hs--;
	return relay(c, now);
}

static void accept_some(struct moat_front_tls *t, int64_t now)
{
	for (int i = 0; i < ACCEPT_BURST; i++) {
		int fd = accept4(t->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return; /* EAGAIN, or a connection gone before accept */
		if (t->n >= MOAT_FRONT_TLS_MAX_CONNS) {
			safe_close(fd);
			continue;
		}
		if (t->n_hs >= MOAT_FRONT_TLS_MAX_HANDSHAKES) {
			/* the oldest handshake makes room: a flood of silent
			 * connections ends its own oldest, not the front */
			unsigned old = t->n;
			for (unsigned j = 0; j < t->n; j++)
				if (t->c[j]->pfd < 0 &&
				    (old == t->n || t->c[j]->deadline < t->c[old]->deadline))
					old = j;
			if (old < t->n)
				conn_close(t, old);
		}
		struct tconn *c = calloc(1, sizeof(*c));
		SSL *ssl = c ? SSL_new(t->ctx) : NULL;
		if (!ssl || SSL_set_fd(ssl, fd) != 1) {
			SSL_free(ssl);
			free(c);
			safe_close(fd);
			continue;
		}
		c->fd = fd;
		c->pfd = -1;
		c->ssl = ssl;
		c->deadline = now + MOAT_FRONT_TLS_HANDSHAKE_MS;
		c->pi_fd = c->pi_pfd = -1;
		t->c[t->n++] = c;
		t->n_hs++;
		if (handshake(t, c, now) < 0)
			conn_close(t, t->n - 1);
	}
}

unsigned moat_front_tls_poll(struct moat_front_tls *t, struct pollfd *pf, int *timeout_ms)
{
	unsigned n = 0;
	int64_t now = mono_ms();
	t->pi_lfd = (int)n;
	pf[n++] = (struct pollfd){.fd = t->lfd, .events = POLLIN};
	for (unsigned i = 0; i < t->n; i++) {
		struct tconn *c = t->c[i];
		c->pi_fd = (int)n;
		pf[n++] = (struct pollfd){.fd = c->fd, .events = c->ev_fd};
		c->pi_pfd = -1;
		if (c->pfd >= 0) {
			c->pi_pfd = (int)n;
			pf[n++] = (struct pollfd){.fd = c->pfd, .events = c->ev_pfd};
		}
		if (c->deadline) {
			int64_t left = c->deadline > now ? c->deadline - now : 0;
			if (*timeout_ms < 0 || left < *timeout_ms)
				*timeout_ms = (int)left;
		}
	}
	return n;
}

void moat_front_tls_run(struct moat_front_tls *t, const struct pollfd *pf)
{
	int64_t now = mono_ms();
	/* from the end: a closed connection's slot takes the last one, done already */
	for (unsigned i = t->n; i-- > 0;) {
		struct tconn *c = t->c[i];
		bool ready = (c->pi_fd >= 0 && pf[c->pi_fd].revents) ||
			(c->pi_pfd >= 0 && pf[c->pi_pfd].revents);
		int r = 0;
		if (ready)
			r = c->pfd < 0 ? handshake(t, c, now) : relay(c, now);
		if (r < 0 || (c->deadline && now >= c->deadline))
			conn_close(t, i);
	}
	if (t->pi_lfd >= 0 && (pf[t->pi_lfd].revents & POLLIN))
		accept_some(t, now);
}
