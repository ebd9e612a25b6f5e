/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * "moat __mcp-front": the side of `moat mcp` that parses the MCP client's
 * bytes. The client is the agent, so this process is treated as the first
 * thing an attacker reaches: it is exec'd afresh by the supervisor (mcp.c)
 * with exactly stdin, stdout, stderr and one socket to the supervisor; as
 * root it first becomes nobody (65534) with no capabilities; it sets
 * no_new_privs and loads its own seccomp filter (read, write, poll, memory,
 * exit: no open, no socket, no exec, no kill, no ptrace) before it reads a
 * byte. It answers initialize, ping and tools/list itself, validates every
 * tools/call strictly (types, sizes, unknown fields refused) and sends the
 * supervisor one fixed record per call (mcp_proto.h); it turns the
 * supervisor's fixed answers into JSON-RPC responses.
 *
 * Transport: MCP stdio, one JSON-RPC message a line (UTF-8, no embedded
 * newline); a line longer than MCP_MAX_LINE is refused and skipped.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/capability.h>
#include <nettle/base64.h>
#include <poll.h>
#include <seccomp.h>
#include <grp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/mcp_front.h"
#include "lib/mcp_proto.h"
#include "moat/moat.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/macro.h"

/* write_file's content (1 MiB) as JSON escapes (\uXXXX: 6 bytes per byte)
 * fits; a larger line is refused without being parsed. */
#define MCP_MAX_LINE (8u << 20)
#define MCP_NOBODY 65534u

enum {
	RPC_PARSE = -32700,
	RPC_INVALID_REQUEST = -32600,
	RPC_NO_METHOD = -32601,
	RPC_INVALID_PARAMS = -32602,
	RPC_INTERNAL = -32603,
};

/* The revisions this server speaks, newest first: the client's if listed,
 * else the newest (lifecycle: the client decides whether it can go on). */
static const char *const revisions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

/* A request record and its payload, built up. */
struct req {
	struct moat_mcp_req h;
	char *buf;
	size_t len, cap;
};

/* The calls for the supervisor, oldest first. Only the oldest is sent: the
 * supervisor answers one call at a time and the front never writes a record
 * while an answer may be waiting for it (no deadlock on the socket). */
struct pending {
	json_t *id;
	uint32_t op;
	bool cancelled; /* notifications/cancelled: no response is sent */
	struct req r;
};

struct moat_mcp_front {
	int out, sock; /* the client's stdout, the supervisor's socket */
	char *line;
	size_t len;
	bool skipping; /* in a line that is too long */
	struct pending q[MOAT_MCP_MAX_INFLIGHT];
	unsigned head, n;
	uint32_t seq;
	json_t *tools;
};

/* ---- output ------------------------------------------------------------------ */

static void send_json(struct moat_mcp_front *f, json_t *msg)
{
	char *s = json_dumps(msg, JSON_COMPACT);
	json_decref(msg);
	if (!s)
		_exit(1); /* out of memory: the client sees the end of the stream */
	size_t n = strlen(s);
	s[n] = '\n'; /* json_dumps' NUL becomes the delimiter */
	int k = moat_write_all(f->out, s, n + 1);
	free(s);
	if (k < 0)
		_exit(0); /* the client is gone */
}

static void send_result(struct moat_mcp_front *f, json_t *id, json_t *result)
{
	send_json(f,
		  json_pack("{s:s,s:O,s:o}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			    "result", result));
}

static void send_error(struct moat_mcp_front *f, json_t *id, int code, const char *msg)
{
	send_json(f,
		  json_pack("{s:s,s:O,s:{s:i,s:s}}", "jsonrpc", "2.0", "id", id ? id : json_null(),
			    "error", "code", code, "message", msg));
}

/* Bytes as valid UTF-8 for a JSON string: every byte that is not part of a
 * well-formed sequence becomes U+FFFD. */
static json_t *utf8_string(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	if (j)
		return j;
	char *o = malloc(n * 3 + 1);
	size_t w = 0;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n;) {
		const unsigned char *u = (const unsigned char *)s + i;
		size_t len = u[0] < 0x80	       ? 1
			: u[0] >= 0xc2 && u[0] <= 0xdf ? 2
			: u[0] >= 0xe0 && u[0] <= 0xef ? 3
			: u[0] >= 0xf0 && u[0] <= 0xf4 ? 4
						       : 0;
		bool ok = len > 0 && i + len <= n;
		for (size_t k = 1; ok && k < len; k++)
			ok = (u[k] & 0xc0) == 0x80;
		if (ok && len == 3)
			ok = !(u[0] == 0xe0 && u[1] < 0xa0) && !(u[0] == 0xed && u[1] >= 0xa0);
		if (ok && len == 4)
			ok = !(u[0] == 0xf0 && u[1] < 0x90) && !(u[0] == 0xf4 && u[1] >= 0x90);
		if (ok) {
			memcpy(o + w, u, len);
			w += len;
			i += len;
		} else {
			memcpy(o + w, "\xef\xbf\xbd", 3);
			w += 3;
			i++;
		}
	}
	j = json_stringn(o, w);
	free(o);
	return j;
}

static bool is_utf8(const char *s, size_t n)
{
	json_t *j = json_stringn(s, n);
	json_decref(j);
	return j != NULL;
}

static json_t *base64_string(const char *s, size_t n)
{
	char *o = malloc(BASE64_ENCODE_RAW_LENGTH(n) + 1);
	if (!o)
		return NULL;
	base64_encode_raw(o, n, (const uint8_t *)s);
	json_t *j = json_stringn(o, BASE64_ENCODE_RAW_LENGTH(n));
	free(o);
	return j;
}

/* ---- validation ---------------------------------------------------------------- */

struct bad {
	char msg[320];
};

_printf_(2, 3) static int bad(struct bad *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Every key of o is one of allowed[] (NULL-terminated). */
static int only_fields(json_t *o, const char *const *allowed, const char *what, struct bad *b)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = streq(*a, key);
		if (!ok)
			return bad(b, "%s: unknown field '%.64s'%s", what, key,
				   streq(what, "arguments") ? " (tools take no policy fields: "
							      "the operator's policy is fixed)"
							    : "");
	}
	(void)v;
	return 0;
}

