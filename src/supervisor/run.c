/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat_run(): one command in a fresh sandbox, as create + exec + wait +
 * destroy (spawn.c, proc.c). What only a whole run does lives here: the
 * caller's closed standard fds, the caller's terminal (raw mode, size), and
 * the signals that stop a run (SIGINT, SIGHUP, SIGQUIT to the command's
 * group; SIGTERM to every process of the sandbox, SIGKILL after the grace).
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "policy/errors.h"
#include "supervisor/run.h"
#include "supervisor/stdio_relay.h"
#include "supervisor/supervise.h"
#include "shared/io.h"
#include "shared/macro.h"

/* Back to the caller's signal mask, without a SIGPIPE we caused on the way. */
static void restore_mask(const sigset_t *oldmask)
{
	sigset_t pipe_set;
	struct timespec zero = {0, 0};
	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	if (!sigismember(oldmask, SIGPIPE))
		while (sigtimedwait(&pipe_set, NULL, &zero) > 0)
			;
	sigprocmask(SIG_SETMASK, oldmask, NULL);
}

static void resize(struct moat_proc *pr)
{
	struct winsize ws;
	int src = isatty(STDIN_FILENO) ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
	if (src >= 0 && ioctl(src, TIOCGWINSZ, &ws) == 0)
		moat_proc_resize(pr, ws.ws_row, ws.ws_col);
}

static void on_signal(int sigfd, struct moat_proc *pr)
{
	struct signalfd_siginfo si;
	while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
		int sig = (int)si.ssi_signo;
		if (sig == SIGWINCH) {
			resize(pr);
			continue;
		}
		if (sig == SIGTERM)
			moat_proc_terminate(pr); /* every process; SIGKILL after the grace */
		else if (sig == SIGINT || sig == SIGHUP || sig == SIGQUIT)
			moat_proc_signal(pr, sig);
	}
}

/*
 * The caller's terminal into raw mode without inventing a byte. In canonical
 * mode the line discipline keeps typed-ahead input as lines, and a VEOF
 * (^D) that arrived there -- script(1) sends one when its own stdin ends --
 * as an end-of-line marker stored as a NUL; switching to non-canonical mode
 * makes that marker readable as a real NUL byte (the issue's
 * `script -qc "moat run -- echo hi" </dev/null | od -c` showed "^@" echoed
 * by the sandbox's terminal). So what is complete in the canonical buffer is
 * read first, still in canonical mode (poll says readable only for a whole
 * line or a marker; a marker reads as 0 bytes), and handed to the command's
 * terminal as it was typed: the line's bytes, and ^D for a marker. A partial
 * line stays and is read raw, which is exact. Bounded: 64 reads, 64 KiB.
 * Left: a ^D that arrives between the last poll and tcsetattr (microseconds
 * instead of the whole start-up).
 */
bool moat_tty_enter_raw(int in, int pty_fd, const struct termios *saved)
{
	struct termios t = *saved;
#ifdef MOAT_TESTING
	/* test build only: the old order, for the test's positive control */
	const char *gate = getenv("MOAT_TEST_LAYERS"), *old = getenv("MOAT_TEST_PTY_OLD_ORDER");
	bool drain = !(gate && streq(gate, "1") && old && streq(old, "1"));
#else
	bool drain = true;
#endif
	size_t total = 0;
	for (int i = 0; drain && (saved->c_lflag & ICANON) && i < 64 && total < 65536; i++) {
		char buf[4096];
		struct pollfd pf = {.fd = in, .events = POLLIN};
		if (poll(&pf, 1, 0) != 1 || !(pf.revents & POLLIN))
			break;
		ssize_t n = read(in, buf, sizeof(buf));
		if (n < 0)
			break;
		if (n == 0) {
			buf[0] = 4; /* what the relay sends at the end of stdin */
			n = 1;
		}
		if (moat_write_all(pty_fd, buf, (size_t)n) < 0)
			break;
		total += (size_t)n;
	}
	cfmakeraw(&t);
	return tcsetattr(in, TCSADRAIN, &t) == 0;
}

int moat_run(const struct moat_policy *p, char *const argv[], struct moat_status *ret_status,
	     struct moat_error *ret_err)
{
	struct moat_sandbox *sbx = NULL;
	struct moat_proc *pr = NULL;
	int placeholder[3];
	sigset_t mask, oldmask;
	struct termios saved;
	bool raw = false;
	int k;
	uint64_t t0 = moat_now_us();

	memset(ret_status, 0, sizeof(*ret_status));
	ret_status->reason = MOAT_REASON_SETUP_FAILED;
	ret_status->exit_code = MOAT_EXIT_SETUP;
	if (!argv || !argv[0] || !argv[0][0])
		return moat_error_set(ret_err, "usage", EINVAL, "no command given");
	/* before anything is opened: no fd of moat may land on a closed 0..2 */
	moat_stdio_claim(placeholder);

	/* Terminal: the command never gets the host's terminal, but one of the
	 * sandbox's own for the streams that are terminals here. */
	unsigned tty_mask = 0;
	for (int i = 0; i < 3; i++)
		if (isatty(i))
			tty_mask |= 1u << i;
	if (p->tty == MOAT_TTY_ALWAYS)
		tty_mask = 7;
	else if (p->tty != MOAT_TTY_AUTO && tty_mask)
		return moat_error_set(
			ret_err, "tty", ENOTTY,
			"a standard stream is a terminal and --no-tty was given: redirect it "
			"(the sandbox never receives the host's terminal)");

