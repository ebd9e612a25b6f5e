/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat mcp`: the supervisor. It holds the operator's policy (fixed before
 * it starts) and the sandboxes, and never parses JSON-RPC: the MCP client's
 * bytes go to the front ("moat __mcp-front", mcp_front.c), exec'd afresh
 * with exactly the server's stdin, stdout, stderr and one socket. The
 * supervisor then puts /dev/null on its own stdin and stdout: nothing it
 * runs, no sandbox process included, can reach the MCP channel. It reads
 * one fixed record per tool call (mcp_proto.h), checks every length and
 * every field again, maps it to the lifecycle API and answers with another
 * fixed record. One call at a time; the front queues the others.
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/errors.h"
#include "mcp/mcp_proto.h"
#include "policy/policy.h"
#include "moat/moat.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/macro.h"

struct slot {
	bool used;
	uint32_t id; /* 0: the default sandbox */
	struct moat_sandbox *sb;
	uint64_t denied_seen; /* denied network events of its log already reported */
};

struct server {
	const struct moat_policy *p;
	int sock;
	struct slot slots[MOAT_MCP_MAX_SANDBOXES];
	uint32_t next_id;
};

/* An answer being built: the header and its five payload parts. */
struct answer {
	struct moat_mcp_resp h;
	char *out, *err;
	char msg[MOAT_MCP_MAX_MSG];
	struct moat_mcp_entry *ent;
	struct moat_mcp_denied den[MOAT_MCP_MAX_DENIED];
};

_printf_(3, 4) static int fail(struct answer *a, int k, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(a->msg, sizeof(a->msg), fmt, ap);
	va_end(ap);
	a->h.err = k < 0 ? k : -EINVAL;
	a->h.msg_len = n < 0 ? 0 : (uint32_t)MIN((size_t)n, sizeof(a->msg) - 1);
	return a->h.err;
}

static int send_answer(int sock, struct answer *a)
{
	int k;
	a->h.magic = MOAT_MCP_RESP_MAGIC;
	if ((k = moat_write_all(sock, &a->h, sizeof(a->h))) < 0 ||
	    (a->h.out_len && (k = moat_write_all(sock, a->out, a->h.out_len)) < 0) ||
	    (a->h.err_len && (k = moat_write_all(sock, a->err, a->h.err_len)) < 0) ||
	    (a->h.msg_len && (k = moat_write_all(sock, a->msg, a->h.msg_len)) < 0) ||
	    (a->h.n_entries &&
	     (k = moat_write_all(sock, a->ent, a->h.n_entries * sizeof(*a->ent))) < 0) ||
	    (a->h.n_denied &&
	     (k = moat_write_all(sock, a->den, a->h.n_denied * sizeof(*a->den))) < 0))
		return k;
	return 0;
}

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

/* ---- sandboxes ------------------------------------------------------------------- */

static struct slot *find(struct server *s, uint32_t id)
{
	for (unsigned i = 0; i < MOAT_MCP_MAX_SANDBOXES; i++)
		if (s->slots[i].used && s->slots[i].id == id)
			return &s->slots[i];
	return NULL;
}

static int start(struct server *s, struct slot *sl, struct answer *a)
{
	struct moat_error e = {0};
	int k = moat_sandbox_create(s->p, &sl->sb, &e);
	if (k < 0) {
		sl->sb = NULL;
		return fail(a, k, "the sandbox could not be set up: %s step: %s", e.stage,
			    e.message);
	}
	sl->denied_seen = 0;
	a->h.flags |= MOAT_MCP_STARTED;
	return 0;
}

/* The sandbox a call names; the default one is created on first use. */
static int get(struct server *s, uint32_t id, struct answer *a, struct slot **ret)
{
	struct slot *sl = find(s, id);
	int k;
	if (!sl && id == 0) {
		sl = &s->slots[0];
		sl->used = true;
		sl->id = 0;
	}
	if (!sl)
		return fail(a, -ENOENT, "no sandbox sb-%u (create_sandbox makes one)", id);
	if (!sl->sb && (k = start(s, sl, a)) < 0)
		return k;
	snprintf(a->h.run_id, sizeof(a->h.run_id), "%s", moat_sandbox_id(sl->sb));
	*ret = sl;
	return 0;
}

/* net_top_denied: "COUNT DESTINATION\tRULE" lines. */
/* The sandbox's most denied destinations (struct moat_status, structured). */
static void top_denied(const struct moat_status *st, struct answer *a)
{
	for (unsigned i = 0;
	     i < st->n_top_denied && i < MOAT_TOP_DENIED_MAX && a->h.n_denied < MOAT_MCP_MAX_DENIED;
	     i++) {
		struct moat_mcp_denied *d = &a->den[a->h.n_denied++];
		d->count = (uint32_t)MIN(st->top_denied[i].count, (uint64_t)UINT32_MAX);
		snprintf(d->dest, sizeof(d->dest), "%s", st->top_denied[i].destination);
		snprintf(d->rule, sizeof(d->rule), "%s", st->top_denied[i].rule);
	}
}

static int end(struct slot *sl, struct answer *a)
{
	struct moat_status st;
	struct moat_error e = {0};
	int k = moat_sandbox_destroy(TAKE_PTR(sl->sb), &st, &e);
	a->h.flags |= MOAT_MCP_ENDED;
	snprintf(a->h.run_id, sizeof(a->h.run_id), "%s", st.run_id);
	snprintf(a->h.log_path, sizeof(a->h.log_path), "%s", st.log_path);
	a->h.net_denied = st.net_denied;
	top_denied(&st, a);
	if (k < 0)
		return fail(a, k, "destroy: %s", e.message);
	return 0;
}

/* Denied network events of the sandbox's log since the last call: the
 * destination and the narrow rule its audit event suggests. The log is
 * moat's own (every field escaped by the audit writer). */
static void new_denials(struct slot *sl, struct answer *a)
{
	struct moat_log *l = NULL;
	struct moat_error e = {0};
	char *line;
	uint64_t i = 0;

	if (moat_log_open(moat_sandbox_id(sl->sb), "net", true, &l, &e) < 0)
		return;
	while (moat_log_next(l, &line, NULL) > 0) {
		if (i++ < sl->denied_seen) {
			free(line);
			continue;
		}
		json_t *o = json_loads(line, 0, NULL);
		free(line);
		const char *host = json_string_value(json_object_get(o, "host"));
		const char *addr = json_string_value(json_object_get(o, "addr"));
		const char *raw = json_string_value(json_object_get(o, "raw"));
		const char *rule = json_string_value(json_object_get(o, "suggest"));
		char dest[256];
		snprintf(dest, sizeof(dest), "%s:%lld",
			 host		? host
				 : raw	? raw
				 : addr ? addr
					: "?",
			 (long long)json_integer_value(json_object_get(o, "port")));
		struct moat_mcp_denied *d = NULL;
		for (uint32_t j = 0; j < a->h.n_denied && !d; j++)
			if (streq(a->den[j].dest, dest))
				d = &a->den[j];
		if (!d && a->h.n_denied < MOAT_MCP_MAX_DENIED) {
			d = &a->den[a->h.n_denied++];
			snprintf(d->dest, sizeof(d->dest), "%s", dest);
			snprintf(d->rule, sizeof(d->rule), "%s", rule ? rule : "");
		}
		if (d)
			d->count++;
		json_decref(o);
	}
	sl->denied_seen = i;
	moat_log_free(l);
}

/* ---- run ----------------------------------------------------------------------------- */

struct stream {
	int fd;
	char *buf;
	uint32_t len;
	bool cut;
};

/* Reads what is there; 0 at EOF (fd closed), 1 otherwise. */
static int drain(struct stream *st)
{
	char scratch[65536];
	while (st->fd >= 0) {
		char *dst = st->len < MOAT_MCP_MAX_STREAM ? st->buf + st->len : scratch;
		size_t room = st->len < MOAT_MCP_MAX_STREAM ? MOAT_MCP_MAX_STREAM - st->len
							    : sizeof(scratch);
		ssize_t n = read(st->fd, dst, room);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 1; /* EAGAIN */
		if (n == 0) {
			st->fd = safe_close(st->fd);
			return 0;
		}
		if (dst == scratch)
			st->cut = true;
		else
			st->len += (uint32_t)n;
	}
	return 0;
}

static int do_run(struct server *s, const struct moat_mcp_req *q, char **argv, const char *cwd,
		  const char *data, struct answer *a)
{
	uint64_t limit = s->p->timeout_ms, t = q->timeout_ms;
	struct slot *sl;
	int k;

	if (limit && t > limit)
		return fail(a, -EPERM,
			    "timeout_ms: %llu is longer than the operator's --timeout (%llu ms): "
			    "a call cannot widen the policy",
			    (unsigned long long)t, (unsigned long long)limit);
	if (!t)
		t = limit ? limit : MOAT_MCP_DEFAULT_TIMEOUT_MS;
	if ((k = get(s, q->sandbox, a, &sl)) < 0)
		return k;

	int o[2] = {-1, -1}, e[2] = {-1, -1}, in[2] = {-1, -1};
	struct stream so = {.fd = -1}, se = {.fd = -1};
	struct moat_proc *pr = NULL;
	struct moat_error err = {0};
	size_t in_off = 0;

	a->out = so.buf = malloc(MOAT_MCP_MAX_STREAM);
	a->err = se.buf = malloc(MOAT_MCP_MAX_STREAM);
	if (!so.buf || !se.buf)
		return fail(a, -ENOMEM, "out of memory");
	if (pipe2(o, O_CLOEXEC) < 0 || pipe2(e, O_CLOEXEC) < 0 ||
	    (q->has_stdin ? pipe2(in, O_CLOEXEC)
			  : (in[0] = open("/dev/null", O_RDONLY | O_CLOEXEC))) < 0) {
		k = negerrno();
		goto out;
	}
	struct moat_exec x = {.argv = argv, .cwd = cwd, .fd = {in[0], o[1], e[1]}, .timeout_ms = t};
	k = moat_sandbox_exec(sl->sb, &x, &pr, &err);
	o[1] = safe_close(o[1]);
	e[1] = safe_close(e[1]);
	in[0] = safe_close(in[0]);
	if (k < 0) {
		fail(a, k, "%s: %s", err.stage, err.message);
		goto out;
	}
	so.fd = TAKE_FD(o[0]);
	se.fd = TAKE_FD(e[0]);
	fcntl(so.fd, F_SETFL, O_NONBLOCK);
	fcntl(se.fd, F_SETFL, O_NONBLOCK);
	if (in[1] >= 0)
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	if (in[1] >= 0 && q->data_len == 0)
		in[1] = safe_close(in[1]);
	while (!moat_proc_done(pr)) {
		struct pollfd pf[5] = {
			{.fd = moat_sandbox_fd(sl->sb), .events = POLLIN},
			{.fd = so.fd, .events = POLLIN},
			{.fd = se.fd, .events = POLLIN},
			{.fd = in[1], .events = POLLOUT},
			{.fd = s->sock, .events = POLLIN}, /* a cancel, or the front hangs up */
		};
		int n = poll(pf, ELEMENTSOF(pf), 1000);
		if (n < 0 && errno != EINTR) {
			k = negerrno();
			goto out;
		}
		if (pf[4].revents) {
			/* only a cancel of this run can come now (the front sends
			 * the next call after this one's answer) */
			struct moat_mcp_req c;
			size_t clen;
			if (read_exact(s->sock, &c, sizeof(c)) < 0 ||
			    moat_mcp_req_head_check(&c, &clen) < 0 || c.op != MOAT_MCP_OP_CANCEL ||
			    clen) {
				k = -EPIPE;
				goto out;
			}
			if (c.seq == q->seq)
				moat_proc_signal(pr, SIGKILL);
		}
		if (pf[1].revents)
			drain(&so);
		if (pf[2].revents)
			drain(&se);
		if (pf[3].revents) {
			ssize_t w = write(in[1], data + in_off, q->data_len - in_off);
			if (w > 0)
				in_off += (size_t)w;
			if ((w < 0 && errno != EAGAIN && errno != EINTR) || in_off == q->data_len)
				in[1] = safe_close(in[1]);
		}
		if (pf[0].revents && moat_sandbox_dispatch(sl->sb) < 0) {
			fail(a, -ECHILD,
			     "the sandbox failed (its init died); reset starts a new one");
			k = a->h.err;
			goto out;
		}
	}
	drain(&so);
	drain(&se);
	struct moat_proc_status ps;
	if ((k = moat_proc_status(pr, &ps)) < 0)
		goto out;
	a->h.reason = ps.reason;
	a->h.exit_code = ps.exit_code;
	a->h.status = ps.status;
	a->h.signal = ps.signal;
	a->h.wall_us = ps.wall_us;
	a->h.out_len = so.len;
	a->h.err_len = se.len;
	a->h.flags |= (so.cut ? MOAT_MCP_OUT_CUT : 0) | (se.cut ? MOAT_MCP_ERR_CUT : 0);
	/* events the run left (the proxy's, the seccomp listener's) */
	for (int i = 0; i < 64; i++) {
		struct pollfd pf = {.fd = moat_sandbox_fd(sl->sb), .events = POLLIN};
		if (poll(&pf, 1, i == 0 ? 20 : 0) <= 0 || moat_sandbox_dispatch(sl->sb) < 0)
			break;
	}
	new_denials(sl, a);
	k = 0;
out:
	if (pr)
		moat_proc_release(pr);
	safe_close(o[0]);
	safe_close(o[1]);
	safe_close(e[0]);
	safe_close(e[1]);
	safe_close(in[0]);
	safe_close(in[1]);
	safe_close(so.fd);
	safe_close(se.fd);
	if (k < 0 && !a->h.err && k != -EPIPE)
		fail(a, k, "run: %s", strerror(-k));
	return k;
}

/* ---- one call --------------------------------------------------------------------------- */

static int do_files(struct server *s, const struct moat_mcp_req *q, const char *path,
		    const char *data, struct answer *a)
{
	struct moat_error e = {0};
	struct slot *sl;
	int k;

	if ((k = get(s, q->sandbox, a, &sl)) < 0)
		return k;
	if (q->op == MOAT_MCP_OP_READ_FILE) {
		size_t len = 0;
		bool cut = false;
		k = moat_sandbox_read_file(sl->sb, path, MOAT_MCP_MAX_READ, &a->out, &len, &cut,
					   &e);
		if (k >= 0) {
			a->h.out_len = (uint32_t)MIN(len, (size_t)MOAT_MCP_MAX_READ);
			a->h.flags |= cut ? MOAT_MCP_TRUNCATED : 0;
		}
	} else if (q->op == MOAT_MCP_OP_WRITE_FILE) {
		k = moat_sandbox_write_file(sl->sb, path, data, q->data_len, &e);
	} else {
		struct moat_file_info *fi = NULL;
		size_t n = 0;
		k = moat_sandbox_list_dir(sl->sb, path, &fi, &n, &e);
		if (k >= 0) {
			if (k > 0 || n > MOAT_MCP_MAX_ENTRIES)
				a->h.flags |= MOAT_MCP_TRUNCATED;
			n = MIN(n, (size_t)MOAT_MCP_MAX_ENTRIES);
			a->ent = calloc(n ? n : 1, sizeof(*a->ent));
			if (!a->ent)
				k = -ENOMEM;
			for (size_t i = 0; a->ent && i < n; i++) {
				a->ent[i] = (struct moat_mcp_entry){.type = fi[i].type,
								    .mode = fi[i].mode,
								    .size = fi[i].size,
								    .mtime_s = fi[i].mtime_s};
				snprintf(a->ent[i].name, sizeof(a->ent[i].name), "%s", fi[i].name);
			}
			a->h.n_entries = a->ent ? (uint32_t)n : 0;
		}
		free(fi);
	}
	if (k < 0)
		return fail(a, k, "%s: %s", e.message[0] ? e.message : "failed", strerror(-k));
	return 0;
}

static int do_sandbox_op(struct server *s, const struct moat_mcp_req *q, struct answer *a)
{
	struct slot *sl;
	int k;

	if (q->op == MOAT_MCP_OP_CREATE) {
		unsigned live = 0;
		for (unsigned i = 0; i < MOAT_MCP_MAX_SANDBOXES; i++)
			live += s->slots[i].used && s->slots[i].sb;
		sl = NULL;
		for (unsigned i = 1; i < MOAT_MCP_MAX_SANDBOXES && !sl; i++)
			if (!s->slots[i].used)
				sl = &s->slots[i];
		if (!sl || live >= MOAT_MCP_MAX_SANDBOXES)
			return fail(a, -EMFILE, "at most %u sandboxes at once",
				    MOAT_MCP_MAX_SANDBOXES);
		if ((k = start(s, sl, a)) < 0)
			return k;
		sl->used = true;
		sl->id = ++s->next_id;
		a->h.sandbox = sl->id;
		snprintf(a->h.run_id, sizeof(a->h.run_id), "%s", moat_sandbox_id(sl->sb));
		return 0;
	}
	sl = find(s, q->sandbox);
	if (!sl && q->sandbox)
		return fail(a, -ENOENT, "no sandbox sb-%u", q->sandbox);
	if (q->op == MOAT_MCP_OP_DESTROY && q->sandbox == 0)
		return fail(a, -EINVAL, "sandbox: the default sandbox is reset, not destroyed");
	if (sl && sl->sb && (k = end(sl, a)) < 0)
		return k;
	if (q->op == MOAT_MCP_OP_DESTROY && sl) {
		*sl = (struct slot){0};
		return 0;
	}
	/* reset: the default sandbox comes back on its next use, a named one now */
	if (sl && q->sandbox && (k = start(s, sl, a)) < 0)
		return k;
	return 0;
}

/* The record is checked again here: the front is the process an attacker
 * reaches first. Each part's length against its limit, the arguments as
 * n_args NUL-terminated strings, no NUL inside a path. */
int moat_mcp_req_head_check(const struct moat_mcp_req *q, size_t *ret_len)
{
	if (q->magic != MOAT_MCP_REQ_MAGIC || q->args_len > MOAT_MCP_MAX_ARGV_BYTES ||
	    q->path_len > MOAT_MCP_MAX_PATH || q->cwd_len > MOAT_MCP_MAX_PATH ||
	    q->data_len > MOAT_MCP_MAX_DATA || q->n_args > MOAT_MCP_MAX_ARGS)
		return -EBADMSG;
	*ret_len = (size_t)q->args_len + q->path_len + q->cwd_len + q->data_len;
	return 0;
}

int moat_mcp_req_parse(const struct moat_mcp_req *q, char *pay, struct moat_mcp_call *ret)
{
	char *args = pay;
	const char *p = args + q->args_len, *c = p + q->path_len;
	size_t len = (size_t)q->args_len + q->path_len + q->cwd_len + q->data_len;
	unsigned n = 0;

	memset(ret, 0, sizeof(*ret));
	bool ok = q->op > 0 && q->op < MOAT_MCP_OP_MAX_ &&
		q->timeout_ms <= MOAT_MCP_MAX_TIMEOUT_MS && q->has_stdin <= 1 &&
		(q->args_len == 0 || args[q->args_len - 1] == 0) && !memchr(p, 0, q->path_len) &&
		!memchr(c, 0, q->cwd_len);
	for (uint32_t i = 0; ok && i < q->args_len; i++) {
		if (i == 0 || args[i - 1] == 0) {
			if (n >= q->n_args) {
				ok = false;
				break;
			}
			ret->argv[n++] = args + i;
		}
	}
	ret->argv[n] = NULL;
	ok = ok && n == q->n_args;
	if (ok && q->op == MOAT_MCP_OP_RUN)
		ok = n >= 1 && ret->argv[0][0] && q->path_len == 0 &&
			(q->has_stdin || q->data_len == 0);
	else if (ok && q->op <= MOAT_MCP_OP_LIST_DIR)
		ok = n == 0 && q->path_len > 0 && p[0] == '/' && q->cwd_len == 0 && !q->has_stdin &&
			!q->timeout_ms && (q->op == MOAT_MCP_OP_WRITE_FILE || q->data_len == 0);
	else if (ok)
		ok = n == 0 && len == 0 && !q->has_stdin && !q->timeout_ms &&
			(q->op != MOAT_MCP_OP_CREATE || q->sandbox == 0);
	if (ok && q->cwd_len)
		ok = c[0] == '/';
	if (!ok)
		return -EBADMSG;
	memcpy(ret->path, p, q->path_len);
	ret->path[q->path_len] = 0;
	memcpy(ret->cwd, c, q->cwd_len);
	ret->cwd[q->cwd_len] = 0;
	ret->data = c + q->cwd_len;
	return 0;
}

static int serve_one(struct server *s)
{
	struct moat_mcp_req q;
	struct answer a = {.h = {0}};
	_cleanup_free_ char *pay = NULL;
	_cleanup_free_ struct moat_mcp_call *call = NULL;
	size_t len;
	int k;

	if ((k = read_exact(s->sock, &q, sizeof(q))) < 0)
		return k;
	if ((k = moat_mcp_req_head_check(&q, &len)) < 0)
		return k; /* the framing cannot be trusted any more */
	if (q.op == MOAT_MCP_OP_CANCEL)
		return len ? -EBADMSG : 0; /* for a run that ended meanwhile */
	pay = malloc(len + 1);
	call = malloc(sizeof(*call));
	if (!pay || !call)
		return -ENOMEM;
	if ((k = read_exact(s->sock, pay, len)) < 0)
		return k;
	a.h.seq = q.seq;
	a.h.sandbox = q.sandbox;
	k = 0;
	if (moat_mcp_req_parse(&q, pay, call) < 0)
		fail(&a, -EBADMSG, "malformed request record");
	else if (q.op == MOAT_MCP_OP_RUN)
		k = do_run(s, &q, call->argv, q.cwd_len ? call->cwd : NULL, call->data, &a);
	else if (q.op <= MOAT_MCP_OP_LIST_DIR)
		do_files(s, &q, call->path, call->data, &a);
	else
		do_sandbox_op(s, &q, &a);
	if (k == -EPIPE)
		return k;
	k = send_answer(s->sock, &a);
	free(a.out);
	free(a.err);
	free(a.ent);
	return k;
}

/* ---- the front ----------------------------------------------------------------------- */

/* In the child, between fork and exec: async-signal-safe calls only. */
_noreturn_ static void front_exec(int sock, int exe, pid_t parent, const char *const *envp)
{
	static char arg0[] = "moat", arg1[] = "__mcp-front";
	char *const argv[] = {arg0, arg1, NULL};
	int fds[] = {0, 1, 2, sock, exe};
	sigset_t none;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(MOAT_EXIT_SETUP);
	if (moat_fdset_compact(fds, ELEMENTSOF(fds)) < 0 ||
	    fcntl((int)ELEMENTSOF(fds) - 1, F_SETFD, FD_CLOEXEC) < 0)
		_exit(MOAT_EXIT_SETUP);
	syscall(SYS_execveat, (int)ELEMENTSOF(fds) - 1, "", argv, envp, AT_EMPTY_PATH);
	_exit(MOAT_EXIT_SETUP);
}

/* The sanitizers' options only: the front gets none of the operator's
 * environment. */
static void front_env(const char **envp, size_t max)
{
	static const char *const keep[] = {"ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS="};
	size_t n = 0;
	for (char **e = environ; e && *e && n < max - 1; e++)
		for (size_t i = 0; i < ELEMENTSOF(keep); i++)
			if (startswith(*e, keep[i]))
				envp[n++] = *e;
	envp[n] = NULL;
}

static int front_start(int *ret_sock, pid_t *ret_pid, struct moat_error *err)
{
	_cleanup_close_ int exe = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	int sv[2];
	const char *envp[8];

	if (exe < 0)
		return moat_error_set(err, "mcp", errno, "cannot open moat's executable: %s",
				      strerror(errno));
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return moat_error_set(err, "mcp", errno, "socketpair: %s", strerror(errno));
	front_env(envp, ELEMENTSOF(envp));
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		int k = moat_error_set(err, "mcp", errno, "fork: %s", strerror(errno));
		close(sv[0]);
		close(sv[1]);
		return k;
	}
	if (pid == 0)
		front_exec(sv[1], exe, parent, envp);
	close(sv[1]);
	*ret_sock = sv[0];
	*ret_pid = pid;
	return 0;
}

int moat_mcp_serve(const struct moat_policy *p, struct moat_error *ret_err)
{
	struct server s = {.p = p, .sock = -1};
	pid_t front = -1;
	sigset_t mask, old;
	int k, sfd = -1, null_fd;

	signal(SIGPIPE, SIG_IGN);
	if ((k = front_start(&s.sock, &front, ret_err)) < 0)
		return k;
	/* The MCP channel is the front's alone. */
	null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null_fd < 0 || dup2(null_fd, STDIN_FILENO) < 0 || dup2(null_fd, STDOUT_FILENO) < 0) {
		k = moat_error_set(ret_err, "mcp", errno, "/dev/null: %s", strerror(errno));
		goto done;
	}
	null_fd = safe_close(null_fd);
	/* SIGINT, SIGTERM, SIGHUP: every sandbox is destroyed properly. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, &old);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	for (;;) {
		struct pollfd pf[2 + MOAT_MCP_MAX_SANDBOXES];
		struct slot *of[2 + MOAT_MCP_MAX_SANDBOXES];
		unsigned n = 0;
		pf[n++] = (struct pollfd){.fd = s.sock, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = sfd, .events = POLLIN};
		for (unsigned i = 0; i < MOAT_MCP_MAX_SANDBOXES; i++)
			if (s.slots[i].sb) {
				of[n] = &s.slots[i];
				pf[n++] = (struct pollfd){.fd = moat_sandbox_fd(s.slots[i].sb),
							  .events = POLLIN};
			}
		k = poll(pf, n, -1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 || pf[1].revents)
			break;
		for (unsigned i = 2; i < n; i++)
			if (pf[i].revents && moat_sandbox_dispatch(of[i]->sb) < 0) {
				/* its init died: gone; the next call reports it */
				struct answer a = {.h = {0}};
				end(of[i], &a);
			}
		if (pf[0].revents && serve_one(&s) < 0)
			break; /* the front ended (the client closed stdin) or misbehaved */
	}
	k = 0;
done:
	safe_close(null_fd);
	safe_close(sfd);
	s.sock = safe_close(s.sock);
	for (unsigned i = 0; i < MOAT_MCP_MAX_SANDBOXES; i++)
		if (s.slots[i].sb) {
			struct answer a = {.h = {0}};
			end(&s.slots[i], &a);
		}
	if (front > 0) {
		kill(front, SIGKILL);
		while (waitpid(front, NULL, 0) < 0 && errno == EINTR)
			;
	}
	return k;
}
