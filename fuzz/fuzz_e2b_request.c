/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: what the front of `moat serve --e2b` parses of a client's
 * bytes. The first byte picks the parser (route, a Connect envelope and
 * the message in it, each request body, the /files query, an upload body
 * with a boundary from the input); the rest is the input. Every accepted
 * result is checked against the promises of serve_e2b.h (paths absolute
 * and normalised, lengths within the limits), and aborts if one is broken. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/serve_connect.h"
#include "lib/serve_e2b.h"

static void check(int ok)
{
	if (!ok)
		abort();
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
	switch (sel % 10) {
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
	default:
		(void)moat_e2b_parse_empty(in, n, &bad);
		break;
	}
	free(s);
	return 0;
}
