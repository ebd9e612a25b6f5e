/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The tools of `moat mcp` as the front sees them (mcp_front.c): their
 * description for tools/list, and the strict check of each call's
 * arguments (types, sizes, unknown fields refused: no tool has a policy
 * field) that turns it into a request record (mcp_proto.h).
 */
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mcp/mcp_front_int.h"
#include "shared/macro.h"

int moat_mcp_bad(struct moat_mcp_bad *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Every key of o is one of allowed[] (NULL-terminated). */
int moat_mcp_only_fields(json_t *o, const char *const *allowed, const char *what,
			 struct moat_mcp_bad *b)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = streq(*a, key);
		if (!ok)
			return moat_mcp_bad(b, "%s: unknown field '%.64s'%s", what, key,
					    streq(what, "arguments")
						    ? " (tools take no policy fields: "
						      "the operator's policy is fixed)"
						    : "");
	}
	(void)v;
	return 0;
}

/* A string field: NULL if absent; refused if not a string, longer than max
 * or (nul_ok false) with an embedded NUL. */
int moat_mcp_get_string(json_t *o, const char *field, size_t max, bool nul_ok, const char **ret,
			size_t *ret_len, struct moat_mcp_bad *b)
{
	json_t *v = json_object_get(o, field);
	*ret = NULL;
	if (ret_len)
		*ret_len = 0;
	if (!v)
		return 0;
	if (!json_is_string(v))
		return moat_mcp_bad(b, "%s: must be a string", field);
	size_t n = json_string_length(v);
	if (n > max)
		return moat_mcp_bad(b, "%s: longer than %zu bytes", field, max);
	if (!nul_ok && memchr(json_string_value(v), 0, n))
		return moat_mcp_bad(b, "%s: contains a NUL byte", field);
	*ret = json_string_value(v);
	if (ret_len)
		*ret_len = n;
	return 1;
}

static int get_path(json_t *o, const char *field, bool required, const char **ret,
		    struct moat_mcp_bad *b)
{
	int k = moat_mcp_get_string(o, field, MOAT_MCP_MAX_PATH, false, ret, NULL, b);
	if (k < 0)
		return k;
	if (k == 0 && required)
		return moat_mcp_bad(b, "%s: required", field);
	if (k && (*ret)[0] != '/')
		return moat_mcp_bad(b, "%s: must be an absolute path inside the sandbox", field);
	return k;
}

/* "default" (or absent) is 0, "sb-N" is N. */
static int get_sandbox(json_t *o, bool required, uint32_t *ret, struct moat_mcp_bad *b)
{
	const char *s;
	int k = moat_mcp_get_string(o, "sandbox", 16, false, &s, NULL, b);
	*ret = 0;
	if (k < 0)
		return k;
	if (k == 0)
		return required ? moat_mcp_bad(b, "sandbox: required") : 0;
	if (streq(s, "default"))
		return required
			? moat_mcp_bad(b, "sandbox: the default sandbox is reset, not destroyed")
			: 0;
	if (!startswith(s, "sb-") || s[3] < '1' || s[3] > '9' || strlen(s) > 3 + 9)
		return moat_mcp_bad(b, "sandbox: not a sandbox id (\"sb-N\" from create_sandbox)");
	uint32_t n = 0;
	for (const char *p = s + 3; *p; p++) {
		if (*p < '0' || *p > '9')
			return moat_mcp_bad(
				b, "sandbox: not a sandbox id (\"sb-N\" from create_sandbox)");
		n = n * 10 + (uint32_t)(*p - '0');
	}
	*ret = n;
	return 1;
}

static int req_put(struct moat_mcp_reqbuf *r, const void *p, size_t n)
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

