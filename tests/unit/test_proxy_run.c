/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The proxy worker for real, on loopback only: each test forks an HTTP
 * upstream on 127.0.0.2 and moat_proxy_main() with listeners on 127.0.0.1
 * ephemeral ports, then talks to it as a sandboxed client would. The last
 * tests run the whole path (netns redirect, DNS stub, transparent capture) in
 * a fresh user+net namespace. No packet leaves the machine.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "network/netns.h"
#include "policy/policy.h"
#include "proxy/http1.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

#define UP_ADDR "127.0.0.2"
#define MAX_UP 2100

static uint16_t up_port;
static int ev_rd = -1;
static struct moat_netns_fds lfds;
static uint16_t http_port, socks_port;
/* Connections the upstream accepted (shared with its process). */
static unsigned *up_accepts;

/* ---- a tiny keep-alive HTTP upstream: answers "host=H path=P" ---------- */

struct upc {
	int fd;
	size_t len;
	char buf[8192];
};

static void up_answer(struct upc *u)
{
	char *end;
	while ((end = memmem(u->buf, u->len, "\r\n\r\n", 4))) {
		char path[256] = "?", host[256] = "?", body[600], resp[800];
		size_t head = (size_t)(end - u->buf) + 4;
		char *h;
		*end = 0;
		sscanf(u->buf, "%*s %255s", path);
		h = strcasestr(u->buf, "\r\nHost: ");
		if (h)
			sscanf(h + 8, "%255[^\r]", host);
		int bl = snprintf(body, sizeof(body), "host=%s path=%s\n", host, path);
		int rl = snprintf(resp, sizeof(resp),
				  "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", bl, body);
		(void)!write(u->fd, resp, (size_t)rl);
		memmove(u->buf, u->buf + head, u->len - head);
		u->len -= head;
	}
}

_noreturn_ static void upstream_main(int lfd, pid_t parent)
{
	static struct pollfd pf[MAX_UP];
	static struct upc *uc[MAX_UP];
	nfds_t n = 1;

	/* Die with the test; hold none of the harness's pipes. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || getppid() != parent)
		_exit(1);
	if (dup2(lfd, 3) < 0 || close_range(4, ~0u, 0) < 0)
		_exit(1);
	lfd = 3;
	pf[0] = (struct pollfd){.fd = lfd, .events = POLLIN};
	for (;;) {
		if (poll(pf, n, -1) < 0)
			_exit(1);
		for (nfds_t i = 1; i < n; i++) {
			struct upc *u = uc[i];
			if (!(pf[i].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			ssize_t k = read(u->fd, u->buf + u->len, sizeof(u->buf) - u->len);
			if (k <= 0) {
				close(u->fd);
				free(u);
				pf[i] = pf[n - 1];
				uc[i] = uc[n - 1];
				n--;
				i--;
				continue;
			}
			u->len += (size_t)k;
			up_answer(u);
		}
		while ((pf[0].revents & POLLIN) && n < MAX_UP) {
			int fd = accept4(lfd, NULL, NULL, 0);
			if (fd < 0)
				break;
			__atomic_add_fetch(up_accepts, 1, __ATOMIC_SEQ_CST);
			uc[n] = calloc(1, sizeof(struct upc));
			uc[n]->fd = fd;
			pf[n] = (struct pollfd){.fd = fd, .events = POLLIN};
			n++;
		}
	}
}

static int listen_tcp(const char *addr, uint16_t port, uint16_t *ret_port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	socklen_t len = sizeof(sa);
	int one = 1, fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_TRUE(fd >= 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		moat_tap_fail(__FILE__, __LINE__, "bind %s: %m", addr);
	ASSERT_EQ(listen(fd, 4096), 0);
	ASSERT_EQ(getsockname(fd, (struct sockaddr *)&sa, &len), 0);
	if (ret_port)
		*ret_port = ntohs(sa.sin_port);
	return fd;
}

static void start_upstream(uint16_t port)
{
	int lfd = listen_tcp(UP_ADDR, port, &up_port);
	pid_t pid, parent = getpid();
	if (!up_accepts) {
		up_accepts = mmap(NULL, sizeof(*up_accepts), PROT_READ | PROT_WRITE,
				  MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		ASSERT_TRUE(up_accepts != MAP_FAILED);
	}
	*up_accepts = 0;
	fcntl(lfd, F_SETFL, O_NONBLOCK);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		upstream_main(lfd, parent);
	close(lfd);
}

/* Rules: a.test and b.test on the upstream port, both mapped to 127.0.0.2;
 * with_cidr adds --allow-cidr 127.0.0.2/32:<upstream port>. */
static bool no_events, with_cidr;

static void start_proxy(unsigned max_conns, bool netns)
{
	static char allow_a[] = "a.test", allow_b[] = "b.test", up[] = UP_ADDR;
	static struct moat_host_rule allow[2];
	static struct moat_resolve res[] = {{.name = allow_a, .addr = up},
					    {.name = allow_b, .addr = up}};
	static char cidr_text[] = UP_ADDR "/32";
	static struct moat_host_rule cidr[1];
	struct moat_policy pol = {
		.allow_hosts = allow, .n_allow_hosts = 2, .resolve = res, .n_resolve = 2};
	struct moat_proxy_config *cfg = NULL;
	int ev[2];
	pid_t pid;

	cidr[0] = (struct moat_host_rule){.pattern = cidr_text, .ports = {up_port}, .n_ports = 1};
	if (with_cidr) {
		pol.allow_cidrs = cidr;
		pol.n_allow_cidrs = 1;
	}
	allow[0] = (struct moat_host_rule){.pattern = allow_a, .ports = {up_port}, .n_ports = 1};
	allow[1] = (struct moat_host_rule){.pattern = allow_b, .ports = {up_port}, .n_ports = 1};
	ASSERT_EQ(moat_proxy_config_from_policy(&pol, &cfg), 0);
	cfg->max_conns = max_conns;
	cfg->no_resolver = true; /* tests never ask a real DNS server */
#if defined(__SANITIZE_ADDRESS__)
	cfg->no_seccomp = true;
#endif
	if (!netns) {
		moat_netns_fds_init(&lfds);
		lfds.http = listen_tcp("127.0.0.1", 0, &http_port);
		lfds.socks = listen_tcp("127.0.0.1", 0, &socks_port);
	}
	ASSERT_EQ(pipe2(ev, O_CLOEXEC), 0);
	pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		close(ev[0]);
		int r = moat_proxy_main(cfg, &lfds, no_events ? -1 : ev[1]);
		fprintf(stderr, "moat_proxy_main: %s\n", strerror(-r));
		_exit(1);
	}
	close(ev[1]);
	ev_rd = ev[0];
	fcntl(ev_rd, F_SETFL, O_NONBLOCK);
	moat_netns_fds_close(&lfds);
	moat_proxy_config_free(cfg);
}

