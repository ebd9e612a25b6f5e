/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A TLS-intercepted connection end to end on 127.0.0.1: a test client that
 * trusts the per-run CA, the intercept (in a child, driven by poll), and a
 * recording HTTPS upstream with its own test CA (in another child). The
 * upstream appends every request head it receives to a file and echoes it
 * back as the response body.
 */
#include <fcntl.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>

#include "../../fuzz/http_paths.h"
#include "harness/tap.h"
#include "http_cases.h"
#include "proxy/intercept.h"
#include "shared/macro.h"

#define REAL "ghp_REALintercept0123456789"

struct world {
	struct moat_tls_ca *run_ca, *up_ca;
	char run_ca_file[64], up_ca_file[64], heads[64], reports[64];
	struct moat_secrets *secrets;
	pid_t up_pid, icpt_pid;
	unsigned icpt_port;
};

static char *gh_hosts[] = {(char[]){"api.github.test"}};
static struct moat_secret gh = {.name = (char[]){"GH_TOKEN"},
				.source = MOAT_SECRET_ENV,
				.from = (char[]){"MOAT_T_ICPT"},
				.hosts = gh_hosts,
				.n_hosts = 1};
static char *post_only[] = {(char[]){"GET"}, (char[]){"POST"}};
static struct moat_http_rule rules[] = {
	{.host = (char[]){"api.github.test"}, .methods = post_only, .n_methods = 2},
};

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

static int listen_lo(unsigned *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t alen = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ASSERT_EQ(listen(fd, 16), 0);
	ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &alen), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static int connect_lo(unsigned port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons((uint16_t)port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0)
		return -1;
	return fd;
}

/* Blocking TLS read of one HTTP message with Content-Length (or until EOF). */
static ssize_t read_message(SSL *ssl, char *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		char *end = memmem(buf, len, "\r\n\r\n", 4);
		if (end) {
			const char *cl = strcasestr(buf, "Content-Length: ");
			size_t head = (size_t)(end - buf) + 4;
			if (cl && cl < end && len >= head + strtoul(cl + 16, NULL, 10))
				return (ssize_t)(head + strtoul(cl + 16, NULL, 10));
		}
		if (len + 1 >= cap)
			return -1;
		int n = SSL_read(ssl, buf + len, (int)(cap - len - 1));
		if (n <= 0)
			return len ? (ssize_t)len : -1;
		len += (size_t)n;
		buf[len] = '\0';
	}
}

/* The upstream: leaf of up_ca, records heads, echoes them; keep-alive. */
static void upstream_main(struct world *w, int lfd)
{
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		SSL_CTX *ctx = NULL;
		SSL *ssl = NULL;
		if (fd < 0)
			continue;
		/* One child per connection, so a stuck one blocks nothing. */
		if (fork() != 0) {
			close(fd);
			continue;
		}
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (moat_tls_leaf_ctx(w->up_ca, "api.github.test", &ctx) < 0 ||
		    moat_tls_server_new(ctx, fd, &ssl) < 0 || SSL_accept(ssl) != 1)
			goto next;
		for (;;) {
			static char buf[1 << 16];
			size_t len = 0;
			char *end = NULL;
			while (!(end = memmem(buf, len, "\r\n\r\n", 4))) {
				int n = SSL_read(ssl, buf + len, (int)(sizeof(buf) - len - 1));
				if (n <= 0)
					goto next;
				len += (size_t)n;
			}
			size_t head = (size_t)(end - buf) + 4;
			buf[len] = '\0';
			/* Drain a Content-Length body or a (simple) chunked one. */
			const char *cl = strcasestr(buf, "Content-Length: ");
			size_t want = head + (cl && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
			bool chunked = strcasestr(buf, "Transfer-Encoding: chunked") != NULL;
			while (len < want ||
			       (chunked &&
				(len - head < 5 || memcmp(buf + len - 4, "\r\n\r\n", 4)))) {
				int n = SSL_read(ssl, buf + len, (int)(sizeof(buf) - len - 1));
				if (n <= 0)
					goto next;
				len += (size_t)n;
			}
			int hf = open(w->heads, O_WRONLY | O_APPEND | O_CLOEXEC);
			(void)!write(hf, buf, len);
			(void)!write(hf, "\n----\n", 6);
			close(hf);
			char resp[256];
			int rl = snprintf(resp, sizeof(resp),
					  "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", head);
			SSL_write(ssl, resp, rl);
			/* "/split": the echo in two records, cut inside the value. */
			const char *cut =
				strstr(buf, "GET /split ") == buf ? strstr(buf, REAL) : NULL;
			if (cut && cut < buf + head) {
				int first = (int)(cut - buf) + 10;
				SSL_write(ssl, buf, first);
				usleep(50000);
				SSL_write(ssl, buf + first, (int)head - first);
			} else
				SSL_write(ssl, buf, (int)head);
		}
	next:
		SSL_free(ssl);
		SSL_CTX_free(ctx);
		close(fd);
		_exit(0);
	}
}