/* A string field: NULL if absent; refused if not a string, longer than max
 * or (nul_ok false) with an embedded NUL. */
static int get_string(json_t *o, const char *field, size_t max, bool nul_ok, const char **ret,
		      size_t *ret_len, struct bad *b)
{
	json_t *v = json_object_get(o, field);
	*ret = NULL;
	if (ret_len)
		*ret_len = 0;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return bad(b, "%s: must be a string", field);
	size_t n = json_string_length(v);
	if (n > max)
		return bad(b, "%s: longer than %zu bytes", field, max);
	if (!nul_ok && memchr(json_string_value(v), 0, n))
		return bad(b, "%s: contains a NUL byte", field);
	*ret = json_string_value(v);
	if (ret_len)
		*ret_len = n;
	return 1;
}

static int get_path(json_t *o, const char *field, bool required, const char **ret, struct bad *b)
{
	int k = get_string(o, field, MOAT_MCP_MAX_PATH, false, ret, NULL, b);
	if (k < 0)
		return k;
	if (k == 0 && required)
		return bad(b, "%s: required", field);
	if (k && (*ret)[0] != '/')
		return bad(b, "%s: must be an absolute path inside the sandbox", field);
	return k;
}

/* "default" (or absent) is 0, "sb-N" is N. */
static int get_sandbox(json_t *o, bool required, uint32_t *ret, struct bad *b)
{
	const char *s;
	int k = get_string(o, "sandbox", 16, false, &s, NULL, b);
	*ret = 0;
	if (k < 0)
		return k;
	if (k == 0)
		return required ? bad(b, "sandbox: required") : 0;
	if (streq(s, "default"))
		return required ? bad(b, "sandbox: the default sandbox is reset, not destroyed")
				: 0;
	if (!startswith(s, "sb-") || s[3] < '1' || s[3] > '9' || strlen(s) > 3 + 9)
		return bad(b, "sandbox: not a sandbox id (\"sb-N\" from create_sandbox)");
	uint32_t n = 0;
	for (const char *p = s + 3; *p; p++) {
		if (*p < '0' || *p > '9')
			return bad(b, "sandbox: not a sandbox id (\"sb-N\" from create_sandbox)");
		n = n * 10 + (uint32_t)(*p - '0');
	}
	*ret = n;
	return 1;
}

static int req_put(struct req *r, const void *p, size_t n)
{
	if (r->len + n > r->cap) {
		size_t cap = MAX(r->cap * 2, r->len + n + 4096);
		char *nb = realloc(r->buf, cap);
		if (!nb)
			return -ENOMEM;
		r->buf = nb;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, p, n);
	r->len += n;
	return 0;
}

static int build_run(json_t *a, struct req *r, struct bad *b)
{
	static const char *const fields[] = {"argv",	   "shell",   "cwd", "stdin",
					     "timeout_ms", "sandbox", NULL};
	json_t *argv = json_object_get(a, "argv");
	const char *shell, *cwd, *in;
	size_t shell_len, in_len;
	int k;

	if ((k = only_fields(a, fields, "arguments", b)) < 0 ||
	    (k = get_string(a, "shell", MOAT_MCP_MAX_ARGV_BYTES - 16, false, &shell, &shell_len,
			    b)) < 0 ||
	    (k = get_path(a, "cwd", false, &cwd, b)) < 0 ||
	    (k = get_string(a, "stdin", MOAT_MCP_MAX_DATA, true, &in, &in_len, b)) < 0 ||
	    (k = get_sandbox(a, false, &r->h.sandbox, b)) < 0)
		return k;
	if (!argv == !shell)
		return bad(b,
			   "arguments: exactly one of argv (an array of strings) and shell (a "
			   "string run by sh -c)");
	if (shell) {
		if ((k = req_put(r, "sh", 3)) < 0 || (k = req_put(r, "-c", 3)) < 0 ||
		    (k = req_put(r, shell, shell_len + 1)) < 0)
			return k;
		r->h.n_args = 3;
	} else {
		if (!json_is_array(argv) || json_array_size(argv) == 0)
			return bad(b, "argv: must be a non-empty array of strings");
		if (json_array_size(argv) > MOAT_MCP_MAX_ARGS)
			return bad(b, "argv: more than %u arguments", MOAT_MCP_MAX_ARGS);
		size_t i;
		json_t *v;
		json_array_foreach(argv, i, v)
		{
			if (!json_is_string(v))
				return bad(b, "argv[%zu]: must be a string", i);
			size_t n = json_string_length(v);
			if (memchr(json_string_value(v), 0, n))
				return bad(b, "argv[%zu]: contains a NUL byte", i);
			if (i == 0 && n == 0)
				return bad(b, "argv[0]: empty");
			if (r->len + n + 1 > MOAT_MCP_MAX_ARGV_BYTES)
				return bad(b, "argv: longer than %u bytes",
					   MOAT_MCP_MAX_ARGV_BYTES);
			if ((k = req_put(r, json_string_value(v), n + 1)) < 0)
				return k;
		}
		r->h.n_args = (uint32_t)json_array_size(argv);
	}
	r->h.args_len = (uint32_t)r->len;
	json_t *t = json_object_get(a, "timeout_ms");
	if (t) {
		if (!json_is_integer(t) || json_integer_value(t) < 1 ||
		    (uint64_t)json_integer_value(t) > MOAT_MCP_MAX_TIMEOUT_MS)
			return bad(b, "timeout_ms: must be an integer from 1 to %llu",
				   (unsigned long long)MOAT_MCP_MAX_TIMEOUT_MS);
		r->h.timeout_ms = (uint64_t)json_integer_value(t);
	}
	if (cwd) {
		r->h.cwd_len = (uint32_t)strlen(cwd);
		if ((k = req_put(r, cwd, r->h.cwd_len)) < 0)
			return k;
	}
	if (in) {
		r->h.has_stdin = 1;
		r->h.data_len = (uint32_t)in_len;
		if ((k = req_put(r, in, in_len)) < 0)
			return k;
	}
	return 0;
}

