/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Differential fuzz target for moat's one HTTP/1 grammar: the same bytes go
 * to every consumer (the plain proxy port, the credential rewriter, the TLS
 * interceptor's request side fed in pieces; fuzz/http_paths.h drives each as
 * the proxy does) and they must agree, else abort():
 *   - on accept/reject: a stream the grammar refuses is refused by every
 *     path at the same request with the same reason token and status; a
 *     path may stop earlier only for a rule of its own (policy: the proxy
 *     port wants absolute-form, the interceptor one host);
 *   - on the framing of every request both accepted: head length,
 *     Content-Length / chunked, body length, chunk count, body complete;
 *   - on what the upstream reads: the bytes each path forwards re-parse to
 *     exactly the requests and body lengths that path recorded.
 * Input: one byte of flags (bits 0-2: piece size for the interceptor,
 * bit 3: a secret bound to the destination, so every head is rewritten),
 * then the client's byte stream.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "http_paths.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *hosts[] = {(char[]){"*.test"}};
static struct moat_secret defs[] = {
	{.name = (char[]){"K"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"FUZZ_DIFF_K"},
	 .hosts = hosts,
	 .n_hosts = 1,
	 .header = (char[]){"X-Key"}},
};

static struct moat_secrets *secrets(void)
{
	static struct moat_secrets *s;
	if (!s) {
		setenv("FUZZ_DIFF_K", "REALkey0123456789", 1);
		if (moat_secrets_new(defs, 1, &s, NULL) < 0)
			abort();
	}
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t pieces[] = {0, 1, 2, 3, 7, 64, 1000, 4096};
	static struct moat_http1_request first;
	struct path_run runs[3];
	char host[MOAT_HOST_BUFSZ] = "h.test";
	const struct moat_secrets *s;
	const char *in;

	if (size < 1 || size > 100000)
		return 0;
	s = (data[0] & 8) ? secrets() : NULL;
	in = (const char *)data + 1;
	size--;
	/* The destination the proxy decided on: the first request's. */
	if (moat_http1_parse_request(in, size, NULL, &first) > 0 && first.has_host &&
	    first.host_kind == MOAT_HOST_NAME)
		snprintf(host, sizeof(host), "%s", first.host);

	struct moat_intercept_config cfg = {.secrets = s};
	memset(runs, 0, sizeof(runs));
	path_plain(in, size, &runs[0]);
	path_rewriter(s, in, size, host, &runs[1]);
	path_intercept(&cfg, in, size, host, pieces[data[0] & 7], &runs[2]);

	bool oom = false;
	for (unsigned i = 0; i < 3; i++)
		oom |= runs[i].oom;
	if (!oom) {
		for (unsigned i = 0; i < 3; i++) {
			if (!path_fwd_reframes(&runs[i]))
				abort();
			for (unsigned j = 0; j < 3; j++)
				if (i != j && !path_agree(&runs[i], &runs[j]))
					abort();
		}
	}
	for (unsigned i = 0; i < 3; i++)
		path_run_free(&runs[i]);
	return 0;
}
