/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Per-run CA, leaf minting with an LRU cache, verified upstream contexts and
 * non-blocking SSL helpers. See tls.h. */
#include "proxy/tls.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "shared/io.h"
#include "shared/macro.h"

#define CA_VALIDITY_S (24 * 3600)
#define BACKDATE_S 3600
#define DEBIAN_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct leaf_entry {
	char name[MOAT_TLS_MAX_NAME + 1];
	SSL_CTX *ctx; /* one reference owned by the cache */
	unsigned long used;
};

struct moat_tls_ca {
	EVP_PKEY *key; /* CA signing key: only here, never written anywhere */
	EVP_PKEY *leaf_key; /* shared by all leaves of this run */
	X509 *cert;
	time_t not_after;
	struct leaf_entry leaves[MOAT_TLS_LEAF_CACHE];
	unsigned n_leaves;
	unsigned long clock, minted;
};

static void x509_freep(X509 **p)
{
	X509_free(*p);
}
static void ssl_ctx_freep(SSL_CTX **p)
{
	SSL_CTX_free(*p);
}
static void ssl_freep(SSL **p)
{
	SSL_free(*p);
}

int moat_tls_normalize_host(const char *host, char *out, bool *ret_is_ip)
{
	unsigned char addr[sizeof(struct in6_addr)];
	size_t len;

	if (!host || !*host)
		return -EINVAL;
	len = strlen(host);
	if (len > MOAT_TLS_MAX_NAME + 1)
		return -EINVAL;

	if (inet_pton(AF_INET, host, addr) == 1) {
		if (!inet_ntop(AF_INET, addr, out, MOAT_TLS_MAX_NAME + 1))
			return -EINVAL;
		*ret_is_ip = true;
		return 0;
	}
	if (inet_pton(AF_INET6, host, addr) == 1) {
		if (!inet_ntop(AF_INET6, addr, out, MOAT_TLS_MAX_NAME + 1))
			return -EINVAL;
		*ret_is_ip = true;
		return 0;
	}

	if (host[len - 1] == '.')
		len--;
	if (len == 0 || len > MOAT_TLS_MAX_NAME)
		return -EINVAL;
	size_t label = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)host[i];
		if (c == '.') {
			if (label == 0)
				return -EINVAL;
			label = 0;
			out[i] = '.';
			continue;
		}
		if (!(isascii(c) && (isalnum(c) || c == '-' || c == '_')))
			return -EINVAL;
		if (++label > 63)
			return -EINVAL;
		out[i] = (char)tolower(c);
	}
	if (label == 0)
		return -EINVAL;
	out[len] = '\0';
	*ret_is_ip = false;
	return 0;
}

static int random_serial(X509 *x)
{
	BIGNUM *bn = BN_new();
	int r = -ENOMEM;

	/* 127 random bits: positive, unique enough, within the 20-octet limit. */
	if (bn && BN_rand(bn, 127, BN_RAND_TOP_ANY, BN_RAND_BOTTOM_ANY) == 1 &&
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x)))
		r = 0;
	BN_free(bn);
	return r;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX v3;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx(&v3, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &v3, nid, value);
	if (!ext)
		return -EINVAL;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok ? 0 : -ENOMEM;
}

static int set_validity(X509 *x, time_t from, time_t until)
{
	if (!X509_time_adj_ex(X509_getm_notBefore(x), 0, 0, &from))
		return -EINVAL;
	if (!X509_time_adj_ex(X509_getm_notAfter(x), 0, 0, &until))
		return -EINVAL;
	return 0;
}

