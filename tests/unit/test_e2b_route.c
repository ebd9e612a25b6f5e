/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat serve --e2b`'s routes in serve's route table: what each E2B
 * request becomes (the forward to the back: op, sandbox, token, args, data,
 * or the front's own refusal in the request's wire format), and what each
 * back answer becomes (REST objects, Connect unary messages, a Connect
 * stream). Without --e2b the same paths are not found. */
#include <jansson.h>
#include <string.h>

#include "harness/tap.h"
#include "api/serve_connect.h"
#include "api/serve_e2b.h"
#include "api/serve_route.h"

#define TOK "e2b_00112233445566778899aabbccddeeff"

struct call {
	struct moat_serve_http_req rq;
	struct moat_serve_header h[8];
	struct moat_serve_out out;
	const struct moat_serve_route *route;
};

static void call(struct call *c, const char *method, const char *path, const char *query,
		 const char *body, size_t len, const char *const *hdrs)
{
	memset(c, 0, sizeof(*c));
	size_t n = 0;
	for (; hdrs && hdrs[2 * n]; n++)
		c->h[n] = (struct moat_serve_header){hdrs[2 * n], hdrs[2 * n + 1]};
	c->rq = (struct moat_serve_http_req){.method = method,
					     .path = path,
					     .query = query ? query : "",
					     .headers = c->h,
					     .n_headers = n,
					     .body = body ? body : "",
					     .body_len = body ? len : 0};
	moat_serve_routes_enable_e2b(true);
	moat_serve_dispatch(&c->rq, "", &c->out, &c->route);
}

static const char *fwd_str(struct call *c, const char *key)
{
	return json_string_value(json_object_get(c->out.fwd, key));
}

/* Runs the route's codec over one back answer; returns the bytes. */
static char *answer(struct call *c, int status, const char *body_json, const char *data, size_t len,
		    bool stream, struct moat_serve_stream *st)
{
	memset(st, 0, sizeof(*st));
	st->note = c->out.note ? strdup(c->out.note) : NULL;
	json_t *b = body_json ? json_loads(body_json, 0, NULL) : NULL;
	c->route->codec->start(st, status, b, NULL, data, len, stream);
	json_decref(b);
	/* a NUL after the bytes, not counted: the assertions compare strings */
	moat_serve_stream_append(st, "", 1);
	if (st->len)
		st->len--;
	return st->buf;
}

static void done(struct call *c, struct moat_serve_stream *st)
{
	moat_serve_out_clear(&c->out);
	if (st) {
		free(st->buf);
		free(st->note);
	}
}

TEST(e2b_route_create_and_kill)
{
	struct call c;
	struct moat_serve_stream st;
	static const char *const h[] = {"X-API-KEY", TOK, "Content-Type", "application/json", NULL};
	static const char body[] = "{\"templateID\":\"base\",\"envVars\":{\"A\":\"1\"},"
				   "\"allow_internet_access\":false}";
	call(&c, "POST", "/v2/sandboxes", NULL, body, strlen(body), h);
	ASSERT_TRUE(c.out.fwd != NULL);
	ASSERT_STREQ(fwd_str(&c, "op"), "create");
	ASSERT_STREQ(fwd_str(&c, "token"), TOK);
	json_t *args = json_object_get(c.out.fwd, "args");
	ASSERT_STREQ(json_string_value(json_object_get(args, "net")), "none");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(args, "env"), "A")), "1");
	char *b = answer(&c, 201, "{\"id\":\"sb-abc\",\"created_us\":1}", NULL, 0, false, &st);
	ASSERT_EQ(st.status, 201);
	ASSERT_CONTAINS(b, "\"sandboxID\":\"sb-abc\"");
	ASSERT_CONTAINS(b, "\"envdAccessToken\":\"" TOK "\"");
	done(&c, &st);
	/* the back's refusal in E2B's error shape */
	call(&c, "POST", "/v2/sandboxes", NULL, "{}", 2, h);
	b = answer(&c, 401, "{\"error\":{\"code\":\"unauthorized\",\"message\":\"bad\"}}", NULL, 0,
		   false, &st);
	ASSERT_EQ(st.status, 401);
	ASSERT_STREQ(b, "{\"code\":401,\"message\":\"bad\"}");
	done(&c, &st);
	/* refused by the front: a template, pause, a lifetime */
	call(&c, "POST", "/v2/sandboxes", NULL, "{\"templateID\":\"py\"}", 19, h);
	ASSERT_TRUE(c.out.fwd == NULL);
	ASSERT_EQ(c.out.status, 501);
	ASSERT_CONTAINS(c.out.body, "template");
	done(&c, NULL);
	call(&c, "POST", "/v2/sandboxes", NULL, "{\"timeout\":300}", 15, h);
	ASSERT_EQ(c.out.status, 501);
	done(&c, NULL);
	call(&c, "POST", "/sandboxes/sb-abc/pause", NULL, NULL, 0, h);
	ASSERT_EQ(c.out.status, 501);
	done(&c, NULL);
	/* kill: delete; 204; a 404 stays a 404 (the SDK's "false") */
	call(&c, "DELETE", "/sandboxes/sb-abc", NULL, NULL, 0, h);
	ASSERT_STREQ(fwd_str(&c, "op"), "delete");
	ASSERT_STREQ(fwd_str(&c, "sandbox"), "sb-abc");
	answer(&c, 200, "{\"deleted\":true}", NULL, 0, false, &st);
	ASSERT_EQ(st.status, 204);
	done(&c, &st);
	call(&c, "DELETE", "/sandboxes/sb-abc", NULL, NULL, 0, h);
	char *nb = answer(&c, 404, "{\"error\":{\"message\":\"no sandbox\"}}", NULL, 0, false, &st);
	ASSERT_EQ(st.status, 404);
	ASSERT_CONTAINS(nb, "\"code\":404");
	done(&c, &st);
}

TEST(e2b_route_credentials)
{
	struct call c;
	/* no X-API-KEY: forwarded with an empty token (the back says 401) */
	call(&c, "GET", "/sandboxes/sb-1", NULL, NULL, 0, NULL);
	ASSERT_STREQ(fwd_str(&c, "token"), "");
	done(&c, NULL);
	/* a key with a control byte: refused by the front */
	static const char *const bad[] = {"X-API-KEY", "e2b_\x01", NULL};
	call(&c, "GET", "/sandboxes/sb-1", NULL, NULL, 0, bad);
	ASSERT_EQ(c.out.status, 401);
	done(&c, NULL);
	/* the envd side: X-Access-Token is the token, E2b-Sandbox-Id the sandbox */
	static const char *const envd[] = {
		"E2b-Sandbox-Id",   "sb-1", "X-Access-Token", TOK, "Content-Type",
		"application/json", NULL};
	call(&c, "POST", "/process.Process/List", NULL, "{}", 2, envd);
	ASSERT_STREQ(fwd_str(&c, "op"), "exec.list");
	ASSERT_STREQ(fwd_str(&c, "sandbox"), "sb-1");
	ASSERT_STREQ(fwd_str(&c, "token"), TOK);
	done(&c, NULL);
	/* no sandbox named: not found, as a Connect unary error */
	static const char *const nosb[] = {"X-Access-Token", TOK, "Content-Type",
					   "application/json", NULL};
	call(&c, "POST", "/process.Process/List", NULL, "{}", 2, nosb);
	ASSERT_EQ(c.out.status, 404);
	ASSERT_CONTAINS(c.out.body, "\"code\":\"not_found\"");
	done(&c, NULL);
	/* another user than the sandbox's one: refused, not mapped */
	static const char *const root[] = {
		"E2b-Sandbox-Id",   "sb-1",	     "X-Access-Token", TOK, "Content-Type",
		"application/json", "Authorization", "Basic cm9vdDo=", NULL};
	call(&c, "POST", "/filesystem.Filesystem/ListDir", NULL, "{\"path\":\"/tmp\"}", 15, root);
	ASSERT_EQ(c.out.status, 403);
	ASSERT_CONTAINS(c.out.body, "permission_denied");
	done(&c, NULL);
	static const char *const user[] = {
		"E2b-Sandbox-Id",   "sb-1",	     "X-Access-Token", TOK, "Content-Type",
		"application/json", "Authorization", "Basic dXNlcjo=", NULL};
	call(&c, "POST", "/filesystem.Filesystem/ListDir", NULL, "{\"path\":\"/tmp\"}", 15, user);
	ASSERT_STREQ(fwd_str(&c, "op"), "files.list");
	done(&c, NULL);
	/* a malformed Authorization on a /v1 route is still refused */
	moat_serve_routes_enable_e2b(true);
	struct moat_serve_http_req rq = {.method = "GET", .path = "/v1/sandboxes", .query = ""};
	struct moat_serve_out out;
	moat_serve_dispatch(&rq, NULL, &out, NULL);
	ASSERT_EQ(out.status, 401);
	moat_serve_out_clear(&out);
}

TEST(e2b_route_process_stream)
{
	struct call c;
	struct moat_serve_stream st;
	static const char *const h[] = {"E2b-Sandbox-Id",
					"sb-1",
					"X-Access-Token",
					TOK,
					"Content-Type",
					"application/connect+json",
					"Connect-Timeout-Ms",
					"60000",
					NULL};
	static const char msg[] = "{\"process\":{\"cmd\":\"/bin/bash\",\"args\":[\"-l\",\"-c\","
				  "\"echo hi\"],\"cwd\":\"/tmp\"},\"stdin\":false}";
	size_t n;
	char *env = moat_connect_envelope(0, msg, strlen(msg), &n);
	call(&c, "POST", "/process.Process/Start", NULL, env, n, h);
	ASSERT_STREQ(fwd_str(&c, "op"), "exec");
	json_t *args = json_object_get(c.out.fwd, "args");
	ASSERT_STREQ(json_string_value(json_array_get(json_object_get(args, "argv"), 3)),
		     "echo hi");
	ASSERT_STREQ(json_string_value(json_object_get(args, "cwd")), "/tmp");
	/* the stream: start, data, end, the end of stream */
	answer(&c, 200, NULL, NULL, 0, true, &st);
	ASSERT_EQ(st.status, 200);
	ASSERT_STREQ(st.content_type, "application/connect+json");
	json_t *ev = json_pack("{s:s,s:i}", "type", "start", "num", 3);
	c.route->codec->event(&st, ev, NULL, 0);
	json_decref(ev);
	ev = json_pack("{s:s}", "type", "stdout");
	c.route->codec->event(&st, ev, "hi\n", 3);
	json_decref(ev);
	ev = json_pack("{s:s,s:s,s:i,s:i}", "type", "exit", "reason", "exited", "exit_code", 0,
		       "status", 0);
	c.route->codec->event(&st, ev, NULL, 0);
	json_decref(ev);
	c.route->codec->end(&st, false);
	/* four envelopes */
	const char *p = st.buf, *e = st.buf + st.len;
	const char *want[] = {"{\"event\":{\"start\":{\"pid\":3}}}",
			      "{\"event\":{\"data\":{\"stdout\":\"aGkK\"}}}",
			      "{\"event\":{\"end\":{\"exitCode\":0,\"exited\":true,\"status\":"
			      "\"exit status 0\"}}}",
			      "{}"};
	for (int i = 0; i < 4; i++) {
		ASSERT_TRUE(e - p >= 5);
		size_t l = (size_t)(unsigned char)p[3] << 8 | (unsigned char)p[4];
		ASSERT_EQ((unsigned char)p[0], i == 3 ? MOAT_CONNECT_FLAG_END : 0);
		ASSERT_EQ(l, strlen(want[i]));
		ASSERT_TRUE(memcmp(p + 5, want[i], l) == 0);
		p += 5 + l;
	}
	ASSERT_TRUE(p == e);
	done(&c, &st);
	/* the back refuses before the stream: still 200, an end of stream with the error */
	call(&c, "POST", "/process.Process/Start", NULL, env, n, h);
	answer(&c, 422, "{\"error\":{\"code\":\"command_not_found\",\"message\":\"nope\"}}", NULL,
	       0, false, &st);
	ASSERT_EQ(st.status, 200);
	ASSERT_EQ((unsigned char)st.buf[0], MOAT_CONNECT_FLAG_END);
	ASSERT_TRUE(memmem(st.buf, st.len, "not_found", 9) != NULL);
	done(&c, &st);
	/* the wrong content type, a second envelope: refused as a stream */
	static const char *const unary[] = {
		"E2b-Sandbox-Id",   "sb-1", "X-Access-Token", TOK, "Content-Type",
		"application/json", NULL};
	call(&c, "POST", "/process.Process/Start", NULL, env, n, unary);
	ASSERT_EQ(c.out.status, 200);
	ASSERT_EQ((unsigned char)c.out.body[0], MOAT_CONNECT_FLAG_END);
	done(&c, NULL);
	char two[1024];
	memcpy(two, env, n);
	memcpy(two + n, env, n);
	call(&c, "POST", "/process.Process/Start", NULL, two, 2 * n, h);
	ASSERT_TRUE(c.out.fwd == NULL);
	ASSERT_TRUE(memmem(c.out.body, c.out.body_len, "invalid_argument", 16) != NULL);
	done(&c, NULL);
	free(env);
	/* SendSignal: exec.signal with the pid */
	call(&c, "POST", "/process.Process/SendSignal", NULL,
	     "{\"process\":{\"pid\":3},\"signal\":\"SIGNAL_SIGKILL\"}", 47, unary);
	ASSERT_STREQ(fwd_str(&c, "op"), "exec.signal");
	args = json_object_get(c.out.fwd, "args");
	ASSERT_EQ(json_integer_value(json_object_get(args, "pid")), 3);
	ASSERT_STREQ(json_string_value(json_object_get(args, "signal")), "KILL");
	char *b = answer(&c, 404, "{\"error\":{\"message\":\"no exec 3\"}}", NULL, 0, false, &st);
	ASSERT_EQ(st.status, 404);
	ASSERT_CONTAINS(b, "\"code\":\"not_found\"");
	done(&c, &st);
	/* PTYs and the rest: unimplemented */
	call(&c, "POST", "/process.Process/Update", NULL, "{}", 2, unary);
	ASSERT_EQ(c.out.status, 501);
	done(&c, NULL);
}

TEST(e2b_route_files)
{
	struct call c;
	struct moat_serve_stream st;
	static const char *const g[] = {"E2b-Sandbox-Id", "sb-1", "X-Access-Token", TOK, NULL};
	call(&c, "GET", "/files", "path=%2Ftmp%2Fa.txt&username=user", NULL, 0, g);
	ASSERT_STREQ(fwd_str(&c, "op"), "files.read");
	ASSERT_STREQ(json_string_value(json_object_get(json_object_get(c.out.fwd, "args"), "path")),
		     "/tmp/a.txt");
	answer(&c, 200, NULL, "abc", 3, false, &st);
	ASSERT_EQ(st.status, 200);
	ASSERT_EQ(st.len, 3);
	done(&c, &st);
	call(&c, "GET", "/files", "path=rel.txt", NULL, 0, g);
	ASSERT_EQ(c.out.status, 400);
	done(&c, NULL);
	static const char *const up[] = {"E2b-Sandbox-Id",
					 "sb-1",
					 "X-Access-Token",
					 TOK,
					 "Content-Type",
					 "multipart/form-data; boundary=XyZ",
					 NULL};
	static const char body[] = "--XyZ\r\nContent-Disposition: form-data; name=\"file\"; "
				   "filename=\"/tmp/a.txt\"\r\n\r\nhello\r\n--XyZ--\r\n";
	call(&c, "POST", "/files", "path=%2Ftmp%2Fa.txt", body, strlen(body), up);
	ASSERT_STREQ(fwd_str(&c, "op"), "files.write");
	ASSERT_EQ(c.out.fwd_len, 5);
	ASSERT_TRUE(memcmp(c.out.fwd_data, "hello", 5) == 0);
	char *b = answer(&c, 200, "{\"path\":\"/tmp/a.txt\",\"size\":5}", NULL, 0, false, &st);
	ASSERT_STREQ(b, "[{\"name\":\"a.txt\",\"type\":\"file\",\"path\":\"/tmp/a.txt\"}]");
	done(&c, &st);
	/* ListDir: entries with their paths; Stat: the entry */
	static const char *const j[] = {
		"E2b-Sandbox-Id",   "sb-1", "X-Access-Token", TOK, "Content-Type",
		"application/json", NULL};
	call(&c, "POST", "/filesystem.Filesystem/ListDir", NULL, "{\"path\":\"/tmp\",\"depth\":1}",
	     25, j);
	ASSERT_STREQ(fwd_str(&c, "op"), "files.list");
	b = answer(&c, 200,
		   "{\"path\":\"/tmp\",\"entries\":[{\"name\":\"a.txt\",\"type\":\"file\","
		   "\"size\":5,\"mode\":420,\"mtime_s\":0}],\"truncated\":false}",
		   NULL, 0, false, &st);
	ASSERT_CONTAINS(b, "\"path\":\"/tmp/a.txt\"");
	ASSERT_CONTAINS(b, "\"type\":\"FILE_TYPE_FILE\"");
	ASSERT_CONTAINS(b, "\"size\":\"5\"");
	done(&c, &st);
	call(&c, "POST", "/filesystem.Filesystem/Stat", NULL, "{\"path\":\"/tmp/none\"}", 20, j);
	b = answer(&c, 404, "{\"error\":{\"code\":\"file_not_found\",\"message\":\"no\"}}", NULL, 0,
		   false, &st);
	ASSERT_EQ(st.status, 404);
	ASSERT_CONTAINS(b, "not_found");
	done(&c, &st);
	call(&c, "POST", "/filesystem.Filesystem/Remove", NULL, "{\"path\":\"/tmp/a.txt\"}", 21, j);
	ASSERT_STREQ(fwd_str(&c, "op"), "files.remove");
	ASSERT_TRUE(json_is_true(json_object_get(json_object_get(c.out.fwd, "args"), "recursive")));
	done(&c, NULL);
	call(&c, "POST", "/filesystem.Filesystem/WatchDir", NULL, "{}", 2, j);
	ASSERT_EQ(c.out.status, 501);
	done(&c, NULL);
}

TEST(e2b_routes_off_without_flag)
{
	struct moat_serve_http_req rq = {.method = "POST",
					 .path = "/v2/sandboxes",
					 .query = "",
					 .body = "{}",
					 .body_len = 2};
	struct moat_serve_out out;
	moat_serve_routes_enable_e2b(false);
	moat_serve_dispatch(&rq, "", &out, NULL);
	ASSERT_EQ(out.status, 404);
	ASSERT_TRUE(out.fwd == NULL);
	moat_serve_out_clear(&out);
	/* control: the same request with the routes on is forwarded */
	moat_serve_routes_enable_e2b(true);
	moat_serve_dispatch(&rq, "", &out, NULL);
	ASSERT_TRUE(out.fwd != NULL);
	moat_serve_out_clear(&out);
}
