/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <time.h>

#include "harness/tap.h"
#include "proxy/tls.h"
#include "policy/plan.h"
#include "shared/macro.h"

/* A socketpair, both ends non-blocking. */
static void nb_pair(int sv[2])
{
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv), 0);
}

/* The CA certificate in a temporary file, as a test upstream CA file. */
static void ca_file(struct moat_tls_ca *ca, char path[64])
{
	char *pem = NULL;
	snprintf(path, 64, "/tmp/moat-test-ca.XXXXXX");
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(moat_tls_ca_cert_pem(ca, &pem), 0);
	ASSERT_EQ(write(fd, pem, strlen(pem)), (ssize_t)strlen(pem));
	close(fd);
	free(pem);
}

/* Run both handshakes to completion or failure. Returns 0 if both finished,
 * else the first failing side's error in *ret_c / *ret_s. */
static void pump(SSL *c, SSL *s, int *ret_c, int *ret_s)
{
	int rc = -EAGAIN, rs = -EAGAIN;
	unsigned w;
	for (int i = 0; i < 200 && (rc == -EAGAIN || rs == -EAGAIN); i++) {
		if (rc == -EAGAIN)
			rc = moat_tls_handshake(c, &w);
		if (rs == -EAGAIN)
			rs = moat_tls_handshake(s, &w);
		if ((rc < 0 && rc != -EAGAIN) || (rs < 0 && rs != -EAGAIN)) {
			/* Let the other side see the alert. */
			if (rc == -EAGAIN)
				rc = moat_tls_handshake(c, &w);
			if (rs == -EAGAIN)
				rs = moat_tls_handshake(s, &w);
			break;
		}
	}
	*ret_c = rc;
	*ret_s = rs;
}

TEST(tls_normalize_host)
{
	char out[MOAT_TLS_MAX_NAME + 1];
	bool ip;
	ASSERT_EQ(moat_tls_normalize_host("API.Example.COM.", out, &ip), 0);
	ASSERT_STREQ(out, "api.example.com");
	ASSERT_TRUE(!ip);
	ASSERT_EQ(moat_tls_normalize_host("127.0.0.1", out, &ip), 0);
	ASSERT_TRUE(ip);
	ASSERT_EQ(moat_tls_normalize_host("::FFFF:1.2.3.4", out, &ip), 0);
	ASSERT_STREQ(out, "::ffff:1.2.3.4");
	ASSERT_EQ(moat_tls_normalize_host("", out, &ip), -EINVAL);
	ASSERT_EQ(moat_tls_normalize_host("a..b", out, &ip), -EINVAL);
	ASSERT_EQ(moat_tls_normalize_host(".", out, &ip), -EINVAL);
	ASSERT_EQ(moat_tls_normalize_host("a,DNS:evil.com", out, &ip), -EINVAL);
	ASSERT_EQ(moat_tls_normalize_host("*.example.com", out, &ip), -EINVAL);
	ASSERT_EQ(moat_tls_normalize_host("a b", out, &ip), -EINVAL);
	ASSERT_EQ(moat_tls_normalize_host("[::1]", out, &ip), -EINVAL);
	char longlabel[80];
	memset(longlabel, 'a', 64);
	longlabel[64] = '\0';
	ASSERT_EQ(moat_tls_normalize_host(longlabel, out, &ip), -EINVAL);
	char longname[300];
	memset(longname, 'a', sizeof(longname));
	for (int i = 50; i < 299; i += 50)
		longname[i] = '.';
	longname[299] = '\0';
	ASSERT_EQ(moat_tls_normalize_host(longname, out, &ip), -EINVAL);
}

