/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The caller's side of sessions (moat.h, session.h): creating one (fork the
 * supervisor, wait until it says ready) and every request to one.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/errors.h"
#include "sandbox/paths.h"
#include "supervisor/session.h"
#include "shared/macro.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

/* The supervisor's start: a new session, its standard fds on /dev/null,
 * every other inherited fd closed but the report pipe (3). */
static int detach(int rep)
{
	if (setsid() < 0)
		return -1;
	int null = open("/dev/null", O_RDWR | O_CLOEXEC);
	if (null < 0)
		return -1;
	for (int i = 0; i < 3; i++)
		if (dup2(null, i) < 0)
			return -1;
	if (null > 2)
		close(null);
	if (rep != 3 && dup3(rep, 3, O_CLOEXEC) < 0)
		return -1;
	/* everything of the caller's but 0..3 */
	if (close_range(4, ~0U, 0) < 0)
		for (int fd = 4; fd < 1024; fd++)
			close(fd);
	return chdir("/") < 0 ? -1 : 3;
}

int moat_session_create(const struct moat_policy *p, const struct moat_session_opts *o,
			char ret_id[40], struct moat_error *ret_err)
{
	struct moat_session_opts none = {0};
	if (!o)
		o = &none;
	ret_id[0] = 0;
	if (o->name && !moat_sess_name_valid(o->name))
		return moat_error_set(ret_err, "usage", EINVAL,
				      "a sandbox name is 1..%d of [A-Za-z0-9_.-], starting with a "
				      "letter or digit",
				      MOAT_SESSION_NAME_MAX);
	int k = moat_policy_validate(p, ret_err);
	if (k < 0)
		return k;
	_cleanup_close_ int dfd = moat_sess_dir_open(true, ret_err);
	if (dfd < 0)
		return dfd;
	if (o->name && moat_sess_name_taken(dfd, o->name))
		return moat_error_set(ret_err, "usage", EEXIST,
				      "a sandbox named '%s' exists already", o->name);
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return moat_error_set(ret_err, "session", errno, "pipe: %s", strerror(errno));
	_cleanup_close_ int rd = pp[0];
	pid_t mid = fork();
	if (mid < 0) {
		close(pp[1]);
		return moat_error_set(ret_err, "session", errno, "fork: %s", strerror(errno));
	}
	if (mid == 0) {
		/* a grandchild: reparented, never the caller's zombie */
		close(pp[0]);
		pid_t d = fork();
		if (d != 0)
			_exit(d < 0 ? 1 : 0);
		int rep = detach(pp[1]);
		if (rep < 0)
			_exit(1);
		moat_sess_serve(p, o, rep);
	}
	close(pp[1]);
	int wst;
	while (waitpid(mid, &wst, 0) < 0 && errno == EINTR)
		;
	char buf[2048] = "";
	size_t len = 0;
	ssize_t n;
	/* one line (the sandbox's init keeps a copy of the pipe: no EOF) */
	while (len < sizeof(buf) - 1 && !memchr(buf, '\n', len) &&
	       (n = read(rd, buf + len, sizeof(buf) - 1 - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	buf[len] = 0;
	json_error_t je;
	json_t *o2 = json_loadb(buf, len, 0, &je);
	const char *id = json_string_value(json_object_get(o2, "id"));
	if (id && moat_sess_id_valid(id)) {
		snprintf(ret_id, 40, "%s", id);
		json_decref(o2);
		return 0;
	}
	if (json_is_object(o2) && json_object_get(o2, "message")) {
		k = moat_sess_error_from(o2, ret_err);
		json_decref(o2);
		return k;
	}
	json_decref(o2);
	return moat_error_set(ret_err, "session", EPIPE,
			      "the session's supervisor died before the sandbox was ready");
}

/* One request, one reply (of want, or ERROR); timeout_ms bounds the
 * connect and the answer (0: unbounded). */
static int call_within(const char *id, unsigned type, json_t *body, const int *fds, unsigned n_fds,
		       unsigned want, struct moat_sess_msg *ret, int *ret_sock, unsigned timeout_ms,
		       struct moat_error *err)
{
	_cleanup_close_ int dfd = moat_sess_dir_open(false, err);
	if (dfd < 0)
		return dfd;
	_cleanup_close_ int sock = moat_sess_connect_within(dfd, id, NULL, timeout_ms, err);
	if (sock < 0)
		return sock;
	int k = moat_sess_send(sock, type, body, fds, n_fds);
	if (k < 0)
		return moat_error_set(err, "session", -k, "cannot send the request: %s",
				      strerror(-k));
	k = moat_sess_recv(sock, false, ret);
	if (k == 0) /* it was ending: removed, expired or killed */
		return moat_error_set(err, "session", ECONNREFUSED, "sandbox '%s' is gone", id);
	if (k == -EAGAIN && timeout_ms)
		return moat_error_set(err, "session", ETIMEDOUT,
				      "sandbox %s: its supervisor did not answer within %u ms", id,
				      timeout_ms);
	if (k < 0)
		return moat_error_set(err, "session", -k,
				      "the session's supervisor did not answer");
	if (ret->type == MOAT_SESS_ERROR) {
		k = moat_sess_error_from(ret->body, err);
		moat_sess_msg_done(ret);
		return k;
	}
	if (ret->type != want) {
		moat_sess_msg_done(ret);
		return moat_error_set(err, "session", EPROTO, "unexpected answer");
	}
	if (ret_sock)
		*ret_sock = TAKE_FD(sock);
	return 0;
}

static int call(const char *id, unsigned type, json_t *body, const int *fds, unsigned n_fds,
		unsigned want, struct moat_sess_msg *ret, int *ret_sock, struct moat_error *err)
{
	return call_within(id, type, body, fds, n_fds, want, ret, ret_sock, 0, err);
}

/* How long moat ls waits for one supervisor: one that is busy (or stuck)
 * must not hide the others. */
#define LIST_ANSWER_MS 2000u

static int session_info_within(const char *id, struct moat_session_info *ret, unsigned timeout_ms,
			       struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = call_within(id, MOAT_SESS_INFO, NULL, NULL, 0, MOAT_SESS_INFO_REPLY, &m, NULL,
			    timeout_ms, ret_err);
	if (k < 0)
		return k;
	moat_sess_info_from(m.body, ret);
	moat_sess_msg_done(&m);
	return 0;
}

int moat_session_info(const char *id, struct moat_session_info *ret, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = call(id, MOAT_SESS_INFO, NULL, NULL, 0, MOAT_SESS_INFO_REPLY, &m, NULL, ret_err);
	if (k < 0)
		return k;
	moat_sess_info_from(m.body, ret);
	moat_sess_msg_done(&m);
	return 0;
}

int moat_session_list(struct moat_session_info **ret, size_t *ret_n, struct moat_error *ret_err)
{
	*ret = NULL;
	*ret_n = 0;
	struct moat_error e2 = {0};
	int dfd = moat_sess_dir_open(false, &e2);
	if (dfd == -ENOENT)
		return 0;
	if (dfd < 0) {
		if (ret_err)
			*ret_err = e2;
		return dfd;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return moat_error_set(ret_err, "session", errno, "cannot list: %s",
				      strerror(errno));
	}
	size_t n = 0, cap = 0;
	struct moat_session_info *v = NULL;
	struct dirent *de;
	while ((de = readdir(d))) {
		char id[40];
		size_t l = strlen(de->d_name);
		if (l < 6 || l - 5 >= sizeof(id) || strcmp(de->d_name + l - 5, ".sock") != 0)
			continue;
		snprintf(id, sizeof(id), "%.*s", (int)(l - 5), de->d_name);
		if (!moat_sess_id_valid(id))
			continue;
		if (n == cap) {
			if (cap >= 4096)
				break;
			cap = cap ? cap * 2 : 16;
			struct moat_session_info *nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				break;
			v = nv;
		}
		struct moat_error e = {0};
		int k = session_info_within(id, &v[n], LIST_ANSWER_MS, &e);
		if (k == -ETIMEDOUT) {
			/* busy or stuck: listed, never waited for */
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].id, sizeof(v[n].id), "%s", id);
			snprintf(v[n].state, sizeof(v[n].state), "busy");
			snprintf(v[n].reason, sizeof(v[n].reason),
				 "its supervisor did not answer within %u ms", LIST_ANSWER_MS);
			n++;
		} else if (k == -ECONNREFUSED) {
			/* its supervisor died (and with it the sandbox): shown once */
			memset(&v[n], 0, sizeof(v[n]));
			snprintf(v[n].id, sizeof(v[n].id), "%s", id);
			snprintf(v[n].state, sizeof(v[n].state), "gone");
			unlinkat(dirfd(d), de->d_name, 0);
			n++;
		} else if (k >= 0)
			n++;
	}
	closedir(d);
	*ret = v;
	*ret_n = n;
	return 0;
}

int moat_session_gc(const char *const *live_ids, size_t n_live, unsigned *ret_removed,
		    struct moat_error *ret_err)
{
	unsigned removed = 0;
	if (ret_removed)
		*ret_removed = 0;
	struct moat_error e2 = {0};
	int dfd = moat_sess_dir_open(false, &e2);
	if (dfd == -ENOENT)
		return 0; /* no session was ever made */
	if (dfd < 0) {
		if (ret_err)
			*ret_err = e2;
		return dfd;
	}
	DIR *d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return moat_error_set(ret_err, "session", errno, "cannot list: %s",
				      strerror(errno));
	}
	struct dirent *de;
	unsigned seen = 0;
	while ((de = readdir(d)) && seen++ < 100000) {
		char id[40];
		size_t l = strlen(de->d_name);
		if (l > 5 && l - 5 < sizeof(id) && strcmp(de->d_name + l - 5, ".sock") == 0) {
			snprintf(id, sizeof(id), "%.*s", (int)(l - 5), de->d_name);
			if (!moat_sess_id_valid(id))
				continue;
			bool live = false;
			for (size_t i = 0; i < n_live && !live; i++)
				live = live_ids[i] && strcmp(live_ids[i], id) == 0;
			struct moat_error e = {0};
			int fd = live ? -1 : moat_sess_connect(dirfd(d), id, NULL, &e);
			if (!live && fd == -ECONNREFUSED && unlinkat(dirfd(d), de->d_name, 0) == 0)
				removed++;
			safe_close(fd);
		} else if (l > 5 && strcmp(de->d_name + l - 5, ".name") == 0) {
			/* held by its supervisor with an OFD lock for its life */
			_cleanup_close_ int fd = openat(
				dirfd(d), de->d_name, O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
			struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
			struct stat st;
			if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
			    fcntl(fd, F_OFD_SETLK, &fl) == 0 &&
			    unlinkat(dirfd(d), de->d_name, 0) == 0)
				removed++;
		}
	}
	closedir(d);
	if (ret_removed)
		*ret_removed = removed;
	return 0;
}