static void setup(unsigned max_conns)
{
	start_upstream(0);
	start_proxy(max_conns, false);
}

/* ---- client helpers -------------------------------------------------------- */

static int dial(const char *addr, uint16_t port)
{
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	ASSERT_TRUE(fd >= 0);
	inet_pton(AF_INET, addr, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		moat_tap_fail(__FILE__, __LINE__, "connect %s:%u: %m", addr, port);
	return fd;
}

static void send_all(int fd, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = send(fd, s, n, MSG_NOSIGNAL);
		if (k <= 0)
			moat_tap_fail(__FILE__, __LINE__, "send: %m");
		s += k;
		n -= (size_t)k;
	}
}

static void sends(int fd, const char *s)
{
	send_all(fd, s, strlen(s));
}

/* Read one HTTP response (head + Content-Length body, or until EOF). */
static char *read_response(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	buf[0] = 0;
	for (;;) {
		char *end = strstr(buf, "\r\n\r\n");
		if (end) {
			char *cl = strcasestr(buf, "Content-Length:");
			if (cl && len >= (size_t)(end + 4 - buf) + strtoul(cl + 15, NULL, 10))
				return buf;
		}
		if (len + 1 >= cap)
			return buf;
		ssize_t k = recv(fd, buf + len, cap - 1 - len, 0);
		if (k <= 0)
			return buf;
		len += (size_t)k;
		buf[len] = 0;
	}
}

static char *http(const char *req, char *buf, size_t cap)
{
	_cleanup_close_ int fd = dial("127.0.0.1", http_port);
	sends(fd, req);
	return read_response(fd, buf, cap);
}