static void on_report(void *userdata, const struct moat_intercept_report *r)
{
	const struct world *w = userdata;
	char line[2048];
	int n = snprintf(line, sizeof(line),
			 "%s %s %s allowed=%d status=%d alert=%d secret=%s "
			 "reason=%s warning=%s\n",
			 r->host, r->method, r->target, r->allowed, r->status, r->alert,
			 r->secret ? r->secret : "-", r->reason ? r->reason : "-",
			 r->warning ? r->warning : "-");
	int fd = open(w->reports, O_WRONLY | O_APPEND | O_CLOEXEC);
	(void)!write(fd, line, (size_t)MIN(n, (int)sizeof(line) - 1));
	close(fd);
}

/* The intercept: one child per client connection, poll-driven. */
static void intercept_conn(struct world *w, int cfd, unsigned up_port, const char *up_ca_file,
			   bool with_rules)
{
	SSL_CTX *uctx = NULL;
	struct moat_intercept *x = NULL;
	int ufd = connect_lo(up_port);
	if (ufd < 0 || moat_tls_client_ctx(up_ca_file, &uctx) < 0)
		_exit(2);
	fcntl(cfd, F_SETFL, O_NONBLOCK);
	fcntl(ufd, F_SETFL, O_NONBLOCK);
	struct moat_intercept_config cfg = {
		.ca = w->run_ca,
		.upstream_ctx = uctx,
		.secrets = w->secrets,
		.rules = with_rules ? rules : NULL,
		.n_rules = with_rules ? 1 : 0,
		.report = on_report,
		.userdata = w,
	};
	/* Like the proxy: the first bytes of the ClientHello were read to look
	 * at the SNI before deciding to intercept. */
	char hello[64];
	struct pollfd hp = {.fd = cfd, .events = POLLIN};
	ssize_t hn = poll(&hp, 1, 10000) == 1 ? recv(cfd, hello, sizeof(hello), 0) : -1;
	if (hn <= 0)
		_exit(6);
	if (moat_intercept_new_prefixed(&cfg, "api.github.test", cfd, hello, (size_t)hn, ufd, &x) <
	    0)
		_exit(3);
	for (;;) {
		uint32_t ce, ue;
		int r = moat_intercept_step(x, &ce, &ue);
		if (r != 0) {
			if (r < 0) {
				char line[700];
				int fd = open(w->reports, O_WRONLY | O_APPEND | O_CLOEXEC);
				int n = snprintf(line, sizeof(line), "error %d %s\n", r,
						 moat_intercept_error(x));
				(void)!write(fd, line, (size_t)MIN(n, (int)sizeof(line) - 1));
				close(fd);
			}
			break;
		}
		if (!ce && !ue)
			_exit(4); /* would hang: a bug */
		struct pollfd pf[2] = {
			{.fd = cfd,
			 .events = (short)((ce & EPOLLIN ? POLLIN : 0) |
					   (ce & EPOLLOUT ? POLLOUT : 0))},
			{.fd = ufd,
			 .events = (short)((ue & EPOLLIN ? POLLIN : 0) |
					   (ue & EPOLLOUT ? POLLOUT : 0))},
		};
		if (poll(pf, 2, 10000) <= 0)
			_exit(5);
	}
	moat_intercept_free(x);
	_exit(0);
}