static int build_file(json_t *a, uint32_t op, struct req *r, struct bad *b)
{
	static const char *const f_path[] = {"path", "sandbox", NULL};
	static const char *const f_write[] = {"path", "content", "encoding", "sandbox", NULL};
	const char *path, *content = NULL, *enc = NULL;
	size_t clen = 0;
	int k;

	if ((k = only_fields(a, op == MOAT_MCP_OP_WRITE_FILE ? f_write : f_path, "arguments", b)) <
		    0 ||
	    (k = get_path(a, "path", true, &path, b)) < 0 ||
	    (k = get_sandbox(a, false, &r->h.sandbox, b)) < 0)
		return k;
	if (op == MOAT_MCP_OP_WRITE_FILE) {
		if ((k = get_string(a, "encoding", 16, false, &enc, NULL, b)) < 0)
			return k;
		if (enc && !streq(enc, "utf-8") && !streq(enc, "base64"))
			return bad(b, "encoding: \"utf-8\" (the default) or \"base64\"");
		bool b64 = enc && streq(enc, "base64");
		k = get_string(a, "content",
			       b64 ? BASE64_ENCODE_RAW_LENGTH(MOAT_MCP_MAX_DATA)
				   : MOAT_MCP_MAX_DATA,
			       true, &content, &clen, b);
		if (k < 0)
			return k;
		if (k == 0)
			return bad(b, "content: required");
		r->h.path_len = (uint32_t)strlen(path);
		if ((k = req_put(r, path, r->h.path_len)) < 0)
			return k;
		if (b64) {
			struct base64_decode_ctx ctx;
			size_t n = BASE64_DECODE_LENGTH(clen);
			uint8_t *d = malloc(n + 1);
			if (!d)
				return -ENOMEM;
			base64_decode_init(&ctx);
			if (!base64_decode_update(&ctx, &n, d, clen, content) ||
			    !base64_decode_final(&ctx)) {
				free(d);
				return bad(b, "content: not valid base64");
			}
			if (n > MOAT_MCP_MAX_DATA) {
				free(d);
				return bad(b, "content: longer than %u bytes", MOAT_MCP_MAX_DATA);
			}
			k = req_put(r, d, n);
			free(d);
			r->h.data_len = (uint32_t)n;
		} else {
			k = req_put(r, content, clen);
			r->h.data_len = (uint32_t)clen;
		}
		return k;
	}
	r->h.path_len = (uint32_t)strlen(path);
	return req_put(r, path, r->h.path_len);
}

static int build_sandbox_op(json_t *a, uint32_t op, struct req *r, struct bad *b)
{
	static const char *const f_sb[] = {"sandbox", NULL};
	static const char *const f_none[] = {NULL};
	int k = only_fields(a, op == MOAT_MCP_OP_CREATE ? f_none : f_sb, "arguments", b);
	if (k < 0 || op == MOAT_MCP_OP_CREATE)
		return k;
	return get_sandbox(a, op == MOAT_MCP_OP_DESTROY, &r->h.sandbox, b);
}

static const struct {
	const char *name;
	uint32_t op;
} tool_ops[] = {
	{"run", MOAT_MCP_OP_RUN},
	{"read_file", MOAT_MCP_OP_READ_FILE},
	{"write_file", MOAT_MCP_OP_WRITE_FILE},
	{"list_dir", MOAT_MCP_OP_LIST_DIR},
	{"reset", MOAT_MCP_OP_RESET},
	{"create_sandbox", MOAT_MCP_OP_CREATE},
	{"destroy_sandbox", MOAT_MCP_OP_DESTROY},
};

