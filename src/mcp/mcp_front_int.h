/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the front's files share (mcp_front.c: the process and JSON-RPC;
 * mcp_tools.c: the tools and their arguments; mcp_answer.c: tool results). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mcp/mcp_proto.h"
#include "shared/macro.h"

/* A request record and its payload, built up. */
struct moat_mcp_reqbuf {
	struct moat_mcp_req h;
	char *buf;
	size_t len, cap;
};

/* Why a message or an argument was refused (names the field). */
struct moat_mcp_bad {
	char msg[320];
};
/* Fills b; returns -EINVAL. */
_printf_(2, 3) int moat_mcp_bad(struct moat_mcp_bad *b, const char *fmt, ...);
/* Every key of o is one of allowed[] (NULL-terminated); what names o. */
int moat_mcp_only_fields(json_t *o, const char *const *allowed, const char *what,
			 struct moat_mcp_bad *b);
/* A string field: 0 if absent (*ret NULL), 1 if there; refused if not a
 * string, longer than max or (nul_ok false) with a NUL. */
int moat_mcp_get_string(json_t *o, const char *field, size_t max, bool nul_ok, const char **ret,
			size_t *ret_len, struct moat_mcp_bad *b);

/* The op of a tool name, 0 if none. */
uint32_t moat_mcp_tool_op(const char *name);
/* The call's arguments (an object) into r (its header's op and seq set by
 * the caller): 0, -EINVAL (b says why), -ENOMEM. */
int moat_mcp_tool_build(uint32_t op, json_t *a, struct moat_mcp_reqbuf *r, struct moat_mcp_bad *b);
/* tools/list's array; caller owns it. */
json_t *moat_mcp_tools_load(void);

/* A call's tool result from the supervisor's answer h and its payload. */
json_t *moat_mcp_answer_result(uint32_t op, const struct moat_mcp_resp *h, const char *pay);