static char *events(char *buf, size_t cap)
{
	size_t len = 0;
	usleep(100 * 1000);
	for (;;) {
		ssize_t k = read(ev_rd, buf + len, cap - 1 - len);
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	buf[len] = 0;
	return buf;
}

/* ---- tests ---------------------------------------------------------------- */

TEST(proxy_http_absolute_form_allowed)
{
	char req[256], buf[4096], ev[8192];
	setup(0);
	snprintf(req, sizeof(req),
		 "GET http://a.test:%u/x?y=1 HTTP/1.1\r\nHost: a.test:%u\r\n"
		 "Proxy-Authorization: Basic Zm9vOmJhcg==\r\nConnection: close\r\n\r\n",
		 up_port, up_port);
	http(req, buf, sizeof(buf));
	ASSERT_CONTAINS(buf, "HTTP/1.1 200 OK");
	ASSERT_CONTAINS(buf, "path=/x?y=1");
	snprintf(req, sizeof(req), "host=a.test:%u", up_port);
	ASSERT_CONTAINS(buf, req);
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(ev, "\"proto\":\"http\",\"name\":\"a.test\"");
	ASSERT_CONTAINS(ev, "\"addr\":\"127.0.0.2\"");
	ASSERT_CONTAINS(ev, "\"decision\":\"allow\"");
}

TEST(proxy_http_keepalive_same_host_then_switch)
{
	char req[512], buf[4096], ev[8192];
	setup(0);
	_cleanup_close_ int fd = dial("127.0.0.1", http_port);
	snprintf(req, sizeof(req), "GET http://a.test:%u/1 HTTP/1.1\r\nHost: a.test:%u\r\n\r\n",
		 up_port, up_port);
	sends(fd, req);
	ASSERT_CONTAINS(read_response(fd, buf, sizeof(buf)), "path=/1");
	snprintf(req, sizeof(req), "GET http://a.test:%u/2 HTTP/1.1\r\nHost: a.test:%u\r\n\r\n",
		 up_port, up_port);
	sends(fd, req);
	ASSERT_CONTAINS(read_response(fd, buf, sizeof(buf)), "path=/2");
	/* same connection, another host: refused, never sent to b.test */
	snprintf(req, sizeof(req), "GET http://b.test:%u/3 HTTP/1.1\r\nHost: b.test:%u\r\n\r\n",
		 up_port, up_port);
	sends(fd, req);
	read_response(fd, buf, sizeof(buf));
	ASSERT_CONTAINS(buf, "HTTP/1.1 403");
	ASSERT_CONTAINS(buf, "host-switch");
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(ev, "\"reason\":\"host-switch\"");
}

TEST(proxy_connect_tunnel)
{
	char req[256], buf[4096];
	setup(0);
	_cleanup_close_ int fd = dial("127.0.0.1", http_port);
	snprintf(req, sizeof(req), "CONNECT a.test:%u HTTP/1.1\r\nHost: a.test:%u\r\n\r\n", up_port,
		 up_port);
	sends(fd, req);
	ASSERT_EQ(recv(fd, buf, strlen(MOAT_HTTP1_CONNECT_OK), MSG_WAITALL),
		  (ssize_t)strlen(MOAT_HTTP1_CONNECT_OK));
	sends(fd, "GET /t HTTP/1.1\r\nHost: a.test\r\n\r\n");
	ASSERT_CONTAINS(read_response(fd, buf, sizeof(buf)), "path=/t");
}

TEST(proxy_socks5_connect_by_name)
{
	uint8_t req[64], rep[32];
	char buf[4096];
	size_t n = 0;
	setup(0);
	_cleanup_close_ int fd = dial("127.0.0.1", socks_port);
	send_all(fd, "\x05\x01\x00", 3);
	ASSERT_EQ(recv(fd, rep, 2, MSG_WAITALL), 2);
	ASSERT_EQ(rep[1], 0);
	req[n++] = 5, req[n++] = 1, req[n++] = 0, req[n++] = 3, req[n++] = 6;
	memcpy(req + n, "a.test", 6);
	n += 6;
	req[n++] = (uint8_t)(up_port >> 8), req[n++] = (uint8_t)up_port;
	send_all(fd, (char *)req, n);
	ASSERT_EQ(recv(fd, rep, 10, MSG_WAITALL), 10);
	ASSERT_EQ(rep[1], 0);
	sends(fd, "GET /s HTTP/1.1\r\nHost: a.test\r\n\r\n");
	ASSERT_CONTAINS(read_response(fd, buf, sizeof(buf)), "path=/s");
}

static uint8_t socks_try(const char *host, uint8_t atyp, const uint8_t *addr, size_t alen,
			 uint16_t port)
{
	uint8_t req[300], rep[32];
	size_t n = 0;
	_cleanup_close_ int fd = dial("127.0.0.1", socks_port);
	send_all(fd, "\x05\x01\x00", 3);
	ASSERT_EQ(recv(fd, rep, 2, MSG_WAITALL), 2);
	req[n++] = 5, req[n++] = 1, req[n++] = 0, req[n++] = atyp;
	if (atyp == 3) {
		req[n++] = (uint8_t)strlen(host);
		memcpy(req + n, host, strlen(host));
		n += strlen(host);
	} else {
		memcpy(req + n, addr, alen);
		n += alen;
	}
	req[n++] = (uint8_t)(port >> 8), req[n++] = (uint8_t)port;
	send_all(fd, (char *)req, n);
	ASSERT_TRUE(recv(fd, rep, 10, MSG_WAITALL) >= 2);
	return rep[1];
}

/* Chromium reads ALL_PROXY=socks5h://... as an HTTP proxy and sends HTTP to
 * the SOCKS port: served as on the HTTP port, with the same decisions. */
TEST(proxy_http_request_on_socks_port)
{
	char req[256], buf[4096], ev[8192];
	setup(0);
	snprintf(req, sizeof(req),
		 "GET http://a.test:%u/viasocks HTTP/1.1\r\nHost: a.test:%u\r\nConnection: "
		 "close\r\n\r\n",
		 up_port, up_port);
	{
		_cleanup_close_ int fd = dial("127.0.0.1", socks_port);
		sends(fd, req);
		read_response(fd, buf, sizeof(buf));
	}
	ASSERT_CONTAINS(buf, "HTTP/1.1 200 OK");
	ASSERT_CONTAINS(buf, "path=/viasocks");
	/* a host the rules do not allow: refused with the HTTP port's answer */
	snprintf(req, sizeof(req),
		 "GET http://other.test:%u/ HTTP/1.1\r\nHost: other.test:%u\r\n\r\n", up_port,
		 up_port);
	{
		_cleanup_close_ int fd = dial("127.0.0.1", socks_port);
		sends(fd, req);
		read_response(fd, buf, sizeof(buf));
	}
	ASSERT_CONTAINS(buf, "HTTP/1.1 403");
	ASSERT_CONTAINS(buf, "X-Moat-Denied: not-allowed");
	/* CONNECT too, and a lower-case first byte is neither SOCKS nor HTTP */
	{
		_cleanup_close_ int fd = dial("127.0.0.1", socks_port);
		snprintf(req, sizeof(req), "CONNECT a.test:%u HTTP/1.1\r\nHost: a.test:%u\r\n\r\n",
			 up_port, up_port);
		sends(fd, req);
		ASSERT_EQ(recv(fd, buf, strlen(MOAT_HTTP1_CONNECT_OK), MSG_WAITALL),
			  (ssize_t)strlen(MOAT_HTTP1_CONNECT_OK));
	}
	{
		_cleanup_close_ int fd = dial("127.0.0.1", socks_port);
		sends(fd, "get / HTTP/1.1\r\n\r\n");
		ASSERT_EQ(recv(fd, buf, sizeof(buf), 0), 0);
	}
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(ev, "\"proto\":\"http\",\"name\":\"other.test\"");
	ASSERT_CONTAINS(ev, "\"reason\":\"not-socks5\"");
}

TEST(proxy_refusals_name_with_rule_hint)
{
	char req[256], buf[4096], ev[16384], hint[64];
	setup(0);
	snprintf(req, sizeof(req),
		 "GET http://other.test:%u/ HTTP/1.1\r\nHost: other.test:%u\r\n\r\n", up_port,
		 up_port);
	http(req, buf, sizeof(buf));
	ASSERT_CONTAINS(buf, "HTTP/1.1 403");
	ASSERT_CONTAINS(buf, "X-Moat-Denied: not-allowed");
	snprintf(hint, sizeof(hint), "--allow-host other.test:%u", up_port);
	ASSERT_CONTAINS(buf, hint);
	snprintf(req, sizeof(req),
		 "CONNECT other.test:443 HTTP/1.1\r\nHost: other.test:443\r\n\r\n");
	ASSERT_CONTAINS(http(req, buf, sizeof(buf)), "--allow-host other.test:443");
	/* an allowed name on a port it is not allowed on */
	ASSERT_CONTAINS(
		http("CONNECT a.test:22 HTTP/1.1\r\nHost: a.test:22\r\n\r\n", buf, sizeof(buf)),
		"port-not-allowed");
	ASSERT_EQ(socks_try("other.test", 3, NULL, 0, up_port), 2);
	/* look-alikes of allowed names */
	snprintf(req, sizeof(req),
		 "CONNECT a.test.evil.example:%u HTTP/1.1\r\nHost: a.test.evil.example:%u\r\n\r\n",
		 up_port, up_port);
	ASSERT_CONTAINS(http(req, buf, sizeof(buf)), "HTTP/1.1 403");
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(ev, "\"name\":\"other.test\"");
	ASSERT_CONTAINS(ev, "\"decision\":\"deny\",\"reason\":\"not-allowed\"");
	ASSERT_CONTAINS(ev, "\"proto\":\"socks\"");
}

TEST(proxy_refuses_loopback_and_metadata_in_every_form)
{
	static const char *const targets[] = {
		"127.0.0.1",
		"localhost",
		"LOCALHOST.",
		"[::1]",
		"127.1",
		"127.0.0.2",
		"0.0.0.0",
		"[::]",
		"[::ffff:127.0.0.1]",
		"169.254.169.254",
		"0xa9fea9fe",
		"2852039166",
		"0251.0376.0251.0376",
		"0xa9.0xfe.0xa9.0xfe",
		"[::ffff:169.254.169.254]",
		"[::ffff:a9fe:a9fe]",
		"[fd00:ec2::254]",
		"100.100.100.200",
		"168.63.129.16",
		"metadata.google.internal",
		"10.0.0.1",
		"192.168.1.1",
		"[fe80::1]",
	};
	char req[512], buf[4096];
	setup(0);
	for (size_t i = 0; i < ELEMENTSOF(targets); i++) {
		snprintf(req, sizeof(req), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
			 targets[i], up_port, targets[i], up_port);
		http(req, buf, sizeof(buf));
		if (!strstr(buf, "HTTP/1.1 403"))
			moat_tap_fail(__FILE__, __LINE__, "CONNECT %s: %s", targets[i], buf);
		snprintf(req, sizeof(req), "GET http://%s:%u/ HTTP/1.1\r\nHost: %s:%u\r\n\r\n",
			 targets[i], up_port, targets[i], up_port);
		http(req, buf, sizeof(buf));
		if (!strstr(buf, "HTTP/1.1 403"))
			moat_tap_fail(__FILE__, __LINE__, "GET %s: %s", targets[i], buf);
	}
	ASSERT_EQ(socks_try(NULL, 1, (const uint8_t *)"\x7f\x00\x00\x01", 4, up_port), 2);
	ASSERT_EQ(socks_try(NULL, 1, (const uint8_t *)"\xa9\xfe\xa9\xfe", 4, 80), 2);
	ASSERT_EQ(socks_try(NULL, 4, (const uint8_t *)"\0\0\0\0\0\0\0\0\0\0\xff\xff\x7f\0\0\1", 16,
			    up_port),
		  2);
	ASSERT_EQ(socks_try("localhost", 3, NULL, 0, up_port), 2);
	ASSERT_EQ(socks_try("0x7f.1", 3, NULL, 0, up_port), 2);
}

TEST(proxy_refuses_oversized_and_malformed)
{
	static char big[48 * 1024];
	char buf[4096];
	size_t n;
	setup(0);
	n = (size_t)snprintf(big, sizeof(big),
			     "GET http://a.test:%u/ HTTP/1.1\r\nX-Big: ", up_port);
	memset(big + n, 'a', sizeof(big) - n - 5);
	memcpy(big + sizeof(big) - 5, "\r\n\r\n", 5);
	ASSERT_CONTAINS(http(big, buf, sizeof(buf)), "HTTP/1.1 431");
	ASSERT_CONTAINS(http("GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nContent-Length: 1\r\n"
			     "Transfer-Encoding: chunked\r\n\r\n",
			     buf, sizeof(buf)),
			"HTTP/1.1 400");
	ASSERT_CONTAINS(http("GET /origin-form HTTP/1.1\r\nHost: a.test\r\n\r\n", buf, sizeof(buf)),
			"HTTP/1.1 400");
}

TEST(proxy_connection_cap_fails_fast)
{
	int fds[4];
	char b;
	setup(3);
	for (int i = 0; i < 3; i++)
		fds[i] = dial("127.0.0.1", http_port);
	usleep(100 * 1000);
	fds[3] = dial("127.0.0.1", http_port);
	/* the fourth is reset at once, not left hanging */
	ASSERT_TRUE(recv(fds[3], &b, 1, 0) <= 0);
	for (int i = 0; i < 4; i++)
		close(fds[i]);
}

TEST(proxy_thousand_concurrent_tunnels)
{
	enum {
		N = 1000
	};
	static int fds[N];
	char req[256], buf[512];
	size_t ok = strlen(MOAT_HTTP1_CONNECT_OK);
	/* Nobody reads the events here; a full event pipe would stall the
	 * proxy (it blocks rather than lose audit records). */
	no_events = true;
	setup(1024);
	snprintf(req, sizeof(req), "CONNECT a.test:%u HTTP/1.1\r\nHost: a.test:%u\r\n\r\n", up_port,
		 up_port);
	for (int i = 0; i < N; i++) {
		fds[i] = dial("127.0.0.1", http_port);
		sends(fds[i], req);
	}
	for (int i = 0; i < N; i++) {
		ssize_t k = recv(fds[i], buf, ok, MSG_WAITALL);
		if (k != (ssize_t)ok)
			moat_tap_fail(__FILE__, __LINE__, "tunnel %d: %zd", i, k);
		sends(fds[i], "GET /c HTTP/1.1\r\nHost: a.test\r\n\r\n");
	}
	for (int i = 0; i < N; i++) {
		read_response(fds[i], buf, sizeof(buf));
		if (!strstr(buf, "path=/c"))
			moat_tap_fail(__FILE__, __LINE__, "tunnel %d: %s", i, buf);
		close(fds[i]);
	}
}

/* ---- the whole path inside a fresh user+net namespace ------------------------ */

static void write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		moat_tap_fail(__FILE__, __LINE__, "write %s: %m", path);
	close(fd);
}