/* The tools, as tools/list shows them. No tool has a policy field. */
static const char tools_json[] =
	"["
	"{\"name\":\"run\",\"title\":\"Run a command in the sandbox\","
	"\"description\":\"Runs a command in the sandbox (created on first use; files persist "
	"between calls until reset). Give argv (an array: argv[0] is looked up in the sandbox's "
	"PATH) or shell (a string run as sh -c). Returns stdout, stderr (each cut at 1 MiB), "
	"exit_code and, for network destinations the policy denied, the narrow rule the operator "
	"could add. The sandbox policy (network, mounts, limits) is fixed by the operator: no "
	"argument can change it.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{"
	"\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
	"\"maxItems\":256},"
	"\"shell\":{\"type\":\"string\",\"description\":\"a shell command, run as sh -c\"},"
	"\"cwd\":{\"type\":\"string\",\"description\":\"absolute working directory in the "
	"sandbox\"},"
	"\"stdin\":{\"type\":\"string\",\"description\":\"text given on standard input\"},"
	"\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"at most the "
	"operator's --timeout\"},"
	"\"sandbox\":{\"type\":\"string\",\"description\":\"an id from create_sandbox; default: "
	"the default sandbox\"}},\"additionalProperties\":false}},"
	"{\"name\":\"read_file\",\"title\":\"Read a file\",\"description\":\"Reads a file of the "
	"sandbox (at most 1 MiB; truncated says if there was more). content is UTF-8 text, or "
	"base64 (encoding says which).\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"sandbox\":{\"type\":\"string\"}},\"required\":[\"path\"],"
	"\"additionalProperties\":false}},"
	"{\"name\":\"write_file\",\"title\":\"Write a file\",\"description\":\"Creates or "
	"replaces a file of the sandbox (at most 1 MiB; the directory must exist). content is "
	"UTF-8 text, or base64 with encoding base64.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"content\":{\"type\":\"string\"},\"encoding\":{\"type\":\"string\",\"enum\":[\"utf-8\","
	"\"base64\"]},\"sandbox\":{\"type\":\"string\"}},\"required\":[\"path\",\"content\"],"
	"\"additionalProperties\":false}},"
	"{\"name\":\"list_dir\",\"title\":\"List a directory\",\"description\":\"The entries of "
	"a directory of the sandbox: name, type, size, mode, mtime.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},"
	"\"sandbox\":{\"type\":\"string\"}},\"required\":[\"path\"],"
	"\"additionalProperties\":false}},"
	"{\"name\":\"reset\",\"title\":\"Reset the sandbox\",\"description\":\"Destroys the "
	"sandbox (every process, every file written in it) and reports its audit log; the next "
	"call starts a fresh one.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"sandbox\":{\"type\":\"string\"}},"
	"\"additionalProperties\":false}},"
	"{\"name\":\"create_sandbox\",\"title\":\"Create another sandbox\",\"description\":"
	"\"Creates one more sandbox with the operator's policy and returns its id (at most 8 "
	"live). Pass the id as sandbox to the other tools.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{},\"additionalProperties\":false}},"
	"{\"name\":\"destroy_sandbox\",\"title\":\"Destroy a sandbox\",\"description\":"
	"\"Destroys a sandbox made by create_sandbox and reports its audit log.\","
	"\"inputSchema\":{\"type\":\"object\",\"properties\":{\"sandbox\":{\"type\":\"string\"}},"
	"\"required\":[\"sandbox\"],\"additionalProperties\":false}}"
	"]";

/* ---- JSON-RPC ---------------------------------------------------------------------- */

static void do_initialize(struct moat_mcp_front *f, json_t *id, json_t *params)
{
	static const char *const fields[] = {"protocolVersion", "capabilities", "clientInfo",
					     "_meta", NULL};
	const char *want = NULL;
	struct bad b = {{0}};
	const char *chosen = revisions[0];

	if (only_fields(params, fields, "params", &b) < 0 ||
	    get_string(params, "protocolVersion", 64, false, &want, NULL, &b) < 0)
		return send_error(f, id, RPC_INVALID_PARAMS, b.msg);
	if (!want)
		return send_error(f, id, RPC_INVALID_PARAMS, "params: protocolVersion: required");
	json_t *c = json_object_get(params, "capabilities"),
	       *ci = json_object_get(params, "clientInfo");
	if ((c && !json_is_object(c)) || (ci && !json_is_object(ci)))
		return send_error(f, id, RPC_INVALID_PARAMS,
				  "params: capabilities and clientInfo must be objects");
	for (size_t i = 0; i < ELEMENTSOF(revisions); i++)
		if (streq(want, revisions[i]))
			chosen = revisions[i];
	send_result(f, id,
		    json_pack("{s:s,s:{s:{s:b}},s:{s:s,s:s},s:s}", "protocolVersion", chosen,
			      "capabilities", "tools", "listChanged", 0, "serverInfo", "name",
			      "moat", "version", MOAT_VERSION, "instructions",
			      "Runs commands and edits files in a moat sandbox whose policy "
			      "the operator fixed. Use run, read_file, write_file, list_dir; "
			      "reset for a fresh sandbox."));
}

static int send_req(struct moat_mcp_front *f, struct req *r)
{
	int k;
	if ((k = moat_write_all(f->sock, &r->h, sizeof(r->h))) < 0)
		return k;
	return r->len ? moat_write_all(f->sock, r->buf, r->len) : 0;
}