int moat_tls_ca_new(const char *run_id, struct moat_tls_ca **ret)
{
	struct moat_tls_ca *ca;
	X509_NAME *name;
	char cn[128], rid[33];
	time_t now = time(NULL);
	int r = -ENOMEM;

	if (!run_id) {
		unsigned char b[8];
		if (RAND_bytes(b, sizeof(b)) != 1)
			return -EIO;
		for (size_t i = 0; i < sizeof(b); i++)
			snprintf(rid + 2 * i, 3, "%02x", b[i]);
		run_id = rid;
	}
	if (strlen(run_id) > 40)
		return -EINVAL;
	snprintf(cn, sizeof(cn), "moat per-run CA %s", run_id);

	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return -ENOMEM;
	ca->key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	ca->leaf_key = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
	ca->cert = X509_new();
	if (!ca->key || !ca->leaf_key || !ca->cert)
		goto fail;

	ca->not_after = now + CA_VALIDITY_S;
	if (!X509_set_version(ca->cert, 2) || random_serial(ca->cert) < 0 ||
	    set_validity(ca->cert, now - BACKDATE_S, ca->not_after) < 0 ||
	    !X509_set_pubkey(ca->cert, ca->key))
		goto fail;
	name = X509_get_subject_name(ca->cert);
	if (!X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC, (const unsigned char *)"moat", -1,
					-1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1,
					-1, 0) ||
	    !X509_set_issuer_name(ca->cert, name))
		goto fail;
	r = -EINVAL;
	if (add_ext(ca->cert, ca->cert, NID_basic_constraints, "critical,CA:TRUE,pathlen:0") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_key_usage, "critical,keyCertSign,cRLSign") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(ca->cert, ca->cert, NID_authority_key_identifier, "keyid:always") < 0)
		goto fail;
	if (X509_sign(ca->cert, ca->key, EVP_sha256()) <= 0)
		goto fail;

	*ret = ca;
	return 0;
fail:
	ERR_clear_error();
	moat_tls_ca_free(ca);
	return r;
}

struct moat_tls_ca *moat_tls_ca_free(struct moat_tls_ca *ca)
{
	if (!ca)
		return NULL;
	for (unsigned i = 0; i < ca->n_leaves; i++)
		SSL_CTX_free(ca->leaves[i].ctx);
	/* EVP_PKEY_free clears private key material (EC keys use secure BIGNUMs). */
	EVP_PKEY_free(ca->key);
	EVP_PKEY_free(ca->leaf_key);
	X509_free(ca->cert);
	OPENSSL_cleanse(ca, sizeof(*ca));
	free(ca);
	return NULL;
}

/* ---- the CA handed to the exec'd proxy helper ------------------------------- */

#define CA_BLOB_MAX (64u << 10)

int moat_tls_ca_to_blob(const struct moat_tls_ca *ca, unsigned char **ret, size_t *ret_len)
{
	int lens[3] = {i2d_PrivateKey(ca->key, NULL), i2d_PrivateKey(ca->leaf_key, NULL),
		       i2d_X509(ca->cert, NULL)};
	size_t total = 0;
	unsigned char *blob, *p;

	for (size_t i = 0; i < 3; i++) {
		if (lens[i] <= 0)
			return -EINVAL;
		total += sizeof(uint32_t) + (size_t)lens[i];
	}
	if (total > CA_BLOB_MAX)
		return -E2BIG;
	blob = OPENSSL_secure_zalloc(total);
	if (!blob)
		return -ENOMEM;
	p = blob;
	for (size_t i = 0; i < 3; i++) {
		uint32_t l = (uint32_t)lens[i];
		unsigned char *q;
		memcpy(p, &l, sizeof(l));
		p += sizeof(l);
		q = p;
		if ((i == 0	      ? i2d_PrivateKey(ca->key, &q)
			     : i == 1 ? i2d_PrivateKey(ca->leaf_key, &q)
				      : i2d_X509(ca->cert, &q)) != lens[i]) {
			moat_tls_ca_blob_free(blob, total);
			return -EIO;
		}
		p += l;
	}
	*ret = blob;
	*ret_len = total;
	return 0;
}

void moat_tls_ca_blob_free(unsigned char *blob, size_t len)
{
	if (blob)
		OPENSSL_secure_clear_free(blob, len);
}