static void enter_netns(void)
{
	char map[64];
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
		moat_tap_fail(__FILE__, __LINE__, "unshare: %m");
	write_file("/proc/self/setgroups", "deny");
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)uid);
	write_file("/proc/self/uid_map", map);
	snprintf(map, sizeof(map), "0 %u 1\n", (unsigned)gid);
	write_file("/proc/self/gid_map", map);
}

/* A query for NAME/A; returns the rcode and the first A record in *ret. */
static int dns_query(const char *name, uint16_t qtype, uint32_t *ret)
{
	uint8_t q[300] = {0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0}, a[600];
	size_t n = 12;
	struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};
	struct timeval tv = {.tv_sec = 3};
	_cleanup_close_ int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	const char *p = name;
	ssize_t k;

	while (*p) {
		const char *dot = strchrnul(p, '.');
		q[n++] = (uint8_t)(dot - p);
		memcpy(q + n, p, (size_t)(dot - p));
		n += (size_t)(dot - p);
		p = *dot ? dot + 1 : dot;
	}
	q[n++] = 0;
	q[n++] = 0, q[n++] = (uint8_t)qtype, q[n++] = 0, q[n++] = 1;
	inet_pton(AF_INET, MOAT_NETNS_DNS4, &sa.sin_addr);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	ASSERT_EQ(sendto(fd, q, n, 0, (struct sockaddr *)&sa, sizeof(sa)), (ssize_t)n);
	k = recv(fd, a, sizeof(a), 0);
	ASSERT_TRUE(k >= 12);
	ASSERT_EQ(a[0], 0x12);
	*ret = 0;
	if ((a[7] | a[6] << 8) >= 1 && k >= (ssize_t)n + 16)
		memcpy(ret, a + k - 4, 4);
	return a[3] & 0xf;
}

