/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: what the front of `moat serve --e2b` parses of a client's
 * bytes. The first byte picks the parser (route, a Connect envelope and
 * the message in it, each request body, the /files query, an upload body
 * with a boundary from the input); the rest is the input. Every accepted
 * result is checked against the promises of serve_e2b.h (paths absolute
 * and normalised, lengths within the limits), and aborts if one is broken.
 * Selector 10: a whole request through serve's route table with the E2B
 * routes on ("METHOD PATH[?QUERY]", header lines "Name: value", an empty
 * line, the body), and the route's codec over a few answers of the back. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/serve_connect.h"
#include "api/serve_e2b.h"
#include "api/serve_route.h"

static void check(int ok)
{
	if (!ok)
		abort();
}

/* The route's codec over one answer of the back: bytes out, no crash. */
static void answer(const struct moat_serve_route *r, const char *note, int status, const char *body,
		   bool stream)
{
	const struct moat_serve_codec *c = r->codec ? r->codec : &moat_serve_codec_json;
	struct moat_serve_stream st = {.note = note ? strdup(note) : NULL};
	json_t *b = body ? json_loads(body, 0, NULL) : NULL;
	c->start(&st, status, b, NULL, "xy", 2, stream);
	if (stream) {
		json_t *ev = json_pack("{s:s,s:i}", "type", "start", "num", 1);
		c->event(&st, ev, NULL, 0);
		json_decref(ev);
		ev = json_pack("{s:s}", "type", "stdout");
		c->event(&st, ev, "\xff\x00", 2);
		json_decref(ev);
		c->end(&st, true);
	}
	json_decref(b);
	free(st.buf);
	free(st.note);
}