int moat_tls_ca_from_blob(const void *blob, size_t len, struct moat_tls_ca **ret)
{
	const unsigned char *p = blob, *end = p + len, *part[3];
	uint32_t plen[3];
	struct moat_tls_ca *ca;
	struct tm tm;

	if (len > CA_BLOB_MAX)
		return -E2BIG;
	for (size_t i = 0; i < 3; i++) {
		if ((size_t)(end - p) < sizeof(uint32_t))
			return -EBADMSG;
		memcpy(&plen[i], p, sizeof(uint32_t));
		p += sizeof(uint32_t);
		if (plen[i] == 0 || plen[i] > (size_t)(end - p) || plen[i] > INT_MAX)
			return -EBADMSG;
		part[i] = p;
		p += plen[i];
	}
	if (p != end)
		return -EBADMSG;
	ca = calloc(1, sizeof(*ca));
	if (!ca)
		return -ENOMEM;
	ca->key = d2i_AutoPrivateKey(NULL, &part[0], (long)plen[0]);
	ca->leaf_key = d2i_AutoPrivateKey(NULL, &part[1], (long)plen[1]);
	ca->cert = d2i_X509(NULL, &part[2], (long)plen[2]);
	if (!ca->key || !ca->leaf_key || !ca->cert ||
	    X509_check_private_key(ca->cert, ca->key) != 1 ||
	    !ASN1_TIME_to_tm(X509_get0_notAfter(ca->cert), &tm)) {
		ERR_clear_error();
		moat_tls_ca_free(ca);
		return -EBADMSG;
	}
	ca->not_after = timegm(&tm);
	*ret = ca;
	return 0;
}

X509 *moat_tls_ca_cert(const struct moat_tls_ca *ca)
{
	return ca->cert;
}

int moat_tls_ca_cert_pem(const struct moat_tls_ca *ca, char **ret_pem)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *data, *pem;
	long n;

	if (!b)
		return -ENOMEM;
	if (!PEM_write_bio_X509(b, ca->cert)) {
		BIO_free(b);
		return -EIO;
	}
	n = BIO_get_mem_data(b, &data);
	pem = n > 0 ? strndup(data, (size_t)n) : NULL;
	BIO_free(b);
	if (!pem)
		return -ENOMEM;
	*ret_pem = pem;
	return 0;
}

int moat_tls_write_bundle(const struct moat_tls_ca *ca, const char *system_bundle, int out_fd)
{
	_cleanup_free_ char *pem = NULL;
	int r;

	r = moat_tls_ca_cert_pem(ca, &pem);
	if (r < 0)
		return r;

	if (system_bundle) {
		_cleanup_close_ int fd = open(system_bundle, O_RDONLY | O_CLOEXEC | O_NOCTTY);
		struct stat st;
		char buf[65536];
		uint64_t total = 0;
		bool newline = true;

		if (fd < 0)
			return negerrno();
		if (fstat(fd, &st) < 0)
			return negerrno();
		if (!S_ISREG(st.st_mode))
			return -EINVAL;
		for (;;) {
			ssize_t n = read(fd, buf, sizeof(buf));
			if (n < 0) {
				if (errno == EINTR)
					continue;
				return negerrno();
			}
			if (n == 0)
				break;
			total += (uint64_t)n;
			if (total > MOAT_TLS_MAX_BUNDLE)
				return -EFBIG;
			r = moat_write_all(out_fd, buf, (size_t)n);
			if (r < 0)
				return r;
			newline = buf[n - 1] == '\n';
		}
		if (!newline && (r = moat_write_all(out_fd, "\n", 1)) < 0)
			return r;
	}
	static const char hdr[] = "# moat per-run CA (its key exists only in moat's proxy)\n";
	r = moat_write_all(out_fd, hdr, sizeof(hdr) - 1);
	if (r < 0)
		return r;
	return moat_write_all(out_fd, pem, strlen(pem));
}

/* Refuse a ClientHello whose SNI names another host than the leaf: a client
 * must not get api.allowed.test's certificate on a connection the proxy
 * opened for a different name (RT-062 a). No SNI (IP literals) is fine. */
static int servername_cb(SSL *ssl, int *alert, void *arg)
{
	const char *sni = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
	X509 *cert;

	if (!sni)
		return SSL_TLSEXT_ERR_OK;
	cert = SSL_get_certificate(ssl);
	if (cert && X509_check_host(cert, sni, 0, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS, NULL) == 1)
		return SSL_TLSEXT_ERR_OK;
	*alert = SSL_AD_UNRECOGNIZED_NAME;
	return SSL_TLSEXT_ERR_ALERT_FATAL;
}

static int common_ctx_setup(SSL_CTX *ctx)
{
	if (!SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION))
		return -EINVAL;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION);
	SSL_CTX_set_mode(ctx,
			 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
				 SSL_MODE_RELEASE_BUFFERS);
	return 0;
}