static void do_call(struct moat_mcp_front *f, json_t *id, json_t *params)
{
	static const char *const fields[] = {"name", "arguments", "_meta", NULL};
	struct bad b = {{0}};
	const char *name;
	uint32_t op = 0;
	int k;

	if (only_fields(params, fields, "params", &b) < 0 ||
	    get_string(params, "name", 64, false, &name, NULL, &b) < 0)
		return send_error(f, id, RPC_INVALID_PARAMS, b.msg);
	if (!name)
		return send_error(f, id, RPC_INVALID_PARAMS, "params: name: required");
	for (size_t i = 0; i < ELEMENTSOF(tool_ops); i++)
		if (streq(name, tool_ops[i].name))
			op = tool_ops[i].op;
	if (!op) {
		snprintf(b.msg, sizeof(b.msg), "unknown tool '%.64s'", name);
		return send_error(f, id, RPC_INVALID_PARAMS, b.msg);
	}
	json_t *a = json_object_get(params, "arguments");
	json_t *empty = json_object();
	if (a && !json_is_object(a)) {
		json_decref(empty);
		return send_error(f, id, RPC_INVALID_PARAMS, "arguments: must be an object");
	}
	if (f->n >= MOAT_MCP_MAX_INFLIGHT) {
		json_decref(empty);
		return send_error(f, id, RPC_INTERNAL, "too many calls in flight");
	}
	struct req r = {.h = {.magic = MOAT_MCP_REQ_MAGIC, .seq = ++f->seq, .op = op}};
	a = a ? a : empty;
	switch (op) {
	case MOAT_MCP_OP_RUN:
		k = build_run(a, &r, &b);
		break;
	case MOAT_MCP_OP_READ_FILE:
	case MOAT_MCP_OP_WRITE_FILE:
	case MOAT_MCP_OP_LIST_DIR:
		k = build_file(a, op, &r, &b);
		break;
	default:
		k = build_sandbox_op(a, op, &r, &b);
		break;
	}
	json_decref(empty);
	if (k == -ENOMEM)
		snprintf(b.msg, sizeof(b.msg), "out of memory");
	if (k < 0) {
		free(r.buf);
		return send_error(f, id, k == -ENOMEM ? RPC_INTERNAL : RPC_INVALID_PARAMS, b.msg);
	}
	struct pending *p = &f->q[(f->head + f->n) % MOAT_MCP_MAX_INFLIGHT];
	*p = (struct pending){.id = json_incref(id), .op = op, .r = r};
	if (f->n++ == 0 && send_req(f, &p->r) < 0)
		_exit(1); /* the supervisor is gone */
}

static bool valid_id(json_t *id);

static void drop_head(struct moat_mcp_front *f)
{
	struct pending *p = &f->q[f->head];
	json_decref(p->id);
	free(p->r.buf);
	*p = (struct pending){0};
	f->head = (f->head + 1) % MOAT_MCP_MAX_INFLIGHT;
	f->n--;
}

/* The head was answered: the next call that still counts goes out. */
static int next_call(struct moat_mcp_front *f)
{
	while (f->n && f->q[f->head].cancelled)
		drop_head(f); /* never sent */
	return f->n ? send_req(f, &f->q[f->head].r) : 0;
}

/* notifications/cancelled: a waiting call is dropped; a run in progress is
 * killed (a small record the supervisor reads while it runs); anything else
 * already sent finishes, and its answer is not passed on. */
static void cancel(struct moat_mcp_front *f, json_t *id)
{
	if (!id || !valid_id(id))
		return;
	for (unsigned i = 0; i < f->n; i++) {
		struct pending *p = &f->q[(f->head + i) % MOAT_MCP_MAX_INFLIGHT];
		if (p->cancelled || !json_equal(p->id, id))
			continue;
		p->cancelled = true;
		if (i == 0 && p->op == MOAT_MCP_OP_RUN) {
			struct moat_mcp_req c = {.magic = MOAT_MCP_REQ_MAGIC,
						 .seq = p->r.h.seq,
						 .op = MOAT_MCP_OP_CANCEL};
			if (moat_write_all(f->sock, &c, sizeof(c)) < 0)
				_exit(1);
		}
		return;
	}
}

static bool valid_id(json_t *id)
{
	return (json_is_string(id) && json_string_length(id) <= 256) || json_is_integer(id);
}