static void dispatch(char *s, size_t n)
{
	struct moat_serve_header h[MOAT_SERVE_MAX_HEADERS];
	size_t nh = 0;
	char *body = strstr(s, "\n\n");
	size_t blen = 0;
	if (body) {
		*body = 0;
		body += 2;
		blen = n - (size_t)(body - s);
	}
	char *line = strchr(s, '\n');
	if (line)
		*line++ = 0;
	char *path = strchr(s, ' ');
	if (!path)
		return;
	*path++ = 0;
	char *query = strchr(path, '?');
	if (query)
		*query++ = 0;
	while (line && *line && nh < MOAT_SERVE_MAX_HEADERS) {
		char *next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		char *colon = strchr(line, ':');
		if (colon) {
			*colon = 0;
			h[nh++] = (struct moat_serve_header){line, colon + 1 + (colon[1] == ' ')};
		}
		line = next;
	}
	struct moat_serve_http_req rq = {.method = s,
					 .path = path,
					 .query = query ? query : "",
					 .headers = h,
					 .n_headers = nh,
					 .body = body ? body : "",
					 .body_len = blen};
	struct moat_serve_out out;
	const struct moat_serve_route *r = NULL;
	moat_serve_routes_enable_e2b(true);
	moat_serve_dispatch(&rq, NULL, &out, &r);
	check(!!out.status != !!out.fwd);
	if (out.fwd) {
		/* a forward always names its credential and, but create and
		 * list, a sandbox moat could have made */
		check(json_is_string(json_object_get(out.fwd, "token")));
		const char *sb = json_string_value(json_object_get(out.fwd, "sandbox"));
		check(!sb || moat_e2b_id_ok(sb) || r->codec == NULL);
		check(!out.fwd_len ||
		      (out.fwd_data >= rq.body &&
		       out.fwd_data + out.fwd_len <= rq.body + rq.body_len));
	}
	if (r && out.fwd) {
		answer(r, out.note, 200,
		       "{\"id\":\"sb-1\",\"entries\":[{\"name\":1}],\"execs\":[{}]}", false);
		answer(r, out.note, 404, "{\"error\":{\"message\":7}}", false);
		answer(r, out.note, 200, NULL, true);
	}
	moat_serve_out_clear(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1 || size > (1u << 20))
		return 0;
	unsigned sel = data[0];
	const char *in = (const char *)data + 1;
	size_t n = size - 1;
	char *s = malloc(n + 1);
	if (!s)
		return 0;
	memcpy(s, in, n);
	s[n] = 0;
	struct moat_e2b_bad bad;
	switch (sel % 11) {
	case 0: {
		/* "METHOD URL" */
		struct moat_e2b_target t;
		char *sp = strchr(s, ' ');
		if (sp) {
			*sp = 0;
			if (moat_e2b_route(s, sp + 1, &t) == 0) {
				check(t.route > MOAT_E2B_NONE && t.route < MOAT_E2B_ROUTE_MAX_);
				check(!t.sandbox[0] || moat_e2b_id_ok(t.sandbox));
			}
		}
		break;
	}
	case 1: {
		const char *msg;
		size_t ml;
		if (moat_connect_unenvelope(in, n, &msg, &ml) == 0) {
			struct moat_e2b_start st;
			check(ml + MOAT_CONNECT_ENVELOPE_HEAD == n && ml <= MOAT_CONNECT_MAX_MSG);
			if (moat_e2b_parse_start(msg, ml, &st, &bad) == 0)
				moat_e2b_start_done(&st);
		}
		break;
	}
	case 2: {
		struct moat_e2b_create c;
		if (moat_e2b_parse_create(in, n, &c, &bad) == 0) {
			check(c.timeout_s <= MOAT_E2B_MAX_TIMEOUT_S && c.n_env <= MOAT_E2B_MAX_ENV);
			for (size_t i = 0; i < c.n_env; i++)
				check(strchr(c.env[i], '=') != NULL);
			moat_e2b_create_done(&c);
		}
		break;
	}
	case 3: {
		struct moat_e2b_start st;
		if (moat_e2b_parse_start(in, n, &st, &bad) == 0) {
			check(st.n_args >= 1 && st.n_args <= MOAT_E2B_MAX_ARGS + 1);
			check(st.argv[st.n_args] == NULL);
			check(!st.cwd || moat_e2b_path_ok(st.cwd));
			moat_e2b_start_done(&st);
		}
		break;
	}
	case 4: {
		static const enum moat_e2b_route r[] = {MOAT_E2B_PROC_CONNECT, MOAT_E2B_PROC_SIGNAL,
							MOAT_E2B_PROC_INPUT,
							MOAT_E2B_PROC_CLOSE_STDIN};
		struct moat_e2b_proc_call p;
		if (moat_e2b_parse_proc_call(r[(sel / 10) % 4], in, n, &p, &bad) == 0) {
			check(p.pid != 0 || p.tag[0]);
			moat_e2b_proc_call_done(&p);
		}
		break;
	}
	case 5: {
		static const enum moat_e2b_route r[] = {MOAT_E2B_FS_STAT, MOAT_E2B_FS_LIST,
							MOAT_E2B_FS_MKDIR, MOAT_E2B_FS_REMOVE,
							MOAT_E2B_FS_MOVE};
		struct moat_e2b_fs_call f;
		enum moat_e2b_route route = r[(sel / 10) % 5];
		if (moat_e2b_parse_fs_call(route, in, n, &f, &bad) == 0) {
			check(moat_e2b_path_ok(f.path));
			check(route != MOAT_E2B_FS_MOVE || moat_e2b_path_ok(f.dest));
		}
		break;
	}
	case 6: {
		char path[MOAT_E2B_MAX_PATH + 1];
		if (moat_e2b_parse_files_query(s, path, &bad) == 0)
			check(!path[0] || moat_e2b_path_ok(path));
		break;
	}
	case 7:
	case 8: {
		/* the first line is the Content-Type, the rest the body */
		static struct moat_e2b_part parts[MOAT_E2B_MAX_PARTS];
		size_t np;
		char *nl = memchr(s, '\n', n);
		if (!nl)
			break;
		*nl = 0;
		const char *body = nl + 1;
		size_t bl = n - (size_t)(body - s);
		if (moat_e2b_parse_upload(s, body, bl, sel % 10 == 7 ? "/tmp/q" : NULL, parts,
					  MOAT_E2B_MAX_PARTS, &np, &bad) == 0) {
			check(np >= 1 && np <= MOAT_E2B_MAX_PARTS);
			for (size_t i = 0; i < np; i++) {
				check(moat_e2b_path_ok(parts[i].path));
				check(parts[i].data >= body &&
				      parts[i].data + parts[i].len <= body + bl);
			}
		}
		break;
	}
	case 9:
		(void)moat_e2b_parse_empty(in, n, &bad);
		break;
	default:
		dispatch(s, n);
		break;
	}
	free(s);
	return 0;
}