static int mint_leaf(struct moat_tls_ca *ca, const char *name, bool is_ip, SSL_CTX **ret)
{
	_cleanup_(x509_freep) X509 *x = X509_new();
	_cleanup_(ssl_ctx_freep) SSL_CTX *ctx = NULL;
	char san[MOAT_TLS_MAX_NAME + 16];
	time_t now = time(NULL), until = now + CA_VALIDITY_S;

	if (!x)
		return -ENOMEM;
	if (until > ca->not_after)
		until = ca->not_after;
	if (!X509_set_version(x, 2) || random_serial(x) < 0 ||
	    set_validity(x, now - BACKDATE_S, until) < 0 || !X509_set_pubkey(x, ca->leaf_key) ||
	    !X509_set_issuer_name(x, X509_get_subject_name(ca->cert)))
		return -ENOMEM;
	/* CN is limited to 64 characters; the SAN is what clients check. */
	if (strlen(name) <= 64 &&
	    !X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
					(const unsigned char *)name, -1, -1, 0))
		return -ENOMEM;
	/* name is normalised: [a-z0-9._-] or an inet_ntop literal, so it cannot
	 * inject anything into the extension's text form. */
	snprintf(san, sizeof(san), "%s%s%s", strlen(name) > 64 ? "critical," : "",
		 is_ip ? "IP:" : "DNS:", name);
	if (add_ext(x, ca->cert, NID_basic_constraints, "critical,CA:FALSE") < 0 ||
	    add_ext(x, ca->cert, NID_key_usage, "critical,digitalSignature") < 0 ||
	    add_ext(x, ca->cert, NID_ext_key_usage, "serverAuth") < 0 ||
	    add_ext(x, ca->cert, NID_subject_alt_name, san) < 0 ||
	    add_ext(x, ca->cert, NID_subject_key_identifier, "hash") < 0 ||
	    add_ext(x, ca->cert, NID_authority_key_identifier, "keyid:always") < 0)
		return -EINVAL;
	if (X509_sign(x, ca->key, EVP_sha256()) <= 0)
		return -EIO;

	ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return -ENOMEM;
	if (common_ctx_setup(ctx) < 0)
		return -EINVAL;
	if (SSL_CTX_use_certificate(ctx, x) != 1 ||
	    SSL_CTX_use_PrivateKey(ctx, ca->leaf_key) != 1 || SSL_CTX_check_private_key(ctx) != 1)
		return -EINVAL;
	/* add1 takes its own reference to the CA certificate. */
	if (SSL_CTX_add1_chain_cert(ctx, ca->cert) != 1)
		return -ENOMEM;
	SSL_CTX_set_tlsext_servername_callback(ctx, servername_cb);
	ca->minted++;
	*ret = TAKE_PTR(ctx);
	return 0;
}

int moat_tls_leaf_ctx(struct moat_tls_ca *ca, const char *hostname, SSL_CTX **ret)
{
	char name[MOAT_TLS_MAX_NAME + 1];
	struct leaf_entry *e, *victim = NULL;
	SSL_CTX *ctx = NULL;
	bool is_ip;
	int r;

	r = moat_tls_normalize_host(hostname, name, &is_ip);
	if (r < 0)
		return r;

	for (unsigned i = 0; i < ca->n_leaves; i++) {
		e = &ca->leaves[i];
		if (streq(e->name, name)) {
			e->used = ++ca->clock;
			if (!SSL_CTX_up_ref(e->ctx))
				return -ENOMEM;
			*ret = e->ctx;
			return 0;
		}
	}

	r = mint_leaf(ca, name, is_ip, &ctx);
	if (r < 0) {
		ERR_clear_error();
		return r;
	}

	if (ca->n_leaves < MOAT_TLS_LEAF_CACHE)
		victim = &ca->leaves[ca->n_leaves++];
	else {
		victim = &ca->leaves[0];
		for (unsigned i = 1; i < ca->n_leaves; i++)
			if (ca->leaves[i].used < victim->used)
				victim = &ca->leaves[i];
		/* Connections still using it hold their own reference. */
		SSL_CTX_free(victim->ctx);
	}
	snprintf(victim->name, sizeof(victim->name), "%s", name);
	victim->ctx = ctx;
	victim->used = ++ca->clock;
	if (!SSL_CTX_up_ref(ctx))
		return -ENOMEM;
	*ret = ctx;
	return 0;
}

