/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat serve --e2b`: E2B's public protocol (docs/E2B.md) as the confined
 * front of `moat serve` sees it. Pure code, no I/O: the route of a request
 * (the REST lifecycle API and the in-sandbox "envd" services), the strict
 * check of each request body (types, sizes, unknown and unsupported fields
 * refused by name), and the JSON of each answer. What passes becomes a
 * request of serve's own protocol; nothing here holds a sandbox.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moat/moat.h"

/* The envd version the SDK is told (it gates features on it): >= 0.4.0 so
 * it sends no default user, >= 0.5.2 for closeStdin; < 0.6.2, so file
 * metadata and watch options it cannot have are refused by the SDK itself. */
#define MOAT_E2B_ENVD_VERSION "0.5.7"
#define MOAT_E2B_TEMPLATE "base"
#define MOAT_E2B_ID_MAX 64u
#define MOAT_E2B_MAX_ARGS 256u
#define MOAT_E2B_MAX_ENV 256u
#define MOAT_E2B_MAX_STR (128u << 10) /* one argument, one value */
#define MOAT_E2B_MAX_PATH 4096u
#define MOAT_E2B_MAX_TAG 256u
#define MOAT_E2B_MAX_FILE (16u << 20) /* one file written or read */
#define MOAT_E2B_MAX_PARTS 16u /* files of one multipart upload */
#define MOAT_E2B_MAX_TIMEOUT_S (24u * 3600u)

enum moat_e2b_route {
	MOAT_E2B_NONE = 0, /* not an E2B path */
	/* REST (X-API-KEY) */
	MOAT_E2B_CREATE, /* POST /v2/sandboxes, POST /sandboxes */
	MOAT_E2B_LIST, /* GET /v2/sandboxes, GET /sandboxes */
	MOAT_E2B_INFO, /* GET /sandboxes/{id} */
	MOAT_E2B_KILL, /* DELETE /sandboxes/{id} */
	MOAT_E2B_CONNECT, /* POST /v2/sandboxes/{id}/connect */
	MOAT_E2B_REST_UNSUPPORTED, /* another /sandboxes/{id}/..., /templates, ... */
	/* envd (E2b-Sandbox-Id, X-Access-Token) */
	MOAT_E2B_HEALTH, /* GET /health */
	MOAT_E2B_FILES_GET, /* GET /files?path= */
	MOAT_E2B_FILES_POST, /* POST /files?path= */
	MOAT_E2B_PROC_START, /* streaming */
	MOAT_E2B_PROC_CONNECT, /* streaming */
	MOAT_E2B_PROC_LIST,
	MOAT_E2B_PROC_SIGNAL,
	MOAT_E2B_PROC_INPUT,
	MOAT_E2B_PROC_CLOSE_STDIN,
	MOAT_E2B_FS_STAT,
	MOAT_E2B_FS_LIST,
	MOAT_E2B_FS_MKDIR,
	MOAT_E2B_FS_REMOVE,
	MOAT_E2B_FS_MOVE,
	MOAT_E2B_RPC_UNSUPPORTED, /* another /process.Process/ or /filesystem.Filesystem/ call */
	MOAT_E2B_ROUTE_MAX_,
};

struct moat_e2b_target {
	enum moat_e2b_route route;
	bool envd; /* an in-sandbox service: the sandbox is named by E2b-Sandbox-Id */
	bool stream; /* a Connect server-streaming call */
	bool rpc; /* a Connect call (unary or streaming) */
	char sandbox[MOAT_E2B_ID_MAX + 1]; /* REST: from the path */
	char name[64]; /* what it is, for messages: "Process/Start" */
};

/* The route of method + url (the path, without the query). 0 and *ret,
 * -ENOENT (not an E2B path), -EINVAL (an E2B path whose sandbox id is not
 * one moat could have made), -EBADRQC (the method does not fit the path). */
int moat_e2b_route(const char *method, const char *url, struct moat_e2b_target *ret);

/* A sandbox id as moat makes them ([A-Za-z0-9_-], 1..MOAT_E2B_ID_MAX). */
bool moat_e2b_id_ok(const char *id);

/* Why a request was refused: the Connect/HTTP code's kind and a message
 * naming the field. */
struct moat_e2b_bad {
	int err; /* -EINVAL (invalid_argument), -EOPNOTSUPP (unimplemented), -EPERM */
	char msg[512];
};

/* POST /v2/sandboxes */
struct moat_e2b_create {
	uint64_t timeout_s; /* 0: not given */
	int internet; /* allow_internet_access: -1 not given, 0 false, 1 true */
	size_t n_env;
	char *env[MOAT_E2B_MAX_ENV + 1]; /* "NAME=VALUE", NULL-terminated; owned */
};
int moat_e2b_parse_create(const char *body, size_t len, struct moat_e2b_create *ret,
			  struct moat_e2b_bad *bad);
void moat_e2b_create_done(struct moat_e2b_create *c);

/* process.Process/Start */
struct moat_e2b_start {
	size_t n_args; /* argv[0] is cmd */
	char *argv[MOAT_E2B_MAX_ARGS + 2];
	size_t n_env;
	char *env[MOAT_E2B_MAX_ENV + 1];
	char *cwd; /* NULL: not given */
	char *tag; /* NULL: not given */
	bool stdin_open; /* "stdin": true */
};
int moat_e2b_parse_start(const char *msg, size_t len, struct moat_e2b_start *ret,
			 struct moat_e2b_bad *bad);
void moat_e2b_start_done(struct moat_e2b_start *s);

/* A ProcessSelector ({"process":{"pid":N}} or {"process":{"tag":"..."}})
 * and what the call carries with it. */
struct moat_e2b_proc_call {
	uint32_t pid; /* 0: by tag */
	char tag[MOAT_E2B_MAX_TAG + 1];
	int signal; /* SendSignal: SIGKILL or SIGTERM */
	char *input; /* SendInput: the stdin bytes (decoded); owned */
	size_t input_len;
};
/* route is PROC_CONNECT, PROC_SIGNAL, PROC_INPUT or PROC_CLOSE_STDIN. */
int moat_e2b_parse_proc_call(enum moat_e2b_route route, const char *msg, size_t len,
			     struct moat_e2b_proc_call *ret, struct moat_e2b_bad *bad);
void moat_e2b_proc_call_done(struct moat_e2b_proc_call *p);
/* process.Process/List: {} only. */
int moat_e2b_parse_empty(const char *msg, size_t len, struct moat_e2b_bad *bad);

/* filesystem.Filesystem/{Stat,ListDir,MakeDir,Remove,Move}: absolute paths. */
struct moat_e2b_fs_call {
	char path[MOAT_E2B_MAX_PATH + 1];
	char dest[MOAT_E2B_MAX_PATH + 1]; /* Move */
	unsigned depth; /* ListDir: 1 (only 1 is supported) */
};
int moat_e2b_parse_fs_call(enum moat_e2b_route route, const char *msg, size_t len,
			   struct moat_e2b_fs_call *ret, struct moat_e2b_bad *bad);

/* /files?path=P&username=U: the query string (after '?'), percent-decoded;
 * path absolute (or absent for a multipart upload naming its files);
 * username absent or "user" (moat runs every process as the sandbox's one
 * user: "root" is refused, not ignored). */
int moat_e2b_parse_files_query(const char *query, char ret_path[MOAT_E2B_MAX_PATH + 1],
			       struct moat_e2b_bad *bad);
/* A normalised absolute path: "/" and components that are neither empty,
 * "." nor ".."; at most MOAT_E2B_MAX_PATH bytes, no NUL or control byte. */
bool moat_e2b_path_ok(const char *p);

/* An upload body (POST /files): application/octet-stream (one file, the
 * query's path) or multipart/form-data (fields named "file"; each part's
 * filename is its path unless the query named one, then exactly one part).
 * The parts point into body. */
struct moat_e2b_part {
	char path[MOAT_E2B_MAX_PATH + 1];
	const char *data;
	size_t len;
};
int moat_e2b_parse_upload(const char *content_type, const char *body, size_t len,
			  const char *query_path, struct moat_e2b_part *ret, size_t max,
			  size_t *ret_n, struct moat_e2b_bad *bad);

/* ---- answers (JSON text; caller frees; NULL: no memory) ---- */

/* The REST error body {"code":HTTP,"message":"..."}. */
char *moat_e2b_rest_error(unsigned http, const char *msg);
/* The Sandbox object of create/info ("sandboxID", "envdVersion",
 * "envdAccessToken", ...). started_us: creation time (wall clock), 0 now. */
char *moat_e2b_sandbox_json(const char *id, const char *access_token, uint64_t started_us,
			    uint64_t end_us, bool detail);
/* A process event of Start/Connect (each one message of the stream). */
char *moat_e2b_event_start(uint32_t pid);
char *moat_e2b_event_data(bool is_stderr, const void *data, size_t len);
char *moat_e2b_event_end(const struct moat_proc_status *st);
char *moat_e2b_event_keepalive(void);
/* EntryInfo of the filesystem service for the entry fi->name in dir
 * (fi->name "" : dir itself), as {"<wrap>":{...}} (Stat, MakeDir, Move). */
char *moat_e2b_entry_json(const char *dir, const struct moat_file_info *fi, const char *wrap);
/* ListDir's {"entries":[...]} */
char *moat_e2b_list_json(const char *dir, const struct moat_file_info *fi, size_t n);
/* POST /files: [{"name":...,"type":"file","path":...}, ...] */
char *moat_e2b_upload_json(const struct moat_e2b_part *parts, size_t n);
/* Process/List: {"processes":[{"pid":N,"tag":"...","config":{"cmd":...}}]} */
struct moat_e2b_proc_info {
	uint32_t pid;
	const char *tag; /* NULL: none */
	char *const *argv;
	const char *cwd;
};
char *moat_e2b_proc_list_json(const struct moat_e2b_proc_info *p, size_t n);