static void intercept_main(struct world *w, int lfd, unsigned up_port, const char *up_ca_file,
			   bool with_rules)
{
	signal(SIGCHLD, SIG_IGN);
	for (;;) {
		int cfd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (cfd < 0)
			continue;
		if (fork() == 0) {
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			intercept_conn(w, cfd, up_port, up_ca_file, with_rules);
		}
		close(cfd);
	}
}

static void world_up(struct world *w, bool trust_upstream, bool with_rules)
{
	struct moat_error e;
	unsigned up_port;
	int ufd, ifd;

	memset(w, 0, sizeof(*w));
	setenv("MOAT_T_ICPT", REAL, 1);
	ASSERT_EQ(moat_secrets_new(&gh, 1, &w->secrets, &e), 0);
	ASSERT_EQ(moat_tls_ca_new("run", &w->run_ca), 0);
	ASSERT_EQ(moat_tls_ca_new("upstream", &w->up_ca), 0);
	pem_file(w->run_ca, w->run_ca_file, "/tmp/moat-t-runca.XXXXXX");
	pem_file(w->up_ca, w->up_ca_file, "/tmp/moat-t-upca.XXXXXX");
	snprintf(w->heads, sizeof(w->heads), "/tmp/moat-t-heads.XXXXXX");
	close(mkstemp(w->heads));
	snprintf(w->reports, sizeof(w->reports), "/tmp/moat-t-reports.XXXXXX");
	close(mkstemp(w->reports));

	ufd = listen_lo(&up_port);
	w->up_pid = fork();
	ASSERT_TRUE(w->up_pid >= 0);
	if (w->up_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		upstream_main(w, ufd);
	}
	close(ufd);
	ifd = listen_lo(&w->icpt_port);
	w->icpt_pid = fork();
	ASSERT_TRUE(w->icpt_pid >= 0);
	if (w->icpt_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		/* Not trusting the upstream: verify it against the run CA instead. */
		intercept_main(w, ifd, up_port, trust_upstream ? w->up_ca_file : w->run_ca_file,
			       with_rules);
	}
	close(ifd);
}