void moat_tls_leaf_stats(const struct moat_tls_ca *ca, unsigned *ret_entries,
			 unsigned long *ret_minted)
{
	if (ret_entries)
		*ret_entries = ca->n_leaves;
	if (ret_minted)
		*ret_minted = ca->minted;
}

int moat_tls_client_ctx(const char *ca_file, SSL_CTX **ret)
{
	_cleanup_(ssl_ctx_freep) SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	static const unsigned char alpn[] = "\x08http/1.1";
	X509_STORE *store;
	int r;

	if (!ctx)
		return -ENOMEM;
	r = common_ctx_setup(ctx);
	if (r < 0)
		return r;
	store = SSL_CTX_get_cert_store(ctx);
	if (ca_file) {
		if (X509_STORE_load_file(store, ca_file) != 1) {
			ERR_clear_error();
			return access(ca_file, R_OK) < 0 ? negerrno() : -EINVAL;
		}
	} else {
		/* Load the whole bundle into memory now: the proxy worker has no
		 * filesystem later, so a lazily read hashed directory would not do. */
		const char *def = X509_get_default_cert_file();
		if (X509_STORE_load_file(store, def) != 1) {
			ERR_clear_error();
			if (X509_STORE_load_file(store, DEBIAN_BUNDLE) != 1) {
				ERR_clear_error();
				return -ENOENT;
			}
		}
	}
	/* An empty store would fail every handshake anyway; say so early. */
	STACK_OF(X509_OBJECT) *objs = X509_STORE_get0_objects(store);
	if (!objs || sk_X509_OBJECT_num(objs) <= 0)
		return -ENOENT;

	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	if (SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn) - 1) != 0)
		return -ENOMEM;
	*ret = TAKE_PTR(ctx);
	return 0;
}

int moat_tls_client_new(SSL_CTX *ctx, int fd, const char *hostname, SSL **ret)
{
	_cleanup_(ssl_freep) SSL *ssl = NULL;
	char name[MOAT_TLS_MAX_NAME + 1];
	bool is_ip;
	int r;

	r = moat_tls_normalize_host(hostname, name, &is_ip);
	if (r < 0)
		return r;
	ssl = SSL_new(ctx);
	if (!ssl)
		return -ENOMEM;
	/* Never unverified, whatever the context says. */
	SSL_set_verify(ssl, SSL_VERIFY_PEER, NULL);
	if (is_ip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), name) != 1)
			return -EINVAL;
	} else {
		SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
		if (SSL_set1_host(ssl, name) != 1 || SSL_set_tlsext_host_name(ssl, name) != 1)
			return -EINVAL;
	}
	if (SSL_set_fd(ssl, fd) != 1)
		return -EBADF;
	SSL_set_connect_state(ssl);
	*ret = TAKE_PTR(ssl);
	return 0;
}

int moat_tls_server_new_prefixed(SSL_CTX *ctx, int fd, const void *prefix, size_t len, SSL **ret)
{
	_cleanup_(ssl_freep) SSL *ssl = NULL;
	BIO *rbuf, *rsock, *wsock;

	if (len == 0)
		return moat_tls_server_new(ctx, fd, ret);
	if (len > INT_MAX)
		return -E2BIG;
	ssl = SSL_new(ctx);
	if (!ssl)
		return -ENOMEM;
	/* Reads: a buffering BIO pre-filled with the bytes the proxy already
	 * took off the socket (the ClientHello it inspected), then the socket.
	 * Writes go straight to the socket. */
	rbuf = BIO_new(BIO_f_buffer());
	rsock = BIO_new_socket(fd, BIO_NOCLOSE);
	wsock = BIO_new_socket(fd, BIO_NOCLOSE);
	if (!rbuf || !rsock || !wsock) {
		BIO_free(rbuf);
		BIO_free(rsock);
		BIO_free(wsock);
		return -ENOMEM;
	}
	/* The read buffer must hold the prefix. */
	if (BIO_set_read_buffer_size(rbuf, MAX((long)len, 4096L)) != 1 ||
	    BIO_set_buffer_read_data(rbuf, (void *)(uintptr_t)prefix, (long)len) != 1) {
		BIO_free(rbuf);
		BIO_free(rsock);
		BIO_free(wsock);
		return -ENOMEM;
	}
	BIO_push(rbuf, rsock);
	SSL_set_bio(ssl, rbuf, wsock);
	SSL_set_accept_state(ssl);
	*ret = TAKE_PTR(ssl);
	return 0;
}

