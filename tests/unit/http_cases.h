/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The request-smuggling cases and positive controls every consumer of the
 * HTTP/1 grammar must judge alike (test_http1.c runs each through all three
 * consumers; test_secrets.c and test_intercept.c through theirs with
 * secrets and TLS). Absolute-form with Host, so the proxy port takes them
 * too. `accepted` is how many requests are framed before the verdict;
 * `reason` the grammar's reason token, NULL when the stream is accepted.
 */
#pragma once

#include <stddef.h>

#define HC_H "Host: h.test\r\n"

struct http_case {
	const char *name;
	const char *in;
	size_t len; /* 0 = strlen(in) */
	unsigned accepted;
	const char *reason;
	int status;
	const char *fwd; /* positive controls: what every path sends upstream */
};

static const struct http_case http_cases[] = {
	/* smuggling material: refused alike */
	{"CL+CL identical",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Content-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
	 0, 0, "content-length", 400, NULL},
	{"CL leading zero",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H "Content-Length: 05\r\n\r\nhello", 0, 0,
	 "content-length", 400, NULL},
	{"CL list", "POST http://h.test/ HTTP/1.1\r\n" HC_H "Content-Length: 5, 5\r\n\r\nhello", 0,
	 0, "content-length", 400, NULL},
	{"CL+TE smuggled request",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Content-Length: 4\r\nTransfer-Encoding: chunked\r\n"
	 "\r\n0\r\n\r\nGET http://h.test/smuggled HTTP/1.1\r\n" HC_H "\r\n",
	 0, 0, "cl-and-te", 400, NULL},
	{"TE+CL",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\nContent-Length: 4\r\n\r\n",
	 0, 0, "cl-and-te", 400, NULL},
	{"TE chunked, identity",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked, identity\r\n\r\n0\r\n\r\n",
	 0, 0, "transfer-encoding", 501, NULL},
	{"TE identity",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H "Transfer-Encoding: identity\r\n\r\n", 0, 0,
	 "transfer-encoding", 501, NULL},
	{"TE twice",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
	 0, 0, "transfer-encoding", 501, NULL},
	{"chunk extension",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n0\r\n\r\n",
	 0, 1, "bad-chunked-body", 400, NULL},
	{"trailer",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
	 "X-Trailer: 1\r\n\r\n",
	 0, 1, "bad-chunked-body", 400, NULL},
	{"chunk size LF only",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\n\r\n5\nhello\r\n0\r\n\r\n",
	 0, 1, "bad-chunked-body", 400, NULL},
	{"chunk size line too long",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\n\r\n0000000000000005\r\nhello"
	 "\r\n0\r\n\r\n",
	 0, 1, "bad-chunked-body", 400, NULL},
	{"obs-fold", "GET http://h.test/ HTTP/1.1\r\n" HC_H "X-A: 1\r\n 2\r\n\r\n", 0, 0,
	 "obs-fold", 400, NULL},
	{"LF-only line ends", "GET http://h.test/ HTTP/1.1\nHost: h.test\n\n", 0, 0,
	 "bare-cr-or-lf", 400, NULL},
	{"bare CR", "GET http://h.test/ HTTP/1.1\r\n" HC_H "X-A: 1\rX-B: 2\r\n\r\n", 0, 0,
	 "bare-cr-or-lf", 400, NULL},
	{"space before colon",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H "Content-Length : 5\r\n\r\nhello", 0, 0,
	 "space-before-colon", 400, NULL},
	{"NUL in a value", "GET http://h.test/ HTTP/1.1\r\n" HC_H "X-A: a\0b\r\n\r\n",
	 sizeof("GET http://h.test/ HTTP/1.1\r\n" HC_H "X-A: a\0b\r\n\r\n") - 1, 0, "control-byte",
	 400, NULL},
	{"Content_Length lookalike",
	 "POST http://h.test/ HTTP/1.1\r\n" HC_H "Content_Length: 5\r\n\r\nhello", 0, 0,
	 "bad-header-name", 400, NULL},
	{"chunked in HTTP/1.0",
	 "POST http://h.test/ HTTP/1.0\r\n" HC_H "Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 0,
	 0, "transfer-encoding", 501, NULL},
	{"second request smuggles CL+CL",
	 "GET http://h.test/a HTTP/1.1\r\n" HC_H "\r\nPOST http://h.test/b HTTP/1.1\r\n" HC_H
	 "Content-Length: 1\r\nContent-Length: 1\r\n\r\nx",
	 0, 1, "content-length", 400, NULL},
	/* oversize cases are built at run time (http_case_oversize) */

	/* positive controls: accepted alike, forwarded byte for byte */
	{"GET, no body", "GET http://h.test/a?b HTTP/1.1\r\n" HC_H "Accept: */*\r\n\r\n", 0, 1,
	 NULL, 0, "GET /a?b HTTP/1.1\r\n" HC_H "Accept: */*\r\n\r\n"},
	{"Content-Length body",
	 "POST http://h.test/up HTTP/1.1\r\n" HC_H "Content-Length: 5\r\n\r\nhello", 0, 1, NULL, 0,
	 "POST /up HTTP/1.1\r\n" HC_H "Content-Length: 5\r\n\r\nhello"},
	{"chunked body",
	 "POST http://h.test/up HTTP/1.1\r\n" HC_H
	 "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nA\r\n"
	 "0123456789\r\n0\r\n\r\n",
	 0, 1, NULL, 0,
	 "POST /up HTTP/1.1\r\n" HC_H "Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\nA\r\n"
	 "0123456789\r\n0\r\n\r\n"},
	{"pipelining of two requests",
	 "POST http://h.test/1 HTTP/1.1\r\n" HC_H
	 "Content-Length: 3\r\n\r\nabcGET http://h.test/2 HTTP/1.1\r\n" HC_H "\r\n",
	 0, 2, NULL, 0,
	 "POST /1 HTTP/1.1\r\n" HC_H "Content-Length: 3\r\n\r\nabcGET /2 HTTP/1.1\r\n" HC_H "\r\n"},
	{"absolute-form without path, with query", "GET http://h.test?x=1 HTTP/1.1\r\n" HC_H "\r\n",
	 0, 1, NULL, 0, "GET /?x=1 HTTP/1.1\r\n" HC_H "\r\n"},
	{"absolute-form without path", "GET http://h.test HTTP/1.1\r\n" HC_H "\r\n", 0, 1, NULL, 0,
	 "GET / HTTP/1.1\r\n" HC_H "\r\n"},
	{"Content-Length: 0", "POST http://h.test/z HTTP/1.1\r\n" HC_H "Content-Length: 0\r\n\r\n",
	 0, 1, NULL, 0, "POST /z HTTP/1.1\r\n" HC_H "Content-Length: 0\r\n\r\n"},
};

static inline size_t http_case_len(const struct http_case *c)
{
	return c->len ? c->len : strlen(c->in);
}

/* Over the limits: a head over 32 KiB, 101 fields (built into buf). */
static inline size_t http_case_oversize(char *buf, size_t cap, bool many_fields)
{
	size_t o = (size_t)snprintf(buf, cap, "GET http://h.test/ HTTP/1.1\r\n" HC_H);
	if (many_fields)
		for (int i = 0; i < 100 && o + 32 < cap; i++)
			o += (size_t)snprintf(buf + o, cap - o, "X-%d: 1\r\n", i);
	else {
		o += (size_t)snprintf(buf + o, cap - o, "X-Big: ");
		while (o < 40000 && o + 2 < cap)
			buf[o++] = 'a';
		o += (size_t)snprintf(buf + o, cap - o, "\r\n");
	}
	o += (size_t)snprintf(buf + o, cap - o, "\r\n");
	return o;
}