static void world_down(struct world *w)
{
	kill(w->icpt_pid, SIGKILL);
	kill(w->up_pid, SIGKILL);
	waitpid(w->icpt_pid, NULL, 0);
	waitpid(w->up_pid, NULL, 0);
	unlink(w->run_ca_file);
	unlink(w->up_ca_file);
	unlink(w->heads);
	unlink(w->reports);
	moat_secrets_free(w->secrets);
	moat_tls_ca_free(w->run_ca);
	moat_tls_ca_free(w->up_ca);
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

/* A client connection trusting the run CA, SNI api.github.test. */
static SSL *client(struct world *w)
{
	SSL_CTX *ctx = NULL;
	SSL *ssl = NULL;
	int fd = connect_lo(w->icpt_port);
	ASSERT_TRUE(fd >= 0);
	struct timeval tv = {10, 0};
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ASSERT_EQ(moat_tls_client_ctx(w->run_ca_file, &ctx), 0);
	ASSERT_EQ(moat_tls_client_new(ctx, fd, "api.github.test", &ssl), 0);
	SSL_CTX_free(ctx);
	if (SSL_connect(ssl) != 1)
		return NULL;
	return ssl;
}

static void client_free(SSL *ssl)
{
	int fd = SSL_get_fd(ssl);
	SSL_free(ssl);
	close(fd);
}

/* Send fmt with "@@" replaced by the placeholder; read one response. */
static char *roundtrip(struct world *w, SSL *ssl, const char *req)
{
	static char resp[1 << 16];
	char buf[8192];
	const char *ph = moat_secrets_placeholder(w->secrets, 0);
	size_t o = 0;
	for (const char *p = req; *p && o < sizeof(buf) - 200;) {
		if (startswith(p, "@@")) {
			o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s", ph);
			p += 2;
		} else
			buf[o++] = *p++;
	}
	ASSERT_EQ(SSL_write(ssl, buf, (int)o), (int)o);
	ssize_t n = read_message(ssl, resp, sizeof(resp));
	if (n < 0)
		moat_tap_fail(__FILE__, __LINE__, "no response; reports: %s", slurp(w->reports));
	resp[n] = '\0';
	return resp;
}

TEST(intercept_injects_and_keeps_alive)
{
	struct world w;
	world_up(&w, true, false);
	SSL *c = client(&w);
	ASSERT_TRUE(c != NULL);

	char *r = roundtrip(&w, c,
			    "GET /user HTTP/1.1\r\nHost: api.github.test\r\n"
			    "Authorization: Bearer @@\r\n\r\n");
	if (!r)
		moat_tap_fail(__FILE__, __LINE__, "no response; reports: %s", slurp(w.reports));
	ASSERT_CONTAINS(r, "HTTP/1.1 200 OK");
	/* The echo endpoint reflects the header: masked on the way back. */
	ASSERT_TRUE(!strstr(r, REAL));
	ASSERT_CONTAINS(r, "Authorization: Bearer ****");

	/* Same connection: a body with Content-Length, then a chunked one,
	 * then another injected request: framing keeps every head visible. */
	r = roundtrip(
		&w, c,
		"POST /a HTTP/1.1\r\nHost: api.github.test\r\nContent-Length: 5\r\n\r\nhello");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "POST /a");
	r = roundtrip(
		&w, c,
		"POST /b HTTP/1.1\r\nHost: api.github.test\r\nTransfer-Encoding: chunked\r\n\r\n"
		"5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "POST /b");
	r = roundtrip(
		&w, c,
		"GET /split HTTP/1.1\r\nHost: api.github.test\r\nAuthorization: Bearer @@\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_TRUE(!strstr(r, REAL));
	ASSERT_TRUE(!strstr(r, "REALinter"));
	ASSERT_CONTAINS(r, "Authorization: Bearer ****");
	r = roundtrip(&w, c,
		      "GET /c HTTP/1.1\r\nHost: api.github.test\r\nX-Token: token @@\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "GET /c");
	client_free(c);

	/* The upstream got the real value, never the placeholder. */
	char *heads = slurp(w.heads);
	ASSERT_CONTAINS(heads, "Authorization: Bearer " REAL "\r\n");
	ASSERT_CONTAINS(heads, "X-Token: token " REAL "\r\n");
	ASSERT_CONTAINS(heads, "hello");
	ASSERT_CONTAINS(heads, "5\r\nhello\r\n3\r\nabc\r\n0\r\n\r\n");
	ASSERT_TRUE(!strstr(heads, "moat-ph-"));
	char *rep = slurp(w.reports);
	ASSERT_CONTAINS(rep,
			"api.github.test GET /user allowed=1 status=0 alert=0 secret=GH_TOKEN");
	ASSERT_TRUE(!strstr(rep, REAL));
	world_down(&w);
}

TEST(intercept_refuses_with_alert)
{
	struct world w;
	world_up(&w, true, false);

	SSL *c = client(&w);
	ASSERT_TRUE(c != NULL);
	char *r = roundtrip(&w, c, "GET /search?q=@@ HTTP/1.1\r\nHost: api.github.test\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "HTTP/1.1 403 Forbidden");
	/* The answer names the reason, not only the status. */
	ASSERT_CONTAINS(r, "X-Moat-Denied: secret GH_TOKEN: placeholder in the request URL");
	ASSERT_CONTAINS(r, "GH_TOKEN");
	client_free(c);

	/* The client's own Authorization (RT-063). */
	c = client(&w);
	ASSERT_TRUE(c != NULL);
	r = roundtrip(
		&w, c,
		"GET / HTTP/1.1\r\nHost: api.github.test\r\nAuthorization: token ghp_ATTACKER\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "403");
	client_free(c);

	/* A placeholder in a later body piece: refused (with its reason)
	 * before the piece is forwarded, and the connection ends. */
	c = client(&w);
	ASSERT_TRUE(c != NULL);
	char big[6000];
	memset(big, 'a', 4000);
	snprintf(big + 4000, sizeof(big) - 4000,
		 "POST /x HTTP/1.1\r\nHost: api.github.test\r\nContent-Length: 4100\r\n\r\n");
	/* head first, then body in two writes */
	ASSERT_TRUE(SSL_write(c, big + 4000, (int)strlen(big + 4000)) > 0);
	usleep(100000);
	ASSERT_TRUE(SSL_write(c, big, 4000) == 4000);
	usleep(100000);
	char tail[200];
	snprintf(tail, sizeof(tail), "%.100s", moat_secrets_placeholder(w.secrets, 0));
	(void)SSL_write(c, tail, 100);
	char rb[2048];
	time_t t0 = time(NULL);
	int got = SSL_read(c, rb, sizeof(rb) - 1);
	ASSERT_TRUE(got > 0);
	rb[got] = '\0';
	ASSERT_CONTAINS(rb, "HTTP/1.1 403 Forbidden");
	ASSERT_CONTAINS(rb, "X-Moat-Denied: secret GH_TOKEN: placeholder in the request body");
	ASSERT_TRUE(time(NULL) - t0 < 5); /* answered, not a timeout */
	client_free(c);
	usleep(100000);

	char *heads = slurp(w.heads);
	ASSERT_TRUE(!strstr(heads, "/search"));
	ASSERT_TRUE(!strstr(heads, "ATTACKER"));
	ASSERT_TRUE(!strstr(heads, "moat-ph-"));
	char *rep = slurp(w.reports);
	ASSERT_CONTAINS(rep,
			"allowed=0 status=403 alert=1 secret=GH_TOKEN reason=secret GH_TOKEN: "
			"placeholder in the request URL");
	ASSERT_CONTAINS(rep, "client-supplied Authorization");
	ASSERT_CONTAINS(rep, "placeholder in the request body");
	world_down(&w);
}

TEST(intercept_http_rules)
{
	struct world w;
	world_up(&w, true, true);
	SSL *c = client(&w);
	ASSERT_TRUE(c != NULL);
	char *r = roundtrip(&w, c, "GET /ok HTTP/1.1\r\nHost: api.github.test\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "200 OK");
	r = roundtrip(&w, c, "DELETE /repo HTTP/1.1\r\nHost: api.github.test\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "403");
	ASSERT_CONTAINS(r, "http rules");
	client_free(c);
	ASSERT_TRUE(!strstr(slurp(w.heads), "DELETE"));
	world_down(&w);
}

TEST(intercept_upstream_untrusted)
{
	struct world w;
	world_up(&w, false, false);
	SSL *c = client(&w);
	ASSERT_TRUE(c != NULL);
	char *r = roundtrip(
		&w, c,
		"GET / HTTP/1.1\r\nHost: api.github.test\r\nAuthorization: Bearer @@\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "HTTP/1.1 502 Bad Gateway");
	ASSERT_CONTAINS(r, "certificate verify failed");
	client_free(c);
	ASSERT_STREQ(slurp(w.heads), "");
	world_down(&w);
}

TEST(intercept_client_wrong_sni)
{
	struct world w;
	world_up(&w, true, false);
	int fd = connect_lo(w.icpt_port);
	ASSERT_TRUE(fd >= 0);
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
	SSL *ssl = SSL_new(ctx);
	SSL_set_tlsext_host_name(ssl, "evil.test");
	SSL_set_fd(ssl, fd);
	ASSERT_TRUE(SSL_connect(ssl) != 1);
	SSL_free(ssl);
	SSL_CTX_free(ctx);
	close(fd);
	world_down(&w);
}

/* The request side on its own (what moat_intercept_step() runs, without
 * TLS): each smuggling case and positive control gets the plain path's
 * verdict and reason, fed whole or in pieces as TLS records would cut it,
 * with and without a secret rebuilding every head. */
TEST(intercept_same_verdict_as_plain)
{
	char *h[] = {(char[]){"h.test"}};
	struct moat_secret d = {.name = (char[]){"HK"},
				.source = MOAT_SECRET_ENV,
				.from = (char[]){"MOAT_T_ICPT_HK"},
				.hosts = h,
				.n_hosts = 1,
				.header = (char[]){"X-Key"}};
	static const size_t pieces[] = {0, 1, 3, 17, 512};
	struct moat_secrets *s = NULL;
	struct moat_error e;

	setenv("MOAT_T_ICPT_HK", "REALhk0123456789", 1);
	ASSERT_EQ(moat_secrets_new(&d, 1, &s, &e), 0);
	for (int with = 0; with < 2; with++) {
		const struct moat_intercept_config cfg = {.secrets = with ? s : NULL};
		for (size_t i = 0; i < ELEMENTSOF(http_cases); i++) {
			const struct http_case *c = &http_cases[i];
			struct path_run plain = {0};
			path_plain(c->in, http_case_len(c), &plain);
			for (size_t k = 0; k < ELEMENTSOF(pieces); k++) {
				struct path_run ic = {0};
				path_intercept(&cfg, c->in, http_case_len(c), "h.test", pieces[k],
					       &ic);
				if (ic.n != c->accepted || ic.refused != (c->reason != NULL) ||
				    (c->reason &&
				     (strcmp(ic.reason, c->reason) != 0 || ic.status != c->status)))
					moat_tap_fail(
						__FILE__, __LINE__,
						"%s (pieces %zu): %u accepted, refused=%d %d (%s)",
						c->name, pieces[k], ic.n, ic.refused, ic.status,
						ic.reason);
				if (!path_agree(&plain, &ic) || !path_agree(&ic, &plain) ||
				    !path_fwd_reframes(&ic))
					moat_tap_fail(__FILE__, __LINE__,
						      "%s: disagrees with plain", c->name);
				if (!with && c->fwd &&
				    (ic.fwd_len != strlen(c->fwd) ||
				     memcmp(ic.fwd, c->fwd, ic.fwd_len) != 0))
					moat_tap_fail(__FILE__, __LINE__, "%s: forwarded %.*s",
						      c->name, (int)ic.fwd_len,
						      ic.fwd ? ic.fwd : "");
				path_run_free(&ic);
			}
			path_run_free(&plain);
		}
	}
	moat_secrets_free(s);
}

/* End to end over TLS: a request smuggled behind a CL/TE disagreement, and
 * a chunk extension, are refused with their reason in X-Moat-Denied, the
 * body and the report; the smuggled request never reaches the upstream. */
TEST(intercept_refusal_names_reason)
{
	struct world w;
	world_up(&w, true, false);
	SSL *c = client(&w);
	ASSERT_TRUE(c != NULL);
	char *r = roundtrip(&w, c,
			    "POST /a HTTP/1.1\r\nHost: api.github.test\r\nContent-Length: 4\r\n"
			    "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n"
			    "GET /smuggled HTTP/1.1\r\nHost: api.github.test\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "HTTP/1.1 400 Bad Request");
	ASSERT_CONTAINS(r, "X-Moat-Denied: cl-and-te\r\n");
	ASSERT_CONTAINS(r, "(cl-and-te)");
	client_free(c);

	c = client(&w);
	ASSERT_TRUE(c != NULL);
	r = roundtrip(&w, c,
		      "POST /b HTTP/1.1\r\nHost: api.github.test\r\nTransfer-Encoding: chunked\r\n"
		      "\r\n5;x=y\r\nhello\r\n0\r\n\r\n");
	ASSERT_TRUE(r != NULL);
	ASSERT_CONTAINS(r, "X-Moat-Denied: bad-chunked-body\r\n");
	client_free(c);
	usleep(100000);

	char *heads = slurp(w.heads);
	ASSERT_TRUE(!strstr(heads, "/smuggled"));
	ASSERT_TRUE(!strstr(heads, "POST /a"));
	char *rep = slurp(w.reports);
	ASSERT_CONTAINS(rep, "allowed=0 status=400 alert=0 secret=- reason=cl-and-te");
	ASSERT_CONTAINS(rep, "allowed=0 status=400 alert=0 secret=- reason=bad-chunked-body");
	world_down(&w);
}

/* Attack (red team): on an intercepted stream the Host check compared the
 * name only, so "Host: api.github.test:8443" (or an absolute-form target
 * with another port) reached the upstream naming another origin, which the
 * tunnel path refuses as host-switch. One rule: a Host (or absolute-form
 * authority) naming a port names the dialled one. Failed before the fix
 * (the head was forwarded). */
static int icpt_verdict(uint16_t port, const char *req, char *reason, size_t rlen)
{
	const struct moat_intercept_config cfg = {.port = port};
	struct moat_intercept_requests q;
	struct moat_intercept_piece pc;
	int kind;

	if (moat_intercept_requests_init(&q, &cfg, "api.github.test") < 0)
		return -1;
	if (moat_intercept_requests_next(&q, req, strlen(req), &pc) < 0)
		return -1;
	kind = (int)pc.kind;
	snprintf(reason, rlen, "%s", pc.reason);
	moat_intercept_piece_clear(&pc);
	return kind;
}

TEST(intercept_host_port_is_the_dialled_one)
{
	char why[400];

	/* positive controls: no port, the dialled port, port 0 meaning 443 */
	ASSERT_EQ(icpt_verdict(443, "GET / HTTP/1.1\r\nHost: api.github.test\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_HEAD);
	ASSERT_EQ(icpt_verdict(443, "GET / HTTP/1.1\r\nHost: api.github.test:443\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_HEAD);
	ASSERT_EQ(icpt_verdict(0, "GET / HTTP/1.1\r\nHost: API.github.test.:443\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_HEAD);
	ASSERT_EQ(icpt_verdict(8443, "GET / HTTP/1.1\r\nHost: api.github.test:8443\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_HEAD);
	ASSERT_EQ(icpt_verdict(443, "GET http://api.github.test/x HTTP/1.1\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_HEAD);
	/* the attack: another port in Host or in the absolute-form authority */
	ASSERT_EQ(icpt_verdict(443, "GET / HTTP/1.1\r\nHost: api.github.test:8443\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_REFUSE);
	ASSERT_CONTAINS(why, "host-mismatch");
	ASSERT_EQ(icpt_verdict(8443, "GET / HTTP/1.1\r\nHost: api.github.test:443\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_REFUSE);
	ASSERT_EQ(icpt_verdict(443, "GET http://api.github.test:9/x HTTP/1.1\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_REFUSE);
	ASSERT_EQ(icpt_verdict(443, "GET / HTTP/1.1\r\nHost: api.github.test:80\r\n\r\n", why,
			       sizeof(why)),
		  MOAT_INTERCEPT_REFUSE);
	/* held: an h2 preface after ALPN fell back to HTTP/1 (the proxy offers
	 * only http/1.1) is refused by the one parser, nothing forwarded */
	ASSERT_EQ(icpt_verdict(443, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", why, sizeof(why)),
		  MOAT_INTERCEPT_REFUSE);
}