static int dial_any(int family, const char *addr, uint16_t port)
{
	struct sockaddr_storage ss = {.ss_family = (sa_family_t)family};
	struct timeval tv = {.tv_sec = 5};
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (family == AF_INET) {
		((struct sockaddr_in *)&ss)->sin_port = htons(port);
		inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr);
	} else {
		((struct sockaddr_in6 *)&ss)->sin6_port = htons(port);
		inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr);
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&ss, sizeof(ss)) < 0)
		moat_tap_fail(__FILE__, __LINE__, "connect %s: %m", addr);
	return fd;
}

TEST(proxy_netns_dns_stub_and_transparent_capture)
{
	char buf[4096], ev[16384];
	uint32_t a = 0;
	struct in_addr in;
	int fd, r;

	enter_netns();
	r = moat_netns_setup(NULL, &lfds);
	if (r < 0)
		moat_tap_fail(__FILE__, __LINE__, "moat_netns_setup: %s", strerror(-r));
	start_upstream(8080);
	start_proxy(0, true);

	/* DNS: an allowed name gets a synthetic address, others NXDOMAIN */
	ASSERT_EQ(dns_query("a.test", 1, &a), 0);
	in.s_addr = a;
	ASSERT_STREQ(inet_ntoa(in), "198.18.128.1");
	ASSERT_EQ(dns_query("a.test", 28, &a), 0);
	ASSERT_EQ(a, 0);
	ASSERT_EQ(dns_query("secret123.exfil.test", 1, &a), 3);

	/* DNS over TCP (RFC 1035 framing) gives the same answer */
	{
		static const uint8_t q[] = {0, 24, 0x56, 0x78, 1,   0,	 0,   1,   0, 0, 0, 0, 0,
					    0, 1,  'a',	 4,    't', 'e', 's', 't', 0, 0, 1, 0, 1};
		uint8_t ans[512];
		size_t got = 0;
		ssize_t k;
		int t = dial_any(AF_INET, MOAT_NETNS_DNS4, 53);
		send_all(t, (const char *)q, sizeof(q));
		while (got < 2 || got < 2u + (size_t)(ans[0] << 8 | ans[1])) {
			k = recv(t, ans + got, sizeof(ans) - got, 0);
			if (k <= 0)
				moat_tap_fail(__FILE__, __LINE__, "DNS over TCP: short answer");
			got += (size_t)k;
		}
		close(t);
		ASSERT_EQ(ans[2], 0x56);
		ASSERT_EQ(ans[5] & 0xf, 0);
		ASSERT_EQ(ans[got - 4], 198);
		ASSERT_EQ(ans[got - 1], 1);
	}

	/* a plain socket to the synthetic address reaches a.test */
	fd = dial_any(AF_INET, "198.18.128.1", 8080);
	sends(fd, "GET /tp HTTP/1.1\r\nHost: a.test:8080\r\n\r\n");
	ASSERT_CONTAINS(read_response(fd, buf, sizeof(buf)), "path=/tp");
	close(fd);

	/* a hard-coded address with an allowed Host: reset, never dialed */
	fd = dial_any(AF_INET, "203.0.113.9", 8080);
	sends(fd, "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n");
	ASSERT_TRUE(recv(fd, buf, sizeof(buf), 0) <= 0);
	close(fd);
	fd = dial_any(AF_INET6, "2001:db8::9", 8080);
	sends(fd, "GET / HTTP/1.1\r\nHost: other.test\r\n\r\n");
	ASSERT_TRUE(recv(fd, buf, sizeof(buf), 0) <= 0);
	close(fd);

	/* UDP elsewhere is dropped at once and recorded */
	{
		struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(53)};
		_cleanup_close_ int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		inet_pton(AF_INET, "203.0.113.9", &sa.sin_addr);
		ASSERT_ERRNO(sendto(u, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa)), EPERM);
	}
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(ev, "\"proto\":\"dns\",\"name\":\"a.test\"");
	ASSERT_CONTAINS(ev,
			"\"raw\":\"secret123.exfil.test\",\"method\":\"A\",\"decision\":\"deny\"");
	ASSERT_CONTAINS(ev, "\"proto\":\"transparent\",\"name\":\"a.test\"");
	ASSERT_CONTAINS(ev, "original-destination-mismatch");
	ASSERT_CONTAINS(ev, "\"proto\":\"udp\",\"addr\":\"203.0.113.9\",\"port\":53");
}

