/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz the HTTP/1 request-head parser: whole input, every prefix answer is
 * consistent with the whole (an error or a complete head in a prefix is the
 * answer for the whole), slices stay inside the buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/http1.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_slice(struct moat_http1_slice s, const char *buf, size_t len)
{
	if (s.len && (s.p < buf || s.p + s.len > buf + len))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_http1_request req, req2;
	struct moat_http1_limits lim = {0};
	char out[2048];
	char *buf;
	int r;

	if (size > 70000)
		return 0;
	buf = malloc(size ? size : 1);
	if (!buf)
		return 0;
	memcpy(buf, data, size);
	if (size && (data[0] & 1))
		lim = (struct moat_http1_limits){.max_head = 512, .max_headers = 8};

	r = moat_http1_parse_request(buf, size, &lim, &req);
	/* An error seen in a prefix is the error of the whole: every consumer
	 * names the same reason however its reads were cut. */
	for (size_t cut = size / 3; cut < size; cut += size / 3 + 1) {
		int p = moat_http1_parse_request(buf, cut, &lim, &req2);
		if (p < 0 && p != r)
			abort();
		if (p > 0 && p != r)
			abort(); /* a complete head stays complete and the same */
	}
	if (r > 0) {
		if ((size_t)r > size)
			abort();
		check_slice(req.method, buf, size);
		check_slice(req.target, buf, size);
		check_slice(req.path, buf, size);
		check_slice(req.authority, buf, size);
		for (unsigned i = 0; i < req.n_headers; i++) {
			check_slice(req.headers[i].name, buf, size);
			check_slice(req.headers[i].value, buf, size);
		}
		if (req.chunked && req.content_length >= 0)
			abort();
		if (req.is_connect && (req.port == 0 || !req.has_host))
			abort();
		/* the head alone parses the same */
		if (moat_http1_parse_request(buf, (size_t)r, &lim, &req2) != r)
			abort();
		/* a shorter prefix never completes */
		if (moat_http1_parse_request(buf, (size_t)r - 1, &lim, &req2) > 0)
			abort();
		(void)moat_http1_find_header(&req, "host", 0);
		if (moat_http1_build_error(out, sizeof(out), 403, "not-allowed", req.host,
					   req.host) < 0)
			abort();
		if (req.chunked) {
			/* the body after the head, whole and in two pieces */
			struct moat_http1_chunked c1, c2;
			size_t blen = size - (size_t)r;
			moat_http1_chunked_init(&c1, 1 << 20);
			moat_http1_chunked_init(&c2, 1 << 20);
			int a = moat_http1_chunked_feed(&c1, buf + r, blen);
			size_t half = blen / 2;
			int b1 = moat_http1_chunked_feed(&c2, buf + r, half);
			int b2 = b1 >= 0 && !c2.done
				? moat_http1_chunked_feed(&c2, buf + r + half, blen - half)
				: 0;
			if (a >= 0 && ((size_t)a > blen || (c1.done && (b1 < 0 || b2 < 0))))
				abort();
			if (a >= 0 && b1 >= 0 && b2 >= 0 && c1.done != c2.done)
				abort();
			if (a >= 0 && c1.done && c2.done && a != b1 + b2)
				abort();
		}
	} else if (r < 0) {
		(void)moat_http1_strerror(r);
		(void)moat_http1_err_status(r);
	}
	free(buf);
	return 0;
}