	/* Signals through a signalfd. SIGPIPE is blocked too (not read from the
	 * signalfd): a write to a sandbox that died gives EPIPE; pending ones
	 * are dropped at the end. */
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	sigaddset(&mask, SIGPIPE);
	sigaddset(&mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &mask, &oldmask);
	if (sigfd < 0) {
		k = moat_error_set(ret_err, "setup", errno, "cannot create event fds: %s",
				   strerror(errno));
		goto out;
	}

	if ((k = moat_sandbox_create_for(p, argv, &sbx, ret_status, ret_err)) < 0)
		goto out;
	struct moat_run *r = &sbx->r;
	memcpy(ret_status->run_id, r->run_id, sizeof(ret_status->run_id));

	struct moat_exec x = {.argv = argv, .tty_mask = tty_mask};
	for (int i = 0; i < 3; i++)
		x.fd[i] = placeholder[i] >= 0 ? -1 : i;
	int exec_stage = 0, exec_errno = 0;
	k = moat_sandbox_exec_for(sbx, &x, true, &pr, ret_err, &exec_stage, &exec_errno);
	if (k < 0) {
		/* nothing ran: as a failed setup (no exit record), with the
		 * shell's codes for a command that is missing or not executable */
		*ret_status = *r->st;
		if (exec_stage == MOAT_STAGE_EXEC) {
			bool nf = exec_errno == ENOENT;
			ret_status->reason = nf ? MOAT_REASON_NOT_FOUND : MOAT_REASON_CANNOT_EXEC;
			ret_status->exit_code = nf ? MOAT_EXIT_NOT_FOUND : MOAT_EXIT_CANNOT_EXEC;
		} else {
			ret_status->reason = MOAT_REASON_SETUP_FAILED;
			ret_status->exit_code = MOAT_EXIT_SETUP;
		}
		moat_sandbox_abort(sbx);
		ret_status->wall_us = moat_now_us() - t0;
		goto out;
	}
	if (pr->pty_fd >= 0 && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0)
		raw = moat_tty_enter_raw(STDIN_FILENO, pr->pty_fd, &saved);

	/* until the command exits */
	while (!pr->exited) {
		struct pollfd pf[2] = {{.fd = moat_sandbox_fd(sbx), .events = POLLIN},
				       {.fd = sigfd, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[1].revents)
			on_signal(sigfd, pr);
		if (pf[0].revents)
			(void)moat_sandbox_poll(r, 0);
	}
	/* every process of the sandbox ends with the command: the init kills
	 * and reaps them (init_serve.c, end_all), so that their CPU time is
	 * counted below; then its last output is relayed */
	if (r->pidfd >= 0 && !r->gv && !r->vm) { /* the namespace init (gVisor, vm: their own) */
		struct pollfd pf = {.fd = r->pidfd, .events = POLLIN};
		uint64_t until = moat_now_us() + MOAT_INIT_KILL_MS * 1000u;
		for (uint64_t now = moat_now_us(); now < until; now = moat_now_us())
			if (poll(&pf, 1, (int)((until - now) / 1000u) + 1) != -1 || errno != EINTR)
				break;
	}
	moat_sandbox_kill(sbx, sigfd);
	if (raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	raw = false;

	struct moat_proc_status ps;
	moat_proc_status(pr, &ps);
	r->st->reason = ps.reason;
	r->st->exit_code = ps.exit_code;
	r->st->status = ps.status;
	r->st->signal = ps.signal;
	memcpy(r->st->stdio_error, ps.stdio_error, sizeof(r->st->stdio_error));
	/* CPU time: what the init's wait4 of the command counted (the command
	 * and what it waited for), or this process's children's usage when
	 * larger: the init and every process it reaped, orphans and those
	 * killed at the end (the sandbox's processes, plus moat's helpers) */
	r->st->cpu_user_us = ps.cpu_user_us;
	r->st->cpu_sys_us = ps.cpu_sys_us;
	struct rusage ru;
	if (getrusage(RUSAGE_CHILDREN, &ru) == 0) {
		uint64_t u =
			(uint64_t)ru.ru_utime.tv_sec * 1000000u + (uint64_t)ru.ru_utime.tv_usec;
		uint64_t sy =
			(uint64_t)ru.ru_stime.tv_sec * 1000000u + (uint64_t)ru.ru_stime.tv_usec;
		if (u + sy > ps.cpu_user_us + ps.cpu_sys_us) {
			r->st->cpu_user_us = u;
			r->st->cpu_sys_us = sy;
		}
		r->st->mem_peak = (uint64_t)ru.ru_maxrss * 1024u;
	}
	r->err = ret_err ? ret_err : &r->errbuf;
	k = moat_sandbox_finish(sbx, 0, ret_status);
	ret_status->wall_us = moat_now_us() - t0;
out:
	if (raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	safe_close(sigfd);
	restore_mask(&oldmask);
	return k;
}
