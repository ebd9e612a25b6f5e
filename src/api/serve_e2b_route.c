/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat serve --e2b`: E2B's routes in serve's route table (serve_route.h).
 * Pure, in the confined front: each handler checks the E2B request
 * (serve_e2b.c, serve_connect.c) and forwards one request of serve's own
 * protocol (serve_proto.h) to the back, with the E2B credential as its
 * token; each codec turns the back's frames into E2B's answer (the REST
 * objects, Connect unary messages or a Connect stream of process events).
 * docs/E2B.md says what is and is not supported.
 */
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/serve_connect.h"
#include "api/serve_e2b.h"
#include "api/serve_proto.h"
#include "api/serve_route.h"

/* ---- replies the front makes itself, in each wire format ---- */

enum wire {
	W_REST, /* {"code":HTTP,"message":...} */
	W_UNARY, /* Connect unary: HTTP status of the code, {"code":"name","message":...} */
	W_STREAM, /* Connect stream: 200, one end-of-stream envelope */
};

static int reply_raw(struct moat_serve_out *out, int status, const char *type, char *body,
		     size_t len)
{
	moat_serve_out_clear(out);
	if (!body)
		return moat_serve_reply_error(out, 500, "internal", "out of memory");
	out->status = status;
	out->content_type = type;
	out->body = body;
	out->body_len = len;
	return -EINVAL;
}

static enum moat_connect_code code_of_err(int err)
{
	switch (err) {
	case -EOPNOTSUPP:
		return MOAT_CONNECT_UNIMPLEMENTED;
	case -EPERM:
		return MOAT_CONNECT_PERMISSION_DENIED;
	case -EACCES:
		return MOAT_CONNECT_UNAUTHENTICATED;
	case -EFBIG:
		return MOAT_CONNECT_RESOURCE_EXHAUSTED;
	case -ENOENT:
		return MOAT_CONNECT_NOT_FOUND;
	case -ENOMEM:
		return MOAT_CONNECT_INTERNAL;
	default:
		return MOAT_CONNECT_INVALID_ARGUMENT;
	}
}

static int reply(struct moat_serve_out *out, enum wire w, enum moat_connect_code c, const char *msg)
{
	size_t n;
	char *b;
	switch (w) {
	case W_STREAM:
		b = moat_connect_end_stream(c, msg, &n);
		return reply_raw(out, 200, "application/connect+json", b, b ? n : 0);
	case W_UNARY:
		b = moat_connect_error_json(c, msg);
		return reply_raw(out, (int)moat_connect_code_http(c), "application/json", b,
				 b ? strlen(b) : 0);
	default:
		b = moat_e2b_rest_error(moat_connect_code_http(c), msg);
		return reply_raw(out, (int)moat_connect_code_http(c), "application/json", b,
				 b ? strlen(b) : 0);
	}
}

static int reply_bad(struct moat_serve_out *out, enum wire w, const struct moat_e2b_bad *b)
{
	return reply(out, w, code_of_err(b->err), b->msg);
}

/* ---- what every E2B request carries ---- */

/* A credential header: printable ASCII, bounded; "" if absent. NULL if
 * malformed. */
static const char *credential(const struct moat_serve_http_req *rq, const char *name)
{
	const char *v = moat_serve_header(rq, name);
	if (!v)
		return "";
	size_t n = strlen(v);
	if (n == 0 || n > MOAT_SERVE_MAX_TOKEN)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (v[i] < 0x21 || v[i] > 0x7e)
			return NULL;
	return v;
}

/* The envd user the SDK may name (Authorization: Basic base64("user:")):
 * absent or "user". moat runs every process as the sandbox's one user. */
static int check_user(const struct moat_serve_http_req *rq, struct moat_e2b_bad *b)
{
	const char *a = moat_serve_header(rq, "Authorization");
	if (!a || strncasecmp(a, "Bearer ", 7) == 0)
		return 0;
	if (strncasecmp(a, "Basic ", 6) != 0 || strlen(a + 6) > 256) {
		b->err = -EACCES;
		snprintf(b->msg, sizeof(b->msg), "Authorization: Basic USER: or none");
		return -EACCES;
	}
	uint8_t user[200];
	size_t ul = sizeof(user) - 1;
	struct base64_decode_ctx d;
	base64_decode_init(&d);
	if (!base64_decode_update(&d, &ul, user, strlen(a + 6), a + 6) ||
	    !base64_decode_final(&d)) {
		b->err = -EACCES;
		snprintf(b->msg, sizeof(b->msg), "Authorization: not base64");
		return -EACCES;
	}
	user[ul] = 0;
	char *colon = memchr(user, ':', ul);
	if (colon)
		*colon = 0;
	if (user[0] && strcmp((char *)user, "user") != 0) {
		b->err = -EPERM;
		snprintf(b->msg, sizeof(b->msg),
			 "user '%.64s': moat runs every process and file operation as the "
			 "sandbox's one user ('user')",
			 (char *)user);
		return -EPERM;
	}
	return 0;
}

/* Forwards op for the request's sandbox with token (taken from the
 * request's own credential header). */
static int forward(struct moat_serve_out *out, enum wire w, const char *op, const char *sandbox,
		   const char *token, json_t *args, const char *data, size_t len)
{
	if (moat_serve_forward(out, op, sandbox, args, data, len) < 0)
		return -EINVAL;
	if (json_object_set_new(out->fwd, "token", json_string(token)) < 0)
		return reply(out, w, MOAT_CONNECT_INTERNAL, "out of memory");
	return 0;
}

/* ---- REST: the lifecycle ---- */

static int rest_target(const struct moat_serve_http_req *rq, struct moat_e2b_target *t,
		       const char **ret_token, struct moat_serve_out *out)
{
	int k = moat_e2b_route(rq->method, rq->path, t);
	if (k == -EINVAL)
		return reply(out, W_REST, MOAT_CONNECT_NOT_FOUND, "no such sandbox");
	if (k < 0)
		return reply(out, W_REST, MOAT_CONNECT_NOT_FOUND, "no such endpoint");
	*ret_token = credential(rq, "X-API-KEY");
	if (!*ret_token)
		return reply(out, W_REST, MOAT_CONNECT_UNAUTHENTICATED,
			     "X-API-KEY: printable ASCII, at most 512 bytes");
	return 0;
}

static int h_rest_create(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	struct moat_e2b_target t;
	struct moat_e2b_create c;
	struct moat_e2b_bad b;
	const char *token;
	if (rest_target(rq, &t, &token, out) < 0)
		return -EINVAL;
	if (moat_e2b_parse_create(rq->body, rq->body_len, &c, &b) < 0)
		return reply_bad(out, W_REST, &b);
	json_t *args = json_object(), *env = json_object();
	for (size_t i = 0; args && env && i < c.n_env; i++) {
		char *eq = strchr(c.env[i], '=');
		*eq = 0;
		json_object_set_new(env, c.env[i], json_string(eq + 1));
	}
	if (args && env && c.n_env)
		json_object_set_new(args, "env", json_incref(env));
	json_decref(env);
	/* allow_internet_access: false narrows to no network; true asks for
	 * the network, which the back refuses if the operator's policy has
	 * none (a request never widens it) */
	if (args && c.internet >= 0)
		json_object_set_new(args, "net", json_string(c.internet ? "allow" : "none"));
	moat_e2b_create_done(&c);
	if (c.timeout_s) {
		json_decref(args);
		/* E2B's timeout is the sandbox's lifetime; serve's create has
		 * none yet: refused, not ignored */
		return reply(out, W_REST, MOAT_CONNECT_UNIMPLEMENTED,
			     "create: 'timeout' (a sandbox lifetime) is not supported by moat "
			     "serve; the sandbox lives until it is killed");
	}
	if (!args)
		return reply(out, W_REST, MOAT_CONNECT_INTERNAL, "out of memory");
	if (forward(out, W_REST, "create", NULL, token, args, NULL, 0) < 0)
		return -EINVAL;
	/* the create answer names the credential for the in-sandbox calls:
	 * the caller's own key (docs/E2B.md) */
	out->note = strdup(token);
	return out->note ? 0 : reply(out, W_REST, MOAT_CONNECT_INTERNAL, "out of memory");
}

static int h_rest_sandbox(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	struct moat_e2b_target t;
	const char *token;
	if (rest_target(rq, &t, &token, out) < 0)
		return -EINVAL;
	switch (t.route) {
	case MOAT_E2B_INFO:
	case MOAT_E2B_KILL:
		if (rq->body_len)
			return reply(out, W_REST, MOAT_CONNECT_INVALID_ARGUMENT,
				     "the body must be empty");
		return forward(out, W_REST, t.route == MOAT_E2B_INFO ? "inspect" : "delete",
			       t.sandbox, token, NULL, NULL, 0);
	case MOAT_E2B_CONNECT: {
		/* {"timeout":N,"memory":bool}: nothing is paused, so nothing
		 * to resume; a new lifetime is not supported */
		static const char *const fields[] = {"timeout", "memory", NULL};
		json_t *o = moat_serve_body_object(rq, out);
		if (!o)
			return -EINVAL;
		if (moat_serve_only_fields(o, fields, out) < 0) {
			json_decref(o);
			return -EINVAL;
		}
		json_decref(o);
		if (forward(out, W_REST, "inspect", t.sandbox, token, NULL, NULL, 0) < 0)
			return -EINVAL;
		out->note = strdup(token);
		return out->note ? 0 : reply(out, W_REST, MOAT_CONNECT_INTERNAL, "out of memory");
	}
	case MOAT_E2B_LIST:
		return forward(out, W_REST, "list", NULL, token, NULL, NULL, 0);
	default: {
		char m[256];
		snprintf(m, sizeof(m),
			 "%s: not supported by moat serve --e2b (no templates, pause/resume, "
			 "timeouts, metrics, snapshots; docs/E2B.md)",
			 t.name);
		return reply(out, W_REST, MOAT_CONNECT_UNIMPLEMENTED, m);
	}
	}
}

/* ---- envd: the in-sandbox services ---- */

struct envd {
	struct moat_e2b_target t;
	const char *token;
	const char *sandbox;
	enum wire w;
	const char *msg; /* the Connect message */
	size_t msg_len;
};

/* The target, the sandbox (E2b-Sandbox-Id), the credential
 * (X-Access-Token), the user; for a Connect call its content type,
 * protocol version, encoding and message. */
static int envd_begin(const struct moat_serve_http_req *rq, struct envd *e,
		      struct moat_serve_out *out)
{
	struct moat_e2b_bad b;
	memset(e, 0, sizeof(*e));
	if (moat_e2b_route(rq->method, rq->path, &e->t) < 0)
		return reply(out, W_REST, MOAT_CONNECT_NOT_FOUND, "no such endpoint");
	e->w = e->t.rpc ? (e->t.stream ? W_STREAM : W_UNARY) : W_REST;
	if (e->t.rpc) {
		bool stream;
		const char *ct = moat_serve_header(rq, "Content-Type");
		const char *ver = moat_serve_header(rq, "Connect-Protocol-Version");
		const char *enc = moat_serve_header(
			rq, e->t.stream ? "Connect-Content-Encoding" : "Content-Encoding");
		int k = moat_connect_content_type(ct, &stream);
		if (k == -EPROTONOSUPPORT)
			return reply(out, e->w, MOAT_CONNECT_UNIMPLEMENTED,
				     "the binary encoding is not supported: JSON only");
		if (k < 0 || stream != e->t.stream)
			return reply(out, e->w, MOAT_CONNECT_INVALID_ARGUMENT,
				     e->t.stream ? "Content-Type: must be application/connect+json"
						 : "Content-Type: must be application/json");
		if (ver && strcmp(ver, "1") != 0)
			return reply(out, e->w, MOAT_CONNECT_INVALID_ARGUMENT,
				     "Connect-Protocol-Version: must be 1");
		if (enc && strcasecmp(enc, "identity") != 0)
			return reply(out, e->w, MOAT_CONNECT_UNIMPLEMENTED,
				     "compressed messages are not supported");
		e->msg = rq->body;
		e->msg_len = rq->body_len;
		if (e->t.stream &&
		    moat_connect_unenvelope(rq->body, rq->body_len, &e->msg, &e->msg_len) < 0)
			return reply(out, e->w, MOAT_CONNECT_INVALID_ARGUMENT,
				     "the body must be one uncompressed envelope");
	}
	e->sandbox = moat_serve_header(rq, "E2b-Sandbox-Id");
	if (!e->sandbox || !moat_e2b_id_ok(e->sandbox))
		return reply(out, e->w, MOAT_CONNECT_NOT_FOUND,
			     "E2b-Sandbox-Id: names no sandbox (E2B_SANDBOX_URL serves them all)");
	e->token = credential(rq, "X-Access-Token");
	if (!e->token)
		return reply(out, e->w, MOAT_CONNECT_UNAUTHENTICATED,
			     "X-Access-Token: printable ASCII, at most 512 bytes");
	if (check_user(rq, &b) < 0)
		return reply_bad(out, e->w, &b);
	return 0;
}

static int unsupported_rpc(struct moat_serve_out *out, const struct envd *e, const char *why)
{
	char m[256];
	snprintf(m, sizeof(m), "%s: not supported by moat serve --e2b (%s; docs/E2B.md)", e->t.name,
		 why);
	return reply(out, e->w, MOAT_CONNECT_UNIMPLEMENTED, m);
}

static json_t *strv_json(char *const *v, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static int h_process(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	struct envd e;
	struct moat_e2b_bad b;
	if (envd_begin(rq, &e, out) < 0)
		return -EINVAL;
	switch (e.t.route) {
	case MOAT_E2B_PROC_START: {
		struct moat_e2b_start s;
		uint64_t tmo;
		/* the SDK's timeoutMs (60 s by default) is its own deadline:
		 * when it gives up, the connection closes and the back kills
		 * the process (serve's cancel), as E2B does */
		const char *th = moat_serve_header(rq, "Connect-Timeout-Ms");
		if (th && moat_connect_timeout_ms(th, &tmo) < 0)
			return reply(out, e.w, MOAT_CONNECT_INVALID_ARGUMENT,
				     "Connect-Timeout-Ms: 1 to 10 digits");
		if (moat_e2b_parse_start(e.msg, e.msg_len, &s, &b) < 0)
			return reply_bad(out, e.w, &b);
		if (s.stdin_open || s.tag) {
			moat_e2b_start_done(&s);
			return unsupported_rpc(out, &e,
					       "interactive stdin and process tags are not "
					       "provided");
		}
		json_t *args = json_object(), *env = json_object();
		if (args)
			json_object_set_new(args, "argv", strv_json(s.argv, s.n_args));
		for (size_t i = 0; env && i < s.n_env; i++) {
			char *eq = strchr(s.env[i], '=');
			*eq = 0;
			json_object_set_new(env, s.env[i], json_string(eq + 1));
		}
		if (args && env && s.n_env)
			json_object_set_new(args, "env", json_incref(env));
		json_decref(env);
		if (args && s.cwd)
			json_object_set_new(args, "cwd", json_string(s.cwd));
		moat_e2b_start_done(&s);
		if (!args || !json_object_get(args, "argv"))
			return reply(out, e.w, MOAT_CONNECT_INTERNAL, "out of memory");
		return forward(out, e.w, "exec", e.sandbox, e.token, args, NULL, 0);
	}
	case MOAT_E2B_PROC_LIST:
		if (moat_e2b_parse_empty(e.msg, e.msg_len, &b) < 0)
			return reply_bad(out, e.w, &b);
		return forward(out, e.w, "exec.list", e.sandbox, e.token, NULL, NULL, 0);
	case MOAT_E2B_PROC_SIGNAL: {
		struct moat_e2b_proc_call p;
		if (moat_e2b_parse_proc_call(e.t.route, e.msg, e.msg_len, &p, &b) < 0)
			return reply_bad(out, e.w, &b);
		if (!p.pid)
			return unsupported_rpc(out, &e, "process tags are not provided");
		json_t *args = json_pack("{s:I,s:s}", "pid", (json_int_t)p.pid, "signal",
					 p.signal == SIGKILL ? "KILL" : "TERM");
		if (!args)
			return reply(out, e.w, MOAT_CONNECT_INTERNAL, "out of memory");
		return forward(out, e.w, "exec.signal", e.sandbox, e.token, args, NULL, 0);
	}
	case MOAT_E2B_PROC_CONNECT:
	case MOAT_E2B_PROC_INPUT:
	case MOAT_E2B_PROC_CLOSE_STDIN: {
		struct moat_e2b_proc_call p;
		if (moat_e2b_parse_proc_call(e.t.route, e.msg, e.msg_len, &p, &b) < 0)
			return reply_bad(out, e.w, &b);
		moat_e2b_proc_call_done(&p);
		return unsupported_rpc(out, &e,
				       "a process's output is streamed to the call that started "
				       "it; interactive stdin is not provided");
	}
	default:
		return unsupported_rpc(out, &e, "PTYs, Update and StreamInput are not provided");
	}
}

static int h_filesystem(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	struct envd e;
	struct moat_e2b_bad b;
	struct moat_e2b_fs_call f;
	if (envd_begin(rq, &e, out) < 0)
		return -EINVAL;
	const char *op;
	switch (e.t.route) {
	case MOAT_E2B_FS_STAT:
		op = "files.stat";
		break;
	case MOAT_E2B_FS_LIST:
		op = "files.list";
		break;
	case MOAT_E2B_FS_REMOVE:
		op = "files.remove";
		break;
	default:
		return unsupported_rpc(out, &e,
				       "MakeDir, Move and directory watches are not provided");
	}
	if (moat_e2b_parse_fs_call(e.t.route, e.msg, e.msg_len, &f, &b) < 0)
		return reply_bad(out, e.w, &b);
	json_t *args = json_pack("{s:s}", "path", f.path);
	if (args && e.t.route == MOAT_E2B_FS_REMOVE)
		json_object_set_new(args, "recursive", json_true());
	if (!args)
		return reply(out, e.w, MOAT_CONNECT_INTERNAL, "invalid path (not UTF-8?)");
	if (forward(out, e.w, op, e.sandbox, e.token, args, NULL, 0) < 0)
		return -EINVAL;
	/* the answer names the entry by its path */
	out->note = strdup(f.path);
	return out->note ? 0 : reply(out, e.w, MOAT_CONNECT_INTERNAL, "out of memory");
}

static int h_files(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	struct envd e;
	struct moat_e2b_bad b;
	char path[MOAT_E2B_MAX_PATH + 1];
	if (envd_begin(rq, &e, out) < 0)
		return -EINVAL;
	if (moat_e2b_parse_files_query(rq->query, path, &b) < 0)
		return reply_bad(out, W_REST, &b);
	const char *enc = moat_serve_header(rq, "Content-Encoding");
	if (enc && strcasecmp(enc, "identity") != 0)
		return reply(out, W_REST, MOAT_CONNECT_UNIMPLEMENTED,
			     "files: gzip is not supported");
	if (e.t.route == MOAT_E2B_FILES_GET) {
		if (!path[0])
			return reply(out, W_REST, MOAT_CONNECT_INVALID_ARGUMENT,
				     "files: 'path' is required");
		json_t *args = json_pack("{s:s}", "path", path);
		if (!args)
			return reply(out, W_REST, MOAT_CONNECT_INVALID_ARGUMENT,
				     "files: 'path' is not UTF-8");
		return forward(out, W_REST, "files.read", e.sandbox, e.token, args, NULL, 0);
	}
	struct moat_e2b_part parts[1];
	size_t n;
	int k = moat_e2b_parse_upload(moat_serve_header(rq, "Content-Type"), rq->body, rq->body_len,
				      path, parts, 1, &n, &b);
	if (k < 0)
		return reply_bad(out, W_REST, &b);
	json_t *args = json_pack("{s:s}", "path", parts[0].path);
	if (!args)
		return reply(out, W_REST, MOAT_CONNECT_INVALID_ARGUMENT, "files: path not UTF-8");
	if (forward(out, W_REST, "files.write", e.sandbox, e.token, args, parts[0].data,
		    parts[0].len) < 0)
		return -EINVAL;
	out->note = strdup(parts[0].path);
	return out->note ? 0 : reply(out, W_REST, MOAT_CONNECT_INTERNAL, "out of memory");
}

static int h_health(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	struct envd e;
	if (envd_begin(rq, &e, out) < 0)
		return -EINVAL;
	return forward(out, W_REST, "inspect", e.sandbox, e.token, NULL, NULL, 0);
}

/* ---- the answers: the back's frames as E2B's ---- */

static const char *back_message(json_t *body)
{
	const char *m =
		json_string_value(json_object_get(json_object_get(body, "error"), "message"));
	return m ? m : "the request failed";
}

/* The Connect code of one of the back's error answers. */
static enum moat_connect_code back_code(int status, json_t *body)
{
	const char *c = json_string_value(json_object_get(json_object_get(body, "error"), "code"));
	switch (status) {
	case 400:
	case 413:
		return status == 413 ? MOAT_CONNECT_RESOURCE_EXHAUSTED
				     : MOAT_CONNECT_INVALID_ARGUMENT;
	case 401:
		return MOAT_CONNECT_UNAUTHENTICATED;
	case 403:
		return MOAT_CONNECT_PERMISSION_DENIED;
	case 404:
		return MOAT_CONNECT_NOT_FOUND;
	case 409:
		return MOAT_CONNECT_FAILED_PRECONDITION;
	case 410:
	case 503:
		return MOAT_CONNECT_UNAVAILABLE;
	case 422:
		return c && streq(c, "command_not_found") ? MOAT_CONNECT_NOT_FOUND
							  : MOAT_CONNECT_INVALID_ARGUMENT;
	case 429:
		return MOAT_CONNECT_RESOURCE_EXHAUSTED;
	case 501:
		return MOAT_CONNECT_UNIMPLEMENTED;
	default:
		return MOAT_CONNECT_INTERNAL;
	}
}

static void put_text(struct moat_serve_stream *s, int status, const char *type, char *text)
{
	s->status = status;
	s->content_type = type;
	if (!text) {
		s->failed = true;
		return;
	}
	moat_serve_stream_append(s, text, strlen(text));
	free(text);
}

static void rest_error(struct moat_serve_stream *s, int status, json_t *body)
{
	put_text(s, status, "application/json",
		 moat_e2b_rest_error((unsigned)status, back_message(body)));
}

static void unary_error(struct moat_serve_stream *s, int status, json_t *body)
{
	enum moat_connect_code c = back_code(status, body);
	put_text(s, (int)moat_connect_code_http(c), "application/json",
		 moat_connect_error_json(c, back_message(body)));
}

static bool ok(int status)
{
	return status >= 200 && status < 300;
}

static void no_event(struct moat_serve_stream *s, json_t *event, const char *data, size_t len)
{
}
static void no_end(struct moat_serve_stream *s, bool aborted)
{
	s->streaming = false;
}

static uint64_t created_us(json_t *body)
{
	json_t *c = json_object_get(body, "created_us");
	return json_is_integer(c) && json_integer_value(c) > 0 ? (uint64_t)json_integer_value(c)
							       : 0;
}

/* create, connect: the Sandbox object with the credential for envd */
static void c_sandbox_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			    const char *data, size_t len, bool stream)
{
	const char *id = json_string_value(json_object_get(body, "id"));
	if (!ok(status) || !id || stream)
		return rest_error(s, ok(status) ? 502 : status, body);
	put_text(s, status == 201 ? 201 : 200, "application/json",
		 moat_e2b_sandbox_json(id, s->note, created_us(body), 0, false));
}

static void c_info_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			 const char *data, size_t len, bool stream)
{
	const char *id = json_string_value(json_object_get(body, "id"));
	if (!ok(status) || !id || stream)
		return rest_error(s, ok(status) ? 502 : status, body);
	put_text(s, 200, "application/json",
		 moat_e2b_sandbox_json(id, NULL, created_us(body), 0, true));
}

static void c_kill_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			 const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return rest_error(s, status, body);
	s->status = 204;
	s->content_type = "application/json";
}

static void c_list_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			 const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return rest_error(s, status, body);
	json_t *a = json_array(), *x;
	size_t i;
	json_array_foreach(json_object_get(body, "sandboxes"), i, x)
	{
		const char *id = json_string_value(json_object_get(x, "id"));
		char *t = id ? moat_e2b_sandbox_json(id, NULL, created_us(x), 0, true) : NULL;
		json_t *o = t ? json_loads(t, 0, NULL) : NULL;
		free(t);
		if (o)
			json_array_append_new(a, o);
	}
	put_text(s, 200, "application/json", a ? json_dumps(a, JSON_COMPACT) : NULL);
	json_decref(a);
}

/* GET /health: 204 while the sandbox is there; 502 when it is gone (the
 * SDK's probe reads that as "not running") */
static void c_health_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			   const char *data, size_t len, bool stream)
{
	if (status == 404 || status == 410)
		return rest_error(s, 502, body);
	if (!ok(status))
		return rest_error(s, status, body);
	s->status = 204;
	s->content_type = "application/json";
}

static void c_read_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			 const char *data, size_t len, bool stream)
{
	if (!ok(status) || body || stream)
		return rest_error(s, ok(status) ? 502 : status, body);
	s->status = 200;
	s->content_type = "application/octet-stream";
	moat_serve_stream_append(s, data, len);
}

static void c_write_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			  const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return rest_error(s, status, body);
	struct moat_e2b_part p = {.len = 0};
	snprintf(p.path, sizeof(p.path), "%s", s->note ? s->note : "");
	put_text(s, 200, "application/json", moat_e2b_upload_json(&p, 1));
}

static void file_info(json_t *e, struct moat_file_info *fi)
{
	const char *t = json_string_value(json_object_get(e, "type"));
	const char *n = json_string_value(json_object_get(e, "name"));
	memset(fi, 0, sizeof(*fi));
	fi->type = !t		      ? MOAT_FILE_OTHER
		: streq(t, "file")    ? MOAT_FILE_REG
		: streq(t, "dir")     ? MOAT_FILE_DIR
		: streq(t, "symlink") ? MOAT_FILE_SYMLINK
				      : MOAT_FILE_OTHER;
	fi->size = (uint64_t)json_integer_value(json_object_get(e, "size"));
	fi->mode = (unsigned)json_integer_value(json_object_get(e, "mode"));
	fi->mtime_s = (uint64_t)json_integer_value(json_object_get(e, "mtime_s"));
	snprintf(fi->name, sizeof(fi->name), "%s", n ? n : "");
}

static void c_listdir_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			    const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return unary_error(s, status, body);
	json_t *ents = json_object_get(body, "entries"), *e;
	size_t n = json_array_size(ents), i;
	struct moat_file_info *fi = calloc(n ? n : 1, sizeof(*fi));
	if (!fi) {
		s->failed = true;
		return;
	}
	json_array_foreach(ents, i, e) file_info(e, &fi[i]);
	put_text(s, 200, "application/json", moat_e2b_list_json(s->note ? s->note : "/", fi, n));
	free(fi);
}

static void c_stat_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			 const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return unary_error(s, status, body);
	struct moat_file_info fi;
	file_info(body, &fi);
	fi.name[0] = 0; /* the entry is the path itself */
	put_text(s, 200, "application/json",
		 moat_e2b_entry_json(s->note ? s->note : "/", &fi, "entry"));
}

static void c_empty_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			  const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return unary_error(s, status, body);
	put_text(s, 200, "application/json", strdup("{}"));
}

static void c_proclist_start(struct moat_serve_stream *s, int status, json_t *body,
			     const char *type, const char *data, size_t len, bool stream)
{
	if (!ok(status))
		return unary_error(s, status, body);
	json_t *procs = json_object_get(body, "execs"), *p;
	size_t n = json_array_size(procs), i;
	struct moat_e2b_proc_info *pi = calloc(n ? n : 1, sizeof(*pi));
	char ***argvs = calloc(n ? n : 1, sizeof(*argvs));
	if (!pi || !argvs) {
		free(pi);
		free(argvs);
		s->failed = true;
		return;
	}
	json_array_foreach(procs, i, p)
	{
		json_t *av = json_object_get(p, "argv"), *a;
		size_t na = json_array_size(av), k;
		argvs[i] = calloc(na + 1, sizeof(char *));
		json_array_foreach(av, k, a) if (argvs[i]) argvs[i][k] =
			(char *)(uintptr_t)json_string_value(a);
		pi[i].pid = (uint32_t)json_integer_value(json_object_get(p, "num"));
		pi[i].argv = argvs[i];
		pi[i].cwd = json_string_value(json_object_get(p, "cwd"));
	}
	put_text(s, 200, "application/json", moat_e2b_proc_list_json(pi, n));
	for (i = 0; i < n; i++)
		free(argvs[i]);
	free(argvs);
	free(pi);
}

/* process.Process/Start: a Connect stream of process events */
static void stream_put(struct moat_serve_stream *s, char *msg, uint8_t flags)
{
	if (!msg) {
		s->failed = true;
		return;
	}
	uint8_t head[MOAT_CONNECT_ENVELOPE_HEAD];
	moat_connect_envelope_head(flags, strlen(msg), head);
	moat_serve_stream_append(s, head, sizeof(head));
	moat_serve_stream_append(s, msg, strlen(msg));
	free(msg);
}

static void stream_finish(struct moat_serve_stream *s, enum moat_connect_code c, const char *msg)
{
	size_t n;
	char *e = moat_connect_end_stream(c, msg, &n);
	if (!e) {
		s->failed = true;
		return;
	}
	moat_serve_stream_append(s, e, n);
	free(e);
}

static void c_exec_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
			 const char *data, size_t len, bool stream)
{
	s->status = 200;
	s->content_type = "application/connect+json";
	if (!stream || !ok(status)) {
		/* an error before the stream: still a stream, of its end only */
		stream_finish(s, ok(status) ? MOAT_CONNECT_INTERNAL : back_code(status, body),
			      back_message(body));
		return;
	}
	s->streaming = true;
}

static void c_exec_event(struct moat_serve_stream *s, json_t *event, const char *data, size_t len)
{
	const char *t = json_string_value(json_object_get(event, "type"));
	if (!t || !s->streaming)
		return;
	if (streq(t, "start")) {
		json_t *num = json_object_get(event, "num");
		stream_put(s, moat_e2b_event_start((uint32_t)json_integer_value(num)), 0);
	} else if (streq(t, "stdout") || streq(t, "stderr")) {
		/* at most MOAT_SERVE_CHUNK a frame: one event each */
		stream_put(s, moat_e2b_event_data(streq(t, "stderr"), data, len), 0);
	} else if (streq(t, "exit")) {
		const char *reason = json_string_value(json_object_get(event, "reason"));
		if (reason && streq(reason, "destroyed")) {
			stream_finish(s, MOAT_CONNECT_UNAVAILABLE, "the sandbox was killed");
			s->streaming = false;
			return;
		}
		struct moat_proc_status ps = {
			.exit_code = (int)json_integer_value(json_object_get(event, "exit_code")),
			.status = (int)json_integer_value(json_object_get(event, "status")),
			.signal = (int)json_integer_value(json_object_get(event, "signal")),
		};
		ps.reason = !reason		    ? MOAT_REASON_EXITED
			: streq(reason, "signaled") ? MOAT_REASON_SIGNALED
			: streq(reason, "timeout")  ? MOAT_REASON_TIMEOUT
			: streq(reason, "exited")   ? MOAT_REASON_EXITED
						    : MOAT_REASON_SIGNALED;
		const char *se = json_string_value(json_object_get(event, "stdio_error"));
		if (se)
			snprintf(ps.stdio_error, sizeof(ps.stdio_error), "%s", se);
		stream_put(s, moat_e2b_event_end(&ps), 0);
	}
}

static void c_exec_end(struct moat_serve_stream *s, bool aborted)
{
	if (s->streaming)
		stream_finish(s, aborted ? MOAT_CONNECT_UNAVAILABLE : MOAT_CONNECT_OK,
			      aborted ? "the server ended the stream" : NULL);
	s->streaming = false;
}

#define CODEC(name, start_fn) \
	static const struct moat_serve_codec name = { \
		.start = start_fn, .event = no_event, .end = no_end}
CODEC(codec_sandbox, c_sandbox_start);
CODEC(codec_info, c_info_start);
CODEC(codec_kill, c_kill_start);
CODEC(codec_list, c_list_start);
CODEC(codec_health, c_health_start);
CODEC(codec_read, c_read_start);
CODEC(codec_write, c_write_start);
CODEC(codec_listdir, c_listdir_start);
CODEC(codec_stat, c_stat_start);
CODEC(codec_empty, c_empty_start);
CODEC(codec_proclist, c_proclist_start);
static const struct moat_serve_codec codec_exec = {
	.start = c_exec_start, .event = c_exec_event, .end = c_exec_end};

#define OWN MOAT_SERVE_ROUTE_OWN_TOKEN
#define RAW (MOAT_SERVE_ROUTE_OWN_TOKEN | MOAT_SERVE_ROUTE_RAW_BODY)
const struct moat_serve_route moat_serve_routes_e2b[] = {
	/* the lifecycle REST API (E2B_API_URL) */
	{"POST", "/v2/sandboxes", h_rest_create, &codec_sandbox, OWN, NULL},
	{"POST", "/sandboxes", h_rest_create, &codec_sandbox, OWN, NULL},
	{"GET", "/v2/sandboxes", h_rest_sandbox, &codec_list, OWN, NULL},
	{"GET", "/sandboxes", h_rest_sandbox, &codec_list, OWN, NULL},
	{"GET", "/sandboxes/{id}", h_rest_sandbox, &codec_info, OWN, NULL},
	{"DELETE", "/sandboxes/{id}", h_rest_sandbox, &codec_kill, OWN, NULL},
	{"POST", "/v2/sandboxes/{id}/connect", h_rest_sandbox, &codec_sandbox, OWN, NULL},
	{"POST", "/sandboxes/{id}/{what}", h_rest_sandbox, NULL, OWN, NULL},
	{"GET", "/sandboxes/{id}/{what}", h_rest_sandbox, NULL, OWN, NULL},
	{"PUT", "/sandboxes/{id}/{what}", h_rest_sandbox, NULL, OWN, NULL},
	{"POST", "/v2/sandboxes/{id}/{what}", h_rest_sandbox, NULL, OWN, NULL},
	/* the in-sandbox services (E2B_SANDBOX_URL; E2b-Sandbox-Id) */
	{"GET", "/health", h_health, &codec_health, OWN, NULL},
	{"GET", "/files", h_files, &codec_read, OWN, NULL},
	{"POST", "/files", h_files, &codec_write, RAW, NULL},
	{"POST", "/process.Process/Start", h_process, &codec_exec, RAW, NULL},
	{"POST", "/process.Process/List", h_process, &codec_proclist, OWN, NULL},
	{"POST", "/process.Process/SendSignal", h_process, &codec_empty, OWN, NULL},
	{"POST", "/process.Process/{m}", h_process, NULL, RAW, NULL},
	{"POST", "/filesystem.Filesystem/ListDir", h_filesystem, &codec_listdir, OWN, NULL},
	{"POST", "/filesystem.Filesystem/Stat", h_filesystem, &codec_stat, OWN, NULL},
	{"POST", "/filesystem.Filesystem/Remove", h_filesystem, &codec_empty, OWN, NULL},
	{"POST", "/filesystem.Filesystem/{m}", h_filesystem, NULL, RAW, NULL},
	{NULL, NULL, NULL, NULL, 0, NULL},
};
