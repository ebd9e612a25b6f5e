/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat serve`'s route table and request validation (serve_route.h). Pure:
 * the front's glue gives it complete requests; the fuzz target too. Each
 * handler accepts exactly the fields its endpoint documents (docs/API.md,
 * docs/openapi.json): an unknown field, a wrong type or an over-long value
 * is a 400 naming the field, before anything reaches the back.
 */
#include "api/serve_route.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "api/serve_proto.h"
#include "moat/moat.h"

/* ---- output ------------------------------------------------------------------ */

void moat_serve_out_clear(struct moat_serve_out *out)
{
	free(out->body);
	free(out->note);
	json_decref(out->fwd);
	*out = (struct moat_serve_out){0};
}

int moat_serve_reply_json(struct moat_serve_out *out, int status, json_t *body)
{
	char *s = body ? json_dumps(body, JSON_COMPACT) : strdup("{}");
	json_decref(body);
	moat_serve_out_clear(out);
	out->status = s ? status : 500;
	out->content_type = "application/json";
	out->body =
		s ? s : strdup("{\"error\":{\"code\":\"internal\",\"message\":\"out of memory\"}}");
	out->body_len = out->body ? strlen(out->body) : 0;
	return s ? 0 : -ENOMEM;
}

int moat_serve_reply_error(struct moat_serve_out *out, int status, const char *code,
			   const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* messages may quote client bytes: jansson refuses invalid UTF-8 */
	json_t *m = json_string(msg);
	if (!m)
		m = json_string("(the message quoted bytes that are not UTF-8)");
	moat_serve_reply_json(out, status,
			      json_pack("{s:{s:s,s:o}}", "error", "code", code, "message", m));
	return -EINVAL;
}

int moat_serve_forward(struct moat_serve_out *out, const char *op, const char *sandbox,
		       json_t *args, const char *data, size_t len)
{
	moat_serve_out_clear(out);
	json_t *f = json_pack("{s:s,s:o}", "op", op, "args", args ? args : json_object());
	if (!f || (sandbox && json_object_set_new(f, "sandbox", json_string(sandbox)) < 0)) {
		json_decref(f);
		return moat_serve_reply_error(out, 500, "internal", "out of memory");
	}
	out->fwd = f;
	out->fwd_data = data;
	out->fwd_len = data ? len : 0;
	return 0;
}

void moat_serve_stream_append(struct moat_serve_stream *s, const void *data, size_t len)
{
	if (s->failed || !len)
		return;
	if (s->len + len > MOAT_SERVE_MAX_PENDING) {
		s->failed = true;
		return;
	}
	if (s->len + len > s->cap) {
		size_t cap = MAX(s->cap * 2, s->len + len + 4096);
		char *b = realloc(s->buf, cap);
		if (!b) {
			s->failed = true;
			return;
		}
		s->buf = b;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, len);
	s->len += len;
}

/* ---- the default codec: JSON, raw bytes, NDJSON --------------------------------------- */

static void append_json_line(struct moat_serve_stream *s, json_t *j)
{
	char *t = json_dumps(j, JSON_COMPACT);
	if (!t) {
		s->failed = true;
		return;
	}
	moat_serve_stream_append(s, t, strlen(t));
	moat_serve_stream_append(s, "\n", 1);
	free(t);
}

static void json_start(struct moat_serve_stream *s, int status, json_t *body, const char *type,
		       const char *data, size_t len, bool stream)
{
	s->status = status;
	if (stream) {
		s->content_type = "application/x-ndjson";
		s->streaming = true;
	} else if (body) {
		s->content_type = "application/json";
		char *t = json_dumps(body, JSON_COMPACT);
		if (!t) {
			s->failed = true;
			return;
		}
		moat_serve_stream_append(s, t, strlen(t));
		free(t);
	} else {
		s->content_type = "application/octet-stream";
		(void)type;
		moat_serve_stream_append(s, data, len);
	}
}

/* An event: its JSON, with the frame's data as "data" (a string when it is
 * valid UTF-8, else base64 in "data_b64"). */
static void json_event(struct moat_serve_stream *s, json_t *event, const char *data, size_t len)
{
	json_t *e = json_deep_copy(event);
	if (!e) {
		s->failed = true;
		return;
	}
	if (len) {
		json_t *str = json_stringn(data, len);
		if (str) {
			json_object_set_new(e, "data", str);
		} else {
			static const char b64[] =
				"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
			size_t n = 4 * ((len + 2) / 3);
			char *o = malloc(n + 1);
			if (!o) {
				json_decref(e);
				s->failed = true;
				return;
			}
			size_t j = 0;
			for (size_t i = 0; i < len; i += 3) {
				uint32_t v = (uint32_t)(unsigned char)data[i] << 16;
				if (i + 1 < len)
					v |= (uint32_t)(unsigned char)data[i + 1] << 8;
				if (i + 2 < len)
					v |= (unsigned char)data[i + 2];
				o[j++] = b64[(v >> 18) & 63];
				o[j++] = b64[(v >> 12) & 63];
				o[j++] = i + 1 < len ? b64[(v >> 6) & 63] : '=';
				o[j++] = i + 2 < len ? b64[v & 63] : '=';
			}
			o[j] = '\0';
			json_object_set_new(e, "data_b64", json_string(o));
			free(o);
		}
	}
	append_json_line(s, e);
	json_decref(e);
}

static void json_end(struct moat_serve_stream *s, bool aborted)
{
	if (aborted && s->streaming) {
		json_t *e = json_pack("{s:s,s:{s:s,s:s}}", "type", "error", "error", "code",
				      "unavailable", "message", "the server ended the stream");
		if (e)
			append_json_line(s, e);
		json_decref(e);
	}
	s->streaming = false;
}

const struct moat_serve_codec moat_serve_codec_json = {
	.start = json_start,
	.event = json_event,
	.end = json_end,
};

static int bad_field(struct moat_serve_out *out, const char *field, const char *why);

/* ---- request helpers ---------------------------------------------------------- */

const char *moat_serve_header(const struct moat_serve_http_req *rq, const char *name)
{
	for (size_t i = 0; i < rq->n_headers; i++)
		if (rq->headers[i].name && strcasecmp(rq->headers[i].name, name) == 0)
			return rq->headers[i].value;
	return NULL;
}

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes in[0..n) ('+' is a space) into buf: -EINVAL if malformed,
 * a NUL, or longer than len-1. */
static int pct_decode(const char *in, size_t n, char *buf, size_t len)
{
	size_t j = 0;
	for (size_t i = 0; i < n; i++) {
		char c = in[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			int h = hexval(in[i + 1]), l = hexval(in[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = (char)(h << 4 | l);
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (c == '\0' || j + 1 >= len)
			return -EINVAL;
		buf[j++] = c;
	}
	buf[j] = '\0';
	return 0;
}

int moat_serve_query(const struct moat_serve_http_req *rq, const char *name, char *buf, size_t len)
{
	const char *q = rq->query ? rq->query : "";
	size_t nl = strlen(name);
	while (*q) {
		const char *amp = strchr(q, '&');
		size_t seg = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', seg);
		size_t kl = eq ? (size_t)(eq - q) : seg;
		if (kl == nl && memcmp(q, name, nl) == 0) {
			if (!eq)
				return len ? (buf[0] = '\0', 1) : -EINVAL;
			return pct_decode(eq + 1, seg - kl - 1, buf, len) < 0 ? -EINVAL : 1;
		}
		q += seg;
		if (*q == '&')
			q++;
	}
	return 0;
}

json_t *moat_serve_body_object(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	json_error_t e;
	if (rq->body_len == 0)
		return json_object();
	json_t *o = json_loadb(rq->body, rq->body_len, JSON_REJECT_DUPLICATES, &e);
	if (!o) {
		moat_serve_reply_error(out, 400, "bad_request",
				       "body: not JSON: %.200s (column %d)", e.text, e.column);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		moat_serve_reply_error(out, 400, "bad_request", "body: must be a JSON object");
		return NULL;
	}
	return o;
}

int moat_serve_only_fields(json_t *o, const char *const *allowed, struct moat_serve_out *out)
{
	const char *k;
	json_t *v;
	json_object_foreach(o, k, v)
	{
		bool ok = false;
		for (size_t i = 0; allowed[i] && !ok; i++)
			ok = streq(k, allowed[i]);
		if (!ok) {
			char f[72];
			snprintf(f, sizeof(f), "%.64s", k);
			return bad_field(out, f, "unknown field");
		}
	}
	return 0;
}

/* ---- field checks --------------------------------------------------------------- */

static int bad_field(struct moat_serve_out *out, const char *field, const char *why)
{
	moat_serve_reply_error(out, 400, "bad_request", "%s: %s", field, why);
	json_t *e = json_loads(out->body ? out->body : "", 0, NULL);
	json_t *eo = json_object_get(e, "error");
	if (eo && json_object_set_new(eo, "field", json_string(field)) == 0)
		moat_serve_reply_json(out, 400, json_incref(e));
	json_decref(e);
	return -EINVAL;
}

/* A string of at most max bytes without NUL. */
static int check_string(json_t *o, const char *field, size_t max, bool required,
			struct moat_serve_out *out)
{
	json_t *v = json_object_get(o, field);
	if (!v)
		return required ? bad_field(out, field, "required") : 0;
	if (!json_is_string(v))
		return bad_field(out, field, "must be a string");
	if (json_string_length(v) > max ||
	    memchr(json_string_value(v), '\0', json_string_length(v)))
		return bad_field(out, field, "too long or contains NUL");
	return 1;
}

/* A size or number given as a string ("512M", "1.5") or a non-negative integer. */
static int check_scalar(json_t *o, const char *field, struct moat_serve_out *out)
{
	json_t *v = json_object_get(o, field);
	if (!v)
		return 0;
	if (json_is_integer(v))
		return json_integer_value(v) >= 0 ? 1 : bad_field(out, field, "must be >= 0");
	if (json_is_real(v))
		return json_real_value(v) >= 0 ? 1 : bad_field(out, field, "must be >= 0");
	return check_string(o, field, 32, false, out);
}

static int check_string_array(json_t *o, const char *field, size_t max_n, size_t max_each,
			      size_t max_total, bool required, struct moat_serve_out *out)
{
	json_t *v = json_object_get(o, field), *e;
	size_t i, total = 0;
	if (!v)
		return required ? bad_field(out, field, "required") : 0;
	if (!json_is_array(v) || json_array_size(v) > max_n)
		return bad_field(out, field, "must be an array of strings (bounded)");
	if (required && json_array_size(v) == 0)
		return bad_field(out, field, "must not be empty");
	json_array_foreach(v, i, e)
	{
		if (!json_is_string(e) || json_string_length(e) > max_each ||
		    memchr(json_string_value(e), '\0', json_string_length(e)))
			return bad_field(out, field, "each entry: a string without NUL (bounded)");
		total += json_string_length(e) + 1;
	}
	return total > max_total ? bad_field(out, field, "too large") : 1;
}

/* {"NAME":"VALUE"}: names [A-Za-z_][A-Za-z0-9_]*, values without NUL. */
static int check_env(json_t *o, const char *field, struct moat_serve_out *out)
{
	json_t *v = json_object_get(o, field), *e;
	const char *k;
	if (!v)
		return 0;
	if (!json_is_object(v) || json_object_size(v) > MOAT_SERVE_MAX_ENV)
		return bad_field(out, field, "must be an object of strings (bounded)");
	json_object_foreach(v, k, e)
	{
		size_t n = strlen(k);
		bool ok = n > 0 && n <= 128 && !(k[0] >= '0' && k[0] <= '9');
		for (size_t i = 0; ok && i < n; i++)
			ok = (k[i] >= 'A' && k[i] <= 'Z') || (k[i] >= 'a' && k[i] <= 'z') ||
				(k[i] >= '0' && k[i] <= '9') || k[i] == '_';
		if (!ok)
			return bad_field(out, field, "names: [A-Za-z_][A-Za-z0-9_]* (at most 128)");
		if (!json_is_string(e) || json_string_length(e) > 32768 ||
		    memchr(json_string_value(e), '\0', json_string_length(e)))
			return bad_field(out, field,
					 "values: strings without NUL (at most 32 KiB)");
	}
	return 1;
}

static int check_uint(json_t *o, const char *field, uint64_t max, struct moat_serve_out *out)
{
	json_t *v = json_object_get(o, field);
	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return bad_field(out, field, "must be a non-negative integer (bounded)");
	return 1;
}

static int check_bool(json_t *o, const char *field, struct moat_serve_out *out)
{
	json_t *v = json_object_get(o, field);
	if (!v)
		return 0;
	return json_is_boolean(v) ? 1 : bad_field(out, field, "must be true or false");
}

/* The query's path=: absolute, bounded, no NUL, into a new string field. */
static int query_path(const struct moat_serve_http_req *rq, json_t *args,
		      struct moat_serve_out *out)
{
	char path[MOAT_SERVE_MAX_PATH + 1];
	int k = moat_serve_query(rq, "path", path, sizeof(path));
	if (k == 0)
		return bad_field(out, "path", "required (a query parameter)");
	if (k < 0 || path[0] != '/')
		return bad_field(out, "path",
				 "must be an absolute path (percent-encoded, bounded)");
	json_t *s = json_string(path);
	if (!s)
		return bad_field(out, "path", "must be UTF-8");
	json_object_set_new(args, "path", s);
	return 0;
}

static int query_bool(const struct moat_serve_http_req *rq, const char *name, json_t *args,
		      struct moat_serve_out *out)
{
	char v[8];
	int k = moat_serve_query(rq, name, v, sizeof(v));
	if (k == 0)
		return 0;
	if (k < 0 || !(streq(v, "true") || streq(v, "false") || streq(v, "1") || streq(v, "0")))
		return bad_field(out, name, "must be true or false");
	json_object_set_new(args, name, json_boolean(streq(v, "true") || streq(v, "1")));
	return 0;
}

/* ---- the /v1 handlers ------------------------------------------------------------ */

#define SANDBOX(rq) ((rq)->n_param ? (rq)->param[0] : NULL)

static int h_version(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return moat_serve_reply_json(out, 200,
				     json_pack("{s:s,s:s,s:i}", "version", MOAT_VERSION, "api",
					       "v1", "policy_version", MOAT_POLICY_VERSION));
}

/* No body, no query: forwarded as the route's op. */
static int h_plain(const struct moat_serve_http_req *rq, struct moat_serve_out *out, const char *op)
{
	if (rq->body_len)
		return moat_serve_reply_error(out, 400, "bad_request", "body: must be empty");
	return moat_serve_forward(out, op, SANDBOX(rq), NULL, NULL, 0);
}

static int h_health(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_plain(rq, out, "health");
}
static int h_list(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_plain(rq, out, "list");
}
static int h_inspect(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_plain(rq, out, "inspect");
}
static int h_delete(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_plain(rq, out, "delete");
}
/* A body with only {"force": bool} (or none). */
static int h_force(const struct moat_serve_http_req *rq, struct moat_serve_out *out, const char *op)
{
	static const char *const fields[] = {"force", NULL};
	json_t *o = moat_serve_body_object(rq, out);
	if (!o)
		return -EINVAL;
	if (moat_serve_only_fields(o, fields, out) < 0 || check_bool(o, "force", out) < 0) {
		json_decref(o);
		return -EINVAL;
	}
	return moat_serve_forward(out, op, SANDBOX(rq), o, NULL, 0);
}
static int h_reset(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_force(rq, out, "reset");
}
static int h_snapshot_delete(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	if (rq->body_len)
		return moat_serve_reply_error(out, 400, "bad_request", "body: must be empty");
	return moat_serve_forward(out, "snapshot.delete", SANDBOX(rq),
				  json_pack("{s:s}", "name", rq->param[1]), NULL, 0);
}
static int h_snapshots(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_plain(rq, out, "snapshots");
}

/* The policy fields a create may give: each can only narrow the operator's
 * policy (the back checks that; serve_tenant.c). */
static int h_create(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	static const char *const fields[] = {"name",	"memory",	  "cpus", "pids",
					     "timeout", "disk",		  "net",  "allow_hosts",
					     "env",	"workspace_mode", NULL};
	json_t *o = moat_serve_body_object(rq, out);
	if (!o)
		return -EINVAL;
	if (moat_serve_only_fields(o, fields, out) < 0 ||
	    check_string(o, "name", MOAT_SESSION_NAME_MAX, false, out) < 0 ||
	    check_scalar(o, "memory", out) < 0 || check_scalar(o, "cpus", out) < 0 ||
	    check_uint(o, "pids", 1u << 22, out) < 0 || check_scalar(o, "timeout", out) < 0 ||
	    check_scalar(o, "disk", out) < 0 || check_string(o, "net", 8, false, out) < 0 ||
	    check_string_array(o, "allow_hosts", 256, 300, 64u << 10, false, out) < 0 ||
	    check_env(o, "env", out) < 0 || check_string(o, "workspace_mode", 16, false, out) < 0) {
		json_decref(o);
		return -EINVAL;
	}
	return moat_serve_forward(out, "create", NULL, o, NULL, 0);
}

static int h_exec(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	static const char *const fields[] = {"argv", "env", "cwd", "stdin", "timeout_ms", NULL};
	json_t *o = moat_serve_body_object(rq, out);
	if (!o)
		return -EINVAL;
	if (moat_serve_only_fields(o, fields, out) < 0 ||
	    check_string_array(o, "argv", MOAT_SERVE_MAX_ARGV, MOAT_SERVE_MAX_ARGV_BYTES,
			       MOAT_SERVE_MAX_ARGV_BYTES, true, out) < 0 ||
	    check_env(o, "env", out) < 0 ||
	    check_string(o, "cwd", MOAT_SERVE_MAX_PATH, false, out) < 0 ||
	    check_string(o, "stdin", 1u << 20, false, out) < 0 ||
	    check_uint(o, "timeout_ms", 24ull * 3600 * 1000, out) < 0) {
		json_decref(o);
		return -EINVAL;
	}
	const char *cwd = json_string_value(json_object_get(o, "cwd"));
	if (cwd && cwd[0] != '/') {
		json_decref(o);
		return bad_field(out, "cwd", "must be an absolute path");
	}
	return moat_serve_forward(out, "exec", SANDBOX(rq), o, NULL, 0);
}

/* GET/PUT/DELETE .../files?path=P, GET .../files/stat, .../files/list */
static int h_files(const struct moat_serve_http_req *rq, struct moat_serve_out *out, const char *op,
		   bool body)
{
	json_t *a = json_object();
	if (!a)
		return moat_serve_reply_error(out, 500, "internal", "out of memory");
	if (query_path(rq, a, out) < 0 ||
	    (streq(op, "files.remove") && query_bool(rq, "recursive", a, out) < 0)) {
		json_decref(a);
		return -EINVAL;
	}
	if (!body && rq->body_len) {
		json_decref(a);
		return moat_serve_reply_error(out, 400, "bad_request", "body: must be empty");
	}
	return moat_serve_forward(out, op, SANDBOX(rq), a, body ? rq->body : NULL,
				  body ? rq->body_len : 0);
}
static int h_file_read(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_files(rq, out, "files.read", false);
}
static int h_file_write(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_files(rq, out, "files.write", true);
}
static int h_file_remove(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_files(rq, out, "files.remove", false);
}
static int h_file_stat(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_files(rq, out, "files.stat", false);
}
static int h_file_list(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	return h_files(rq, out, "files.list", false);
}

static int h_snapshot(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	static const char *const fields[] = {"name", "force", NULL};
	json_t *o = moat_serve_body_object(rq, out);
	if (!o)
		return -EINVAL;
	if (moat_serve_only_fields(o, fields, out) < 0 ||
	    check_string(o, "name", MOAT_SESSION_NAME_MAX, false, out) < 0 ||
	    check_bool(o, "force", out) < 0) {
		json_decref(o);
		return -EINVAL;
	}
	return moat_serve_forward(out, "snapshot", SANDBOX(rq), o, NULL, 0);
}

static int h_restore(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	static const char *const fields[] = {"snapshot", "force", NULL};
	json_t *o = moat_serve_body_object(rq, out);
	if (!o)
		return -EINVAL;
	if (moat_serve_only_fields(o, fields, out) < 0 ||
	    check_string(o, "snapshot", MOAT_SERVE_MAX_ID, true, out) < 0 ||
	    check_bool(o, "force", out) < 0) {
		json_decref(o);
		return -EINVAL;
	}
	return moat_serve_forward(out, "restore", SANDBOX(rq), o, NULL, 0);
}

static int h_events(const struct moat_serve_http_req *rq, struct moat_serve_out *out)
{
	json_t *a = json_object();
	char types[128];
	int k;
	if (!a)
		return moat_serve_reply_error(out, 500, "internal", "out of memory");
	if (query_bool(rq, "follow", a, out) < 0 || query_bool(rq, "denied", a, out) < 0) {
		json_decref(a);
		return -EINVAL;
	}
	if ((k = moat_serve_query(rq, "types", types, sizeof(types))) < 0) {
		json_decref(a);
		return bad_field(out, "types", "malformed or too long");
	}
	for (size_t i = 0; k > 0 && types[i]; i++)
		if (!((types[i] >= 'a' && types[i] <= 'z') || types[i] == ',' || types[i] == '_')) {
			json_decref(a);
			return bad_field(out, "types", "a comma-separated list of event types");
		}
	if (k > 0)
		json_object_set_new(a, "types", json_string(types));
	if (rq->body_len) {
		json_decref(a);
		return moat_serve_reply_error(out, 400, "bad_request", "body: must be empty");
	}
	return moat_serve_forward(out, "events", SANDBOX(rq), a, NULL, 0);
}

static const struct moat_serve_route routes_v1[] = {
	{"GET", "/v1/health", h_health, NULL, 0, NULL},
	{"GET", "/v1/version", h_version, NULL, 0, NULL},
	{"POST", "/v1/sandboxes", h_create, NULL, 0, NULL},
	{"GET", "/v1/sandboxes", h_list, NULL, 0, NULL},
	{"GET", "/v1/sandboxes/{id}", h_inspect, NULL, 0, NULL},
	{"DELETE", "/v1/sandboxes/{id}", h_delete, NULL, 0, NULL},
	{"POST", "/v1/sandboxes/{id}/exec", h_exec, NULL, 0, NULL},
	{"GET", "/v1/sandboxes/{id}/files", h_file_read, NULL, 0, NULL},
	{"PUT", "/v1/sandboxes/{id}/files", h_file_write, NULL, MOAT_SERVE_ROUTE_RAW_BODY, NULL},
	{"DELETE", "/v1/sandboxes/{id}/files", h_file_remove, NULL, 0, NULL},
	{"GET", "/v1/sandboxes/{id}/files/stat", h_file_stat, NULL, 0, NULL},
	{"GET", "/v1/sandboxes/{id}/files/list", h_file_list, NULL, 0, NULL},
	{"POST", "/v1/sandboxes/{id}/reset", h_reset, NULL, 0, NULL},
	{"POST", "/v1/sandboxes/{id}/snapshots", h_snapshot, NULL, 0, NULL},
	{"GET", "/v1/sandboxes/{id}/snapshots", h_snapshots, NULL, 0, NULL},
	{"DELETE", "/v1/sandboxes/{id}/snapshots/{name}", h_snapshot_delete, NULL, 0, NULL},
	{"POST", "/v1/sandboxes/{id}/restore", h_restore, NULL, 0, NULL},
	{"GET", "/v1/sandboxes/{id}/events", h_events, NULL, 0, NULL},
	{NULL, NULL, NULL, NULL, 0, NULL},
};

/* Every table of routes, searched in order: /v1, then E2B's when
 * `moat serve --e2b` enabled it. */
static bool e2b_on;
void moat_serve_routes_enable_e2b(bool on)
{
	e2b_on = on;
}
static const struct moat_serve_route *const routes_tables[] = {routes_v1, moat_serve_routes_e2b};

/* ---- matching ------------------------------------------------------------------ */

static bool param_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		c == '-' || c == '_' || c == '.';
}

/* 1 if path matches pattern (params into rq), 0 if not. */
static int match(const char *pattern, const char *path, struct moat_serve_http_req *rq)
{
	const char *p = pattern, *s = path;
	unsigned n = 0;
	while (*p && *s) {
		if (*p == '{') {
			const char *close = strchr(p, '}');
			size_t len = 0;
			while (s[len] && s[len] != '/')
				len++;
			if (!close || len == 0 || len > MOAT_SERVE_MAX_PARAM_LEN ||
			    n >= MOAT_SERVE_MAX_PARAMS)
				return 0;
			for (size_t i = 0; i < len; i++)
				if (!param_char(s[i]))
					return 0;
			if ((len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.'))
				return 0;
			memcpy(rq->param[n], s, len);
			rq->param[n][len] = '\0';
			n++;
			p = close + 1;
			s += len;
			continue;
		}
		if (*p != *s)
			return 0;
		p++;
		s++;
	}
	if (*p || *s)
		return 0;
	rq->n_param = n;
	return 1;
}

void moat_serve_dispatch(struct moat_serve_http_req *rq, const char *token,
			 struct moat_serve_out *out, const struct moat_serve_route **ret_route)
{
	bool path_found = false;
	*out = (struct moat_serve_out){0};
	if (ret_route)
		*ret_route = NULL;
	if (!rq->method || !rq->path || rq->path[0] != '/') {
		moat_serve_reply_error(out, 400, "bad_request", "the request line is malformed");
		return;
	}
	for (size_t t = 0; t < (e2b_on ? ELEMENTSOF(routes_tables) : 1u); t++)
		for (const struct moat_serve_route *r = routes_tables[t]; r->method; r++) {
			struct moat_serve_http_req m = *rq;
			if (!match(r->pattern, rq->path, &m))
				continue;
			path_found = true;
			if (!streq(r->method, rq->method))
				continue;
			memcpy(rq->param, m.param, sizeof(rq->param));
			rq->n_param = m.n_param;
			if (ret_route)
				*ret_route = r;
			/* a malformed Authorization: refused, unless the route
			 * takes its credential from elsewhere (E2B) */
			if (!token && !(r->flags & MOAT_SERVE_ROUTE_OWN_TOKEN)) {
				moat_serve_reply_error(out, 401, "unauthorized",
						       "Authorization: must be \"Bearer TOKEN\" "
						       "(printable ASCII)");
				return;
			}
			if (r->handle(rq, out) < 0 && !out->status)
				moat_serve_reply_error(out, 400, "bad_request", "refused");
			/* the request's bearer token, unless the handler named
			 * the credential itself */
			if (out->fwd && !json_object_get(out->fwd, "token") &&
			    json_object_set_new(out->fwd, "token",
						json_string(token ? token : "")) < 0)
				moat_serve_reply_error(out, 500, "internal", "out of memory");
			if (!out->status && !out->fwd)
				moat_serve_reply_error(out, 500, "internal",
						       "the route answered nothing");
			return;
		}
	if (path_found)
		moat_serve_reply_error(out, 405, "method_not_allowed", "%s is not allowed here",
				       streq(rq->method, "GET") || streq(rq->method, "POST") ||
						       streq(rq->method, "PUT") ||
						       streq(rq->method, "DELETE")
					       ? rq->method
					       : "this method");
	else
		moat_serve_reply_error(out, 404, "not_found", "no such endpoint");
}
