/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The front of `moat mcp` (mcp_front.c) as a state machine, for its process
 * main and for the unit tests and the fuzz target: bytes from the client in,
 * JSON-RPC lines to out_fd, fixed records (mcp_proto.h) to sock_fd.
 */
#pragma once

#include <stddef.h>

struct moat_mcp_front;

/* Caller owns the fds; free with moat_mcp_front_free(). NULL: no memory. */
struct moat_mcp_front *moat_mcp_front_new(int out_fd, int sock_fd);
struct moat_mcp_front *moat_mcp_front_free(struct moat_mcp_front *f);
/* Client bytes, in any chunks: each complete line is handled. One call at a
 * time goes to the supervisor (the next when it was answered); a JSON-RPC
 * response goes to out_fd at once for what the front answers itself. */
void moat_mcp_front_feed(struct moat_mcp_front *f, const char *buf, size_t n);
/* Reads one answer from sock_fd and writes its JSON-RPC response. */
int moat_mcp_front_answer(struct moat_mcp_front *f);
/* Calls waiting for the supervisor's answer. */
unsigned moat_mcp_front_pending(const struct moat_mcp_front *f);