static int build_run(json_t *a, struct moat_mcp_reqbuf *r, struct moat_mcp_bad *b)
{
	static const char *const fields[] = {"argv",	   "shell",   "cwd", "stdin",
					     "timeout_ms", "sandbox", NULL};
	json_t *argv = json_object_get(a, "argv");
	const char *shell, *cwd, *in;
	size_t shell_len, in_len;
	int k;

	if ((k = moat_mcp_only_fields(a, fields, "arguments", b)) < 0 ||
	    (k = moat_mcp_get_string(a, "shell", MOAT_MCP_MAX_ARGV_BYTES - 16, false, &shell,
				     &shell_len, b)) < 0 ||
	    (k = get_path(a, "cwd", false, &cwd, b)) < 0 ||
	    (k = moat_mcp_get_string(a, "stdin", MOAT_MCP_MAX_DATA, true, &in, &in_len, b)) < 0 ||
	    (k = get_sandbox(a, false, &r->h.sandbox, b)) < 0)
		return k;
	if (!argv == !shell)
		return moat_mcp_bad(
			b,
			"arguments: exactly one of argv (an array of strings) and shell (a "
			"string run by sh -c)");
	if (shell) {
		if ((k = req_put(r, "sh", 3)) < 0 || (k = req_put(r, "-c", 3)) < 0 ||
		    (k = req_put(r, shell, shell_len + 1)) < 0)
			return k;
		r->h.n_args = 3;
	} else {
		if (!json_is_array(argv) || json_array_size(argv) == 0)
			return moat_mcp_bad(b, "argv: must be a non-empty array of strings");
		if (json_array_size(argv) > MOAT_MCP_MAX_ARGS)
			return moat_mcp_bad(b, "argv: more than %u arguments", MOAT_MCP_MAX_ARGS);
		size_t i;
		json_t *v;
		json_array_foreach(argv, i, v)
		{
			if (!json_is_string(v))
				return moat_mcp_bad(b, "argv[%zu]: must be a string", i);
			size_t n = json_string_length(v);
			if (memchr(json_string_value(v), 0, n))
				return moat_mcp_bad(b, "argv[%zu]: contains a NUL byte", i);
			if (i == 0 && n == 0)
				return moat_mcp_bad(b, "argv[0]: empty");
			if (r->len + n + 1 > MOAT_MCP_MAX_ARGV_BYTES)
				return moat_mcp_bad(b, "argv: longer than %u bytes",
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
			return moat_mcp_bad(b, "timeout_ms: must be an integer from 1 to %llu",
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

static int build_file(json_t *a, uint32_t op, struct moat_mcp_reqbuf *r, struct moat_mcp_bad *b)
{
	static const char *const f_path[] = {"path", "sandbox", NULL};
	static const char *const f_write[] = {"path", "content", "encoding", "sandbox", NULL};
	const char *path, *content = NULL, *enc = NULL;
	size_t clen = 0;
	int k;

	if ((k = moat_mcp_only_fields(a, op == MOAT_MCP_OP_WRITE_FILE ? f_write : f_path,
				      "arguments", b)) < 0 ||
	    (k = get_path(a, "path", true, &path, b)) < 0 ||
	    (k = get_sandbox(a, false, &r->h.sandbox, b)) < 0)
		return k;
	if (op == MOAT_MCP_OP_WRITE_FILE) {
		if ((k = moat_mcp_get_string(a, "encoding", 16, false, &enc, NULL, b)) < 0)
			return k;
		if (enc && !streq(enc, "utf-8") && !streq(enc, "base64"))
			return moat_mcp_bad(b, "encoding: \"utf-8\" (the default) or \"base64\"");
		bool b64 = enc && streq(enc, "base64");
		k = moat_mcp_get_string(a, "content",
					b64 ? BASE64_ENCODE_RAW_LENGTH(MOAT_MCP_MAX_DATA)
					    : MOAT_MCP_MAX_DATA,
					true, &content, &clen, b);
		if (k < 0)
			return k;
		if (k == 0)
			return moat_mcp_bad(b, "content: required");
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
				return moat_mcp_bad(b, "content: not valid base64");
			}
			if (n > MOAT_MCP_MAX_DATA) {
				free(d);
				return moat_mcp_bad(b, "content: longer than %u bytes",
						    MOAT_MCP_MAX_DATA);
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

static int build_sandbox_op(json_t *a, uint32_t op, struct moat_mcp_reqbuf *r,
			    struct moat_mcp_bad *b)
{
	static const char *const f_sb[] = {"sandbox", NULL};
	static const char *const f_none[] = {NULL};
	int k = moat_mcp_only_fields(a, op == MOAT_MCP_OP_CREATE ? f_none : f_sb, "arguments", b);
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

uint32_t moat_mcp_tool_op(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(tool_ops); i++)
		if (streq(name, tool_ops[i].name))
			return tool_ops[i].op;
	return 0;
}

int moat_mcp_tool_build(uint32_t op, json_t *a, struct moat_mcp_reqbuf *r, struct moat_mcp_bad *b)
{
	switch (op) {
	case MOAT_MCP_OP_RUN:
		return build_run(a, r, b);
	case MOAT_MCP_OP_READ_FILE:
	case MOAT_MCP_OP_WRITE_FILE:
	case MOAT_MCP_OP_LIST_DIR:
		return build_file(a, op, r, b);
	default:
		return build_sandbox_op(a, op, r, b);
	}
}

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

json_t *moat_mcp_tools_load(void)
{
	json_error_t je;
	return json_loads(tools_json, 0, &je);
}