TEST(tls_ca_new)
{
	struct moat_tls_ca *ca = NULL;
	ASSERT_EQ(moat_tls_ca_new("run42", &ca), 0);
	X509 *x = moat_tls_ca_cert(ca);
	char cn[128];
	ASSERT_TRUE(X509_NAME_get_text_by_NID(X509_get_subject_name(x), NID_commonName, cn,
					      sizeof(cn)) > 0);
	ASSERT_STREQ(cn, "moat per-run CA run42");
	/* CA:TRUE critical, keyCertSign, self-signed. */
	ASSERT_EQ(X509_check_ca(x), 1);
	ASSERT_EQ(X509_get_extension_flags(x) & EXFLAG_CRITICAL, 0);
	int crit = -1;
	BASIC_CONSTRAINTS *bc = X509_get_ext_d2i(x, NID_basic_constraints, &crit, NULL);
	ASSERT_TRUE(bc && bc->ca);
	ASSERT_EQ(crit, 1);
	BASIC_CONSTRAINTS_free(bc);
	ASSERT_TRUE(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
	ASSERT_TRUE(X509_get_extension_flags(x) & EXFLAG_SS);
	EVP_PKEY *pub = X509_get0_pubkey(x);
	ASSERT_EQ(X509_verify(x, pub), 1);
	ASSERT_EQ(EVP_PKEY_get_bits(pub), 256);
	/* Validity: now-1h .. now+24h. */
	time_t now = time(NULL), t;
	t = now - 3500;
	ASSERT_EQ(X509_cmp_time(X509_get0_notBefore(x), &t), -1);
	t = now + 23 * 3600;
	ASSERT_EQ(X509_cmp_time(X509_get0_notAfter(x), &t), 1);
	t = now + 25 * 3600;
	ASSERT_EQ(X509_cmp_time(X509_get0_notAfter(x), &t), -1);

	/* Two CAs differ in key and serial. */
	struct moat_tls_ca *ca2 = NULL;
	ASSERT_EQ(moat_tls_ca_new(NULL, &ca2), 0);
	ASSERT_TRUE(ASN1_INTEGER_cmp(X509_get0_serialNumber(x),
				     X509_get0_serialNumber(moat_tls_ca_cert(ca2))) != 0);
	ASSERT_TRUE(EVP_PKEY_eq(pub, X509_get0_pubkey(moat_tls_ca_cert(ca2))) != 1);

	/* The PEM holds no private key. */
	char *pem = NULL;
	ASSERT_EQ(moat_tls_ca_cert_pem(ca, &pem), 0);
	ASSERT_CONTAINS(pem, "BEGIN CERTIFICATE");
	ASSERT_TRUE(!strstr(pem, "PRIVATE"));
	free(pem);
	moat_tls_ca_free(ca2);
	ASSERT_TRUE(moat_tls_ca_free(ca) == NULL);
}

TEST(tls_write_bundle)
{
	struct moat_tls_ca *ca = NULL;
	char sys[] = "/tmp/moat-test-sys.XXXXXX";
	ASSERT_EQ(moat_tls_ca_new("b", &ca), 0);

	/* A fake system bundle: the CA of a second run, without trailing newline. */
	struct moat_tls_ca *other = NULL;
	ASSERT_EQ(moat_tls_ca_new("sys", &other), 0);
	char *opem = NULL;
	ASSERT_EQ(moat_tls_ca_cert_pem(other, &opem), 0);
	int sfd = mkstemp(sys);
	ASSERT_TRUE(sfd >= 0);
	ASSERT_EQ(write(sfd, opem, strlen(opem) - 1), (ssize_t)strlen(opem) - 1);
	close(sfd);

	int fd = memfd_create("bundle", MFD_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(moat_tls_write_bundle(ca, sys, fd), 0);
	unlink(sys);
	off_t size = lseek(fd, 0, SEEK_END);
	char *buf = calloc(1, (size_t)size + 1);
	ASSERT_EQ(pread(fd, buf, (size_t)size, 0), size);
	ASSERT_TRUE(strncmp(buf, opem, strlen(opem) - 1) == 0);
	ASSERT_CONTAINS(buf, "# moat per-run CA");

	/* Both certificates parse back from the bundle. */
	BIO *b = BIO_new_mem_buf(buf, (int)size);
	X509 *a1 = PEM_read_bio_X509(b, NULL, NULL, NULL);
	X509 *a2 = PEM_read_bio_X509(b, NULL, NULL, NULL);
	ASSERT_TRUE(a1 && a2);
	ASSERT_EQ(X509_cmp(a1, moat_tls_ca_cert(other)), 0);
	ASSERT_EQ(X509_cmp(a2, moat_tls_ca_cert(ca)), 0);
	X509_free(a1);
	X509_free(a2);
	BIO_free(b);

	/* A missing system bundle is an error, not a CA-only bundle. */
	ASSERT_EQ(moat_tls_write_bundle(ca, "/nonexistent/bundle.crt", fd), -ENOENT);
	ASSERT_EQ(moat_tls_write_bundle(ca, "/tmp", fd), -EINVAL);

	const char *const *env = moat_plan_ca_env();
	int n = 0;
	for (; env[n]; n++)
		;
	ASSERT_EQ(n, 6);
	free(buf);
	free(opem);
	moat_tls_ca_free(other);
	moat_tls_ca_free(ca);
}

/* Handshake a client trusting ca_path toward name against a leaf of ca. */
static void handshake(struct moat_tls_ca *ca, const char *leaf_name, const char *ca_path,
		      const char *client_name, bool keep_sni_check, int *ret_c, int *ret_s,
		      SSL **ret_client, SSL **ret_server)
{
	SSL_CTX *sctx = NULL, *cctx = NULL;
	SSL *c = NULL, *s = NULL;
	int sv[2];

	nb_pair(sv);
	ASSERT_EQ(moat_tls_leaf_ctx(ca, leaf_name, &sctx), 0);
	if (!keep_sni_check)
		SSL_CTX_set_tlsext_servername_callback(sctx, NULL);
	ASSERT_EQ(moat_tls_client_ctx(ca_path, &cctx), 0);
	ASSERT_EQ(moat_tls_server_new(sctx, sv[0], &s), 0);
	ASSERT_EQ(moat_tls_client_new(cctx, sv[1], client_name, &c), 0);
	SSL_CTX_free(sctx);
	SSL_CTX_free(cctx);
	pump(c, s, ret_c, ret_s);
	*ret_client = c;
	*ret_server = s;
}

TEST(tls_leaf_handshake_and_data)
{
	struct moat_tls_ca *ca = NULL;
	char path[64];
	SSL *c, *s;
	int rc, rs;
	unsigned w;

	ASSERT_EQ(moat_tls_ca_new("t", &ca), 0);
	ca_file(ca, path);
	handshake(ca, "api.allowed.test", path, "API.allowed.test", true, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(rs, 0);
	ASSERT_EQ(SSL_get_verify_result(c), X509_V_OK);
	ASSERT_TRUE(SSL_version(c) >= TLS1_2_VERSION);

	/* The leaf: SAN, serverAuth, not a CA, valid about a day. */
	X509 *leaf = SSL_get1_peer_certificate(c);
	ASSERT_TRUE(leaf);
	ASSERT_EQ(X509_check_host(leaf, "api.allowed.test", 0, 0, NULL), 1);
	ASSERT_EQ(X509_check_host(leaf, "evil.test", 0, 0, NULL), 0);
	ASSERT_TRUE(X509_get_extended_key_usage(leaf) & XKU_SSL_SERVER);
	ASSERT_EQ(X509_check_ca(leaf), 0);
	time_t t = time(NULL) + 25 * 3600;
	ASSERT_EQ(X509_cmp_time(X509_get0_notAfter(leaf), &t), -1);
	X509_free(leaf);

	/* Data both ways. */
	char buf[64] = {0};
	ASSERT_EQ(moat_tls_write(c, "GET / HTTP/1.1\r\n\r\n", 18, &w), 18);
	ssize_t n = -EAGAIN;
	for (int i = 0; i < 50 && n == -EAGAIN; i++)
		n = moat_tls_read(s, buf, sizeof(buf) - 1, &w);
	ASSERT_EQ(n, 18);
	ASSERT_STREQ(buf, "GET / HTTP/1.1\r\n\r\n");
	/* Nothing more: -EAGAIN wanting a read. */
	ASSERT_EQ(moat_tls_read(s, buf, sizeof(buf), &w), -EAGAIN);
	ASSERT_EQ(w, MOAT_TLS_WANT_READ);
	/* Clean close: the reader sees 0. */
	ASSERT_EQ(moat_tls_shutdown(c, &w), 0);
	n = -EAGAIN;
	for (int i = 0; i < 50 && n == -EAGAIN; i++)
		n = moat_tls_read(s, buf, sizeof(buf), &w);
	ASSERT_EQ(n, 0);
	SSL_free(c);
	SSL_free(s);
	unlink(path);
	moat_tls_ca_free(ca);
}

TEST(tls_leaf_ip_literal)
{
	struct moat_tls_ca *ca = NULL;
	char path[64];
	SSL *c, *s;
	int rc, rs;

	ASSERT_EQ(moat_tls_ca_new("ip", &ca), 0);
	ca_file(ca, path);
	handshake(ca, "127.0.0.7", path, "127.0.0.7", true, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(rs, 0);
	SSL_free(c);
	SSL_free(s);
	/* Another address: refused by the client's IP check. */
	handshake(ca, "127.0.0.7", path, "127.0.0.8", true, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, -EPROTO);
	SSL_free(c);
	SSL_free(s);
	handshake(ca, "::1", path, "0:0::1", true, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, 0);
	SSL_free(c);
	SSL_free(s);
	unlink(path);
	moat_tls_ca_free(ca);
}

TEST(tls_client_refuses_wrong_name)
{
	struct moat_tls_ca *ca = NULL;
	char path[64], msg[256];
	SSL *c, *s;
	int rc, rs;

	ASSERT_EQ(moat_tls_ca_new("wn", &ca), 0);
	ca_file(ca, path);
	/* The server presents api.allowed.test (SNI check off, as a hostile
	 * upstream would); the client wanted evil.test. */
	handshake(ca, "api.allowed.test", path, "evil.test", false, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, -EPROTO);
	ASSERT_TRUE(rs < 0);
	ASSERT_CONTAINS(moat_tls_error(c, msg, sizeof(msg)), "hostname mismatch");
	SSL_free(c);
	SSL_free(s);
	/* A wildcard-ish prefix does not match either. */
	handshake(ca, "allowed.test", path, "api.allowed.test", false, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, -EPROTO);
	SSL_free(c);
	SSL_free(s);
	unlink(path);
	moat_tls_ca_free(ca);
}

TEST(tls_client_refuses_untrusted_ca)
{
	struct moat_tls_ca *ca = NULL, *other = NULL;
	char path[64], msg[256];
	SSL *c, *s;
	int rc, rs;

	ASSERT_EQ(moat_tls_ca_new("good", &ca), 0);
	ASSERT_EQ(moat_tls_ca_new("evil", &other), 0);
	ca_file(ca, path);
	/* The leaf comes from a second CA that the client does not trust. */
	handshake(other, "api.allowed.test", path, "api.allowed.test", true, &rc, &rs, &c, &s);
	ASSERT_EQ(rc, -EPROTO);
	ASSERT_CONTAINS(moat_tls_error(c, msg, sizeof(msg)), "certificate verify failed");
	SSL_free(c);
	SSL_free(s);
	unlink(path);
	moat_tls_ca_free(other);
	moat_tls_ca_free(ca);
}

TEST(tls_server_refuses_other_sni)
{
	struct moat_tls_ca *ca = NULL;
	SSL_CTX *sctx = NULL;
	SSL *s = NULL;
	int sv[2], rc, rs;

	ASSERT_EQ(moat_tls_ca_new("sni", &ca), 0);
	nb_pair(sv);
	ASSERT_EQ(moat_tls_leaf_ctx(ca, "api.allowed.test", &sctx), 0);
	ASSERT_EQ(moat_tls_server_new(sctx, sv[0], &s), 0);
	/* A client that verifies nothing and sends SNI evil.test. */
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	SSL *c = SSL_new(cctx);
	SSL_set_tlsext_host_name(c, "evil.test");
	SSL_set_fd(c, sv[1]);
	SSL_set_connect_state(c);
	pump(c, s, &rc, &rs);
	ASSERT_TRUE(rs < 0);
	ASSERT_TRUE(rc < 0);
	SSL_free(c);
	SSL_CTX_free(cctx);
	SSL_free(s);
	SSL_CTX_free(sctx);
	moat_tls_ca_free(ca);
}

TEST(tls_server_refuses_old_protocols)
{
	struct moat_tls_ca *ca = NULL;
	SSL_CTX *sctx = NULL;
	SSL *s = NULL;
	int sv[2], rc, rs;

	ASSERT_EQ(moat_tls_ca_new("old", &ca), 0);
	nb_pair(sv);
	ASSERT_EQ(moat_tls_leaf_ctx(ca, "api.allowed.test", &sctx), 0);
	ASSERT_EQ(moat_tls_server_new(sctx, sv[0], &s), 0);
	SSL_CTX *cctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_set_security_level(cctx, 0);
	SSL_CTX_set_min_proto_version(cctx, TLS1_VERSION);
	SSL_CTX_set_max_proto_version(cctx, TLS1_1_VERSION);
	SSL *c = SSL_new(cctx);
	SSL_set_fd(c, sv[1]);
	SSL_set_connect_state(c);
	pump(c, s, &rc, &rs);
	ASSERT_TRUE(rs < 0);
	ASSERT_TRUE(rc < 0);
	SSL_free(c);
	SSL_CTX_free(cctx);
	SSL_free(s);
	SSL_CTX_free(sctx);
	moat_tls_ca_free(ca);
}

TEST(tls_leaf_cache_lru)
{
	struct moat_tls_ca *ca = NULL;
	SSL_CTX *a = NULL, *b = NULL;
	unsigned entries;
	unsigned long minted;
	char name[64];

	ASSERT_EQ(moat_tls_ca_new("lru", &ca), 0);
	ASSERT_EQ(moat_tls_leaf_ctx(ca, "a.test", &a), 0);
	ASSERT_EQ(moat_tls_leaf_ctx(ca, "A.TEST.", &b), 0);
	ASSERT_TRUE(a == b);
	moat_tls_leaf_stats(ca, &entries, &minted);
	ASSERT_EQ(entries, 1);
	ASSERT_EQ(minted, 1);
	SSL_CTX_free(b);
	ASSERT_EQ(moat_tls_leaf_ctx(ca, "bad name", &b), -EINVAL);

	/* Fill past the bound: the oldest names go, a.test (touched) stays
	 * only if used recently; our reference keeps the old context alive. */
	for (int i = 0; i < MOAT_TLS_LEAF_CACHE + 10; i++) {
		SSL_CTX *x = NULL;
		snprintf(name, sizeof(name), "h%d.test", i);
		ASSERT_EQ(moat_tls_leaf_ctx(ca, name, &x), 0);
		SSL_CTX_free(x);
	}
	moat_tls_leaf_stats(ca, &entries, &minted);
	ASSERT_EQ(entries, MOAT_TLS_LEAF_CACHE);
	ASSERT_EQ(minted, MOAT_TLS_LEAF_CACHE + 11);
	/* a.test was evicted: asking again mints a new one. */
	ASSERT_EQ(moat_tls_leaf_ctx(ca, "a.test", &b), 0);
	ASSERT_TRUE(a != b);
	moat_tls_leaf_stats(ca, NULL, &minted);
	ASSERT_EQ(minted, MOAT_TLS_LEAF_CACHE + 12);
	/* The evicted context is still usable through our reference. */
	ASSERT_TRUE(SSL_CTX_get0_certificate(a) != NULL);
	SSL_CTX_free(a);
	SSL_CTX_free(b);
	/* The most recent name is a hit. */
	ASSERT_EQ(moat_tls_leaf_ctx(ca, name, &b), 0);
	moat_tls_leaf_stats(ca, NULL, &minted);
	ASSERT_EQ(minted, MOAT_TLS_LEAF_CACHE + 12);
	SSL_CTX_free(b);
	moat_tls_ca_free(ca);
}

TEST(tls_client_ctx_sources)
{
	SSL_CTX *c = NULL;
	ASSERT_EQ(moat_tls_client_ctx("/nonexistent/ca.pem", &c), -ENOENT);
	char bad[] = "/tmp/moat-test-bad.XXXXXX";
	int fd = mkstemp(bad);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, "not a pem\n", 10), 10);
	close(fd);
	ASSERT_TRUE(moat_tls_client_ctx(bad, &c) < 0);
	unlink(bad);
	if (access("/etc/ssl/certs/ca-certificates.crt", R_OK) < 0)
		SKIP("no system CA bundle on this machine");
	ASSERT_EQ(moat_tls_client_ctx(NULL, &c), 0);
	ASSERT_EQ(SSL_CTX_get_verify_mode(c), SSL_VERIFY_PEER);
	ASSERT_EQ(SSL_CTX_get_min_proto_version(c), TLS1_2_VERSION);
	SSL_CTX_free(c);
}

/* ---- real clients against a minted leaf ---------------------------------------- */

#include <netinet/in.h>
#include <signal.h>
#include <sys/wait.h>

/* Serve "ok" over TLS with leaves of ca on 127.0.0.1, forever (child). */
static void serve(struct moat_tls_ca *ca, int lfd)
{
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		SSL_CTX *ctx = NULL;
		SSL *ssl = NULL;
		char buf[4096];
		unsigned w;
		if (fd < 0)
			continue;
		if (moat_tls_leaf_ctx(ca, "api.allowed.test", &ctx) == 0 &&
		    moat_tls_server_new(ctx, fd, &ssl) == 0 && moat_tls_handshake(ssl, &w) == 0 &&
		    moat_tls_read(ssl, buf, sizeof(buf), &w) > 0) {
			static const char resp[] = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n"
						   "Connection: close\r\n\r\nok";
			(void)moat_tls_write(ssl, resp, sizeof(resp) - 1, &w);
			(void)moat_tls_shutdown(ssl, &w);
		}
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		close(fd);
	}
}

static int sh(const char *cmd)
{
	int st = system(cmd);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

TEST(tls_real_clients_accept_leaf)
{
	struct moat_tls_ca *ca = NULL;
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	char path[64], cmd[1024];
	int lfd;
	pid_t pid;

	if (access("/usr/bin/curl", X_OK) < 0)
		SKIP("curl is not installed");
	ASSERT_EQ(moat_tls_ca_new("clients", &ca), 0);
	ca_file(ca, path);
	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(lfd >= 0);
	ASSERT_EQ(bind(lfd, (struct sockaddr *)&a, sizeof(a)), 0);
	ASSERT_EQ(listen(lfd, 16), 0);
	ASSERT_EQ(getsockname(lfd, (struct sockaddr *)&a, &alen), 0);
	unsigned port = ntohs(a.sin_port);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		serve(ca, lfd);
		_exit(0);
	}

	snprintf(cmd, sizeof(cmd),
		 "out=$(curl -sS --max-time 10 --cacert %s --resolve api.allowed.test:%u:127.0.0.1 "
		 "https://api.allowed.test:%u/) && [ \"$out\" = ok ]",
		 path, port, port);
	int curl_rc = sh(cmd);
	/* The wrong name fails in curl too. */
	snprintf(cmd, sizeof(cmd),
		 "curl -sS --max-time 10 --cacert %s --resolve other.test:%u:127.0.0.1 "
		 "https://other.test:%u/ 2>/dev/null",
		 path, port, port);
	int curl_wrong = sh(cmd);
	/* Python with X509 strict checking (as Python >= 3.13 does by default). */
	snprintf(cmd, sizeof(cmd),
		 "python3 - <<'PY'\n"
		 "import socket, ssl\n"
		 "c = ssl.create_default_context(cafile='%s')\n"
		 "c.verify_flags |= ssl.VERIFY_X509_STRICT\n"
		 "s = c.wrap_socket(socket.create_connection(('127.0.0.1', %u), timeout=10),\n"
		 "                  server_hostname='api.allowed.test')\n"
		 "s.sendall(b'GET / HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n')\n"
		 "assert s.recv(100).endswith(b'ok'), 'bad reply'\n"
		 "PY",
		 path, port);
	int py_rc = access("/usr/bin/python3", X_OK) == 0 ||
			access("/root/.pyenv/shims/python3", X_OK) == 0
		? sh(cmd)
		: 0;
	/* git (libcurl-gnutls on Debian) through GIT_SSL_CAINFO: TLS must work;
	 * the reply is not a git repository, which is a different error. */
	snprintf(
		cmd, sizeof(cmd),
		"out=$(GIT_SSL_CAINFO=%s GIT_TERMINAL_PROMPT=0 git -c "
		"http.curloptResolve=api.allowed.test:%u:127.0.0.1 ls-remote "
		"https://api.allowed.test:%u/r.git 2>&1); echo \"$out\" | grep -qi 'certificate\\|ssl\\|tls' "
		"&& { echo \"# $out\"; exit 1; }; exit 0",
		path, port, port);
	int git_rc = access("/usr/bin/git", X_OK) == 0 ? sh(cmd) : 0;

	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	unlink(path);
	ASSERT_EQ(curl_rc, 0);
	ASSERT_NE(curl_wrong, 0);
	ASSERT_EQ(py_rc, 0);
	ASSERT_EQ(git_rc, 0);
	moat_tls_ca_free(ca);
}

TEST(tls_server_prefixed_clienthello)
{
	struct moat_tls_ca *ca = NULL;
	char path[64];

	ASSERT_EQ(moat_tls_ca_new("pfx", &ca), 0);
	ca_file(ca, path);
	/* Part of the ClientHello already read by the proxy, or all of it. */
	for (int all = 0; all < 2; all++) {
		SSL_CTX *sctx = NULL, *cctx = NULL;
		SSL *c = NULL, *s = NULL;
		char hello[8192], buf[32] = {0};
		int sv[2], rc, rs;
		unsigned w;

		nb_pair(sv);
		ASSERT_EQ(moat_tls_client_ctx(path, &cctx), 0);
		ASSERT_EQ(moat_tls_client_new(cctx, sv[1], "api.allowed.test", &c), 0);
		ASSERT_EQ(moat_tls_handshake(c, &w), -EAGAIN);
		ssize_t n = recv(sv[0], hello, all ? sizeof(hello) : 7, 0);
		ASSERT_TRUE(n > 0);
		ASSERT_EQ(moat_tls_leaf_ctx(ca, "api.allowed.test", &sctx), 0);
		ASSERT_EQ(moat_tls_server_new_prefixed(sctx, sv[0], hello, (size_t)n, &s), 0);
		pump(c, s, &rc, &rs);
		ASSERT_EQ(rc, 0);
		ASSERT_EQ(rs, 0);
		ASSERT_EQ(moat_tls_write(c, "ping", 4, &w), 4);
		n = -EAGAIN;
		for (int i = 0; i < 50 && n == -EAGAIN; i++)
			n = moat_tls_read(s, buf, sizeof(buf), &w);
		ASSERT_EQ(n, 4);
		ASSERT_STREQ(buf, "ping");
		ASSERT_EQ(moat_tls_write(s, "pong", 4, &w), 4);
		n = -EAGAIN;
		for (int i = 0; i < 50 && n == -EAGAIN; i++)
			n = moat_tls_read(c, buf, sizeof(buf), &w);
		ASSERT_EQ(n, 4);
		SSL_free(c);
		SSL_free(s);
		SSL_CTX_free(sctx);
		SSL_CTX_free(cctx);
		close(sv[0]);
		close(sv[1]);
	}
	unlink(path);
	moat_tls_ca_free(ca);
}
