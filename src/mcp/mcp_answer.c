/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The front of `moat mcp` turns the supervisor's fixed answers
 * (mcp_proto.h) into tool results: structuredContent and the same object as
 * JSON text. Bytes from the sandbox (output, file contents and names) become
 * valid UTF-8 (U+FFFD for what is not) or base64.
 */
#include <jansson.h>
#include <nettle/base64.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "mcp/mcp_front_int.h"
#include "moat/moat.h"
#include "shared/macro.h"

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

json_t *moat_mcp_answer_result(uint32_t op, const struct moat_mcp_resp *h, const char *pay)
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
		switch (op) {
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
	return res;
}
