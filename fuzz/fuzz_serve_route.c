/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: `moat serve`'s front, the request validation (route table,
 * handlers, query and body checks) and the default codec on what the
 * handlers produce. Input: "METHOD TARGET\n", header lines "Name: value\n"
 * up to an empty line, then the body. Checks: every request ends in a reply
 * or a forward; a forward is a JSON object with an op, within the frame
 * limit; a reply's body is JSON with a stable error code when >= 400. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/serve_proto.h"
#include "api/serve_route.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char *line(const char **p, const char *end)
{
	const char *nl = memchr(*p, '\n', (size_t)(end - *p));
	size_t n = nl ? (size_t)(nl - *p) : (size_t)(end - *p);
	char *s = strndup(*p, n);
	*p += n + (nl ? 1 : 0);
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *p = (const char *)data, *end = p + size;
	char *first = line(&p, end);
	struct moat_serve_header hs[MOAT_SERVE_MAX_HEADERS];
	char *hl[MOAT_SERVE_MAX_HEADERS];
	size_t nh = 0;
	while (p < end && nh < MOAT_SERVE_MAX_HEADERS) {
		char *h = line(&p, end);
		if (!h || !h[0]) {
			free(h);
			break;
		}
		char *colon = strchr(h, ':');
		if (colon) {
			*colon = '\0';
			hs[nh] = (struct moat_serve_header){h, colon + 1 + (colon[1] == ' ')};
			hl[nh++] = h;
		} else {
			free(h);
		}
	}
	char *sp = first ? strchr(first, ' ') : NULL;
	if (!sp)
		goto out;
	*sp = '\0';
	char *target = sp + 1, *q = strchr(target, '?');
	if (q)
		*q++ = '\0';
	struct moat_serve_http_req rq = {.method = first,
					 .path = target,
					 .query = q ? q : "",
					 .headers = hs,
					 .n_headers = nh,
					 .body = p,
					 .body_len = (size_t)(end - p)};
	struct moat_serve_out out;
	const struct moat_serve_route *r = NULL;
	moat_serve_dispatch(&rq, "token-of-the-fuzzer", &out, &r);
	if (!out.status == !out.fwd)
		abort(); /* exactly one of a reply and a forward */
	if (out.fwd) {
		char *t = json_dumps(out.fwd, JSON_COMPACT);
		if (!t || strlen(t) > MOAT_SERVE_MAX_JSON ||
		    !json_is_string(json_object_get(out.fwd, "op")) ||
		    !json_is_object(json_object_get(out.fwd, "args")))
			abort();
		/* the back's answer, rendered by the route's codec */
		const struct moat_serve_codec *c =
			r && r->codec ? r->codec : &moat_serve_codec_json;
		struct moat_serve_stream st = {0};
		json_t *ev = json_pack("{s:s}", "type", "stdout");
		c->start(&st, 200, NULL, NULL, NULL, 0, true);
		c->event(&st, ev, t, strlen(t));
		c->event(&st, ev, (const char *)data, size);
		c->end(&st, size & 1);
		json_decref(ev);
		free(st.buf);
		for (unsigned i = 0; i < st.n_headers; i++)
			free(st.headers[i]);
		free(t);
	} else {
		json_t *b = json_loadb(out.body, out.body_len, 0, NULL);
		if (out.status >= 400 &&
		    !json_is_string(json_object_get(json_object_get(b, "error"), "code")))
			abort();
		json_decref(b);
	}
	moat_serve_out_clear(&out);
out:
	for (size_t i = 0; i < nh; i++)
		free(hl[i]);
	free(first);
	return 0;
}