TEST(proxy_http_chunked_body_then_host_switch)
{
	char req[1024], buf[8192], ev[8192];
	size_t len = 0;
	ssize_t k;
	setup(0);
	_cleanup_close_ int fd = dial("127.0.0.1", http_port);
	/* the chunked body is framed, so the request after it is seen (and,
	 * naming another host, refused) instead of being passed on raw */
	snprintf(req, sizeof(req),
		 "POST http://a.test:%u/p HTTP/1.1\r\nHost: a.test:%u\r\n"
		 "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n"
		 "GET http://b.test:%u/q HTTP/1.1\r\nHost: b.test:%u\r\n\r\n",
		 up_port, up_port, up_port, up_port);
	sends(fd, req);
	while (len + 1 < sizeof(buf) && (k = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
		len += (size_t)k;
	buf[len] = 0;
	ASSERT_CONTAINS(buf, "path=/p");
	ASSERT_CONTAINS(buf, "host-switch");
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(ev, "\"decision\":\"deny\",\"reason\":\"host-switch\"");
	ASSERT_CONTAINS(ev, "\"method\":\"GET\",\"decision\":\"deny\"");
}

/* A minimal TLS ClientHello naming @host (NULL: no server_name at all; with
 * @ech an encrypted_client_hello extension too). Returns its length. */
static size_t client_hello_x(const char *host, bool ech, uint8_t *out)
{
	size_t hl = host ? strlen(host) : 0, n = 0, body, ext;
	uint8_t b[512];

	b[n++] = 3, b[n++] = 3;
	memset(b + n, 0x42, 32);
	n += 32;
	b[n++] = 0; /* session id */
	b[n++] = 0, b[n++] = 2, b[n++] = 0x13, b[n++] = 0x01; /* cipher suites */
	b[n++] = 1, b[n++] = 0; /* compression */
	ext = (host ? 2 + 2 + 2 + 1 + 2 + hl : 0) + 8 + (ech ? 8 : 0);
	b[n++] = (uint8_t)(ext >> 8), b[n++] = (uint8_t)ext;
	if (host) {
		b[n++] = 0, b[n++] = 0; /* server_name */
		b[n++] = (uint8_t)((hl + 5) >> 8), b[n++] = (uint8_t)(hl + 5);
		b[n++] = (uint8_t)((hl + 3) >> 8), b[n++] = (uint8_t)(hl + 3);
		b[n++] = 0;
		b[n++] = (uint8_t)(hl >> 8), b[n++] = (uint8_t)hl;
		memcpy(b + n, host, hl);
		n += hl;
	}
	/* supported_groups: x25519 */
	memcpy(b + n, "\x00\x0a\x00\x04\x00\x02\x00\x1d", 8);
	n += 8;
	if (ech) {
		memcpy(b + n, "\xfe\x0d\x00\x04\x00\x01\x02\x03", 8);
		n += 8;
	}
	body = n;
	out[0] = 0x16, out[1] = 3, out[2] = 1;
	out[3] = (uint8_t)((body + 4) >> 8), out[4] = (uint8_t)(body + 4);
	out[5] = 1, out[6] = 0, out[7] = (uint8_t)(body >> 8), out[8] = (uint8_t)body;
	memcpy(out + 9, b, body);
	return body + 9;
}

static size_t client_hello(const char *host, uint8_t *out)
{
	return client_hello_x(host, false, out);
}

TEST(proxy_connect_sni_must_match)
{
	char req[256], buf[4096], ev[8192];
	uint8_t hello[600];
	size_t n;
	setup(0);
	/* matching SNI: the ClientHello reaches the upstream (which answers
	 * nonsense to it: only the tunnel matters here) */
	{
		_cleanup_close_ int fd = dial("127.0.0.1", http_port);
		snprintf(req, sizeof(req), "CONNECT a.test:%u HTTP/1.1\r\nHost: a.test:%u\r\n\r\n",
			 up_port, up_port);
		sends(fd, req);
		ASSERT_EQ(recv(fd, buf, strlen(MOAT_HTTP1_CONNECT_OK), MSG_WAITALL),
			  (ssize_t)strlen(MOAT_HTTP1_CONNECT_OK));
		n = client_hello("a.test", hello);
		send_all(fd, (char *)hello, n);
		sends(fd, "\r\n\r\n");
		ASSERT_TRUE(recv(fd, buf, sizeof(buf), 0) > 0);
		/* end it cleanly: the proxy passes the EOF on and closes */
		ASSERT_EQ(shutdown(fd, SHUT_WR), 0);
		errno = 0;
		ssize_t k;
		while ((k = recv(fd, buf, sizeof(buf), 0)) > 0)
			;
		if (k < 0)
			moat_tap_fail(__FILE__, __LINE__, "no EOF from the tunnel: %m");
	}
	/* another name in the SNI: the tunnel is closed before a byte goes up */
	{
		_cleanup_close_ int fd = dial("127.0.0.1", http_port);
		sends(fd, req);
		ASSERT_EQ(recv(fd, buf, strlen(MOAT_HTTP1_CONNECT_OK), MSG_WAITALL),
			  (ssize_t)strlen(MOAT_HTTP1_CONNECT_OK));
		n = client_hello("evil.example", hello);
		send_all(fd, (char *)hello, n);
		ASSERT_TRUE(recv(fd, buf, sizeof(buf), 0) <= 0);
	}
	/* and the proxy lives on (a refusal after the 200 freed the connection
	 * in the middle of its handler once: keep this check) */
	{
		_cleanup_close_ int fd = dial("127.0.0.1", http_port);
		sends(fd, req);
		ASSERT_EQ(recv(fd, buf, strlen(MOAT_HTTP1_CONNECT_OK), MSG_WAITALL),
			  (ssize_t)strlen(MOAT_HTTP1_CONNECT_OK));
		sends(fd, "GET /alive HTTP/1.1\r\nHost: a.test\r\n\r\n");
		ASSERT_CONTAINS(read_response(fd, buf, sizeof(buf)), "path=/alive");
	}
	/* the allowed tunnel's event comes once the proxy has closed it */
	{
		size_t len = 0;
		ev[0] = 0;
		for (int i = 0; i < 30 && !strstr(ev, "\"sni\":\"a.test\""); i++) {
			ssize_t k;
			usleep(100 * 1000);
			while (len + 1 < sizeof(ev) &&
			       (k = read(ev_rd, ev + len, sizeof(ev) - 1 - len)) > 0)
				len += (size_t)k;
			ev[len] = 0;
		}
	}
	ASSERT_CONTAINS(
		ev, "\"sni\":\"evil.example\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
	ASSERT_CONTAINS(ev, "\"sni\":\"a.test\",\"decision\":\"allow\"");
}

/* ---- a connection allowed by name proves the name before it is dialled ------ */

/* The same ClientHello in records of at most @frag bytes. */
static size_t rerecord(const uint8_t *in, size_t n, size_t frag, uint8_t *out)
{
	size_t o = 0;
	for (size_t off = 5; off < n; off += frag) {
		size_t k = MIN(frag, n - off);
		out[o++] = 0x16, out[o++] = 3, out[o++] = 1;
		out[o++] = (uint8_t)(k >> 8), out[o++] = (uint8_t)k;
		memcpy(out + o, in + off, k);
		o += k;
	}
	return o;
}

/* A tunnel to @host:@port by CONNECT or SOCKS5, once the proxy said yes. */
static int tunnel(bool socks, const char *host, uint16_t port)
{
	char buf[512];
	int fd = dial("127.0.0.1", socks ? socks_port : http_port);

	if (!socks) {
		size_t ok = strlen(MOAT_HTTP1_CONNECT_OK);
		snprintf(buf, sizeof(buf), "CONNECT %s:%u HTTP/1.1\r\nHost: %s:%u\r\n\r\n", host,
			 port, host, port);
		sends(fd, buf);
		if (recv(fd, buf, ok, MSG_WAITALL) != (ssize_t)ok ||
		    memcmp(buf, "HTTP/1.1 200", 12))
			moat_tap_fail(__FILE__, __LINE__, "CONNECT %s refused", host);
	} else {
		uint8_t req[300], rep[16];
		struct in_addr a;
		size_t n = 0;
		send_all(fd, "\x05\x01\x00", 3);
		ASSERT_EQ(recv(fd, rep, 2, MSG_WAITALL), 2);
		req[n++] = 5, req[n++] = 1, req[n++] = 0;
		if (inet_pton(AF_INET, host, &a) == 1) {
			req[n++] = 1;
			memcpy(req + n, &a, 4);
			n += 4;
		} else {
			req[n++] = 3, req[n++] = (uint8_t)strlen(host);
			memcpy(req + n, host, strlen(host));
			n += strlen(host);
		}
		req[n++] = (uint8_t)(port >> 8), req[n++] = (uint8_t)port;
		send_all(fd, (char *)req, n);
		ASSERT_EQ(recv(fd, rep, 10, MSG_WAITALL), 10);
		if (rep[1] != 0)
			moat_tap_fail(__FILE__, __LINE__, "SOCKS %s refused: %u", host, rep[1]);
	}
	return fd;
}

/* Send @b (and an empty line: the HTTP upstream then answers something) in
 * pieces of @step bytes; true if anything came back through the tunnel. */
static bool through(int fd, const void *b, size_t n, size_t step)
{
	static uint8_t all[20000];
	char buf[512];
	int one = 1;

	memcpy(all, b, n);
	memcpy(all + n, "\r\n\r\n", 4);
	n += 4;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	for (size_t off = 0; off < n; off += step) {
		if (send(fd, all + off, MIN(step, n - off), MSG_NOSIGNAL) < 0)
			return false;
		if (step < n)
			usleep(1000);
	}
	return recv(fd, buf, sizeof(buf), 0) > 0;
}

static char *wait_events(char *ev, size_t cap, const char *want)
{
	size_t len = 0;
	ev[0] = 0;
	for (int i = 0; i < 30 && !strstr(ev, want); i++) {
		ssize_t k;
		usleep(100 * 1000);
		while (len + 1 < cap && (k = read(ev_rd, ev + len, cap - 1 - len)) > 0)
			len += (size_t)k;
		ev[len] = 0;
	}
	return ev;
}

TEST(proxy_name_rule_needs_its_sni_before_dialling)
{
	static char ev[65536];
	uint8_t h[600], f[2000];
	size_t n;
	unsigned want = 0;

	setup(0);
	for (int socks = 0; socks <= 1; socks++) {
		int fd;
		/* no SNI */
		fd = tunnel(socks, "a.test", up_port);
		n = client_hello(NULL, h);
		ASSERT_TRUE(!through(fd, h, n, n + 4));
		close(fd);
		/* another name: also one allowed at the same address */
		static const char *const other[] = {"b.test", "evil.example",
						    "a.test.evil.example"};
		for (size_t i = 0; i < ELEMENTSOF(other); i++) {
			fd = tunnel(socks, "a.test", up_port);
			n = client_hello(other[i], h);
			ASSERT_TRUE(!through(fd, h, n, n + 4));
			close(fd);
		}
		/* the same, in 7-byte records, one byte per TCP segment */
		fd = tunnel(socks, "a.test", up_port);
		n = rerecord(h, client_hello("evil.example", h), 7, f);
		ASSERT_TRUE(!through(fd, f, n, 1));
		close(fd);
		/* an ECH extension behind the right outer name */
		fd = tunnel(socks, "a.test", up_port);
		n = client_hello_x("a.test", true, h);
		ASSERT_TRUE(!through(fd, h, n, n + 4));
		close(fd);
		/* not TLS and not HTTP: an SSH client, an SSLv2-style hello */
		fd = tunnel(socks, "a.test", up_port);
		ASSERT_TRUE(!through(fd, "SSH-2.0-OpenSSH_9.2", 19, 100));
		close(fd);
		fd = tunnel(socks, "a.test", up_port);
		ASSERT_TRUE(!through(fd, "\x80\x2e\x01\x03\x01\x00\x15\x00\x00\x00\x10", 11, 100));
		close(fd);
		/* plain HTTP for another host */
		fd = tunnel(socks, "a.test", up_port);
		ASSERT_TRUE(!through(fd, "GET / HTTP/1.1\r\nHost: b.test", 28, 100));
		close(fd);
		/* none of these reached the upstream at all */
		usleep(100 * 1000);
		ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), want);
		/* positive controls: the right name, also in tiny records and in
		 * another spelling, reaches it */
		fd = tunnel(socks, "a.test", up_port);
		n = rerecord(h, client_hello("a.test", h), 7, f);
		ASSERT_TRUE(through(fd, f, n, 1));
		close(fd);
		fd = tunnel(socks, "a.test", up_port);
		n = client_hello("A.Test.", h);
		ASSERT_TRUE(through(fd, h, n, n + 4));
		close(fd);
		want += 2;
		usleep(100 * 1000);
		ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), want);
	}
	wait_events(ev, sizeof(ev), "\"proto\":\"socks\",\"name\":\"a.test\",\"raw\":\"a.test\"");
	ASSERT_CONTAINS(ev, "\"decision\":\"deny\",\"reason\":\"no-sni\"");
	ASSERT_CONTAINS(ev, "\"sni\":\"b.test\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
	ASSERT_CONTAINS(
		ev, "\"sni\":\"evil.example\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
	ASSERT_CONTAINS(ev, "\"reason\":\"tls-ech\"");
	ASSERT_CONTAINS(ev, "\"reason\":\"not-tls-or-http\"");
	ASSERT_CONTAINS(ev, "\"reason\":\"host-mismatch\"");
	ASSERT_CONTAINS(ev, "\"proto\":\"connect\"");
}

TEST(proxy_address_rule_allows_tls_without_sni)
{
	uint8_t h[600];
	size_t n;
	int fd;

	with_cidr = true;
	setup(0);
	for (int socks = 0; socks <= 1; socks++) {
		unsigned before = __atomic_load_n(up_accepts, __ATOMIC_SEQ_CST);
		/* by name, without SNI: refused, never dialled */
		fd = tunnel(socks, "a.test", up_port);
		n = client_hello(NULL, h);
		ASSERT_TRUE(!through(fd, h, n, n + 4));
		close(fd);
		usleep(100 * 1000);
		ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), before);
		/* by the address a CIDR rule allows: goes through */
		fd = tunnel(socks, UP_ADDR, up_port);
		ASSERT_TRUE(through(fd, h, n, n + 4));
		close(fd);
		ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), before + 1);
	}
}