static void handle_line(struct moat_mcp_front *f, const char *line, size_t len)
{
	static const char *const fields[] = {"jsonrpc", "id", "method", "params", NULL};
	json_error_t e;
	struct bad b = {{0}};

	size_t i = 0;
	while (i < len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r'))
		i++;
	if (i == len)
		return; /* an empty line */
	json_t *m = json_loadb(line, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &e);
	if (!m) {
		snprintf(b.msg, sizeof(b.msg), "parse error: %.200s (column %d)", e.text, e.column);
		return send_error(f, NULL, RPC_PARSE, b.msg);
	}
	json_t *id = json_object_get(m, "id");
	const char *method = json_string_value(json_object_get(m, "method"));
	json_t *params = json_object_get(m, "params");
	if (json_is_array(m)) {
		send_error(f, NULL, RPC_INVALID_REQUEST, "batches are not supported");
	} else if (!json_is_object(m)) {
		send_error(f, NULL, RPC_INVALID_REQUEST, "a message must be a JSON object");
	} else if (id && !valid_id(id)) {
		send_error(f, NULL, RPC_INVALID_REQUEST,
			   "id: must be a string (at most 256 bytes) or an integer");
	} else if (!json_is_string(json_object_get(m, "jsonrpc")) ||
		   !streq(json_string_value(json_object_get(m, "jsonrpc")), "2.0")) {
		send_error(f, id, RPC_INVALID_REQUEST, "jsonrpc: must be \"2.0\"");
	} else if (!json_object_get(m, "method") &&
		   (json_object_get(m, "result") || json_object_get(m, "error"))) {
		; /* a response: this server sends no requests */
	} else if (!method) {
		send_error(f, id, RPC_INVALID_REQUEST, "method: must be a string");
	} else if (only_fields(m, fields, "message", &b) < 0) {
		send_error(f, id, RPC_INVALID_REQUEST, b.msg);
	} else if (params && !json_is_object(params)) {
		send_error(f, id, RPC_INVALID_PARAMS, "params: must be an object");
	} else if (!id) {
		if (streq(method, "notifications/cancelled"))
			cancel(f, json_object_get(params, "requestId"));
		/* other notifications (initialized, ...): nothing to answer */
	} else {
		json_t *empty = params ? NULL : json_object();
		json_t *pp = params ? params : empty;
		static const char *const list_fields[] = {"cursor", "_meta", NULL};
		static const char *const ping_fields[] = {"_meta", NULL};
		if (streq(method, "initialize"))
			do_initialize(f, id, pp);
		else if (streq(method, "ping"))
			only_fields(pp, ping_fields, "params", &b) < 0
				? send_error(f, id, RPC_INVALID_PARAMS, b.msg)
				: send_result(f, id, json_object());
		else if (streq(method, "tools/list"))
			only_fields(pp, list_fields, "params", &b) < 0
				? send_error(f, id, RPC_INVALID_PARAMS, b.msg)
				: send_result(f, id, json_pack("{s:O}", "tools", f->tools));
		else if (streq(method, "tools/call"))
			do_call(f, id, pp);
		else {
			snprintf(b.msg, sizeof(b.msg), "method not found: %.64s", method);
			send_error(f, id, RPC_NO_METHOD, b.msg);
		}
		json_decref(empty);
	}
	json_decref(m);
}

/* ---- the supervisor's answers --------------------------------------------------------- */

static int read_exact(int fd, void *buf, size_t len)
{
	char *p = buf;
	while (len) {
		ssize_t k = read(fd, p, len);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? negerrno() : -EPIPE;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

static const char *type_name(uint32_t t)
{
	return t == MOAT_FILE_REG	 ? "file"
		: t == MOAT_FILE_DIR	 ? "dir"
		: t == MOAT_FILE_SYMLINK ? "symlink"
					 : "other";
}

static const char *sandbox_name(uint32_t n, char *buf, size_t len)
{
	if (n == 0)
		return "default";
	snprintf(buf, len, "sb-%u", n);
	return buf;
}

/* The payload's arrays follow byte strings: copied out, not cast (their
 * alignment is the payload's). */
static json_t *denied_array(const char *raw, uint32_t n)
{
	json_t *a = json_array();
	for (uint32_t i = 0; a && i < n; i++) {
		struct moat_mcp_denied d[1];
		memcpy(d, raw + (size_t)i * sizeof(d[0]), sizeof(d[0]));
		json_t *o = json_object();
		json_object_set_new(o, "destination",
				    utf8_string(d[0].dest, strnlen(d[0].dest, sizeof(d[0].dest))));
		json_object_set_new(o, "count", json_integer(d[0].count));
		if (d[0].rule[0])
			json_object_set_new(
				o, "rule",
				utf8_string(d[0].rule, strnlen(d[0].rule, sizeof(d[0].rule))));
		json_array_append_new(a, o);
	}
	return a;
}

static void answer(struct moat_mcp_front *f, struct pending *p, const struct moat_mcp_resp *h,
		   const char *pay)
{
	const char *out = pay, *err = out + h->out_len, *msg = err + h->err_len;
	const char *ents = msg + h->msg_len;
	const char *den = ents + (size_t)h->n_entries * sizeof(struct moat_mcp_entry);
	char nb[24];
	json_t *o = json_object();

	json_object_set_new(o, "sandbox", json_string(sandbox_name(h->sandbox, nb, sizeof(nb))));
	if (h->run_id[0])
		json_object_set_new(o, "run_id",
				    utf8_string(h->run_id, strnlen(h->run_id, sizeof(h->run_id))));
	if (h->log_path[0])
		json_object_set_new(
			o, "log",
			utf8_string(h->log_path, strnlen(h->log_path, sizeof(h->log_path))));
	if (h->flags & MOAT_MCP_STARTED)
		json_object_set_new(o, "sandbox_started", json_true());
	if (h->err < 0) {
		json_object_set_new(o, "error", utf8_string(msg, h->msg_len));
	} else {
		switch (p->op) {
		case MOAT_MCP_OP_RUN:
			json_object_set_new(o, "exit_code", json_integer(h->exit_code));
			json_object_set_new(
				o, "reason",
				json_string(moat_reason_name((enum moat_reason)h->reason)));
			if (h->reason == MOAT_REASON_SIGNALED)
				json_object_set_new(o, "signal", json_integer(h->signal));
			json_object_set_new(o, "stdout", utf8_string(out, h->out_len));
			json_object_set_new(o, "stderr", utf8_string(err, h->err_len));
			if (h->flags & MOAT_MCP_OUT_CUT)
				json_object_set_new(o, "stdout_truncated", json_true());
			if (h->flags & MOAT_MCP_ERR_CUT)
				json_object_set_new(o, "stderr_truncated", json_true());
			json_object_set_new(o, "wall_ms",
					    json_integer((json_int_t)(h->wall_us / 1000)));
			break;
		case MOAT_MCP_OP_READ_FILE:
			if (is_utf8(out, h->out_len)) {
				json_object_set_new(o, "content", json_stringn(out, h->out_len));
				json_object_set_new(o, "encoding", json_string("utf-8"));
			} else {
				json_object_set_new(o, "content", base64_string(out, h->out_len));
				json_object_set_new(o, "encoding", json_string("base64"));
			}
			json_object_set_new(o, "bytes", json_integer(h->out_len));
			json_object_set_new(o, "truncated",
					    json_boolean(h->flags & MOAT_MCP_TRUNCATED));
			break;
		case MOAT_MCP_OP_WRITE_FILE:
			json_object_set_new(o, "written", json_true());
			break;
		case MOAT_MCP_OP_LIST_DIR: {
			json_t *a = json_array();
			for (uint32_t i = 0; i < h->n_entries; i++) {
				struct moat_mcp_entry ent[1];
				memcpy(ent, ents + (size_t)i * sizeof(ent[0]), sizeof(ent[0]));
				char mode[8];
				snprintf(mode, sizeof(mode), "%04o", ent[0].mode & 07777);
				json_array_append_new(
					a,
					json_pack("{s:o,s:s,s:I,s:s,s:I}", "name",
						  utf8_string(ent[0].name,
							      strnlen(ent[0].name,
								      sizeof(ent[0].name))),
						  "type", type_name(ent[0].type), "size",
						  (json_int_t)ent[0].size, "mode", mode, "mtime",
						  (json_int_t)ent[0].mtime_s));
			}
			json_object_set_new(o, "entries", a);
			json_object_set_new(o, "truncated",
					    json_boolean(h->flags & MOAT_MCP_TRUNCATED));
			break;
		}
		default:
			json_object_set_new(o, "destroyed",
					    json_boolean(h->flags & MOAT_MCP_ENDED));
			if (h->flags & MOAT_MCP_ENDED)
				json_object_set_new(o, "net_denied",
						    json_integer((json_int_t)h->net_denied));
			break;
		}
	}
	if (h->n_denied)
		json_object_set_new(o, "denied", denied_array(den, h->n_denied));
	char *text = json_dumps(o, JSON_COMPACT);
	json_t *res = json_pack("{s:[{s:s,s:s}],s:O,s:b}", "content", "type", "text", "text",
				text ? text : "{}", "structuredContent", o, "isError", h->err < 0);
	free(text);
	json_decref(o);
	send_result(f, p->id, res);
}

/* One answer from the supervisor, for the oldest pending call. */
static int from_supervisor(struct moat_mcp_front *f)
{
	struct moat_mcp_resp h;
	int k = read_exact(f->sock, &h, sizeof(h));
	if (k < 0)
		return k;
	if (h.magic != MOAT_MCP_RESP_MAGIC || !f->n || h.seq != f->q[f->head].r.h.seq ||
	    h.out_len > MOAT_MCP_MAX_STREAM || h.err_len > MOAT_MCP_MAX_STREAM ||
	    h.msg_len > MOAT_MCP_MAX_MSG || h.n_entries > MOAT_MCP_MAX_ENTRIES ||
	    h.n_denied > MOAT_MCP_MAX_DENIED)
		return -EBADMSG;
	size_t len = (size_t)h.out_len + h.err_len + h.msg_len +
		h.n_entries * sizeof(struct moat_mcp_entry) +
		h.n_denied * sizeof(struct moat_mcp_denied);
	char *pay = malloc(len + 1);
	if (!pay)
		return -ENOMEM;
	if ((k = read_exact(f->sock, pay, len)) < 0) {
		free(pay);
		return k;
	}
	struct pending *p = &f->q[f->head];
	if (!p->cancelled)
		answer(f, p, &h, pay);
	free(pay);
	drop_head(f);
	return next_call(f);
}

/* ---- the process ---------------------------------------------------------------------- */

static int install_seccomp(void)
{
	static const int allow[] = {
		SCMP_SYS(read),
		SCMP_SYS(write),
		SCMP_SYS(close),
		SCMP_SYS(poll),
		SCMP_SYS(ppoll),
		SCMP_SYS(brk),
		SCMP_SYS(munmap),
		SCMP_SYS(mremap),
		SCMP_SYS(madvise),
		SCMP_SYS(rt_sigreturn),
		SCMP_SYS(rt_sigprocmask),
		SCMP_SYS(exit),
		SCMP_SYS(exit_group),
		SCMP_SYS(restart_syscall),
		SCMP_SYS(futex),
		SCMP_SYS(getrandom),
		SCMP_SYS(clock_gettime),
		SCMP_SYS(getpid),
		SCMP_SYS(gettid),
		/* AddressSanitizer's queries (the sanitizer build) */
		SCMP_SYS(sigaltstack),
	};
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	int r = ctx ? 0 : -ENOMEM;

	for (size_t i = 0; r >= 0 && i < ELEMENTSOF(allow); i++)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, allow[i], 0);
	/* memory, never executable: everything it runs is loaded already */
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mprotect), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	if (r >= 0)
		r = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(mmap), 1,
				     SCMP_A2(SCMP_CMP_MASKED_EQ, PROT_EXEC, 0));
	/* no_new_privs is the attribute's default (SCMP_FLTATR_CTL_NNP) */
	if (r >= 0)
		r = seccomp_load(ctx);
	if (ctx)
		seccomp_release(ctx);
	return r;
}