int moat_tls_server_new(SSL_CTX *ctx, int fd, SSL **ret)
{
	SSL *ssl = SSL_new(ctx);

	if (!ssl)
		return -ENOMEM;
	if (SSL_set_fd(ssl, fd) != 1) {
		SSL_free(ssl);
		return -EBADF;
	}
	SSL_set_accept_state(ssl);
	*ret = ssl;
	return 0;
}

/* Map an SSL_get_error() result: -EAGAIN with *want, or a negative errno. */
static int map_ssl_error(SSL *ssl, int rc, unsigned *ret_want, bool reading)
{
	int e = SSL_get_error(ssl, rc);

	switch (e) {
	case SSL_ERROR_WANT_READ:
		*ret_want = MOAT_TLS_WANT_READ;
		return -EAGAIN;
	case SSL_ERROR_WANT_WRITE:
		*ret_want = MOAT_TLS_WANT_WRITE;
		return -EAGAIN;
	case SSL_ERROR_ZERO_RETURN:
		return 0;
	case SSL_ERROR_SYSCALL:
		if (errno == EAGAIN || errno == EINTR) {
			*ret_want = reading ? MOAT_TLS_WANT_READ : MOAT_TLS_WANT_WRITE;
			return -EAGAIN;
		}
		return reading ? -ECONNRESET : -EPIPE;
	case SSL_ERROR_SSL:
		if (ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING)
			return -ECONNRESET;
		return -EPROTO;
	default:
		return -EPROTO;
	}
}

int moat_tls_handshake(SSL *ssl, unsigned *ret_want)
{
	int rc;

	*ret_want = 0;
	ERR_clear_error();
	rc = SSL_do_handshake(ssl);
	if (rc == 1)
		return 0;
	rc = map_ssl_error(ssl, rc, ret_want, true);
	/* EOF in the middle of a handshake is a failure, not a clean close. */
	return rc == 0 ? -ECONNRESET : rc;
}

ssize_t moat_tls_read(SSL *ssl, void *buf, size_t n, unsigned *ret_want)
{
	size_t got = 0;
	int rc;

	*ret_want = 0;
	ERR_clear_error();
	rc = SSL_read_ex(ssl, buf, n, &got);
	if (rc == 1)
		return (ssize_t)got;
	return map_ssl_error(ssl, rc, ret_want, true);
}

ssize_t moat_tls_write(SSL *ssl, const void *buf, size_t n, unsigned *ret_want)
{
	size_t done = 0;
	int rc;

	*ret_want = 0;
	if (n == 0)
		return 0;
	ERR_clear_error();
	rc = SSL_write_ex(ssl, buf, n, &done);
	if (rc == 1)
		return (ssize_t)done;
	rc = map_ssl_error(ssl, rc, ret_want, false);
	return rc == 0 ? -EPIPE : rc;
}

int moat_tls_shutdown(SSL *ssl, unsigned *ret_want)
{
	int rc;

	*ret_want = 0;
	ERR_clear_error();
	rc = SSL_shutdown(ssl);
	if (rc >= 0)
		return 0; /* close_notify sent; we do not wait for the peer's */
	rc = map_ssl_error(ssl, rc, ret_want, false);
	return rc == 0 ? 0 : rc;
}

const char *moat_tls_error(SSL *ssl, char *buf, size_t len)
{
	unsigned long e;
	long v = ssl ? SSL_get_verify_result(ssl) : X509_V_OK;

	if (v != X509_V_OK) {
		snprintf(buf, len, "certificate verify failed: %s",
			 X509_verify_cert_error_string(v));
		ERR_clear_error();
		return buf;
	}
	e = ERR_peek_error();
	if (e) {
		char tmp[256];
		ERR_error_string_n(e, tmp, sizeof(tmp));
		snprintf(buf, len, "%s", tmp);
	} else
		snprintf(buf, len, "TLS failure");
	ERR_clear_error();
	return buf;
}