TEST(proxy_netns_transparent_sni_rule)
{
	static char ev[65536];
	uint8_t h[600];
	uint32_t a = 0;
	size_t n;
	int fd, r;

	enter_netns();
	r = moat_netns_setup(NULL, &lfds);
	if (r < 0)
		moat_tap_fail(__FILE__, __LINE__, "moat_netns_setup: %s", strerror(-r));
	start_upstream(8080);
	start_proxy(0, true);
	ASSERT_EQ(dns_query("a.test", 1, &a), 0); /* 198.18.128.1 = a.test */

	/* the synthetic address of a.test: no SNI, another (allowed) name */
	fd = dial_any(AF_INET, "198.18.128.1", 8080);
	n = client_hello(NULL, h);
	ASSERT_TRUE(!through(fd, h, n, n + 4));
	close(fd);
	fd = dial_any(AF_INET, "198.18.128.1", 8080);
	n = client_hello("b.test", h);
	ASSERT_TRUE(!through(fd, h, n, n + 4));
	close(fd);
	/* a hard-coded address, no SNI: no name, no address rule */
	fd = dial_any(AF_INET, "203.0.113.9", 8080);
	n = client_hello(NULL, h);
	ASSERT_TRUE(!through(fd, h, n, n + 4));
	close(fd);
	usleep(100 * 1000);
	ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), 0);
	/* positive control: the right SNI reaches the upstream */
	fd = dial_any(AF_INET, "198.18.128.1", 8080);
	n = client_hello("a.test", h);
	ASSERT_TRUE(through(fd, h, n, n + 4));
	close(fd);
	ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), 1);
	wait_events(ev, sizeof(ev), "\"sni\":\"a.test\",\"decision\":\"allow\"");
	ASSERT_CONTAINS(ev, "\"proto\":\"transparent\",\"name\":\"a.test\"");
	ASSERT_CONTAINS(ev, "\"decision\":\"deny\",\"reason\":\"no-sni\"");
	ASSERT_CONTAINS(ev, "\"sni\":\"b.test\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
}