/* As root: nobody, no groups, no capability in any set. */
static int drop_root(void)
{
	if (geteuid() != 0)
		return 0;
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return negerrno();
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return negerrno();
	if (setgroups(0, NULL) < 0 || setresgid(MCP_NOBODY, MCP_NOBODY, MCP_NOBODY) < 0 ||
	    setresuid(MCP_NOBODY, MCP_NOBODY, MCP_NOBODY) < 0)
		return negerrno();
	struct __user_cap_header_struct hd = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capget, &hd, d) < 0)
		return negerrno();
	if (d[0].permitted || d[1].permitted || d[0].effective || d[1].effective)
		return -EPERM;
	/* a change of credentials clears these */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return negerrno();
	return 0;
}

static int front_fail(const char *step, int k)
{
	char msg[200];
	int n = snprintf(msg, sizeof(msg), "moat mcp: front: %s: %s\n", step, strerror(-k));
	if (n > 0)
		(void)!write(STDERR_FILENO, msg, (size_t)MIN((size_t)n, sizeof(msg) - 1));
	return MOAT_EXIT_SETUP;
}

struct moat_mcp_front *moat_mcp_front_new(int out_fd, int sock_fd)
{
	struct moat_mcp_front *f = calloc(1, sizeof(*f));
	json_error_t je;
	if (!f)
		return NULL;
	f->out = out_fd;
	f->sock = sock_fd;
	f->tools = json_loads(tools_json, 0, &je);
	f->line = malloc(MCP_MAX_LINE + 1);
	if (!f->tools || !f->line)
		return moat_mcp_front_free(f);
	return f;
}

