/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/mcp/: moat mcp: the unprivileged JSON-RPC front and the supervisor that drives
 * sandboxes for it, with the fixed records between them
 */
/*
 * `moat mcp`: the records between the front ("moat __mcp-front", which parses
 * the MCP client's JSON-RPC, mcp_front.c) and the supervisor (which holds the
 * policy and the sandboxes, mcp.c). The supervisor never parses JSON-RPC: it
 * reads one fixed-layout header and as many payload bytes as the header
 * announces, checks every length against the limits below and refuses the
 * record otherwise. Native byte order and layout: both ends are the same
 * executable (the front is exec'd from /proc/self/exe).
 *
 * Request payload, in this order: n_args NUL-terminated arguments
 * (args_len bytes), the path (path_len, no NUL), the working directory
 * (cwd_len, no NUL), the data (data_len: write_file's content, run's stdin).
 * Response payload: stdout (out_len), stderr (err_len), the message
 * (msg_len: why a call failed), n_entries struct moat_mcp_entry (list_dir),
 * n_denied struct moat_mcp_denied (run, reset, destroy_sandbox).
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#define MOAT_MCP_REQ_MAGIC 0x6d637071u /* "mcpq" */
#define MOAT_MCP_RESP_MAGIC 0x6d637072u /* "mcpr" */

#define MOAT_MCP_MAX_ARGS 256u
#define MOAT_MCP_MAX_ARGV_BYTES (128u << 10)
#define MOAT_MCP_MAX_PATH 4096u
#define MOAT_MCP_MAX_DATA (1u << 20) /* write_file content, run stdin */
#define MOAT_MCP_MAX_STREAM (1u << 20) /* stdout, stderr: each cut there */
#define MOAT_MCP_MAX_READ (1u << 20) /* read_file */
#define MOAT_MCP_MAX_MSG 2048u
#define MOAT_MCP_MAX_ENTRIES 4096u /* list_dir */
#define MOAT_MCP_MAX_DENIED 16u
#define MOAT_MCP_MAX_SANDBOXES 8u /* live at once, the default one included */
#define MOAT_MCP_MAX_TIMEOUT_MS (24ull * 3600 * 1000)
/* A run without a time limit of its own or of the policy's: the server
 * answers one call at a time, so a run that never ends would block it. */
#define MOAT_MCP_DEFAULT_TIMEOUT_MS (600ull * 1000)
#define MOAT_MCP_MAX_INFLIGHT 32u /* requests the front holds for the supervisor */

enum moat_mcp_op {
	MOAT_MCP_OP_RUN = 1,
	MOAT_MCP_OP_READ_FILE,
	MOAT_MCP_OP_WRITE_FILE,
	MOAT_MCP_OP_LIST_DIR,
	MOAT_MCP_OP_RESET,
	MOAT_MCP_OP_CREATE,
	MOAT_MCP_OP_DESTROY,
	MOAT_MCP_OP_MAX_,
	/* not a call: the run with this seq is to be killed (the client
	 * cancelled it); header only, sent while that run is in progress */
	MOAT_MCP_OP_CANCEL = 0x100,
};

/* sandbox: 0 the default one (created by the first call that needs it),
 * else the number create_sandbox returned ("sb-N"). */
struct moat_mcp_req {
	uint32_t magic;
	uint32_t seq; /* echoed in the response */
	uint32_t op;
	uint32_t sandbox;
	uint32_t n_args;
	uint32_t args_len, path_len, cwd_len, data_len;
	uint32_t has_stdin; /* run: data is its stdin */
	uint64_t timeout_ms; /* run: 0 = the policy's */
};

enum {
	MOAT_MCP_OUT_CUT = 1u << 0, /* stdout longer than MOAT_MCP_MAX_STREAM */
	MOAT_MCP_ERR_CUT = 1u << 1,
	MOAT_MCP_TRUNCATED = 1u << 2, /* read_file: more than MOAT_MCP_MAX_READ; list_dir: cut */
	MOAT_MCP_STARTED = 1u << 3, /* a new sandbox was created for this call */
	MOAT_MCP_ENDED = 1u << 4, /* a sandbox was destroyed: log_path, run_id are its */
};

struct moat_mcp_resp {
	uint32_t magic;
	uint32_t seq;
	int32_t err; /* 0, or -errno: the call failed (msg says why) */
	uint32_t sandbox;
	uint32_t flags;
	uint32_t reason; /* enum moat_reason of a run */
	int32_t exit_code, status, signal;
	uint32_t out_len, err_len, msg_len, n_entries, n_denied;
	uint64_t wall_us;
	uint64_t net_denied; /* network denials of a destroyed sandbox */
	char run_id[40];
	char log_path[1024];
};

struct moat_mcp_entry {
	uint32_t type; /* enum moat_file_type */
	uint32_t mode;
	uint64_t size;
	uint64_t mtime_s;
	char name[256];
};

struct moat_mcp_denied {
	uint32_t count;
	char dest[256]; /* "host:port" or "addr:port" */
	char rule[256]; /* the narrow rule the operator could add, "" if none */
};

/* The front's descriptors ("moat __mcp-front"): 0, 1, 2 the server's own
 * stdin, stdout and stderr, 3 the socket to the supervisor; nothing else. */
#define MOAT_MCP_FRONT_FD_SOCK 3

/* A request's payload as the supervisor uses it (mcp.c). */
struct moat_mcp_call {
	char *argv[MOAT_MCP_MAX_ARGS + 1]; /* into the payload, NULL-terminated */
	char path[MOAT_MCP_MAX_PATH + 1];
	char cwd[MOAT_MCP_MAX_PATH + 1];
	const char *data; /* data_len bytes */
};

/* The header's lengths against the limits: 0 and the payload's length, or
 * -EBADMSG (the stream cannot be framed any more). */
int moat_mcp_req_head_check(const struct moat_mcp_req *q, size_t *ret_len);
/* The payload (of the length moat_mcp_req_head_check gave) checked against
 * the header and the op: 0 and *ret, or -EBADMSG. */
int moat_mcp_req_parse(const struct moat_mcp_req *q, char *pay, struct moat_mcp_call *ret);
