/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A session's supervisor (session.h): forked by moat_session_create(),
 * detached (setsid, its standard fds on /dev/null, nothing else of the
 * caller's open), it creates the sandbox, binds <id>.sock in the sessions
 * directory and only then says "ready" to the waiting caller. Its loop (one
 * thread, the one that created the sandbox: the init's PDEATHSIG is tied to
 * it) polls the listening socket, its clients, the sandbox and a signalfd;
 * the idle and lifetime limits are its poll timeout. Removal, expiry and
 * SIGTERM end the sandbox as a run ends (moat_sandbox_destroy()); then the
 * socket and the name go and the process exits.
 */
#include <errno.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "limits/cgroup.h"
#include "image/image.h"
#include "policy/errors.h"
#include "sandbox/paths.h"
#include "supervisor/run.h"
#include "sandbox/sandbox.h"
#include "supervisor/session.h"
#include "shared/io.h"
#include "shared/macro.h"

#define MAX_ARGV 1024

struct conn {
	int fd;
	struct moat_proc *pr; /* an exec connection's process */
	char *data; /* copy-out: what was read, waiting for the host fd */
	size_t len;
	/* exec --tty: the client's terminal, raw while its process runs
	 * (tty_fd valid when raw), restored before its exit status is sent */
	bool raw;
	int tty_fd;
	struct termios tty_saved;
};

struct sess {
	const struct moat_policy *p;
	struct moat_session_opts o;
	char name[MOAT_SESSION_NAME_MAX + 1];
	struct moat_sandbox *sb;
	int dfd, lfd, sigfd, name_fd;
	char sock[64];
	struct conn c[MOAT_SESS_MAX_CONNS];
	uint64_t created_us, created_mono_ms, idle_since_ms, execs;
	char digest[65];
	char end_reason[160]; /* the sandbox was ended: by what (first) */
	bool quit;
	ino_t sock_ino; /* the socket as bound: when it is gone, no one can reach us */
	uint64_t checked_ms;
	/* OCI (MOAT_SESS_PREPARE): the container's process, started by START;
	 * when it ends the session ends and this process exits as it did */
	struct main_spec {
		bool prepared, started, ended, paused;
		char **argv, **env, *cwd;
		unsigned tty;
		uint64_t timeout_ms;
		int fd[3];
		struct moat_proc *pr;
		int exit_code, exit_sig;
	} main;
};

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static uint64_t wall_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static unsigned running(const struct sess *s)
{
	unsigned n = 0;
	for (unsigned i = 0; i < MOAT_SESS_MAX_CONNS; i++)
		if (s->c[i].pr && !moat_proc_done(s->c[i].pr))
			n++;
	return n;
}

static void conn_tty_restore(struct conn *c)
{
	if (!c->raw)
		return;
	(void)tcsetattr(c->tty_fd, TCSADRAIN, &c->tty_saved);
	c->tty_fd = safe_close(c->tty_fd);
	c->raw = false;
}

/* exec --tty on the client's terminal: raw here, not in the client, because
 * this process relays the terminal to the command's pty. What the canonical
 * buffer holds complete (a pending ^D that script(1) typed, lines typed
 * ahead) goes to the pty first, as typed; switched over it, the marker would
 * be read as a NUL (the fix moat_run() has, run.c). Termios belongs to the
 * terminal, so the client's own restore at the end is the same state. */
static void conn_tty_raw(struct conn *c, const struct moat_exec *x, struct moat_proc *pr)
{
	if (!(x->tty_mask & 1) || x->fd[0] < 0 || pr->pty_fd < 0 || !isatty(x->fd[0]) ||
	    tcgetattr(x->fd[0], &c->tty_saved) < 0)
		return;
	c->tty_fd = fcntl(x->fd[0], F_DUPFD_CLOEXEC, 3);
	if (c->tty_fd < 0)
		return;
	c->raw = moat_tty_enter_raw(c->tty_fd, pr->pty_fd, &c->tty_saved);
	if (!c->raw)
		c->tty_fd = safe_close(c->tty_fd);
}

static void conn_close(struct sess *s, struct conn *c)
{
	conn_tty_restore(c);
	if (c->pr)
		moat_proc_release(c->pr); /* kills it if it still runs */
	c->pr = NULL;
	free(c->data);
	c->data = NULL;
	c->fd = safe_close(c->fd);
	if (!running(s))
		s->idle_since_ms = mono_ms();
}

static void reply_error(int fd, const struct moat_error *e)
{
	json_t *b = moat_sess_error_json(e);
	moat_sess_send(fd, MOAT_SESS_ERROR, b, NULL, 0);
	json_decref(b);
}

static void reply_errorf(int fd, const char *stage, int err, const char *msg)
{
	struct moat_error e = {0};
	moat_error_set(&e, stage, err, "%s", msg);
	reply_error(fd, &e);
}

static void reply_ok(int fd, json_t *b)
{
	moat_sess_send(fd, MOAT_SESS_OK, b, NULL, 0);
	json_decref(b);
}

/* Its init is gone (killed by the library, e.g. the exec start bound, or
 * died): nothing runs in it any more. */
static bool sandbox_ended(const struct sess *s)
{
	return s->sb->r.init_exited || s->sb->r.killed;
}

static void fill_info(struct sess *s, struct moat_session_info *in)
{
	memset(in, 0, sizeof(*in));
	snprintf(in->id, sizeof(in->id), "%s", moat_sandbox_id(s->sb));
	snprintf(in->name, sizeof(in->name), "%s", s->name);
	in->running = running(s);
	snprintf(in->state, sizeof(in->state), "%s", in->running ? "running" : "idle");
	if (!s->main.prepared && sandbox_ended(s)) {
		snprintf(in->state, sizeof(in->state), "ended");
		snprintf(in->reason, sizeof(in->reason), "%s",
			 s->end_reason[0]	   ? s->end_reason
				 : s->sb->r.killed ? "the sandbox was ended"
						   : "its init exited");
	}
	if (s->main.prepared) /* OCI's states */
		snprintf(in->state, sizeof(in->state), "%s",
			 !s->main.started	  ? "created"
				 : s->main.ended  ? "stopped"
				 : s->main.paused ? "paused"
						  : "running");
	in->pid = (int)getpid();
	in->created_us = s->created_us;
	in->execs = s->execs;
	in->idle_timeout_ms = s->o.idle_timeout_ms;
	in->lifetime_ms = s->o.lifetime_ms;
	snprintf(in->policy_sha256, sizeof(in->policy_sha256), "%s", s->digest);
	in->memory_max = s->p->memory;
	in->cpus_milli = s->p->cpus_milli;
	in->pids_max = s->p->pids;
	in->disk_max = s->p->disk;
	in->timeout_ms = s->p->timeout_ms;
	struct moat_cgroup_stats cs = {0};
	if (s->sb->r.limits.cg && moat_cgroup_stats(s->sb->r.limits.cg, &cs) >= 0)
		in->mem_current = cs.mem_current;
}

/* ---- requests ------------------------------------------------------------- */

/* NULL-terminated strings of a JSON array (pointing into it), at most max. */
static char **str_array(json_t *a, size_t max, int *ret_err)
{
	*ret_err = 0;
	if (!a || json_is_null(a))
		return NULL;
	if (!json_is_array(a) || json_array_size(a) > max) {
		*ret_err = E2BIG;
		return NULL;
	}
	char **v = calloc(json_array_size(a) + 1, sizeof(char *));
	if (!v) {
		*ret_err = ENOMEM;
		return NULL;
	}
	for (size_t i = 0; i < json_array_size(a); i++) {
		json_t *e = json_array_get(a, i);
		if (!json_is_string(e) || strlen(json_string_value(e)) != json_string_length(e)) {
			free(v);
			*ret_err = EINVAL;
			return NULL;
		}
		v[i] = (char *)(uintptr_t)json_string_value(e);
	}
	return v;
}

/* An EXEC or PREPARE request into *x (argv and env point into m's body,
 * the fds are m's); 0, or < 0 with the error sent to c. */
static int parse_exec(struct conn *c, struct moat_sess_msg *m, struct moat_exec *ret,
		      char ***ret_argv, char ***ret_env)
{
	int e1, e2;
	_cleanup_free_ char **argv = str_array(json_object_get(m->body, "argv"), MAX_ARGV, &e1);
	_cleanup_free_ char **env = str_array(json_object_get(m->body, "env"), MOAT_MAX_ENV, &e2);
	json_t *jcwd = json_object_get(m->body, "cwd");
	json_t *jtty = json_object_get(m->body, "tty"), *jfds = json_object_get(m->body, "fds");
	json_t *jto = json_object_get(m->body, "timeout_ms");
	if (e1 || e2 || !argv || !argv[0] ||
	    (jcwd && !json_is_null(jcwd) && !json_is_string(jcwd)) || !json_is_integer(jtty) ||
	    !json_is_integer(jfds) || (jto && !json_is_integer(jto)) ||
	    json_integer_value(jtty) & ~7 || json_integer_value(jfds) & ~7 ||
	    (jto && json_integer_value(jto) < 0)) {
		reply_errorf(c->fd, "usage", EINVAL, "malformed exec request");
		return -EINVAL;
	}
	struct moat_exec x = {.argv = argv,
			      .env = env,
			      .cwd = json_is_string(jcwd) ? json_string_value(jcwd) : NULL,
			      .tty_mask = (unsigned)json_integer_value(jtty),
			      .timeout_ms = jto ? (uint64_t)json_integer_value(jto) : 0,
			      .fd = {-1, -1, -1}};
	unsigned fmask = (unsigned)json_integer_value(jfds), used = 0;
	for (int i = 0; i < 3; i++)
		if (fmask & (1u << i)) {
			if (used >= m->n_fds) {
				reply_errorf(c->fd, "usage", EINVAL, "exec request: fds missing");
				return -EINVAL;
			}
			x.fd[i] = m->fds[used++];
		}
	*ret = x;
	*ret_argv = TAKE_PTR(argv);
	*ret_env = TAKE_PTR(env);
	return 0;
}

static void on_exec(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	struct moat_exec x;
	_cleanup_free_ char **argv = NULL;
	_cleanup_free_ char **env = NULL;
	if (parse_exec(c, m, &x, &argv, &env) < 0)
		return;
	struct moat_error err = {0};
	int stage = 0, eno = 0;
	struct moat_proc *pr = NULL;
	int k = moat_sandbox_exec_for(s->sb, &x, false, &pr, &err, &stage, &eno);
	if (k >= 0)
		conn_tty_raw(c, &x, pr);
	/* the library holds its own copies of the fds now */
	moat_sess_msg_done(m);
	if (k < 0) {
		if (stage == MOAT_STAGE_EXEC)
			snprintf(err.stage, sizeof(err.stage), "command");
		/* the exec ended the sandbox (the start bound, vfork): said by
		 * moat ls until it is removed */
		if (sandbox_ended(s) && !s->end_reason[0])
			snprintf(s->end_reason, sizeof(s->end_reason), "%.24s: %.128s", err.stage,
				 err.message);
		reply_error(c->fd, &err);
		return;
	}
	c->pr = pr;
	s->execs++;
	struct moat_proc_status ps;
	json_t *b = json_pack("{s:i}", "id", moat_proc_status(pr, &ps) == -EBUSY ? 0 : (int)ps.id);
	moat_sess_send(c->fd, MOAT_SESS_STARTED, b, NULL, 0);
	json_decref(b);
}

/* ---- OCI: the container's process --------------------------------------- */

static char **dup_strv(char *const *v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	char **d = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; d && i < n; i++)
		if (!(d[i] = strdup(v[i]))) {
			for (size_t j = 0; j < i; j++)
				free(d[j]);
			free(d);
			return NULL;
		}
	return d;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void main_clear(struct main_spec *ms)
{
	free_strv(ms->argv);
	free_strv(ms->env);
	free(ms->cwd);
	ms->argv = ms->env = NULL;
	ms->cwd = NULL;
	for (int i = 0; i < 3; i++)
		ms->fd[i] = safe_close(ms->fd[i]);
}

/* The process is kept (with its descriptors) until START: the OCI runtime's
 * create/start split. Once only. */
static void on_prepare(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	struct moat_exec x;
	_cleanup_free_ char **argv = NULL;
	_cleanup_free_ char **env = NULL;
	struct main_spec *ms = &s->main;
	if (ms->prepared) {
		reply_errorf(c->fd, "session", EEXIST, "the container's process is set already");
		return;
	}
	if (parse_exec(c, m, &x, &argv, &env) < 0)
		return;
	ms->argv = dup_strv(argv);
	ms->env = env ? dup_strv(env) : NULL;
	ms->cwd = x.cwd ? strdup(x.cwd) : NULL;
	if (!ms->argv || (env && !ms->env) || (x.cwd && !ms->cwd)) {
		main_clear(ms);
		reply_errorf(c->fd, "session", ENOMEM, "out of memory");
		return;
	}
	for (int i = 0; i < 3; i++)
		ms->fd[i] = x.fd[i] >= 0 ? fcntl(x.fd[i], F_DUPFD_CLOEXEC, 3) : -1;
	ms->tty = x.tty_mask;
	ms->timeout_ms = x.timeout_ms;
	ms->prepared = true;
	reply_ok(c->fd, json_pack("{s:i}", "pid", (int)getpid()));
}

static void on_start(struct sess *s, struct conn *c)
{
	struct main_spec *ms = &s->main;
	if (!ms->prepared || ms->started) {
		reply_errorf(c->fd, "session", EINVAL,
			     ms->started ? "the container was started already"
					 : "the container has no process to start");
		return;
	}
	struct moat_exec x = {.argv = ms->argv,
			      .env = ms->env,
			      .cwd = ms->cwd,
			      .tty_mask = ms->tty,
			      .timeout_ms = ms->timeout_ms,
			      .fd = {ms->fd[0], ms->fd[1], ms->fd[2]}};
	struct moat_error err = {0};
	int stage = 0, eno = 0;
	int k = moat_sandbox_exec_for(s->sb, &x, false, &ms->pr, &err, &stage, &eno);
	ms->started = true;
	main_clear(ms); /* the library holds its own copies of the fds */
	if (k < 0) {
		if (stage == MOAT_STAGE_EXEC)
			snprintf(err.stage, sizeof(err.stage), "command");
		/* a container whose process could not start is stopped */
		ms->ended = true;
		ms->exit_code = k == -ENOENT ? MOAT_EXIT_NOT_FOUND : MOAT_EXIT_CANNOT_EXEC;
		reply_error(c->fd, &err);
		return;
	}
	s->execs++;
	reply_ok(c->fd, NULL);
}

static void end_session(struct sess *s, int reply_fd);

/* The container's process ended (or never will): how this process exits. */
static void main_ended(struct sess *s)
{
	struct moat_proc_status ps;
	struct main_spec *ms = &s->main;
	if (ms->pr && moat_proc_status(ms->pr, &ps) >= 0) {
		ms->exit_sig = ps.reason == MOAT_REASON_SIGNALED ? ps.signal : 0;
		ms->exit_code = ps.reason == MOAT_REASON_EXITED ? ps.status : ps.exit_code;
	}
	ms->pr = NULL; /* freed with the sandbox */
	ms->ended = true;
}

static void on_kill(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	json_int_t sig = json_integer_value(json_object_get(m->body, "sig"));
	bool all = json_is_true(json_object_get(m->body, "all"));
	struct main_spec *ms = &s->main;
	if (sig <= 0 || sig >= NSIG) {
		reply_errorf(c->fd, "usage", EINVAL, "not a signal");
		return;
	}
	if (!ms->started) {
		/* nothing of the container's runs yet: a signal ends it as it
		 * would end a process that had not done anything */
		reply_ok(c->fd, NULL);
		ms->ended = true;
		ms->exit_sig = (int)sig;
		end_session(s, -1);
		return;
	}
	if (all || !ms->pr)
		moat_sandbox_signal(s->sb, (int)sig);
	else
		moat_proc_signal(ms->pr, (int)sig);
	/* as runc: SIGKILL thaws a paused container so that it can die (and
	 * delete --force ends); other signals wait for resume */
	if (sig == SIGKILL && ms->paused && moat_cgroup_freeze(s->sb->r.limits.cg, false) >= 0)
		ms->paused = false;
	reply_ok(c->fd, NULL);
}

static void on_copy_in(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	const char *path = json_string_value(json_object_get(m->body, "path"));
	uint64_t max = (uint64_t)json_integer_value(json_object_get(m->body, "max"));
	struct moat_error err = {0};
	struct stat st;
	if (!path || m->n_fds != 1 || fstat(m->fds[0], &st) < 0 || !S_ISREG(st.st_mode)) {
		reply_errorf(c->fd, "usage", EINVAL, "malformed copy request");
		return;
	}
	if ((uint64_t)st.st_size > max) {
		reply_errorf(c->fd, "copy", EFBIG, "the file is larger than --max-size");
		return;
	}
	/* only a new or a regular file is written (a fifo there would stall
	 * the writer: the time limit of file operations is the backstop) */
	struct moat_file_info fi;
	struct moat_error e2 = {0};
	if (moat_sandbox_stat(s->sb, path, &fi, &e2) >= 0 && fi.type != MOAT_FILE_REG) {
		reply_errorf(c->fd, "copy", EINVAL,
			     "the destination in the sandbox exists and is not a regular file");
		return;
	}
	size_t cap = (size_t)st.st_size + 1, len = 0;
	_cleanup_free_ char *buf = malloc(cap);
	if (!buf) {
		reply_errorf(c->fd, "copy", ENOMEM, "out of memory");
		return;
	}
	ssize_t n;
	/* the size read, not the size stat said: one more byte means it grew */
	while (len < cap && (n = pread(m->fds[0], buf + len, cap - len, (off_t)len)) > 0)
		len += (size_t)n;
	if (len > (size_t)st.st_size || len > max) {
		reply_errorf(c->fd, "copy", EFBIG, "the file grew while it was copied");
		return;
	}
	if (moat_sandbox_write_file(s->sb, path, buf, len, &err) < 0) {
		reply_error(c->fd, &err);
		return;
	}
	reply_ok(c->fd, json_pack("{s:I}", "len", (json_int_t)len));
}

/* A directory copied in: each of its directories is made new (mkdir, no -p) */
static void on_mkdir(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	const char *path = json_string_value(json_object_get(m->body, "path"));
	struct moat_error err = {0};
	if (!path) {
		reply_errorf(c->fd, "usage", EINVAL, "malformed mkdir request");
		return;
	}
	if (moat_sandbox_mkdir(s->sb, path, 0755, &err) < 0) {
		reply_error(c->fd, &err);
		return;
	}
	reply_ok(c->fd, NULL);
}

static void on_copy_out(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	const char *path = json_string_value(json_object_get(m->body, "path"));
	uint64_t max = (uint64_t)json_integer_value(json_object_get(m->body, "max"));
	struct moat_error err = {0};
	struct moat_file_info fi;
	bool cut = false;
	if (!path) {
		reply_errorf(c->fd, "usage", EINVAL, "malformed copy request");
		return;
	}
	/* a regular file only: the sandbox's links and devices stay there */
	if (moat_sandbox_stat(s->sb, path, &fi, &err) < 0) {
		reply_error(c->fd, &err);
		return;
	}
	if (fi.type != MOAT_FILE_REG) {
		reply_errorf(c->fd, "copy", EINVAL,
			     "not a regular file (links, directories and devices are not copied)");
		return;
	}
	if (moat_sandbox_read_file(s->sb, path, max, &c->data, &c->len, &cut, &err) < 0) {
		reply_error(c->fd, &err);
		return;
	}
	if (cut) {
		free(c->data);
		c->data = NULL;
		reply_errorf(c->fd, "copy", EFBIG, "the file is larger than --max-size");
		return;
	}
	reply_ok(c->fd, json_pack("{s:I}", "len", (json_int_t)c->len));
}

static void on_copy_out_fd(struct conn *c, struct moat_sess_msg *m)
{
	if (!c->data || m->n_fds != 1) {
		reply_errorf(c->fd, "usage", EINVAL, "malformed copy request");
		return;
	}
	int k = moat_write_all(m->fds[0], c->data, c->len);
	if (k < 0) {
		reply_errorf(c->fd, "copy", -k, "cannot write the host file");
		return;
	}
	reply_ok(c->fd, json_pack("{s:I}", "len", (json_int_t)c->len));
}

/* A path's type and size and, for a directory, its entries (as many as fit
 * in one answer: more is an error, never a silent cut). */
static void on_list(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	const char *path = json_string_value(json_object_get(m->body, "path"));
	struct moat_error err = {0};
	struct moat_file_info fi, *v = NULL;
	size_t n = 0;
	if (!path) {
		reply_errorf(c->fd, "usage", EINVAL, "malformed list request");
		return;
	}
	if (moat_sandbox_stat(s->sb, path, &fi, &err) < 0) {
		reply_error(c->fd, &err);
		return;
	}
	json_t *b = json_pack("{s:i,s:I,s:[]}", "type", (int)fi.type, "size", (json_int_t)fi.size,
			      "entries");
	if (fi.type == MOAT_FILE_DIR) {
		int k = moat_sandbox_list_dir(s->sb, path, &v, &n, &err);
		if (k < 0 || k == 1) {
			free(v);
			json_decref(b);
			if (k == 1)
				reply_errorf(c->fd, "copy", E2BIG,
					     "the directory has too many entries");
			else
				reply_error(c->fd, &err);
			return;
		}
		json_t *a = json_object_get(b, "entries");
		for (size_t i = 0; a && i < n; i++)
			json_array_append_new(a,
					      json_pack("{s:s,s:i,s:I}", "name", v[i].name, "type",
							(int)v[i].type, "size",
							(json_int_t)v[i].size));
		free(v);
	}
	if (moat_sess_send(c->fd, MOAT_SESS_OK, b, NULL, 0) == -EMSGSIZE)
		reply_errorf(c->fd, "copy", E2BIG,
			     "the directory has too many entries for one listing");
	json_decref(b);
}

static void end_session(struct sess *s, int reply_fd);
static void on_snapshot(struct sess *s, struct conn *c, struct moat_sess_msg *m);

static void on_message(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	if (c->pr) { /* an exec connection takes signals and sizes only */
		if (m->type == MOAT_SESS_SIGNAL) {
			int sig = (int)json_integer_value(json_object_get(m->body, "sig"));
			if (sig > 0 && sig < NSIG)
				moat_proc_signal(c->pr, sig);
		} else if (m->type == MOAT_SESS_RESIZE) {
			json_int_t r = json_integer_value(json_object_get(m->body, "rows"));
			json_int_t k = json_integer_value(json_object_get(m->body, "cols"));
			if (r > 0 && r < 65536 && k > 0 && k < 65536)
				moat_proc_resize(c->pr, (unsigned)r, (unsigned)k);
		}
		return;
	}
	switch (m->type) {
	case MOAT_SESS_INFO: {
		struct moat_session_info in;
		fill_info(s, &in);
		json_t *b = moat_sess_info_json(&in);
		moat_sess_send(c->fd, MOAT_SESS_INFO_REPLY, b, NULL, 0);
		json_decref(b);
		break;
	}
	case MOAT_SESS_EXEC:
		on_exec(s, c, m);
		break;
	case MOAT_SESS_STOP:
		moat_sandbox_signal(s->sb, SIGKILL);
		reply_ok(c->fd, NULL);
		break;
	case MOAT_SESS_REMOVE:
		if (running(s) && !json_is_true(json_object_get(m->body, "force"))) {
			char msg[128];
			snprintf(msg, sizeof(msg),
				 "%u process(es) still run in the sandbox: stop them, or use "
				 "--force",
				 running(s));
			reply_errorf(c->fd, "session", EBUSY, msg);
			break;
		}
		end_session(s, c->fd);
		break;
	case MOAT_SESS_COPY_IN:
		on_copy_in(s, c, m);
		break;
	case MOAT_SESS_MKDIR:
		on_mkdir(s, c, m);
		break;
	case MOAT_SESS_COPY_OUT:
		on_copy_out(s, c, m);
		break;
	case MOAT_SESS_COPY_OUT_FD:
		on_copy_out_fd(c, m);
		break;
	case MOAT_SESS_LIST:
		on_list(s, c, m);
		break;
	case MOAT_SESS_SNAPSHOT:
	case MOAT_SESS_RESTORE:
	case MOAT_SESS_RESET:
	case MOAT_SESS_SNAP_LIST:
	case MOAT_SESS_SNAP_DELETE:
		on_snapshot(s, c, m);
		break;

	case MOAT_SESS_PREPARE:
		on_prepare(s, c, m);
		break;
	case MOAT_SESS_START:
		on_start(s, c);
		break;
	case MOAT_SESS_KILL:
		on_kill(s, c, m);
		break;
	case MOAT_SESS_PAUSE: {
		bool on = json_is_true(json_object_get(m->body, "on"));
		int k = s->main.started && !s->main.ended
			? moat_cgroup_freeze(s->sb->r.limits.cg, on)
			: -EINVAL;
		if (k < 0)
			reply_errorf(c->fd, "session", -k,
				     k == -EOPNOTSUPP ? "the sandbox's cgroups have no freezer"
						      : "the container is not running");
		else {
			s->main.paused = on;
			reply_ok(c->fd, NULL);
		}
		break;
	}
	default:
		reply_errorf(c->fd, "usage", EINVAL, "unknown request");
	}
}

/* Snapshots: the library does the work (and refuses while processes run,
 * unless force). */
static void on_snapshot(struct sess *s, struct conn *c, struct moat_sess_msg *m)
{
	struct moat_error e = {0};
	json_t *jn = json_object_get(m->body, "name");
	const char *name = json_is_string(jn) ? json_string_value(jn) : NULL;
	bool force = json_is_true(json_object_get(m->body, "force"));
	char made[MOAT_SNAPSHOT_NAME_MAX + 1] = "";
	int k = -EINVAL;
	if (jn && !json_is_string(jn) && !json_is_null(jn)) {
		reply_errorf(c->fd, "usage", EINVAL, "the snapshot's name is not a string");
		return;
	}
	switch (m->type) {
	case MOAT_SESS_SNAPSHOT:
		k = moat_sandbox_snapshot(s->sb, name, force, made, &e);
		if (k >= 0) {
			reply_ok(c->fd, json_pack("{s:s}", "name", made));
			return;
		}
		break;
	case MOAT_SESS_RESTORE:
		k = moat_sandbox_restore(s->sb, name, force, &e);
		break;
	case MOAT_SESS_RESET:
		k = moat_sandbox_reset(s->sb, force, &e);
		break;
	case MOAT_SESS_SNAP_DELETE:
		k = moat_sandbox_snapshot_delete(s->sb, name, &e);
		break;
	case MOAT_SESS_SNAP_LIST: {
		struct moat_snapshot_info *v = NULL;
		size_t n = 0;
		k = moat_sandbox_snapshot_list(s->sb, &v, &n, &e);
		if (k < 0)
			break;
		json_t *a = json_array();
		for (size_t i = 0; a && i < n; i++)
			json_array_append_new(a,
					      json_pack("{s:s,s:I,s:I,s:b}", "name", v[i].name,
							"created_us", (json_int_t)v[i].created_us,
							"bytes", (json_int_t)v[i].bytes, "current",
							v[i].current));
		free(v);
		reply_ok(c->fd, json_pack("{s:o}", "snapshots", a ? a : json_array()));
		return;
	}
	}
	if (k < 0)
		reply_error(c->fd, &e);
	else
		reply_ok(c->fd, NULL);
}

/* ---- the end -------------------------------------------------------------- */

/* Every process killed, each exec client told how its process ended, then
 * the end of a run; reply_fd (or -1) gets the status. */
static void end_session(struct sess *s, int reply_fd)
{
	bool main_runs = s->main.pr && !moat_proc_done(s->main.pr);
	if (running(s) || main_runs) {
		moat_sandbox_signal(s->sb, SIGKILL);
		/* a paused container: the SIGKILLs land when it thaws */
		if (s->main.paused && moat_cgroup_freeze(s->sb->r.limits.cg, false) >= 0)
			s->main.paused = false;
		uint64_t until = mono_ms() + 5000;
		while ((running(s) || (s->main.pr && !moat_proc_done(s->main.pr))) &&
		       mono_ms() < until) {
			struct pollfd pf = {.fd = moat_sandbox_fd(s->sb), .events = POLLIN};
			if (poll(&pf, 1, 100) > 0 && moat_sandbox_dispatch(s->sb) < 0)
				break;
		}
	}
	for (unsigned i = 0; i < MOAT_SESS_MAX_CONNS; i++) {
		struct conn *c = &s->c[i];
		struct moat_proc_status ps;
		if (c->fd >= 0 && c->pr && moat_proc_status(c->pr, &ps) >= 0) {
			conn_tty_restore(c);
			json_t *b = moat_sess_proc_status_json(&ps);
			moat_sess_send(c->fd, MOAT_SESS_EXITED, b, NULL, 0);
			json_decref(b);
		}
		if (c->fd >= 0 && c->fd != reply_fd)
			conn_close(s, c);
		else
			c->pr = NULL; /* freed with the sandbox */
	}
	if (s->main.pr && !s->main.ended)
		main_ended(s);
	s->main.pr = NULL;
	struct moat_status st;
	struct moat_error err = {0};
	int k = moat_sandbox_destroy(s->sb, &st, &err);
	s->sb = NULL;
	/* gone only now: a client that sees no socket knows the end is done
	 * (exit record written); one that connected meanwhile gets EOF */
	unlinkat(s->dfd, s->sock, 0);
	s->lfd = safe_close(s->lfd);
	if (reply_fd >= 0) {
		if (k < 0)
			reply_error(reply_fd, &err);
		else {
			json_t *b = moat_sess_status_json(&st);
			moat_sess_send(reply_fd, MOAT_SESS_STATUS, b, NULL, 0);
			json_decref(b);
		}
	}
	if (s->name[0]) {
		char file[MOAT_SESSION_NAME_MAX + 8];
		snprintf(file, sizeof(file), "%s.name", s->name);
		unlinkat(s->dfd, file, 0);
	}
	s->quit = true;
}

/* ---- set-up --------------------------------------------------------------- */

/* <name>.name created and locked (an unlocked one is a dead session's). */
static int claim_name(struct sess *s, struct moat_error *err)
{
	char file[MOAT_SESSION_NAME_MAX + 8];
	snprintf(file, sizeof(file), "%s.name", s->name);
	for (int attempt = 0; attempt < 2; attempt++) {
		int fd = openat(s->dfd, file, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
				0600);
		struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
		if (fd >= 0) {
			if (fcntl(fd, F_OFD_SETLK, &fl) < 0) {
				close(fd);
				return moat_error_set(err, "session", errno,
						      "cannot lock the name");
			}
			s->name_fd = fd;
			return 0;
		}
		if (errno != EEXIST)
			return moat_error_set(err, "session", errno, "cannot record the name: %s",
					      strerror(errno));
		fd = openat(s->dfd, file, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
		bool live = fd < 0 || fcntl(fd, F_OFD_SETLK, &fl) < 0;
		safe_close(fd);
		if (live)
			return moat_error_set(err, "session", EEXIST,
					      "a sandbox named '%s' exists already", s->name);
		unlinkat(s->dfd, file, 0); /* its supervisor died */
	}
	return moat_error_set(err, "session", EEXIST, "a sandbox named '%s' exists already",
			      s->name);
}

static void digest_policy(struct sess *s)
{
	_cleanup_free_ char *js = NULL;
	if (moat_policy_to_json(s->p, &js) < 0 || !js)
		return;
	struct sha256_ctx ctx;
	uint8_t d[SHA256_DIGEST_SIZE];
	sha256_init(&ctx);
	sha256_update(&ctx, strlen(js), (const uint8_t *)js);
	sha256_digest(&ctx, sizeof(d), d);
	for (size_t i = 0; i < sizeof(d); i++)
		snprintf(s->digest + 2 * i, 3, "%02x", d[i]);
}

static int listen_on(struct sess *s, struct moat_error *err)
{
	struct sockaddr_un sun;
	unsigned alen;
	snprintf(s->sock, sizeof(s->sock), "%s.sock", moat_sandbox_id(s->sb));
	int k = moat_sess_sockaddr(s->dfd, s->sock, &sun, &alen);
	if (k < 0)
		return moat_error_set(err, "session", -k, "socket path too long");
	s->lfd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s->lfd < 0)
		return moat_error_set(err, "session", errno, "socket: %s", strerror(errno));
	mode_t old = umask(0177); /* the socket 0600 (and its directory 0700) */
	k = bind(s->lfd, (struct sockaddr *)&sun, alen);
	umask(old);
	struct stat st;
	if (k < 0 || listen(s->lfd, 16) < 0 ||
	    fstatat(s->dfd, s->sock, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return moat_error_set(err, "session", errno, "cannot listen on %s: %s", s->sock,
				      strerror(errno));
	s->sock_ino = st.st_ino;
	return 0;
}

static void report(int fd, const char *id, const struct moat_error *e)
{
	json_t *b = e ? moat_sess_error_json(e) : json_pack("{s:s}", "id", id);
	char *js = b ? json_dumps(b, JSON_COMPACT) : NULL;
	/* one line: the reader stops at the newline (the sandbox's init holds
	 * a copy of this pipe, so no EOF comes while the sandbox lives) */
	if (js) {
		(void)moat_write_all(fd, js, strlen(js));
		(void)moat_write_all(fd, "\n", 1);
	}
	free(js);
	json_decref(b);
}

/* Whether pid is in this process's namespace of that kind. A process of a
 * sandbox is not (every sandbox has its own pid namespace): even where a bind
 * mount shows it the socket and it runs as the same uid, it is not a client.
 * Unreadable counts as different. */
static bool same_ns(pid_t pid, const char *kind)
{
	char path[64];
	struct stat a, b;
	snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kind);
	if (stat(path, &a) < 0)
		return false;
	snprintf(path, sizeof(path), "/proc/self/ns/%s", kind);
	if (stat(path, &b) < 0)
		return false;
	return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

static void accept_one(struct sess *s)
{
	int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	/* only the user who created the session: the directory's mode says
	 * the same, this holds even if someone else got the socket */
	struct ucred cr;
	socklen_t len = sizeof(cr);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) < 0 || cr.uid != geteuid() ||
	    cr.pid <= 0 || !same_ns(cr.pid, "pid") || !same_ns(cr.pid, "user")) {
		close(fd);
		return;
	}
	for (unsigned i = 0; i < MOAT_SESS_MAX_CONNS; i++)
		if (s->c[i].fd < 0) {
			s->c[i].fd = fd;
			return;
		}
	reply_errorf(fd, "session", EAGAIN, "too many clients");
	close(fd);
}

/* Whether the socket is still ours: a session no one can reach (its
 * directory removed, the socket unlinked) ends instead of living on. */
static bool unreachable(struct sess *s)
{
	struct stat st;
	uint64_t now = mono_ms();
	if (now - s->checked_ms < 1000)
		return false;
	s->checked_ms = now;
	return fstatat(s->dfd, s->sock, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_ino != s->sock_ino;
}

static int timeout_ms(const struct sess *s)
{
	uint64_t now = mono_ms(), until = now + 5000;
	if (s->o.lifetime_ms)
		until = s->created_mono_ms + s->o.lifetime_ms;
	if (s->o.idle_timeout_ms && !running(s))
		until = MIN(until, s->idle_since_ms + s->o.idle_timeout_ms);
	return until <= now ? 0 : (int)(until - now);
}

static bool expired(const struct sess *s)
{
	uint64_t now = mono_ms();
	if (s->o.lifetime_ms && now >= s->created_mono_ms + s->o.lifetime_ms)
		return true;
	return s->o.idle_timeout_ms && !running(s) &&
		now >= s->idle_since_ms + s->o.idle_timeout_ms;
}

static void serve_loop(struct sess *s)
{
	while (!s->quit) {
		struct pollfd pf[3 + MOAT_SESS_MAX_CONNS];
		struct conn *who[3 + MOAT_SESS_MAX_CONNS];
		unsigned n = 0;
		pf[n++] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
		pf[n++] = (struct pollfd){.fd = moat_sandbox_fd(s->sb), .events = POLLIN};
		for (unsigned i = 0; i < MOAT_SESS_MAX_CONNS; i++)
			if (s->c[i].fd >= 0) {
				who[n] = &s->c[i];
				pf[n++] = (struct pollfd){.fd = s->c[i].fd, .events = POLLIN};
			}
		int k = poll(pf, n, timeout_ms(s));
		if (k < 0 && errno != EINTR)
			break;
		if (pf[2].revents && moat_sandbox_dispatch(s->sb) < 0) {
			end_session(s, -1); /* the init died: everything is gone */
			return;
		}
		if (s->main.pr && moat_proc_done(s->main.pr)) {
			main_ended(s); /* the container's end is the session's */
			end_session(s, -1);
			return;
		}
		if (s->main.ended && !s->main.pr) { /* it could not start */
			end_session(s, -1);
			return;
		}
		/* processes that ended: their clients get the status */
		for (unsigned i = 0; i < MOAT_SESS_MAX_CONNS; i++) {
			struct conn *c = &s->c[i];
			struct moat_proc_status ps;
			if (c->fd < 0 || !c->pr || !moat_proc_done(c->pr) ||
			    moat_proc_status(c->pr, &ps) < 0)
				continue;
			conn_tty_restore(c);
			json_t *b = moat_sess_proc_status_json(&ps);
			moat_sess_send(c->fd, MOAT_SESS_EXITED, b, NULL, 0);
			json_decref(b);
			conn_close(s, c);
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(s->sigfd, &si, sizeof(si)) == sizeof(si))
				s->quit = true;
			if (s->quit) {
				s->quit = false;
				end_session(s, -1);
				return;
			}
		}
		for (unsigned j = 3; j < n; j++) {
			struct conn *c = who[j];
			if (!pf[j].revents || c->fd < 0)
				continue;
			struct moat_sess_msg m;
			int r = moat_sess_recv(c->fd, true, &m);
			if (r == -EAGAIN)
				continue;
			if (r <= 0) { /* gone: a process it started is killed */
				conn_close(s, c);
				continue;
			}
			on_message(s, c, &m);
			moat_sess_msg_done(&m);
			if (s->quit)
				return;
			/* one request a connection, but for exec and copy-out */
			if (!c->pr && !(c->data && m.type == MOAT_SESS_COPY_OUT))
				conn_close(s, c);
		}
		if (pf[0].revents)
			accept_one(s);
		if (expired(s) || unreachable(s)) {
			end_session(s, -1);
			return;
		}
	}
}

/* The supervisor of a container exits as the container's process did
 * (conmon and containerd's shim wait for it and report its status): with
 * its exit status, or killed by the same signal (no core dump). */
_Noreturn static void exit_as_main(const struct main_spec *ms)
{
	if (!ms->prepared)
		_exit(0);
	if (ms->exit_sig > 0 && ms->exit_sig < NSIG) {
		struct rlimit rl = {0, 0};
		sigset_t all;
		setrlimit(RLIMIT_CORE, &rl);
		signal(ms->exit_sig, SIG_DFL);
		sigemptyset(&all);
		sigaddset(&all, ms->exit_sig);
		sigprocmask(SIG_UNBLOCK, &all, NULL);
		raise(ms->exit_sig);
		_exit(128 + ms->exit_sig); /* a signal that does not kill */
	}
	_exit(ms->exit_code & 0xff);
}

_Noreturn void moat_sess_serve(const struct moat_policy *p, const struct moat_session_opts *o,
			       int rep)
{
	struct sess s = {.p = p, .o = *o, .dfd = -1, .lfd = -1, .sigfd = -1, .name_fd = -1};
	struct moat_error err = {0};
	sigset_t mask;
	for (unsigned i = 0; i < MOAT_SESS_MAX_CONNS; i++)
		s.c[i].fd = -1;
	for (int i = 0; i < 3; i++)
		s.main.fd[i] = -1;
	if (o->name)
		snprintf(s.name, sizeof(s.name), "%s", o->name);
	s.o.name = NULL;
	signal(SIGPIPE, SIG_IGN);
	s.created_us = wall_us();
	s.created_mono_ms = s.idle_since_ms = mono_ms();
	digest_policy(&s);
	/* The sandbox first, while this process holds nothing but the report
	 * pipe: its init is forked from here and keeps what is open now. */
	if (moat_sandbox_create(p, &s.sb, &err) < 0)
		goto fail;
	/* --image: this process's own hold on the cached tree for the
	 * session's life (the caller's lasts until the report below; moat gc
	 * removes only what nobody holds); after the sandbox, which keeps none */
	if (p->image_root) {
		int ifd = moat_image_hold(p->image_root);
		if (ifd < 0) {
			moat_error_set(&err, "image", -ifd, "cannot hold the image %s: %s",
				       p->image_root, strerror(-ifd));
			goto fail_destroy;
		}
		(void)ifd; /* held until the process exits */
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	s.sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s.sigfd < 0) {
		moat_error_set(&err, "session", errno, "signalfd: %s", strerror(errno));
		goto fail_destroy;
	}
	if ((s.dfd = moat_sess_dir_open(true, &err)) < 0)
		goto fail_destroy;
	if (s.name[0] && claim_name(&s, &err) < 0) {
		s.name[0] = 0; /* not ours */
		goto fail_destroy;
	}
	if (listen_on(&s, &err) < 0)
		goto fail_destroy;
	if (s.name_fd >= 0) {
		const char *id = moat_sandbox_id(s.sb);
		(void)!ftruncate(s.name_fd, 0);
		(void)!pwrite(s.name_fd, id, strlen(id), 0);
	}
	/* ready: the caller may print the id and go */
	report(rep, moat_sandbox_id(s.sb), NULL);
	close(rep);
	serve_loop(&s);
	if (!s.quit && s.sb)
		end_session(&s, -1);
	exit_as_main(&s.main);
fail_destroy:
	if (s.lfd >= 0)
		unlinkat(s.dfd, s.sock, 0);
	moat_sandbox_destroy(s.sb, NULL, NULL);
	if (s.name_fd >= 0) {
		char file[MOAT_SESSION_NAME_MAX + 8];
		snprintf(file, sizeof(file), "%s.name", s.name);
		unlinkat(s.dfd, file, 0);
	}
fail:
	report(rep, NULL, &err);
	_exit(1);
}
