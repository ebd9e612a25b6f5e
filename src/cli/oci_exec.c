/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat-oci exec` and the console socket (docs/OCI.md). An exec is a
 * session exec (moat_session_exec): its process lives while the client
 * that started it does. With --detach that client is a grandchild of the
 * runtime (reparented to the engine's subreaper, like the container's
 * supervisor), named in --pid-file, exiting as the process did.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/oci.h"

int moat_oci_console(const char *sock, int *ret_fd)
{
	struct sockaddr_un sun = {.sun_family = AF_UNIX};
	if (strlen(sock) >= sizeof(sun.sun_path)) {
		moat_oci_err("--console-socket %s: path too long", sock);
		return -ENAMETOOLONG;
	}
	strcpy(sun.sun_path, sock);
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0) {
		moat_oci_err("--console-socket: cannot make a terminal: %s", strerror(errno));
		if (m >= 0)
			close(m);
		return -errno;
	}
	char name[128];
	if (ptsname_r(m, name, sizeof(name)) != 0) {
		close(m);
		return -EIO;
	}
	int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		moat_oci_err("--console-socket: cannot open %s: %s", name, strerror(errno));
		close(m);
		return -EIO;
	}
	/* the sandbox's own terminal does the line discipline: this one is raw */
	struct termios t;
	if (tcgetattr(s, &t) == 0) {
		cfmakeraw(&t);
		tcsetattr(s, TCSANOW, &t);
	}
	int c = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c < 0 || connect(c, (struct sockaddr *)&sun, sizeof(sun)) < 0) {
		moat_oci_err("--console-socket %s: %s", sock, strerror(errno));
		if (c >= 0)
			close(c);
		close(m);
		close(s);
		return -EIO;
	}
	char cbuf[CMSG_SPACE(sizeof(int))] = {0};
	struct iovec iov = {.iov_base = name, .iov_len = strlen(name)};
	struct msghdr mh = {.msg_iov = &iov,
			    .msg_iovlen = 1,
			    .msg_control = cbuf,
			    .msg_controllen = sizeof(cbuf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &m, sizeof(int));
	ssize_t n = sendmsg(c, &mh, MSG_NOSIGNAL);
	int e = errno;
	close(c);
	close(m);
	if (n < 0) {
		moat_oci_err("--console-socket %s: cannot send the terminal: %s", sock,
			     strerror(e));
		close(s);
		return -e;
	}
	*ret_fd = s;
	return 0;
}

_Noreturn void moat_oci_exit_as(const struct moat_proc_status *ps)
{
	if (ps->reason == MOAT_REASON_SIGNALED && ps->signal > 0 && ps->signal < NSIG) {
		struct rlimit rl = {0, 0};
		sigset_t set;
		setrlimit(RLIMIT_CORE, &rl);
		signal(ps->signal, SIG_DFL);
		sigemptyset(&set);
		sigaddset(&set, ps->signal);
		sigprocmask(SIG_UNBLOCK, &set, NULL);
		raise(ps->signal);
		_exit(128 + ps->signal);
	}
	_exit((ps->reason == MOAT_REASON_EXITED ? ps->status : ps->exit_code) & 0xff);
}

/* The exec's client: starts the process, reports on rep (a byte: 0 started,
 * else failed), writes the pid file, waits, exits as the process did. */
_Noreturn static void exec_client(const char *session, const struct moat_exec *x,
				  const char *pid_file, int rep)
{
	struct moat_session_exec *e = NULL;
	struct moat_error err = {0};
	struct moat_proc_status ps;
	if (moat_session_exec(session, x, &e, &err) < 0) {
		moat_oci_moat_err("exec", &err);
		if (rep >= 0)
			(void)!write(rep, "\1", 1);
		_exit(!strcmp(err.stage, "command") && err.err == ENOENT ? MOAT_EXIT_NOT_FOUND
									 : MOAT_EXIT_CANNOT_EXEC);
	}
	if (pid_file && moat_oci_write_pid(pid_file, (int)getpid()) < 0) {
		moat_session_exec_free(e);
		if (rep >= 0)
			(void)!write(rep, "\1", 1);
		_exit(MOAT_EXIT_SETUP);
	}
	if (rep >= 0) {
		(void)!write(rep, "", 1);
		close(rep);
	}
	int k = moat_session_exec_wait(e, &ps);
	moat_session_exec_free(e);
	if (k < 0)
		_exit(137); /* the container ended first */
	moat_oci_exit_as(&ps);
}

/* An exec'd process is the container's init's child: it has the
 * container's rlimits. process.rlimits of the exec may repeat them (podman
 * copies the container's); another value is refused naming the field. */
static bool rlimits_differ(const struct moat_oci_process *pr, const struct moat_oci_state *st)
{
	for (unsigned i = 0; i < pr->n_rlimits; i++) {
		const struct moat_oci_rlimit *r = &pr->rlimits[i];
		char one[96], want[100];
		struct moat_oci_process single = {.n_rlimits = 1, .rlimits = {*r}};
		moat_oci_rlimits_line(&single, one, sizeof(one));
		snprintf(want, sizeof(want), ",%s,", one);
		char have[sizeof(st->rlimits) + 2];
		snprintf(have, sizeof(have), ",%s,", st->rlimits);
		if (!strstr(have, want)) {
			moat_oci_err(
				"exec: process.rlimits[%u]: %s is not the container's (%s): an "
				"exec'd process has the container's rlimits",
				r->index, one, st->rlimits[0] ? st->rlimits : "none given");
			return true;
		}
	}
	return false;
}

int moat_oci_cmd_exec(int argc, char **argv)
{
	const char *process = NULL, *pid_file = NULL, *console = NULL, *id = NULL, *v = NULL;
	bool detach = false, tty = false;
	int i;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char **dst = !strcmp(a, "--process") || !strcmp(a, "-p") ? &process
			: !strcmp(a, "--pid-file")			       ? &pid_file
			: !strcmp(a, "--console-socket")		       ? &console
			: !strcmp(a, "--preserve-fds")			       ? &v
									       : NULL;
		if (dst) {
			if (i + 1 >= argc) {
				moat_oci_err("exec: %s needs a value", a);
				return MOAT_EXIT_USAGE;
			}
			*dst = argv[++i];
		} else if (!strncmp(a, "--process=", 10))
			process = a + 10;
		else if (!strncmp(a, "--pid-file=", 11))
			pid_file = a + 11;
		else if (!strncmp(a, "--console-socket=", 17))
			console = a + 17;
		else if (!strcmp(a, "--detach") || !strcmp(a, "-d"))
			detach = true;
		else if (!strcmp(a, "--tty") || !strcmp(a, "-t"))
			tty = true;
		else if (a[0] == '-') {
			moat_oci_err("exec: unsupported option %s (use --process FILE)", a);
			return MOAT_EXIT_USAGE;
		} else {
			id = a;
			break;
		}
	}
	if (!id || !process || i + 1 != argc) {
		moat_oci_err("exec: usage: exec --process FILE [--detach] [--pid-file F] [--tty "
			     "--console-socket S] ID");
		return MOAT_EXIT_USAGE;
	}
	if (v && strcmp(v, "0") != 0) {
		moat_oci_err("exec: --preserve-fds: not supported (only 0)");
		return MOAT_EXIT_USAGE;
	}
	struct moat_oci_state st;
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	struct moat_oci_process pr = {0};
	struct moat_error e = {0};
	int ret = 1, tty_fd = -1;
	if (strcmp(moat_oci_status(&st), "running") != 0) {
		moat_oci_err("exec: container '%s' is not running", id);
		goto out;
	}
	if (moat_oci_process_load(process, &pr, &e) < 0) {
		moat_oci_moat_err("exec", &e);
		goto out;
	}
	if (pr.uid != st.uid || pr.gid != st.gid) {
		moat_oci_err("exec: process.user: %u:%u is not the container's user (%u:%u): moat "
			     "runs every process of a container as its one user",
			     pr.uid, pr.gid, st.uid, st.gid);
		goto out;
	}
	/* an exec'd process is the container's init's child: it has the
	 * container's value, and no other can be given to it */
	if (pr.has_oom && pr.oom_score_adj != st.oom_score_adj) {
		moat_oci_err("exec: process.oomScoreAdj: %d is not the container's (%d): not "
			     "supported",
			     pr.oom_score_adj, st.oom_score_adj);
		goto out;
	}
	if (rlimits_differ(&pr, &st))
		goto out;
	if ((pr.terminal || tty) != (console != NULL)) {
		moat_oci_err("exec: a terminal needs --console-socket (and only then)");
		goto out;
	}
	struct moat_exec x = {.argv = pr.argv, .env = pr.env, .cwd = pr.cwd, .fd = {0, 1, 2}};
	if (console) {
		if (moat_oci_console(console, &tty_fd) < 0)
			goto out;
		x.fd[0] = x.fd[1] = x.fd[2] = tty_fd;
		x.tty_mask = 7;
	}
	if (!detach)
		exec_client(st.session, &x, pid_file, -1);
	int pp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		goto out;
	pid_t mid = fork();
	if (mid == 0) {
		close(pp[0]);
		/* a grandchild: reparented to the engine's subreaper */
		pid_t g = fork();
		if (g != 0)
			_exit(g < 0 ? 1 : 0);
		setsid();
		exec_client(st.session, &x, pid_file, pp[1]);
	}
	close(pp[1]);
	int wst;
	if (mid > 0)
		while (waitpid(mid, &wst, 0) < 0 && errno == EINTR)
			;
	char b = 1;
	ret = read(pp[0], &b, 1) == 1 && b == 0 ? 0 : 1;
	close(pp[0]);
out:
	if (tty_fd >= 0)
		close(tty_fd);
	moat_oci_process_done(&pr);
	moat_oci_state_done(&st);
	return ret;
}
