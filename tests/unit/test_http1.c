/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "../../fuzz/http_paths.h"
#include "harness/tap.h"
#include "http_cases.h"
#include "proxy/http1.h"
#include "shared/macro.h"

static struct moat_http1_request req;

static int parse(const char *s)
{
	return moat_http1_parse_request(s, strlen(s), NULL, &req);
}

static void expect_err(const char *s, int err, int line)
{
	int r = parse(s);
	if (r != -err)
		moat_tap_fail(__FILE__, line, "parse(%s) = %d (%s), want -%d (%s)", s, r,
			      moat_http1_strerror(r), err, moat_http1_strerror(err));
}
#define EXPECT_ERR(s, e) expect_err(s, e, __LINE__)

TEST(http1_absolute_form)
{
	const char *s = "GET http://Example.COM/a/b?c=d HTTP/1.1\r\n"
			"Host: example.com\r\n"
			"User-Agent: t\r\n"
			"Accept:   */*  \r\n"
			"\r\nBODY";
	int r = parse(s);
	ASSERT_EQ(r, (int)strlen(s) - 4);
	ASSERT_TRUE(moat_http1_slice_eq(req.method, "GET"));
	ASSERT_EQ(req.form, MOAT_HTTP1_FORM_ABSOLUTE);
	ASSERT_EQ(req.version_minor, 1);
	ASSERT_TRUE(req.has_host);
	ASSERT_STREQ(req.host, "example.com");
	ASSERT_EQ(req.host_kind, MOAT_HOST_NAME);
	ASSERT_EQ(req.port, 80);
	ASSERT_TRUE(!req.port_explicit);
	char buf[64];
	ASSERT_STREQ(moat_http1_slice_copy(req.path, buf, sizeof(buf)), "/a/b?c=d");
	ASSERT_STREQ(moat_http1_slice_copy(req.authority, buf, sizeof(buf)), "Example.COM");
	ASSERT_EQ(req.n_headers, 3);
	ASSERT_EQ(moat_http1_find_header(&req, "accept", 0), 2);
	ASSERT_STREQ(moat_http1_slice_copy(req.headers[2].value, buf, sizeof(buf)), "*/*");
	ASSERT_EQ(moat_http1_find_header(&req, "cookie", 0), -ENOENT);
	ASSERT_EQ(moat_http1_find_header(&req, "host", 1), -ENOENT);
	ASSERT_EQ(req.content_length, -1);
	ASSERT_TRUE(!req.chunked);
	ASSERT_TRUE(req.keep_alive);

	ASSERT_GE(parse("GET http://example.com:8080 HTTP/1.1\r\nHost: example.com:8080\r\n\r\n"),
		  1);
	ASSERT_EQ(req.port, 8080);
	ASSERT_EQ(req.path.len, 0);
	ASSERT_GE(parse("GET HTTP://example.com?x HTTP/1.0\r\n\r\n"), 1);
	ASSERT_STREQ(moat_http1_slice_copy(req.path, buf, sizeof(buf)), "?x");
	ASSERT_TRUE(!req.keep_alive);
	ASSERT_GE(parse("GET http://[::1]:8080/ HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n"), 1);
	ASSERT_EQ(req.host_kind, MOAT_HOST_IPV6);
	ASSERT_STREQ(req.host, "::1");
	ASSERT_GE(parse("GET http://127.1/ HTTP/1.1\r\n\r\n"), 1);
	ASSERT_EQ(req.host_kind, MOAT_HOST_IPV4);
	ASSERT_TRUE(req.host_loose_ipv4);
	ASSERT_STREQ(req.host, "127.0.0.1");
	ASSERT_GE(parse("GET http://2130706433/ HTTP/1.1\r\n\r\n"), 1);
	ASSERT_STREQ(req.host, "127.0.0.1");
	ASSERT_GE(parse("GET http://LOCALHOST./ HTTP/1.1\r\n\r\n"), 1);
	ASSERT_STREQ(req.host, "localhost");
}