int moat_session_stop(const char *id, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = call(id, MOAT_SESS_STOP, NULL, NULL, 0, MOAT_SESS_OK, &m, NULL, ret_err);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

int moat_session_remove(const char *id, bool force, struct moat_status *ret_status,
			struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	json_t *b = json_pack("{s:b}", "force", force);
	int k = call(id, MOAT_SESS_REMOVE, b, NULL, 0, MOAT_SESS_STATUS, &m, NULL, ret_err);
	json_decref(b);
	if (k < 0)
		return k;
	if (ret_status)
		moat_sess_status_from(m.body, ret_status);
	moat_sess_msg_done(&m);
	return 0;
}

/* ---- OCI: the container's process ------------------------------------------ */

static json_t *str_json(char *const *v)
{
	json_t *a = json_array();
	for (size_t i = 0; a && v && v[i]; i++)
		if (json_array_append_new(a, json_string(v[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

/* The request body of an exec (session exec and OCI prepare alike): argv,
 * env, terminal mask, which of fds 0..2 follow (their fds into ret_fds, in
 * order, count in *ret_n), time limit, cwd. NULL when a string is not valid
 * UTF-8 (or out of memory). */
static json_t *exec_body(const struct moat_exec *x, int ret_fds[3], unsigned *ret_n)
{
	unsigned n = 0, mask = 0;
	for (int i = 0; i < 3; i++)
		if (x->fd[i] >= 0) {
			ret_fds[n++] = x->fd[i];
			mask |= 1u << i;
		}
	*ret_n = n;
	json_t *b = json_pack("{s:o,s:o,s:i,s:i,s:I}", "argv", str_json(x->argv), "env",
			      x->env ? str_json(x->env) : json_null(), "tty", (int)x->tty_mask,
			      "fds", (int)mask, "timeout_ms", (json_int_t)x->timeout_ms);
	if (b && x->cwd && json_object_set_new(b, "cwd", json_string(x->cwd)) < 0) {
		json_decref(b);
		return NULL;
	}
	return b;
}

int moat_session_prepare(const char *id, const struct moat_exec *x, int *ret_pid,
			 struct moat_error *ret_err)
{
	if (!x || !x->argv || !x->argv[0] || !x->argv[0][0])
		return moat_error_set(ret_err, "usage", EINVAL, "no command given");
	int fds[3];
	unsigned n = 0;
	json_t *b = exec_body(x, fds, &n);
	if (!b)
		return moat_error_set(ret_err, "usage", EINVAL, "the command is not valid UTF-8");
	struct moat_sess_msg m;
	int k = call(id, MOAT_SESS_PREPARE, b, fds, n, MOAT_SESS_OK, &m, NULL, ret_err);
	json_decref(b);
	if (k < 0)
		return k;
	if (ret_pid)
		*ret_pid = (int)json_integer_value(json_object_get(m.body, "pid"));
	moat_sess_msg_done(&m);
	return 0;
}

int moat_session_start(const char *id, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = call(id, MOAT_SESS_START, NULL, NULL, 0, MOAT_SESS_OK, &m, NULL, ret_err);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

int moat_session_kill(const char *id, int sig, bool all, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	json_t *b = json_pack("{s:i,s:b}", "sig", sig, "all", all);
	int k = call(id, MOAT_SESS_KILL, b, NULL, 0, MOAT_SESS_OK, &m, NULL, ret_err);
	json_decref(b);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

int moat_session_pause(const char *id, bool on, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	json_t *b = json_pack("{s:b}", "on", on);
	int k = call(id, MOAT_SESS_PAUSE, b, NULL, 0, MOAT_SESS_OK, &m, NULL, ret_err);
	json_decref(b);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

/* ---- exec ----------------------------------------------------------------- */

struct moat_session_exec {
	int sock;
	bool done;
	struct moat_proc_status st;
};

int moat_session_exec(const char *id, const struct moat_exec *x, struct moat_session_exec **ret,
		      struct moat_error *ret_err)
{
	*ret = NULL;
	if (!x || !x->argv || !x->argv[0] || !x->argv[0][0])
		return moat_error_set(ret_err, "usage", EINVAL, "no command given");
	int fds[3];
	unsigned n = 0;
	json_t *b = exec_body(x, fds, &n);
	if (!b)
		return moat_error_set(ret_err, "usage", EINVAL, "the command is not valid UTF-8");
	struct moat_sess_msg m;
	int sock = -1;
	int k = call(id, MOAT_SESS_EXEC, b, fds, n, MOAT_SESS_STARTED, &m, &sock, ret_err);
	json_decref(b);
	if (k < 0)
		return k;
	moat_sess_msg_done(&m);
	struct moat_session_exec *e = calloc(1, sizeof(*e));
	if (!e) {
		close(sock);
		return -ENOMEM;
	}
	e->sock = sock;
	*ret = e;
	return 0;
}

int moat_session_exec_fd(const struct moat_session_exec *e)
{
	return e->sock;
}

int moat_session_exec_signal(struct moat_session_exec *e, int sig)
{
	json_t *b = json_pack("{s:i}", "sig", sig);
	int k = moat_sess_send(e->sock, MOAT_SESS_SIGNAL, b, NULL, 0);
	json_decref(b);
	return k;
}

int moat_session_exec_resize(struct moat_session_exec *e, unsigned rows, unsigned cols)
{
	json_t *b = json_pack("{s:i,s:i}", "rows", (int)rows, "cols", (int)cols);
	int k = moat_sess_send(e->sock, MOAT_SESS_RESIZE, b, NULL, 0);
	json_decref(b);
	return k;
}

int moat_session_exec_wait(struct moat_session_exec *e, struct moat_proc_status *ret)
{
	while (!e->done) {
		struct moat_sess_msg m;
		int k = moat_sess_recv(e->sock, false, &m);
		if (k <= 0)
			return k < 0 ? k : -EPIPE;
		if (m.type == MOAT_SESS_EXITED) {
			moat_sess_proc_status_from(m.body, &e->st);
			e->done = true;
		}
		moat_sess_msg_done(&m);
	}
	*ret = e->st;
	return 0;
}

struct moat_session_exec *moat_session_exec_free(struct moat_session_exec *e)
{
	if (e) {
		safe_close(e->sock);
		free(e);
	}
	return NULL;
}

/* ---- files ---------------------------------------------------------------- */

#define COPY_MAX_DEPTH 32
#define COPY_MAX_ENTRIES 100000

struct walk {
	const char *id;
	uint64_t max, total;
	unsigned entries, skipped;
};

/* One regular file, open, to path in the sandbox (at most max bytes). */
static int send_file(const char *id, int fd, const char *path, uint64_t max, uint64_t *ret_len,
		     struct moat_error *ret_err)
{
	json_t *b = json_pack("{s:s,s:I}", "path", path, "max", (json_int_t)max);
	struct moat_sess_msg m;
	int k = call(id, MOAT_SESS_COPY_IN, b, &fd, 1, MOAT_SESS_OK, &m, NULL, ret_err);
	json_decref(b);
	if (k < 0)
		return k;
	if (ret_len)
		*ret_len = (uint64_t)json_integer_value(json_object_get(m.body, "len"));
	moat_sess_msg_done(&m);
	return 0;
}

static int make_dir(const char *id, const char *path, struct moat_error *ret_err)
{
	json_t *b = json_pack("{s:s}", "path", path);
	struct moat_sess_msg m;
	int k = call(id, MOAT_SESS_MKDIR, b, NULL, 0, MOAT_SESS_OK, &m, NULL, ret_err);
	json_decref(b);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

/* "path/name" (one separator), NULL when it would not be a path of the
 * sandbox (4096 bytes) or out of memory. */
static char *join(const char *path, const char *name)
{
	size_t pl = strlen(path), n = pl + strlen(name) + 2;
	if (n > 4096)
		return NULL;
	char *sub = malloc(n);
	if (!sub)
		return NULL;
	memcpy(sub, path, pl);
	if (!pl || path[pl - 1] != '/')
		sub[pl++] = '/';
	memcpy(sub + pl, name, strlen(name) + 1);
	return sub;
}

/* Opens name in dfd again for reading, as what the O_PATH look at it found
 * (same device and inode): a swap in between (a symlink, a fifo, another
 * file) is refused, and nothing is ever opened through a symlink. */
static int reopen_same(int dfd, const char *name, const struct stat *was, int oflags,
		       struct moat_error *err)
{
	int fd = openat(dfd, name, oflags | O_NOFOLLOW | O_NOCTTY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	if (fd < 0)
		return moat_error_set(err, "copy", errno,
				      "%s changed while it was copied (%s): not copied", name,
				      strerror(errno));
	if (fstat(fd, &st) < 0 || st.st_dev != was->st_dev || st.st_ino != was->st_ino ||
	    (st.st_mode & S_IFMT) != (was->st_mode & S_IFMT)) {
		close(fd);
		return moat_error_set(err, "copy", EAGAIN,
				      "%s changed while it was copied: not copied", name);
	}
	return fd;
}

/* The host directory dfd (open for reading) into the new directory path of
 * the sandbox: regular files and directories, each opened beneath its
 * parent's fd with O_NOFOLLOW (a symlink is never followed: links, devices,
 * fifos and sockets are skipped and counted); at most COPY_MAX_DEPTH deep,
 * COPY_MAX_ENTRIES entries and w->max bytes in all. */
static int copy_dir_in(struct walk *w, int dfd, const char *path, unsigned depth,
		       struct moat_error *err)
{
	int k = make_dir(w->id, path, err);
	if (k < 0)
		return k;
	int dup_fd = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = dup_fd < 0 ? NULL : fdopendir(dup_fd);
	if (!d) {
		k = moat_error_set(err, "copy", errno, "cannot read a directory: %s",
				   strerror(errno));
		safe_close(dup_fd);
		return k;
	}
	struct dirent *de;
	while (k >= 0 && (errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		if (strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
			continue;
		if (++w->entries > COPY_MAX_ENTRIES) {
			k = moat_error_set(err, "copy", E2BIG, "more than %d entries",
					   COPY_MAX_ENTRIES);
			break;
		}
		struct stat st;
		int pfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
		if (pfd < 0 || fstat(pfd, &st) < 0) {
			k = moat_error_set(err, "copy", errno, "cannot open %s: %s", name,
					   strerror(errno));
			safe_close(pfd);
			break;
		}
		close(pfd);
		if (!S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode)) {
			w->skipped++;
			continue;
		}
		_cleanup_free_ char *sub = join(path, name);
		if (!sub) {
			k = moat_error_set(err, "copy", ENAMETOOLONG,
					   "a path in the sandbox would be 4096 bytes or more");
			break;
		}
		if (S_ISDIR(st.st_mode)) {
			if (depth + 1 >= COPY_MAX_DEPTH) {
				k = moat_error_set(err, "copy", ELOOP, "deeper than %d directories",
						   COPY_MAX_DEPTH);
				break;
			}
			int sfd = reopen_same(dfd, name, &st, O_RDONLY | O_DIRECTORY, err);
			if (sfd < 0) {
				k = sfd;
				break;
			}
			k = copy_dir_in(w, sfd, sub, depth + 1, err);
			close(sfd);
			continue;
		}
		if (w->total + (uint64_t)st.st_size > w->max) {
			k = moat_error_set(err, "copy", EFBIG, "more than %llu bytes (--max-size)",
					   (unsigned long long)w->max);
			break;
		}
		int fd = reopen_same(dfd, name, &st, O_RDONLY, err);
		if (fd < 0) {
			k = fd;
			break;
		}
		uint64_t len = 0;
		k = send_file(w->id, fd, sub, w->max - w->total, &len, err);
		close(fd);
		w->total += len;
	}
	if (k >= 0 && errno != 0)
		k = moat_error_set(err, "copy", errno, "cannot read a directory: %s",
				   strerror(errno));
	closedir(d);
	return k;
}

int moat_session_copy_in(const char *id, const char *host_path, const char *path, uint64_t max,
			 uint64_t *ret_len, struct moat_error *ret_err)
{
	struct moat_path_info *why = calloc(1, sizeof(*why));
	if (!why)
		return -ENOMEM;
	/* a directory: walked beneath its fd, into a new directory */
	int k = moat_path_open(host_path, 0, 0, why);
	struct stat st;
	if (k >= 0) {
		_cleanup_close_ int opath = k;
		if (fstat(opath, &st) == 0 && S_ISDIR(st.st_mode)) {
			free(why);
			_cleanup_close_ int dfd =
				openat(opath, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (dfd < 0)
				return moat_error_set(ret_err, "copy", errno, "cannot open %s: %s",
						      host_path, strerror(errno));
			struct walk w = {.id = id, .max = max};
			k = copy_dir_in(&w, dfd, path, 0, ret_err);
			if (ret_len)
				*ret_len = w.total;
			return k;
		}
	}
	/* the host file: never through a symlink, a regular file only */
	k = moat_path_read_file(host_path, why);
	_cleanup_close_ int fd = k;
	if (k < 0) {
		k = k == -EINVAL
			? moat_error_set(ret_err, "copy", EINVAL,
					 "%s is not a regular file or a directory (only those "
					 "are copied)",
					 host_path)
			: moat_path_error(ret_err, "copy", "the source", host_path, k, why);
		free(why);
		return k;
	}
	free(why);
	if (fstat(fd, &st) < 0)
		return moat_error_set(ret_err, "copy", errno, "fstat: %s", strerror(errno));
	if ((uint64_t)st.st_size > max)
		return moat_error_set(ret_err, "copy", EFBIG, "%s is larger than %llu bytes",
				      host_path, (unsigned long long)max);
	return send_file(id, fd, path, max, ret_len, ret_err);
}

/* Where a copied-out file goes: the top-level file as moat writes files for
 * the user (truncated), a file of a directory as a new name beneath its
 * held parent. */
struct dest {
	const char *host_path; /* or: */
	int dfd;
	const char *name;
};

static int open_dest(const struct dest *d, struct moat_error *err)
{
	if (d->host_path) {
		struct moat_path_info *why = calloc(1, sizeof(*why));
		if (!why)
			return -ENOMEM;
		int fd = moat_path_write_file(d->host_path, O_TRUNC, 0644, 0, why);
		if (fd < 0)
			fd = moat_path_error(err, "copy", "the destination", d->host_path, fd, why);
		free(why);
		return fd;
	}
	int fd =
		openat(d->dfd, d->name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return moat_error_set(err, "copy", errno, "cannot create %s: %s", d->name,
				      strerror(errno));
	return fd;
}

/* One regular file: read in the sandbox first, the host file opened only
 * when that worked. */
static int copy_file_out(const char *id, const char *path, const struct dest *d, uint64_t max,
			 uint64_t *ret_len, struct moat_error *ret_err)
{
	json_t *b = json_pack("{s:s,s:I}", "path", path, "max", (json_int_t)max);
	struct moat_sess_msg m;
	int sock = -1;
	int k = call(id, MOAT_SESS_COPY_OUT, b, NULL, 0, MOAT_SESS_OK, &m, &sock, ret_err);
	json_decref(b);
	if (k < 0)
		return k;
	moat_sess_msg_done(&m);
	_cleanup_close_ int s = sock;
	_cleanup_close_ int fd = open_dest(d, ret_err);
	if (fd < 0)
		return fd;
	k = moat_sess_send(s, MOAT_SESS_COPY_OUT_FD, NULL, &fd, 1);
	if (k < 0)
		return moat_error_set(ret_err, "session", -k, "cannot send the request");
	k = moat_sess_recv(s, false, &m);
	if (k <= 0)
		return moat_error_set(ret_err, "session", EPIPE,
				      "the session's supervisor did not answer");
	if (m.type == MOAT_SESS_ERROR) {
		k = moat_sess_error_from(m.body, ret_err);
		moat_sess_msg_done(&m);
		return k;
	}
	if (ret_len)
		*ret_len = (uint64_t)json_integer_value(json_object_get(m.body, "len"));
	moat_sess_msg_done(&m);
	return 0;
}

static int list(const char *id, const char *path, struct moat_sess_msg *ret, struct moat_error *err)
{
	json_t *b = json_pack("{s:s}", "path", path);
	int k = call(id, MOAT_SESS_LIST, b, NULL, 0, MOAT_SESS_OK, ret, NULL, err);
	json_decref(b);
	return k;
}

/* The directory path of the sandbox into the (new, empty) host directory
 * dfd: regular files and directories; links, devices, fifos and sockets are
 * skipped and counted. Names come from the sandbox: one component each. */
static int copy_dir_out(struct walk *w, const char *path, int dfd, unsigned depth,
			struct moat_error *err)
{
	struct moat_sess_msg m;
	int k = list(w->id, path, &m, err);
	if (k < 0)
		return k;
	json_t *a = json_object_get(m.body, "entries");
	for (size_t i = 0; k >= 0 && i < json_array_size(a); i++) {
		json_t *e = json_array_get(a, i);
		const char *name = json_string_value(json_object_get(e, "name"));
		int type = (int)json_integer_value(json_object_get(e, "type"));
		uint64_t size = (uint64_t)json_integer_value(json_object_get(e, "size"));
		if (!name || !name[0] || strchr(name, '/') || strcmp(name, ".") == 0 ||
		    strcmp(name, "..") == 0 ||
		    strlen(name) != json_string_length(json_object_get(e, "name"))) {
			w->skipped++;
			continue;
		}
		if (++w->entries > COPY_MAX_ENTRIES) {
			k = moat_error_set(err, "copy", E2BIG, "more than %d entries",
					   COPY_MAX_ENTRIES);
			break;
		}
		size_t plen = strlen(path) + strlen(name) + 2;
		char *sub = malloc(plen);
		if (!sub) {
			k = -ENOMEM;
			break;
		}
		snprintf(sub, plen, "%s%s%s", path, path[strlen(path) - 1] == '/' ? "" : "/", name);
		if (type == MOAT_FILE_REG) {
			if (w->total + size > w->max) {
				k = moat_error_set(err, "copy", EFBIG,
						   "more than %llu bytes (--max-size)",
						   (unsigned long long)w->max);
			} else {
				struct dest d = {.dfd = dfd, .name = name};
				uint64_t len = 0;
				k = copy_file_out(w->id, sub, &d, w->max - w->total, &len, err);
				w->total += len;
			}
		} else if (type == MOAT_FILE_DIR) {
			if (depth + 1 >= COPY_MAX_DEPTH)
				k = moat_error_set(err, "copy", ELOOP, "deeper than %d directories",
						   COPY_MAX_DEPTH);
			else if (mkdirat(dfd, name, 0755) < 0)
				k = moat_error_set(err, "copy", errno, "cannot create %s: %s", name,
						   strerror(errno));
			else {
				int sfd = openat(dfd, name,
						 O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
				if (sfd < 0)
					k = moat_error_set(err, "copy", errno, "cannot open %s: %s",
							   name, strerror(errno));
				else {
					k = copy_dir_out(w, sub, sfd, depth + 1, err);
					close(sfd);
				}
			}
		} else
			w->skipped++;
		free(sub);
	}
	moat_sess_msg_done(&m);
	return k;
}

int moat_session_copy_out(const char *id, const char *path, const char *host_path, uint64_t max,
			  uint64_t *ret_len, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = list(id, path, &m, ret_err);
	if (k < 0)
		return k;
	int type = (int)json_integer_value(json_object_get(m.body, "type"));
	moat_sess_msg_done(&m);
	if (type != MOAT_FILE_DIR) {
		struct dest d = {.host_path = host_path};
		return copy_file_out(id, path, &d, max, ret_len, ret_err);
	}
	/* a directory: into a new one (never merged into what is there) */
	struct moat_path_info *why = calloc(1, sizeof(*why));
	if (!why)
		return -ENOMEM;
	const char *name;
	k = moat_path_open_parent(host_path, 0, 0, &name, why);
	if (k < 0) {
		k = moat_path_error(ret_err, "copy", "the destination", host_path, k, why);
		free(why);
		return k;
	}
	free(why);
	_cleanup_close_ int pfd = k;
	if (!name[0] || strcmp(name, ".") == 0 || strcmp(name, "..") == 0)
		return moat_error_set(ret_err, "usage", EINVAL, "name the new directory: %s",
				      host_path);
	if (mkdirat(pfd, name, 0755) < 0)
		return moat_error_set(ret_err, "copy", errno,
				      "cannot create the directory %s: %s (a directory is copied "
				      "into a new one)",
				      host_path, strerror(errno));
	_cleanup_close_ int dfd =
		openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_set(ret_err, "copy", errno, "cannot open %s: %s", host_path,
				      strerror(errno));
	struct walk w = {.id = id, .max = max};
	k = copy_dir_out(&w, path, dfd, 0, ret_err);
	if (ret_len)
		*ret_len = w.total;
	return k;
}

/* ---- snapshots ------------------------------------------------------------ */

static int snap_call(const char *id, unsigned type, json_t *b, struct moat_sess_msg *ret,
		     struct moat_error *ret_err)
{
	if (!b)
		return moat_error_set(ret_err, "session", ENOMEM, "out of memory");
	int k = call(id, type, b, NULL, 0, MOAT_SESS_OK, ret, NULL, ret_err);
	json_decref(b);
	return k;
}

int moat_session_snapshot(const char *id, const char *name, bool force,
			  char ret_name[MOAT_SNAPSHOT_NAME_MAX + 1], struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	json_t *b = name ? json_pack("{s:s,s:b}", "name", name, "force", force)
			 : json_pack("{s:b}", "force", force);
	int k = snap_call(id, MOAT_SESS_SNAPSHOT, b, &m, ret_err);
	if (k < 0)
		return k;
	const char *made = json_string_value(json_object_get(m.body, "name"));
	if (ret_name)
		snprintf(ret_name, MOAT_SNAPSHOT_NAME_MAX + 1, "%s", made ? made : "");
	moat_sess_msg_done(&m);
	return 0;
}

int moat_session_restore(const char *id, const char *name, bool force, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	if (!name)
		return moat_error_set(ret_err, "snapshot", EINVAL, "which snapshot?");
	int k = snap_call(id, MOAT_SESS_RESTORE,
			  json_pack("{s:s,s:b}", "name", name, "force", force), &m, ret_err);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

int moat_session_reset(const char *id, bool force, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = snap_call(id, MOAT_SESS_RESET, json_pack("{s:b}", "force", force), &m, ret_err);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

int moat_session_snapshot_delete(const char *id, const char *name, struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	if (!name)
		return moat_error_set(ret_err, "snapshot", EINVAL, "which snapshot?");
	int k = snap_call(id, MOAT_SESS_SNAP_DELETE, json_pack("{s:s}", "name", name), &m, ret_err);
	if (k >= 0)
		moat_sess_msg_done(&m);
	return k;
}

int moat_session_snapshot_list(const char *id, struct moat_snapshot_info **ret, size_t *ret_n,
			       struct moat_error *ret_err)
{
	struct moat_sess_msg m;
	int k = snap_call(id, MOAT_SESS_SNAP_LIST, json_object(), &m, ret_err);
	if (k < 0)
		return k;
	json_t *a = json_object_get(m.body, "snapshots");
	size_t n = json_is_array(a) ? json_array_size(a) : 0;
	if (n > MOAT_SNAPSHOTS_MAX)
		n = MOAT_SNAPSHOTS_MAX;
	struct moat_snapshot_info *v = calloc(n ? n : 1, sizeof(*v));
	if (!v) {
		moat_sess_msg_done(&m);
		return moat_error_set(ret_err, "session", ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		json_t *o = json_array_get(a, i);
		const char *nm = json_string_value(json_object_get(o, "name"));
		snprintf(v[i].name, sizeof(v[i].name), "%s", nm ? nm : "");
		v[i].created_us = (uint64_t)json_integer_value(json_object_get(o, "created_us"));
		v[i].bytes = (uint64_t)json_integer_value(json_object_get(o, "bytes"));
		v[i].current = json_is_true(json_object_get(o, "current"));
	}
	moat_sess_msg_done(&m);
	*ret = v;
	*ret_n = n;
	return 0;
}
