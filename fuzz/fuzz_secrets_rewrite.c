/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fuzz the request-head rewriting of the credential proxy with hostile heads.
 * Input: one byte of flags (bit 0: upstream is TLS; bits 1-2: destination),
 * then the head, parsed by moat_http1_parse_request() as every proxy path
 * does (the rewriter has no grammar of its own); what follows the head is
 * the body window.
 * "@0@", "@1@", "@2@" in the input become the secrets' placeholders, so the
 * corpus can exercise the substitution paths.
 * Invariants checked (abort on violation): a real value leaves only toward a
 * host its secret is bound to, over TLS, in a rewritten head that is
 * well-terminated and within the output cap, and that re-parses with the
 * same framing (Content-Length / chunked) as the original; reasons never
 * hold a value.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/secrets.h"
#include "shared/macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *gh_hosts[] = {(char[]){"api.github.test"}};
static char *api_hosts[] = {(char[]){"*.api.test"}};
static char *org_hosts[] = {(char[]){"git.test"}};
static char *org_methods[] = {(char[]){"GET"}};
static char *org_paths[] = {(char[]){"/repos/acme/"}};
static struct moat_secret defs[] = {
	{.name = (char[]){"GH"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"FUZZ_GH"},
	 .hosts = gh_hosts,
	 .n_hosts = 1},
	{.name = (char[]){"API"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"FUZZ_API"},
	 .hosts = api_hosts,
	 .n_hosts = 1,
	 .header = (char[]){"X-Api-Key"},
	 .format = (char[]){"Bearer %s"}},
	{.name = (char[]){"ORG"},
	 .source = MOAT_SECRET_ENV,
	 .from = (char[]){"FUZZ_ORG"},
	 .hosts = org_hosts,
	 .n_hosts = 1,
	 .methods = org_methods,
	 .n_methods = 1,
	 .paths = org_paths,
	 .n_paths = 1},
};
static const char *const values[] = {"REALgh0123456789", "REALapi0123456789", "REALorg0123456789"};
static const char *const hosts[] = {"api.github.test", "x.api.test", "git.test", "evil.test"};
static const int host_secret[] = {0, 1, 2, -1};

static struct moat_secrets *secrets(void)
{
	static struct moat_secrets *s;
	if (!s) {
		setenv("FUZZ_GH", values[0], 1);
		setenv("FUZZ_API", values[1], 1);
		setenv("FUZZ_ORG", values[2], 1);
		if (moat_secrets_new(defs, 3, &s, NULL) < 0)
			abort();
	}
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_secrets *s = secrets();
	struct moat_secrets_result res;
	size_t cap, o = 0;
	char *buf;

	if (size < 1 || size > 200000)
		return 0;
	unsigned flags = data[0];
	data++;
	size--;
	cap = size * 40 + 1;
	buf = malloc(cap);
	if (!buf)
		return 0;
	for (size_t i = 0; i < size;) {
		if (i + 3 <= size && data[i] == '@' && data[i + 2] == '@' && data[i + 1] >= '0' &&
		    data[i + 1] <= '2') {
			const char *ph = moat_secrets_placeholder(s, data[i + 1] - '0');
			memcpy(buf + o, ph, strlen(ph));
			o += strlen(ph);
			i += 3;
		} else
			buf[o++] = (char)data[i++];
	}
	static struct moat_http1_request hr, again;
	const struct moat_http1_limits big = {.max_head = MOAT_HTTP1_HARD_MAX_HEAD,
					      .max_headers = MOAT_HTTP1_HARD_MAX_HEADERS};
	int n = moat_http1_parse_request(buf, o, NULL, &hr);
	if (n <= 0) {
		free(buf);
		return 0;
	}
	size_t head_len = (size_t)n;
	unsigned h = (flags >> 1) & 3;
	struct moat_secrets_request rq = {
		.host = hosts[h],
		.tls = flags & 1,
		.http = &hr,
		.body = buf + head_len,
		.body_len = o - head_len,
	};
	int r = moat_secrets_rewrite(s, &rq, &res);
	if (r < 0 && (res.head || res.verdict != MOAT_SECRETS_REFUSED))
		abort();
	for (unsigned i = 0; i < 3; i++)
		if ((strstr(res.reason, values[i]) || strstr(res.warning, values[i])) &&
		    !memmem(buf, o, values[i], strlen(values[i])))
			abort();
	if (res.verdict == MOAT_SECRETS_REWRITTEN) {
		if (!res.head || res.head_len > MOAT_SECRETS_MAX_OUT || res.head_len < 4 ||
		    memcmp(res.head + res.head_len - 4, "\r\n\r\n", 4) != 0)
			abort();
		/* The rewrite never changes the framing the proxy relies on. */
		if (moat_http1_parse_request(res.head, res.head_len, &big, &again) !=
			    (int)res.head_len ||
		    again.content_length != hr.content_length || again.chunked != hr.chunked ||
		    again.form != MOAT_HTTP1_FORM_ORIGIN)
			abort();
		for (unsigned i = 0; i < 3; i++)
			/* (unless the input itself carried the value literally) */
			if (memmem(res.head, res.head_len, values[i], strlen(values[i])) &&
			    !memmem(buf, o, values[i], strlen(values[i])) &&
			    ((int)i != host_secret[h] || !rq.tls))
				abort();
	} else if (res.head)
		abort();
	moat_secrets_result_clear(&res);

	/* The DNS scanner on the same bytes, as a name. */
	buf[MIN(o, (size_t)300)] = '\0';
	(void)moat_secrets_scan_dns(s, buf);
	free(buf);
	return 0;
}