TEST(http1_connect)
{
	ASSERT_GE(
		parse("CONNECT api.example.com:443 HTTP/1.1\r\nHost: api.example.com:443\r\n\r\n"),
		1);
	ASSERT_TRUE(req.is_connect);
	ASSERT_EQ(req.form, MOAT_HTTP1_FORM_AUTHORITY);
	ASSERT_STREQ(req.host, "api.example.com");
	ASSERT_EQ(req.port, 443);
	ASSERT_GE(parse("CONNECT [2606:50c0:8000::153]:443 HTTP/1.1\r\n\r\n"), 1);
	ASSERT_EQ(req.host_kind, MOAT_HOST_IPV6);
	ASSERT_GE(parse("CONNECT 140.82.112.3:443 HTTP/1.1\r\n\r\n"), 1);
	ASSERT_EQ(req.host_kind, MOAT_HOST_IPV4);
	ASSERT_GE(parse("CONNECT a.example:443 HTTP/1.1\r\nHost: a.example\r\n\r\n"), 1);

	EXPECT_ERR("CONNECT api.example.com HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_MISSING);
	EXPECT_ERR("CONNECT api.example.com: HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("CONNECT github.com:0 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("CONNECT github.com:65536 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("CONNECT github.com:443abc HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("CONNECT github.com:0443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("CONNECT github.com:-1 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("CONNECT user:pw@github.com:443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_USERINFO);
	EXPECT_ERR("CONNECT /x HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_FORM);
	EXPECT_ERR("CONNECT http://a.com:443/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_FORM);
	EXPECT_ERR("CONNECT ::1:443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("CONNECT [::1]x:443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("CONNECT [fe80::1%25lo]:443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("CONNECT :443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("CONNECT a.com:443 HTTP/1.1\r\nHost: b.com:443\r\n\r\n",
		   MOAT_HTTP1_E_HOST_MISMATCH);
	EXPECT_ERR("CONNECT a.com:443 HTTP/1.1\r\nHost: a.com:80\r\n\r\n",
		   MOAT_HTTP1_E_HOST_MISMATCH);
	EXPECT_ERR("CONNECT a.com:443 HTTP/1.1\r\nContent-Length: 5\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("CONNECT a.com:443 HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("connect a.com:443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_FORM);
	EXPECT_ERR("GET a.com:443 HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_FORM);
}

TEST(http1_origin_form)
{
	ASSERT_GE(parse("GET /x HTTP/1.1\r\nHost: Allowed.Test:8080\r\n\r\n"), 1);
	ASSERT_EQ(req.form, MOAT_HTTP1_FORM_ORIGIN);
	ASSERT_TRUE(req.has_host);
	ASSERT_STREQ(req.host, "allowed.test");
	ASSERT_EQ(req.port, 8080);
	ASSERT_TRUE(req.port_explicit);
	ASSERT_GE(parse("GET / HTTP/1.0\r\n\r\n"), 1);
	ASSERT_TRUE(!req.has_host);
	EXPECT_ERR("GET / HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_MISSING);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost:\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n",
		   MOAT_HTTP1_E_HOST_DUPLICATE);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a.com\r\nhOsT: b.com\r\n\r\n",
		   MOAT_HTTP1_E_HOST_DUPLICATE);
	/* RT-062 (c) */
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: api.allowed.test:x@evil.example\r\n\r\n",
		   MOAT_HTTP1_E_USERINFO);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a.com, b.com\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a.com b.com\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a.com/x\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET /#frag HTTP/1.1\r\nHost: a.com\r\n\r\n", MOAT_HTTP1_E_TARGET);
	EXPECT_ERR("OPTIONS * HTTP/1.1\r\nHost: a.com\r\n\r\n", MOAT_HTTP1_E_FORM);
}

TEST(http1_host_vs_absolute)
{
	EXPECT_ERR("GET http://allowed.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n",
		   MOAT_HTTP1_E_HOST_MISMATCH);
	EXPECT_ERR("GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test:8080\r\n\r\n",
		   MOAT_HTTP1_E_HOST_MISMATCH);
	/* the same address in another spelling is the same authority */
	ASSERT_GE(parse("GET http://127.0.0.1/ HTTP/1.1\r\nHost: 127.1\r\n\r\n"), 1);
	ASSERT_GE(parse("GET http://A.com:80/ HTTP/1.1\r\nHost: a.COM.\r\n\r\n"), 1);
	EXPECT_ERR("GET http://a.com/ HTTP/1.1\r\nHost: a.com\r\nHost: a.com\r\n\r\n",
		   MOAT_HTTP1_E_HOST_DUPLICATE);
	EXPECT_ERR("GET http://a.com/ HTTP/1.1\r\nHost: [::1]\r\n\r\n", MOAT_HTTP1_E_HOST_MISMATCH);
}

TEST(http1_request_line)
{
	EXPECT_ERR("GET  / HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_REQUEST_LINE);
	EXPECT_ERR("GET / HTTP/1.1 \r\n\r\n", MOAT_HTTP1_E_REQUEST_LINE);
	EXPECT_ERR(" GET / HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_REQUEST_LINE);
	EXPECT_ERR("GET /\r\n\r\n", MOAT_HTTP1_E_REQUEST_LINE);
	EXPECT_ERR("GET / HTTP/2.0\r\n\r\n", MOAT_HTTP1_E_VERSION);
	EXPECT_ERR("GET / HTTP/1.2\r\n\r\n", MOAT_HTTP1_E_VERSION);
	EXPECT_ERR("GET / HTTP/0.9\r\n\r\n", MOAT_HTTP1_E_VERSION);
	EXPECT_ERR("GET / http/1.1\r\n\r\n", MOAT_HTTP1_E_REQUEST_LINE);
	EXPECT_ERR("G(T / HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_METHOD);
	EXPECT_ERR("GET\t/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_METHOD);
	EXPECT_ERR("GET https://a.com/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_SCHEME);
	EXPECT_ERR("GET ftp://a.com/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_SCHEME);
	EXPECT_ERR("GET http:///x HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET http://u@a.com/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_USERINFO);
	EXPECT_ERR("GET http://evil.com\\@good.com/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_USERINFO);
	EXPECT_ERR("GET http://good.com\\.evil.com/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET http://%61.com/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET http://a.com:99999/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_PORT_INVALID);
	EXPECT_ERR("GET http://256.0.0.1/ HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_HOST_INVALID);
	EXPECT_ERR("GET /\x80 HTTP/1.1\r\nHost: a\r\n\r\n", MOAT_HTTP1_E_TARGET);
	EXPECT_ERR("\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n", MOAT_HTTP1_E_REQUEST_LINE);
	/* one leading empty line is tolerated */
	ASSERT_GE(parse("\r\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"), 1);
	ASSERT_TRUE(moat_http1_slice_eq(req.method, "GET"));
}

TEST(http1_smuggling)
{
	/* obs-fold */
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\nX: 1\r\n 2\r\n\r\n", MOAT_HTTP1_E_OBS_FOLD);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\n\tX: 1\r\n\r\n", MOAT_HTTP1_E_OBS_FOLD);
	/* bare LF / CR */
	EXPECT_ERR("GET / HTTP/1.1\nHost: a\n\n", MOAT_HTTP1_E_LINE_ENDING);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\n\r\n", MOAT_HTTP1_E_LINE_ENDING);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", MOAT_HTTP1_E_LINE_ENDING);
	EXPECT_ERR("\nGET / HTTP/1.1\r\n\r\n", MOAT_HTTP1_E_LINE_ENDING);
	/* NUL and CTL */
	ASSERT_EQ(moat_http1_parse_request("GET / HTTP/1.1\r\nHost: a\0b\r\n\r\n", 28, NULL, &req),
		  -MOAT_HTTP1_E_NUL);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\x01\r\n\r\n", MOAT_HTTP1_E_NUL);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\x7f\r\n\r\n", MOAT_HTTP1_E_NUL);
	ASSERT_GE(parse("GET / HTTP/1.1\r\nHost: a\r\nX: a\tb\r\n\r\n"), 1);
	/* names */
	EXPECT_ERR("GET / HTTP/1.1\r\nHost : a\r\n\r\n", MOAT_HTTP1_E_SPACE_BEFORE_COLON);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\nContent-Length\t: 5\r\n\r\n",
		   MOAT_HTTP1_E_SPACE_BEFORE_COLON);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\nX Y: 1\r\n\r\n", MOAT_HTTP1_E_HEADER_NAME);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\n: 1\r\n\r\n", MOAT_HTTP1_E_HEADER_NAME);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\nX(: 1\r\n\r\n", MOAT_HTTP1_E_HEADER_NAME);
	EXPECT_ERR("GET / HTTP/1.1\r\nHost: a\r\nnocolon\r\n\r\n", MOAT_HTTP1_E_HEADER_VALUE);
	/* CGI-style lookalikes of framing headers */
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer_Encoding: chunked\r\n\r\n",
		   MOAT_HTTP1_E_HEADER_NAME);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\ncontent_length: 5\r\n\r\n",
		   MOAT_HTTP1_E_HEADER_NAME);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent_Length: 5\r\n\r\n",
		   MOAT_HTTP1_E_HEADER_NAME);
	ASSERT_GE(parse("GET / HTTP/1.1\r\nHost: a\r\nX_Custom_Header: b\r\n\r\n"), 1);
	/* Content-Length */
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	/* One Content-Length field, even with identical values; no leading zero. */
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 05\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 00\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	ASSERT_GE(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"), 1);
	ASSERT_EQ(req.content_length, 0);
	ASSERT_GE(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 50\r\n\r\n"), 1);
	ASSERT_EQ(req.content_length, 50);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5, 5\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x10\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length:\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1234567890123456789\r\n\r\n",
		   MOAT_HTTP1_E_CONTENT_LENGTH);
	ASSERT_GE(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 123456789012345678\r\n\r\n"),
		  1);
	/* Transfer-Encoding */
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nTransfer-Encoding: "
		   "chunked\r\n\r\n",
		   MOAT_HTTP1_E_CL_AND_TE);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\nContent-Length: "
		   "5\r\n\r\n",
		   MOAT_HTTP1_E_CL_AND_TE);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n",
		   MOAT_HTTP1_E_TRANSFER_ENCODING);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked, identity\r\n\r\n",
		   MOAT_HTTP1_E_TRANSFER_ENCODING);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: xchunked\r\n\r\n",
		   MOAT_HTTP1_E_TRANSFER_ENCODING);
	EXPECT_ERR("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
		   "Transfer-Encoding: chunked\r\n\r\n",
		   MOAT_HTTP1_E_TRANSFER_ENCODING);
	EXPECT_ERR("POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n",
		   MOAT_HTTP1_E_TRANSFER_ENCODING);
	ASSERT_GE(parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: Chunked\r\n\r\n"), 1);
	ASSERT_TRUE(req.chunked);
	ASSERT_EQ(moat_http1_err_status(-MOAT_HTTP1_E_TRANSFER_ENCODING), 501);
}

TEST(http1_incremental)
{
	const char *s = "POST http://a.example/x HTTP/1.1\r\nHost: a.example\r\nContent-Length: "
			"3\r\nConnection: close\r\n\r\nabc";
	size_t n = strlen(s) - 3;
	for (size_t i = 0; i < n; i++) {
		int r = moat_http1_parse_request(s, i, NULL, &req);
		if (r != 0)
			moat_tap_fail(__FILE__, __LINE__, "prefix %zu: %d", i, r);
	}
	ASSERT_EQ(moat_http1_parse_request(s, n, NULL, &req), (int)n);
	ASSERT_EQ(req.content_length, 3);
	ASSERT_TRUE(!req.keep_alive);
	ASSERT_EQ(moat_http1_parse_request(s, strlen(s), NULL, &req), (int)n);

	/* errors are reported before the head is complete */
	ASSERT_EQ(moat_http1_parse_request("GET / HTTP/1.1\n", 15, NULL, &req),
		  -MOAT_HTTP1_E_LINE_ENDING);
	ASSERT_EQ(moat_http1_parse_request("GET / HTTP/9.9\r\n", 16, NULL, &req),
		  -MOAT_HTTP1_E_VERSION);
	ASSERT_EQ(moat_http1_parse_request("CONNECT a.com HTTP/1.1\r\nX", 25, NULL, &req),
		  -MOAT_HTTP1_E_PORT_MISSING);
	ASSERT_EQ(moat_http1_parse_request("GET / HTTP/1.1\r\nHost: a\r\n x\r\n", 29, NULL, &req),
		  -MOAT_HTTP1_E_OBS_FOLD);
	ASSERT_EQ(moat_http1_parse_request("GET / HTTP/1.1\r", 15, NULL, &req), 0);
	ASSERT_EQ(moat_http1_parse_request("GET / HTTP/1.1\rX", 16, NULL, &req),
		  -MOAT_HTTP1_E_LINE_ENDING);
	ASSERT_EQ(moat_http1_parse_request("", 0, NULL, &req), 0);
	ASSERT_EQ(moat_http1_parse_request("\r", 1, NULL, &req), 0);
}

TEST(http1_limits)
{
	static char big[70000];
	struct moat_http1_limits lim = {.max_head = 1024, .max_headers = 3};
	int n;

	/* 1 MiB request line: refused as soon as the cap is reached */
	memcpy(big, "GET /", 5);
	memset(big + 5, 'a', sizeof(big) - 5);
	ASSERT_EQ(moat_http1_parse_request(big, 32 * 1024 - 1, NULL, &req), 0);
	ASSERT_EQ(moat_http1_parse_request(big, 32 * 1024, NULL, &req),
		  -MOAT_HTTP1_E_HEAD_TOO_LARGE);
	ASSERT_EQ(moat_http1_parse_request(big, sizeof(big), NULL, &req),
		  -MOAT_HTTP1_E_HEAD_TOO_LARGE);
	ASSERT_EQ(moat_http1_parse_request(big, 1024, &lim, &req), -MOAT_HTTP1_E_HEAD_TOO_LARGE);
	ASSERT_EQ(moat_http1_err_status(-MOAT_HTTP1_E_HEAD_TOO_LARGE), 431);

	/* exactly at the cap is fine */
	n = snprintf(big, sizeof(big), "GET /%0*d HTTP/1.1\r\nHost: a\r\n\r\n", 1024 - 27, 0);
	ASSERT_EQ(n, 1024);
	ASSERT_EQ(moat_http1_parse_request(big, (size_t)n, &lim, &req), 1024);

	/* header count */
	const char *four = "GET / HTTP/1.1\r\nHost: a\r\nA: 1\r\nB: 2\r\nC: 3\r\n\r\n";
	ASSERT_EQ(moat_http1_parse_request(four, strlen(four), &lim, &req),
		  -MOAT_HTTP1_E_TOO_MANY_HEADERS);
	lim.max_headers = 4;
	ASSERT_EQ(moat_http1_parse_request(four, strlen(four), &lim, &req), (int)strlen(four));
	/* 10^5 headers: refused at the default 100 */
	size_t off = (size_t)snprintf(big, sizeof(big), "GET / HTTP/1.1\r\nHost: a\r\n");
	for (int i = 0; i < 200; i++)
		off += (size_t)snprintf(big + off, sizeof(big) - off, "X%d: y\r\n", i);
	off += (size_t)snprintf(big + off, sizeof(big) - off, "\r\n");
	ASSERT_EQ(moat_http1_parse_request(big, off, NULL, &req), -MOAT_HTTP1_E_TOO_MANY_HEADERS);
	lim.max_headers = 100000; /* capped at the hard maximum */
	lim.max_head = 0;
	ASSERT_EQ(moat_http1_parse_request(big, off, &lim, &req), -MOAT_HTTP1_E_TOO_MANY_HEADERS);
}

TEST(http1_keepalive)
{
	ASSERT_GE(parse("GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive, Close\r\n\r\n"), 1);
	ASSERT_TRUE(!req.keep_alive);
	ASSERT_GE(parse("GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"), 1);
	ASSERT_TRUE(req.keep_alive);
	ASSERT_GE(parse("GET / HTTP/1.0\r\n\r\n"), 1);
	ASSERT_TRUE(!req.keep_alive);
	ASSERT_GE(parse("PUT / HTTP/1.1\r\nHost: a\r\nExpect: 100-continue\r\nContent-Length: "
			"1\r\n\r\n"),
		  1);
	ASSERT_TRUE(req.expect_continue);
}

TEST(http1_error_response)
{
	char buf[2048];
	int n = moat_http1_build_error(buf, sizeof(buf), 403, "not-allowed",
				       "CONNECT api.example.com:443",
				       "--allow-host api.example.com:443");
	ASSERT_EQ(n, (int)strlen(buf));
	ASSERT_CONTAINS(buf, "HTTP/1.1 403 Forbidden\r\n");
	ASSERT_CONTAINS(buf, "X-Moat-Denied: not-allowed\r\n");
	ASSERT_CONTAINS(buf, "Connection: close\r\n");
	const char *body = strstr(buf, "\r\n\r\n") + 4;
	ASSERT_STREQ(body,
		     "moat: refused CONNECT api.example.com:443 (not-allowed); to allow it: "
		     "--allow-host api.example.com:443\n");
	char cl[64];
	snprintf(cl, sizeof(cl), "Content-Length: %zu\r\n", strlen(body));
	ASSERT_CONTAINS(buf, cl);

	/* header injection through a hostile name is neutralized */
	n = moat_http1_build_error(buf, sizeof(buf), 403, "x\r\nSet-Cookie: a=b",
				   "GET http://e\r\nvil/", NULL);
	ASSERT_GE(n, 1);
	ASSERT_CONTAINS(buf, "X-Moat-Denied: x??Set-Cookie: a=b\r\n");
	ASSERT_TRUE(strstr(buf, "\r\nSet-Cookie") == NULL);
	ASSERT_TRUE(strstr(buf, "to allow it") == NULL);

	ASSERT_EQ(moat_http1_build_error(buf, 50, 403, "a", "b", "c"), -ENOBUFS);
	ASSERT_STREQ(buf, "");
	n = moat_http1_build_error(buf, sizeof(buf), 431, NULL, NULL, NULL);
	ASSERT_CONTAINS(buf, "431 Request Header Fields Too Large");
	/* very long inputs are capped */
	static char longs[5000];
	memset(longs, 'a', sizeof(longs) - 1);
	n = moat_http1_build_error(buf, sizeof(buf), 403, longs, longs, longs);
	ASSERT_GE(n, 1);
	ASSERT_STREQ(moat_http1_strerror(-MOAT_HTTP1_E_OBS_FOLD), "obs-fold");
	ASSERT_STREQ(moat_http1_strerror(9999), "unknown");
}

static int chunk_all(const char *s, uint64_t max, bool *done)
{
	struct moat_http1_chunked c;
	moat_http1_chunked_init(&c, max);
	int r = moat_http1_chunked_feed(&c, s, strlen(s));
	*done = c.done;
	return r;
}

TEST(http1_chunked)
{
	struct moat_http1_chunked c;
	bool done;
	const char *body = "5\r\nhello\r\nA\r\n0123456789\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
	size_t blen = strlen(body) - strlen("GET / HTTP/1.1\r\n");

	ASSERT_EQ(chunk_all(body, 0, &done), (int)blen);
	ASSERT_TRUE(done);
	/* byte by byte */
	moat_http1_chunked_init(&c, 0);
	for (size_t i = 0; i < blen; i++) {
		ASSERT_TRUE(!c.done);
		ASSERT_EQ(moat_http1_chunked_feed(&c, body + i, 1), 1);
	}
	ASSERT_TRUE(c.done);
	ASSERT_EQ(c.total, 15);
	ASSERT_EQ(moat_http1_chunked_feed(&c, "x", 1), 0);
	/* in two pieces split inside the data */
	moat_http1_chunked_init(&c, 0);
	ASSERT_EQ(moat_http1_chunked_feed(&c, body, 6), 6);
	ASSERT_EQ(moat_http1_chunked_feed(&c, body + 6, strlen(body) - 6), (int)blen - 6);
	ASSERT_TRUE(c.done);

	ASSERT_EQ(chunk_all("0\r\n\r\n", 0, &done), 5);
	ASSERT_EQ(chunk_all("0000\r\n\r\n", 0, &done), 8);
	ASSERT_EQ(chunk_all("5\r\nhel", 0, &done), 6);
	ASSERT_TRUE(!done);

	/* smuggling material */
	const char *bad[] = {
		"\r\n", /* empty size */
		"5;ext=1\r\nhello\r\n0\r\n\r\n", /* extension */
		"5 \r\nhello\r\n0\r\n\r\n", /* whitespace */
		" 5\r\nhello\r\n0\r\n\r\n",
		"5\nhello\r\n0\r\n\r\n", /* bare LF */
		"5\r\nhello\n0\r\n\r\n",
		"5\r\nhelloX\r\n0\r\n\r\n", /* data longer than the size */
		"5\r\nhello\r\n0\r\nX-Trailer: 1\r\n\r\n", /* trailer */
		"0\r\n\n",
		"-1\r\n",
		"0x5\r\nhello\r\n0\r\n\r\n",
		"1000000000000000\r\n", /* 16 hex digits */
		"g\r\n",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (chunk_all(bad[i], 0, &done) != -MOAT_HTTP1_E_CHUNK)
			moat_tap_fail(__FILE__, __LINE__, "accepted chunked body %zu", i);
	/* 15 hex digits are fine as a size; the body limit then applies */
	ASSERT_EQ(chunk_all("fffffffffffffff\r\n", 0, &done), 17);
	ASSERT_EQ(chunk_all("fffffffffffffff\r\n", 1 << 20, &done), -MOAT_HTTP1_E_BODY_TOO_LARGE);
	ASSERT_EQ(chunk_all("5\r\nhello\r\n5\r\nhello\r\n0\r\n\r\n", 9, &done),
		  -MOAT_HTTP1_E_BODY_TOO_LARGE);
	ASSERT_EQ(chunk_all("5\r\nhello\r\n5\r\nhello\r\n0\r\n\r\n", 10, &done), 25);
	ASSERT_EQ(moat_http1_err_status(-MOAT_HTTP1_E_BODY_TOO_LARGE), 413);
	ASSERT_STREQ(moat_http1_strerror(MOAT_HTTP1_E_CHUNK), "bad-chunked-body");
}

/* ---- one grammar: every consumer, every case ---------------------------- */

static void check_run(const char *path, const struct http_case *c, const struct path_run *r)
{
	if (r->oom)
		moat_tap_fail(__FILE__, __LINE__, "%s: %s: out of memory", path, c->name);
	if (r->n != c->accepted || r->refused != (c->reason != NULL))
		moat_tap_fail(__FILE__, __LINE__,
			      "%s: %s: %u accepted, refused=%d (%s), want %u, %s", path, c->name,
			      r->n, r->refused, r->reason, c->accepted,
			      c->reason ? c->reason : "accepted");
	if (c->reason && (strcmp(r->reason, c->reason) != 0 || r->status != c->status))
		moat_tap_fail(__FILE__, __LINE__, "%s: %s: refused %d %s, want %d %s", path,
			      c->name, r->status, r->reason, c->status, c->reason);
	if (c->fwd && (r->fwd_len != strlen(c->fwd) || memcmp(r->fwd, c->fwd, r->fwd_len) != 0))
		moat_tap_fail(__FILE__, __LINE__, "%s: %s: forwarded \"%.*s\", want \"%s\"", path,
			      c->name, (int)r->fwd_len, r->fwd ? r->fwd : "", c->fwd);
	if (!path_fwd_reframes(r))
		moat_tap_fail(__FILE__, __LINE__, "%s: %s: the forwarded bytes frame differently",
			      path, c->name);
}

static void run_case(const struct http_case *c)
{
	static const size_t pieces[] = {0, 1, 5, 64};
	const struct moat_intercept_config cfg = {0};
	const size_t len = http_case_len(c);
	struct path_run plain = {0}, rw = {0};

	path_plain(c->in, len, &plain);
	check_run("plain", c, &plain);
	path_rewriter(NULL, c->in, len, "h.test", &rw);
	check_run("rewriter", c, &rw);
	for (size_t i = 0; i < ELEMENTSOF(pieces); i++) {
		struct path_run ic = {0};
		path_intercept(&cfg, c->in, len, "h.test", pieces[i], &ic);
		check_run("intercept", c, &ic);
		if (!path_agree(&plain, &ic) || !path_agree(&ic, &plain) || !path_agree(&rw, &ic))
			moat_tap_fail(__FILE__, __LINE__,
				      "%s: interceptor (pieces of %zu) disagrees", c->name,
				      pieces[i]);
		path_run_free(&ic);
	}
	if (!path_agree(&plain, &rw) || !path_agree(&rw, &plain))
		moat_tap_fail(__FILE__, __LINE__, "%s: plain and rewriter disagree", c->name);
	path_run_free(&plain);
	path_run_free(&rw);
}

TEST(http1_same_verdict_every_path)
{
	for (size_t i = 0; i < ELEMENTSOF(http_cases); i++)
		run_case(&http_cases[i]);

	static char big[48 << 10];
	struct http_case over = {"head over 32 KiB", big, 0, 0, "head-too-large", 431, NULL};
	over.len = http_case_oversize(big, sizeof(big), false);
	run_case(&over);
	struct http_case many = {"101 fields", big, 0, 0, "too-many-headers", 431, NULL};
	many.len = http_case_oversize(big, sizeof(big), true);
	run_case(&many);
}

/* Positive control of the comparison itself: a consumer that frames chunk
 * extensions (as intercept.c's own decoder did) is caught, and so is one
 * that reads the second of two identical Content-Lengths as a body. */
TEST(http1_disagreement_is_detected)
{
	const struct http_case *ext = NULL, *clcl = NULL;
	for (size_t i = 0; i < ELEMENTSOF(http_cases); i++) {
		if (strcmp(http_cases[i].name, "chunk extension") == 0)
			ext = &http_cases[i];
		if (strcmp(http_cases[i].name, "CL+CL identical") == 0)
			clcl = &http_cases[i];
	}
	ASSERT_TRUE(ext && clcl);

	struct path_run strict = {0}, lenient = {0};
	path_plain(ext->in, strlen(ext->in), &strict);
	ASSERT_TRUE(strict.refused);
	/* What the old decoder did: skip ";ext=1" and frame the rest. */
	const char *stripped = "POST http://h.test/ HTTP/1.1\r\n" HC_H
			       "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n";
	path_plain(stripped, strlen(stripped), &lenient);
	ASSERT_TRUE(!lenient.refused);
	lenient.msg[0].body_len += strlen(";ext=1");
	ASSERT_TRUE(!path_agree(&strict, &lenient)); /* (checked both ways by the fuzz target) */
	path_run_free(&strict);
	path_run_free(&lenient);

	/* A parser that merges identical Content-Lengths (what http1.c did). */
	path_plain(clcl->in, strlen(clcl->in), &strict);
	const char *merged =
		"POST http://h.test/ HTTP/1.1\r\n" HC_H "Content-Length: 5\r\n\r\nhello";
	path_plain(merged, strlen(merged), &lenient);
	ASSERT_EQ(lenient.n, 1);
	ASSERT_TRUE(!path_agree(&strict, &lenient));
	path_run_free(&strict);
	path_run_free(&lenient);
}

TEST(http1_origin_head)
{
	char out[512];
	const char *s = "GET http://h.test:8080?q HTTP/1.0\r\nProxy-Connection: keep-alive\r\n"
			"Proxy-Authorization: Basic eA==\r\nX-A:  v  \r\n\r\n";
	int n = parse(s);
	ASSERT_EQ(n, (int)strlen(s));
	ASSERT_STREQ(req.origin_prefix, "/");
	int k = moat_http1_write_origin_head(&req, out, sizeof(out));
	ASSERT_GE(k, 1);
	out[k] = '\0';
	ASSERT_STREQ(out, "GET /?q HTTP/1.0\r\nX-A: v\r\nHost: h.test:8080\r\n\r\n");
	ASSERT_EQ(moat_http1_write_origin_head(&req, out, 10), -ENOBUFS);
	ASSERT_TRUE((size_t)k <= MOAT_HTTP1_ORIGIN_HEAD_MAX(&req, n));
	ASSERT_EQ(parse("GET /x?q HTTP/1.1\r\nHost: h\r\n\r\n"), 30);
	ASSERT_STREQ(req.origin_prefix, "");
	ASSERT_EQ(parse("GET http://h/x HTTP/1.1\r\n\r\n"), 27);
	ASSERT_STREQ(req.origin_prefix, "");
}

/* The error named is the one at the earliest position, whatever prefix of
 * the stream was parsed (so every consumer names the same reason). */
TEST(http1_error_is_prefix_stable)
{
	const char s[] = "GET /x HTTP/1.content-length\r\nX: a\0b\r\n\r\n";
	int whole = moat_http1_parse_request(s, sizeof(s) - 1, NULL, &req);
	ASSERT_EQ(whole, -MOAT_HTTP1_E_VERSION);
	for (size_t cut = 1; cut < sizeof(s) - 1; cut++) {
		int r = moat_http1_parse_request(s, cut, NULL, &req);
		if (r != 0 && r != whole)
			moat_tap_fail(__FILE__, __LINE__, "prefix %zu: %d, whole: %d", cut, r,
				      whole);
	}
	const char t[] = "GET /x HTTP/1.1\r\nX: a\0b\r\nbad line\r\n\r\n";
	ASSERT_EQ(moat_http1_parse_request(t, sizeof(t) - 1, NULL, &req), -MOAT_HTTP1_E_NUL);
}

TEST(http1_body_framing)
{
	struct moat_http1_body b;
	ASSERT_GE(parse("POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 3\r\n\r\n"), 1);
	moat_http1_body_start(&b, &req, 0);
	ASSERT_TRUE(b.active);
	ASSERT_EQ(moat_http1_body_feed(&b, "abGET", 2), 2);
	ASSERT_TRUE(b.active);
	ASSERT_EQ(moat_http1_body_feed(&b, "cGET", 4), 1);
	ASSERT_TRUE(!b.active);
	ASSERT_EQ(b.length, 3);
	ASSERT_EQ(moat_http1_body_feed(&b, "GET", 3), 0);
	ASSERT_GE(parse("POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"), 1);
	moat_http1_body_start(&b, &req, 0);
	ASSERT_EQ(moat_http1_body_feed(&b, "1\r\na\r\n0\r\n\r\nGET", 14), 11);
	ASSERT_TRUE(!b.active);
	ASSERT_EQ(b.ch.chunks, 2);
	ASSERT_GE(parse("GET / HTTP/1.1\r\nHost: a\r\n\r\n"), 1);
	moat_http1_body_start(&b, &req, 0);
	ASSERT_TRUE(!b.active);
}
