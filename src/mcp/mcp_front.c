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
#include <poll.h>
#include <seccomp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdint.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "kernel/confine.h"
#include "mcp/mcp_front.h"
#include "mcp/mcp_front_int.h"
#include "mcp/mcp_proto.h"
#include "moat/moat.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/macro.h"

/* write_file's content (1 MiB) as JSON escapes (\uXXXX: 6 bytes per byte)
 * fits; a larger line is refused without being parsed. */
#define MCP_MAX_LINE (8u << 20)

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

/* The calls for the supervisor, oldest first. Only the oldest is sent: the
 * supervisor answers one call at a time and the front never writes a record
 * while an answer may be waiting for it (no deadlock on the socket). */
struct pending {
	json_t *id;
	uint32_t op;
	bool cancelled; /* notifications/cancelled: no response is sent */
	struct moat_mcp_reqbuf r;
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

/* ---- JSON-RPC ---------------------------------------------------------------------- */

static void do_initialize(struct moat_mcp_front *f, json_t *id, json_t *params)
{
	static const char *const fields[] = {"protocolVersion", "capabilities", "clientInfo",
					     "_meta", NULL};
	const char *want = NULL;
	struct moat_mcp_bad b = {{0}};
	const char *chosen = revisions[0];

	if (moat_mcp_only_fields(params, fields, "params", &b) < 0 ||
	    moat_mcp_get_string(params, "protocolVersion", 64, false, &want, NULL, &b) < 0)
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

static int send_req(struct moat_mcp_front *f, struct moat_mcp_reqbuf *r)
{
	int k;
	if ((k = moat_write_all(f->sock, &r->h, sizeof(r->h))) < 0)
		return k;
	return r->len ? moat_write_all(f->sock, r->buf, r->len) : 0;
}

static void do_call(struct moat_mcp_front *f, json_t *id, json_t *params)
{
	static const char *const fields[] = {"name", "arguments", "_meta", NULL};
	struct moat_mcp_bad b = {{0}};
	const char *name;
	uint32_t op = 0;
	int k;

	if (moat_mcp_only_fields(params, fields, "params", &b) < 0 ||
	    moat_mcp_get_string(params, "name", 64, false, &name, NULL, &b) < 0)
		return send_error(f, id, RPC_INVALID_PARAMS, b.msg);
	if (!name)
		return send_error(f, id, RPC_INVALID_PARAMS, "params: name: required");
	op = moat_mcp_tool_op(name);
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
	struct moat_mcp_reqbuf r = {.h = {.magic = MOAT_MCP_REQ_MAGIC, .seq = ++f->seq, .op = op}};
	a = a ? a : empty;
	k = moat_mcp_tool_build(op, a, &r, &b);
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
	struct moat_mcp_bad b = {{0}};

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
	} else if (moat_mcp_only_fields(m, fields, "message", &b) < 0) {
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
			moat_mcp_only_fields(pp, ping_fields, "params", &b) < 0
				? send_error(f, id, RPC_INVALID_PARAMS, b.msg)
				: send_result(f, id, json_object());
		else if (streq(method, "tools/list"))
			moat_mcp_only_fields(pp, list_fields, "params", &b) < 0
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
		send_result(f, p->id, moat_mcp_answer_result(p->op, &h, pay));
	free(pay);
	drop_head(f);
	return next_call(f);
}

/* ---- the process ---------------------------------------------------------------------- */

static int install_seccomp(void)
{
	/* read, write, poll: no open, no socket, no exec, no kill, no ptrace */
	static const int allow[] = {SCMP_SYS(poll), SCMP_SYS(ppoll)};
	return moat_confine_seccomp(allow, ELEMENTSOF(allow), NULL, NULL);
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
	if (!f)
		return NULL;
	f->out = out_fd;
	f->sock = sock_fd;
	f->tools = moat_mcp_tools_load();
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
	if ((k = moat_confine_drop_root()) < 0)
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