struct moat_mcp_front *moat_mcp_front_free(struct moat_mcp_front *f)
{
	if (!f)
		return NULL;
	for (unsigned i = 0; i < f->n; i++) {
		struct pending *p = &f->q[(f->head + i) % MOAT_MCP_MAX_INFLIGHT];
		json_decref(p->id);
		free(p->r.buf);
	}
	json_decref(f->tools);
	free(f->line);
	free(f);
	return NULL;
}

unsigned moat_mcp_front_pending(const struct moat_mcp_front *f)
{
	return f->n;
}

void moat_mcp_front_feed(struct moat_mcp_front *f, const char *buf, size_t n)
{
	for (size_t i = 0; i < n;) {
		const char *nl = memchr(buf + i, '\n', n - i);
		size_t seg = nl ? (size_t)(nl - (buf + i)) : n - i;
		if (!f->skipping && f->len + seg > MCP_MAX_LINE) {
			f->skipping = true;
			f->len = 0;
		}
		if (!f->skipping) {
			memcpy(f->line + f->len, buf + i, seg);
			f->len += seg;
		}
		i += seg;
		if (!nl)
			break;
		i++;
		if (f->skipping) {
			char msg[96];
			snprintf(msg, sizeof(msg), "request larger than %u bytes", MCP_MAX_LINE);
			send_error(f, NULL, RPC_INVALID_REQUEST, msg);
			f->skipping = false;
		} else {
			handle_line(f, f->line, f->len);
		}
		f->len = 0;
	}
}

int moat_mcp_front_answer(struct moat_mcp_front *f)
{
	return from_supervisor(f);
}

int moat_mcp_front_main(void)
{
	struct moat_mcp_front *f;
	struct stat st;
	int k;

	/* exactly 0, 1, 2 and the socket (the supervisor compacted them) */
	if (syscall(SYS_close_range, MOAT_MCP_FRONT_FD_SOCK + 1, ~0U, 0) < 0 ||
	    fstat(MOAT_MCP_FRONT_FD_SOCK, &st) < 0 || !S_ISSOCK(st.st_mode))
		return front_fail("descriptors", -EBADF);
	if (getppid() == 1)
		return MOAT_EXIT_SETUP;
	if ((k = drop_root()) < 0)
		return front_fail("identity", k);
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return front_fail("dumpable", negerrno());
	/* what needs a system call the filter refuses, before it */
	signal(SIGPIPE, SIG_IGN);
	json_object_seed(0);
	f = moat_mcp_front_new(STDOUT_FILENO, MOAT_MCP_FRONT_FD_SOCK);
	if (!f)
		return front_fail("memory", -ENOMEM);
	/* What it holds, as it serves: one line on stderr (the server's log,
	 * where an MCP client shows it), the only view of a non-dumpable
	 * process an unprivileged operator has. */
	char fds[512], line[700];
	unsigned uid = (unsigned)getuid();
	if ((k = moat_fdset_describe(fds, sizeof(fds))) < 0)
		return front_fail("descriptors", k);
	for (char *c = fds; *c; c++)
		if (*c < 0x20 || *c >= 0x7f)
			*c = '?';
	if ((k = install_seccomp()) < 0)
		return front_fail("seccomp", k);
	k = snprintf(line, sizeof(line), "moat mcp: front %d (uid %u) serves: fds %s, seccomp on\n",
		     (int)getpid(), uid, fds);
	if (k > 0)
		(void)!write(STDERR_FILENO, line, MIN((size_t)k, sizeof(line) - 1));

	/* Under the filter it ends with _exit: nothing runs at exit (the leak
	 * checker of the sanitizer build could not, without ptrace). */
	bool eof = false;
	for (;;) {
		/* Calls beyond the in-flight limit wait in the pipe */
		bool room = !eof && f->n < MOAT_MCP_MAX_INFLIGHT;
		struct pollfd pf[2] = {{.fd = STDIN_FILENO, .events = room ? POLLIN : 0},
				       {.fd = MOAT_MCP_FRONT_FD_SOCK, .events = POLLIN}};
		if (eof && f->n == 0)
			_exit(0);
		k = poll(pf, 2, -1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			_exit(1);
		if (pf[1].revents) {
			if (from_supervisor(f) < 0)
				_exit(1); /* the supervisor is gone or misbehaves */
			continue;
		}
		if (!room || !pf[0].revents)
			continue;
		char buf[65536];
		ssize_t n = read(STDIN_FILENO, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0) {
			/* the client's shutdown: what runs is killed, what waits is
			 * dropped, and the front ends once the supervisor answered */
			eof = true;
			for (unsigned i = f->n; i > 0; i--)
				cancel(f, f->q[(f->head + i - 1) % MOAT_MCP_MAX_INFLIGHT].id);
			continue;
		}
		moat_mcp_front_feed(f, buf, (size_t)n);
	}
}
