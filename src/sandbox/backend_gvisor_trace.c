/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exec records under gVisor (docs/ISOLATION.md "Exec records";
 * gvisor_trace.h for the wire format). runsc is given a pod-init config with
 * one trace session: the points syscall/execve/exit, syscall/execveat/exit
 * (the path as given, argv, the caller's gVisor pid and cwd, the result)
 * and sentry/clone (which thread group made which: the ppid), sent to the
 * "remote" sink, a unix SOCK_SEQPACKET socket in the bundle directory. runsc
 * connects to it as it creates the sandbox (a sink that cannot connect stops
 * the start: fail closed) and hands the connection to gVisor's Sentry.
 *
 * The Sentry runs the sandbox's code, so its bytes are hostile. A receiver
 * process forked from the supervisor reads them: it holds the listening
 * socket, one pipe to the supervisor and /dev/null (checked from its own fd
 * table), is nobody without capabilities as root, and runs under a seccomp
 * filter that allows only accept4, poll, recvfrom, sendto, getsockopt,
 * shutdown and the confined helpers' base set. It accepts one connection,
 * from its own uid, answers the handshake and shuts the connection for
 * writing (nothing of it goes back to the Sentry), decodes each message (gvisor_trace.c) and writes
 * one fixed-layout frame per recorded exec to the pipe; the supervisor
 * checks every frame again and writes it through the very function that
 * writes the process level's exec records (moat_observe_seccomp).
 */
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "audit/audit.h"
#include "audit/observe.h"
#include "kernel/confine.h"
#include "sandbox/backend_gvisor.h"
#include "sandbox/gvisor_trace.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/macro.h"

#define GVT_SOCK "trace.sock"
#define GVT_CONF "trace.json"
#define GVT_ACCEPT_MS 60000 /* runsc connects while it creates the sandbox */
#define GVT_BUF (2 * MOAT_GVT_FRAME_MAX)

struct moat_gvt_sup {
	pid_t pid; /* the receiver, 0 once reaped */
	int fd; /* its pipe, -1 once at EOF or given up */
	uint8_t *buf;
	size_t len;
	struct moat_seccomp_event *ev;
	struct moat_gvt_frame counts;
	bool got_counts;
	const char *broken; /* why the records stopped early, NULL if they did not */
	uint64_t recorded;
};

/* ---- the receiver (a fork of the supervisor) ----------------------------- */

static uint8_t rx_msg[MOAT_GVT_MSG_MAX + 1];
static uint8_t rx_frame[MOAT_GVT_FRAME_MAX];
static struct moat_gvt_point rx_pt;
static struct moat_gvt_parents rx_parents;

static int rx_confine(void)
{
	static const int extra[] = {SCMP_SYS(accept4), SCMP_SYS(poll),	     SCMP_SYS(recvfrom),
				    SCMP_SYS(sendto),  SCMP_SYS(getsockopt), SCMP_SYS(shutdown)};
	int k = moat_confine_drop_root();
	return k < 0 ? k : moat_confine_seccomp(extra, ELEMENTSOF(extra), NULL, NULL);
}

/* fds: 0-2 /dev/null, 3 the listening socket, 4 the pipe to the supervisor */
static _Noreturn void receiver(uid_t peer_uid)
{
	uint32_t malformed = 0, dropped = 0;
	struct pollfd pf = {.fd = 3, .events = POLLIN};
	int k;
	while ((k = poll(&pf, 1, GVT_ACCEPT_MS)) < 0 && errno == EINTR)
		;
	if (k != 1)
		_exit(2); /* no runsc connected: it failed to start (its log says why) */
	int c = accept4(3, NULL, NULL, SOCK_CLOEXEC);
	struct ucred cr;
	socklen_t crl = sizeof(cr);
	if (c < 0 || getsockopt(c, SOL_SOCKET, SO_PEERCRED, &cr, &crl) < 0 || cr.uid != peer_uid)
		_exit(3);
	close(3);
	ssize_t n = recv(c, rx_msg, sizeof(rx_msg), 0);
	if (n <= 0 || !moat_gvt_handshake_ok(rx_msg, (size_t)n) ||
	    send(c, moat_gvt_handshake_reply, sizeof(moat_gvt_handshake_reply), MSG_NOSIGNAL) !=
		    (ssize_t)sizeof(moat_gvt_handshake_reply))
		_exit(4);
	/* The one answer is sent: nothing more goes back to the Sentry, even
	 * from a receiver that a message took over (it holds a copy of the
	 * supervisor's memory; its filter has no socket, open or connect). */
	if (shutdown(c, SHUT_WR) < 0)
		_exit(4);
	for (;;) {
		/* MSG_TRUNC: the message's real length, to refuse an oversized one */
		n = recv(c, rx_msg, sizeof(rx_msg), MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break; /* the Sentry is gone (or the connection broke) */
		if ((size_t)n > MOAT_GVT_MSG_MAX ||
		    moat_gvt_decode(rx_msg, (size_t)n, &rx_pt) < 0) {
			malformed++;
			continue;
		}
		if (rx_pt.dropped > dropped)
			dropped = rx_pt.dropped;
		if (rx_pt.type == MOAT_GVT_MSG_SENTRY_CLONE) {
			if (!(rx_pt.clone_flags & CLONE_THREAD) && rx_pt.child_tgid > 0)
				moat_gvt_parent_add(&rx_parents, rx_pt.child_tgid, rx_pt.tgid);
			continue;
		}
		if (!moat_gvt_exec_recorded(&rx_pt))
			continue;
		size_t len = moat_gvt_frame_exec(
			&rx_pt, moat_gvt_parent_of(&rx_parents, rx_pt.tgid), rx_frame);
		if (moat_write_all(4, rx_frame, len) < 0)
			_exit(5);
	}
	struct moat_gvt_frame h = {.len = sizeof(h),
				   .kind = MOAT_GVT_FRAME_COUNTS,
				   .dropped = dropped,
				   .malformed = malformed};
	_exit(moat_write_all(4, &h, sizeof(h)) < 0 ? 5 : 0);
}

/* ---- the supervisor's side ------------------------------------------------ */

static int write_conf(int dirfd, const char *endpoint)
{
	static const char *const points[] = {"syscall/execve/exit", "syscall/execveat/exit",
					     "sentry/clone"};
	json_t *pts = json_array();
	for (unsigned i = 0; pts && i < ELEMENTSOF(points); i++) {
		json_t *ctx =
			i < 2 ? json_pack("[ss]", "group_id", "cwd") : json_pack("[s]", "group_id");
		json_array_append_new(
			pts, json_pack("{s:s,s:o}", "name", points[i], "context_fields", ctx));
	}
	/* the sink retries a full socket for up to ~40 ms before it drops a
	 * point (then counted in every later header) */
	json_t *o =
		json_pack("{s:{s:s,s:o,s:[{s:s,s:{s:s,s:i,s:s,s:s}}]}}", "trace_session", "name",
			  "Default", "points", pts, "sinks", "name", "remote", "config", "endpoint",
			  endpoint, "retries", 12, "backoff", "50us", "backoff_max", "10ms");
	if (!o)
		return -ENOMEM;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	int fd = openat(dirfd, GVT_CONF, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int k = fd < 0 ? negerrno() : moat_write_all(fd, s, strlen(s));
	free(s);
	if (fd >= 0)
		close(fd);
	return k;
}

int moat_gvt_start(int dirfd, const char *dir, struct moat_gvt_sup **ret, char *conf,
		   size_t conflen, char *why, size_t whylen)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	if ((size_t)snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/" GVT_SOCK, dir) >=
		    sizeof(sa.sun_path) ||
	    (size_t)snprintf(conf, conflen, "%s/" GVT_CONF, dir) >= conflen) {
		snprintf(why, whylen, "the bundle's path %s is too long for a socket", dir);
		return -ENAMETOOLONG;
	}
	int k = write_conf(dirfd, sa.sun_path);
	if (k < 0) {
		snprintf(why, whylen, "cannot write %s: %s", conf, strerror(-k));
		return k;
	}
	_cleanup_close_ int ls = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	mode_t old = umask(0077);
	k = ls < 0 || bind(ls, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(ls, 1) < 0
		? negerrno()
		: 0;
	umask(old);
	if (k < 0) {
		snprintf(why, whylen, "cannot listen on %s: %s", sa.sun_path, strerror(-k));
		return k;
	}
	struct moat_gvt_sup *t = calloc(1, sizeof(*t));
	int p[2] = {-1, -1};
	if (t)
		t->fd = -1;
	if (!t || !(t->buf = malloc(GVT_BUF)) || !(t->ev = malloc(sizeof(*t->ev))) ||
	    pipe2(p, O_CLOEXEC) < 0) {
		k = t && t->ev ? negerrno() : -ENOMEM;
		snprintf(why, whylen, "cannot prepare the exec records: %s", strerror(-k));
		moat_gvt_free(t);
		return k;
	}
	t->fd = p[0];
	uid_t peer = geteuid();
	int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
	pid_t pid = null_fd < 0 ? -1 : fork();
	if (pid == 0) {
		static const enum moat_fdset_kind want[] = {MOAT_FDSET_NULL, MOAT_FDSET_NULL,
							    MOAT_FDSET_NULL, MOAT_FDSET_SOCKET,
							    MOAT_FDSET_PIPE};
		int fds[5] = {null_fd, null_fd, null_fd, ls, p[1]};
		char w[128];
		/* the supervisor's environment (a --secret's value may be
		 * there) is not this process's business: wiped from its copy */
		extern char **environ;
		for (char **e = environ; e && *e; e++)
			explicit_bzero(*e, strlen(*e));
		if (prctl(PR_SET_PDEATHSIG, SIGKILL) < 0 || moat_fdset_compact(fds, 5) < 0 ||
		    moat_fdset_check(want, 5, w, sizeof(w)) < 0 || rx_confine() < 0)
			_exit(1);
		receiver(peer);
	}
	k = pid < 0 ? negerrno() : 0;
	safe_close(null_fd);
	close(p[1]);
	if (k < 0) {
		snprintf(why, whylen, "cannot start the exec records' receiver: %s", strerror(-k));
		moat_gvt_free(t);
		return k;
	}
	t->pid = pid;
	if (fcntl(t->fd, F_SETFL, O_NONBLOCK) < 0) {
		k = negerrno();
		moat_gvt_free(t);
		return k;
	}
	*ret = t;
	return 0;
}

int moat_gvt_attach(int fd, struct moat_gvt_sup **ret)
{
	struct moat_gvt_sup *t = calloc(1, sizeof(*t));
	if (t)
		t->fd = -1;
	if (!t || !(t->buf = malloc(GVT_BUF)) || !(t->ev = malloc(sizeof(*t->ev)))) {
		moat_gvt_free(t);
		close(fd);
		return -ENOMEM;
	}
	t->fd = fd;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0) {
		int k = negerrno();
		moat_gvt_free(t);
		return k;
	}
	*ret = t;
	return 0;
}

int moat_gvt_fd(const struct moat_gvt_sup *t)
{
	return t ? t->fd : -1;
}

static void give_up(struct moat_gvt_sup *t, const char *why)
{
	if (!t->broken)
		t->broken = why;
	t->fd = safe_close(t->fd);
	if (t->pid > 0)
		kill(t->pid, SIGKILL);
}

/* The frames in the buffer, each checked, as exec events. */
static void parse_frames(struct moat_run *r, struct moat_gvt_sup *t)
{
	size_t at = 0;
	while (t->fd >= 0) {
		struct moat_gvt_frame h;
		ssize_t n = moat_gvt_frame_parse(t->buf + at, t->len - at, &h, t->ev);
		if (n == 0)
			break;
		if (n < 0 || t->got_counts) {
			give_up(t, "the receiver sent a malformed frame");
			return;
		}
		at += (size_t)n;
		if (h.kind == MOAT_GVT_FRAME_COUNTS) {
			t->counts = h;
			t->got_counts = true;
			continue;
		}
		moat_observe_seccomp(r, t->ev);
		t->recorded++;
	}
	memmove(t->buf, t->buf + at, t->len - at);
	t->len -= at;
}

void moat_gvt_dispatch(struct moat_run *r, struct moat_gvt_sup *t)
{
	while (t && t->fd >= 0) {
		ssize_t n = read(t->fd, t->buf + t->len, GVT_BUF - t->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n <= 0) {
			if (t->len)
				give_up(t, "the receiver ended inside a frame");
			else if (!t->got_counts)
				give_up(t, "the receiver ended early");
			t->fd = safe_close(t->fd);
			return;
		}
		t->len += (size_t)n;
		parse_frames(r, t);
	}
}

void moat_gvt_finish(struct moat_run *r, struct moat_gvt_sup *t, int timeout_ms)
{
	if (!t)
		return;
	uint64_t deadline = moat_now_us() + (uint64_t)timeout_ms * 1000;
	while (t->fd >= 0) {
		uint64_t now = moat_now_us();
		if (now >= deadline) {
			give_up(t, "the receiver did not finish in time");
			break;
		}
		struct pollfd pf = {.fd = t->fd, .events = POLLIN};
		if (poll(&pf, 1, (int)((deadline - now) / 1000) + 1) < 0 && errno != EINTR) {
			give_up(t, "poll failed");
			break;
		}
		moat_gvt_dispatch(r, t);
	}
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
		t->pid = 0;
	}
	if (t->broken || t->counts.dropped || t->counts.malformed)
		MOAT_AUDIT(moat_run_audit(r), MOAT_EV_ALERT, MOAT_F_STR("cause", "exec_records"),
			   MOAT_F_UINT("dropped", t->counts.dropped),
			   MOAT_F_UINT("malformed", t->counts.malformed),
			   MOAT_F_STR("reason", t->broken));
}

struct moat_gvt_sup *moat_gvt_free(struct moat_gvt_sup *t)
{
	if (!t)
		return NULL;
	safe_close(t->fd);
	if (t->pid > 0) {
		kill(t->pid, SIGKILL);
		while (waitpid(t->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	free(t->buf);
	free(t->ev);
	free(t);
	return NULL;
}