TEST(proxy_tunnel_pipelined_hello_and_plain_http_requests)
{
	char req[600], buf[8192], ev[16384];
	uint8_t h[600];
	size_t n, k;
	setup(0);
	/* CONNECT and a ClientHello in one segment: still judged before dialling */
	snprintf(req, sizeof(req), "CONNECT a.test:%u HTTP/1.1\r\nHost: a.test:%u\r\n\r\n", up_port,
		 up_port);
	k = strlen(req);
	{
		_cleanup_close_ int fd = dial("127.0.0.1", http_port);
		memcpy(req + k, h, n = client_hello("evil.example", h));
		send_all(fd, req, k + n);
		while (recv(fd, buf, sizeof(buf), 0) > 0)
			;
		usleep(100 * 1000);
		ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), 0);
	}
	{
		/* positive control: the right name in the same shape */
		_cleanup_close_ int fd = dial("127.0.0.1", http_port);
		memcpy(req + k, h, n = client_hello("a.test", h));
		memcpy(req + k + n, "\r\n\r\n", 4);
		send_all(fd, req, k + n + 4);
		ASSERT_TRUE(recv(fd, buf, sizeof(buf), 0) > 0);
		/* The 200 is sent before dialling: wait (bounded) for the accept. */
		for (int i = 0; i < 200 && __atomic_load_n(up_accepts, __ATOMIC_SEQ_CST) == 0; i++)
			usleep(10 * 1000);
		ASSERT_EQ(__atomic_load_n(up_accepts, __ATOMIC_SEQ_CST), 1);
	}
	/* plain HTTP in a tunnel: every request is parsed; one for another
	 * host after an allowed one is refused, never sent */
	{
		_cleanup_close_ int fd = tunnel(false, "a.test", up_port);
		size_t len = 0;
		ssize_t r;
		sends(fd,
		      "GET /one HTTP/1.1\r\nHost: a.test\r\n\r\n"
		      "GET /two HTTP/1.1\r\nHost: b.test\r\n\r\n");
		while (len + 1 < sizeof(buf) &&
		       (r = recv(fd, buf + len, sizeof(buf) - 1 - len, 0)) > 0)
			len += (size_t)r;
		buf[len] = 0;
		ASSERT_CONTAINS(buf, "path=/one");
		ASSERT_CONTAINS(buf, "host-switch");
		ASSERT_TRUE(!strstr(buf, "path=/two"));
	}
	events(ev, sizeof(ev));
	ASSERT_CONTAINS(
		ev, "\"sni\":\"evil.example\",\"decision\":\"deny\",\"reason\":\"sni-mismatch\"");
	ASSERT_CONTAINS(ev, "\"reason\":\"http-in-tunnel\"");
	ASSERT_CONTAINS(ev, "\"decision\":\"deny\",\"reason\":\"host-switch\"");
}
