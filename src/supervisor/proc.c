/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The processes of a ready sandbox, supervisor side: exec (a request on the
 * control channel, ctl.h, with the process's argv and environment in a sealed
 * memfd and its standard streams as fds), the exec's outcome, the terminal
 * and stream relays, the per-process time limit, signals, exit and drain.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <linux/capability.h>
#include <termios.h>
#include <unistd.h>

#include "audit/audit.h"
#include "policy/errors.h"
#include "audit/observe.h"
#include "supervisor/run.h"
#include "supervisor/stdio_relay.h"
#include "supervisor/supervise.h"
#include "shared/fdpass.h"
#include "shared/io.h"
#include "shared/macro.h"

#define MAX_ARGS 65536
#define BLOB_MAX (256u << 20)

int moat_ctl_send(struct moat_run *r, const struct moat_ctl_req *rq, const int *fds, unsigned nfds)
{
	return moat_msg_send(r->sb.sock_sup, rq, sizeof(*rq), fds, nfds);
}

/* ---- the request ---------------------------------------------------------- */

static bool env_overridden(char *const *env, const char *var)
{
	const char *eq = strchr(var, '=');
	size_t n = eq ? (size_t)(eq - var) : strlen(var);
	for (unsigned i = 0; env && env[i]; i++)
		if (strncmp(env[i], var, n) == 0 && env[i][n] == '=')
			return true;
	return false;
}

struct blob {
	char *buf;
	size_t len, cap;
};

static int blob_put(struct blob *b, const char *s)
{
	size_t n = strlen(s) + 1;
	if (b->len + n > BLOB_MAX)
		return -E2BIG;
	if (b->len + n > b->cap) {
		size_t nc = MAX(b->cap * 2, b->len + n + 4096);
		char *nb = realloc(b->buf, nc);
		if (!nb)
			return -ENOMEM;
		b->buf = nb;
		b->cap = nc;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
	return 0;
}

/* cwd, argv, the sandbox's environment with x->env over it: built in memory,
 * written in one go, sealed. */
static int make_blob(struct moat_run *r, const struct moat_exec *x, int *ret_fd)
{
	struct moat_ctl_blob h = {.magic = MOAT_CTL_BLOB_MAGIC};
	struct blob b = {.buf = calloc(1, 4096), .len = sizeof(h), .cap = 4096};
	int k;
	if (!b.buf)
		return -ENOMEM;
	if ((k = blob_put(&b, x->cwd ? x->cwd : r->plan->cwd)) < 0)
		goto out;
	for (; x->argv[h.argc]; h.argc++) {
		if (h.argc >= MAX_ARGS) {
			k = -E2BIG;
			goto out;
		}
		if ((k = blob_put(&b, x->argv[h.argc])) < 0)
			goto out;
	}
	for (unsigned i = 0; i < r->n_envp; i++) {
		if (env_overridden(x->env, r->envp[i]))
			continue;
		if ((k = blob_put(&b, r->envp[i])) < 0)
			goto out;
		h.envc++;
	}
	for (unsigned i = 0; x->env && x->env[i]; i++) {
		if (!strchr(x->env[i], '=') || x->env[i][0] == '=') {
			k = -EINVAL;
			goto out;
		}
		if ((k = blob_put(&b, x->env[i])) < 0)
			goto out;
		h.envc++;
	}
	h.len = (uint32_t)(b.len - sizeof(h));
	memcpy(b.buf, &h, sizeof(h));
	int fd = memfd_create("moat-exec", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0) {
		k = negerrno();
		goto out;
	}
	if ((k = moat_write_all(fd, b.buf, b.len)) < 0) {
		close(fd);
		goto out;
	}
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) < 0) {
		k = negerrno();
		close(fd);
		goto out;
	}
	*ret_fd = fd;
	k = 0;
out:
	free(b.buf);
	return k;
}

/* A new terminal in the sandbox's own devpts instance. In root mode it is
 * made as the sandbox's host uid, so that the sandbox owns its terminal. */
static int open_pty(struct moat_run *r, int *ret_master, int *ret_slave)
{
	char path[32];
	if (r->ptmx_fd < 0)
		return -ENOTTY;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", r->ptmx_fd);
	uid_t ou = 0;
	gid_t og = 0;
	if (r->sb.root_mode) {
		og = (gid_t)setfsgid(r->sb.host_gid);
		ou = (uid_t)setfsuid(r->sb.host_uid);
	}
	int m = open(path, O_RDWR | O_NOCTTY | O_CLOEXEC);
	int e = errno;
	if (r->sb.root_mode) {
		setfsuid(ou);
		setfsgid(og);
	}
	if (m < 0)
		return -e;
	int s = -1;
	if (unlockpt(m) < 0 || (s = ioctl(m, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC)) < 0) {
		e = errno;
		close(m);
		return -e;
	}
	*ret_master = m;
	*ret_slave = s;
	return 0;
}

static void tty_winsize(struct moat_proc *pr)
{
	struct winsize ws;
	int src = pr->tty_in >= 0 && isatty(pr->tty_in)	  ? pr->tty_in
		: pr->tty_out >= 0 && isatty(pr->tty_out) ? pr->tty_out
							  : -1;
	if (pr->pty_fd >= 0 && src >= 0 && ioctl(src, TIOCGWINSZ, &ws) == 0)
		ioctl(pr->pty_fd, TIOCSWINSZ, &ws);
}

static int ep_add(int epfd, int fd, uint32_t events, uint32_t tag)
{
	struct epoll_event ev = {.events = events, .data.u32 = tag};
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? negerrno() : 0;
}

static void arm_timer(int tfd, uint64_t ms)
{
	struct itimerspec its = {.it_value = {.tv_sec = (time_t)(ms / 1000),
					      .tv_nsec = (long)(ms % 1000) * 1000000L}};
	if (ms == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime(tfd, 0, &its, NULL);
}

void moat_proc_free(struct moat_proc *pr)
{
	if (!pr)
		return;
	struct moat_run *r = pr->r;
	moat_stdio_free(pr);
	if (pr->timerfd >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->timerfd, NULL);
	safe_close(pr->timerfd);
	if (pr->pty_fd >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->pty_fd, NULL);
	if (pr->tty_in >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->tty_in, NULL);
	if (pr->tty_out >= 0)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->tty_out, NULL);
	safe_close(pr->pty_fd);
	safe_close(pr->tty_in);
	safe_close(pr->tty_out);
	safe_close(pr->rep_fd); /* freed while starting */
	for (unsigned i = 0; pr->argv_copy && pr->argv_copy[i]; i++)
		free(pr->argv_copy[i]);
	free(pr->argv_copy);
	free(pr->cwd_copy);
	if (r->procs[pr->slot] == pr)
		r->procs[pr->slot] = NULL;
	free(pr);
}

/* How long a new process may take from the request to its command. A
 * process of the sandbox can stop a new one (SIGSTOP, same uid) before its
 * execve; the supervisor (moat serve's one back holds every tenant's
 * sandboxes) must not wait for that forever. Generous: a loaded machine or
 * a sanitizer build is far below it. */
#define EXEC_START_MS 15000

static unsigned exec_start_ms(void)
{
#ifdef MOAT_TESTING
	/* test build only: a shorter bound for serve.sh's control */
	const char *gate = getenv("MOAT_TEST_LAYERS"), *v = getenv("MOAT_TEST_EXEC_START_MS");
	if (gate && streq(gate, "1") && v && atoi(v) >= 1000 && atoi(v) <= EXEC_START_MS)
		return (unsigned)atoi(v);
#endif
	return EXEC_START_MS;
}

static int remaining_ms(uint64_t deadline_us)
{
	uint64_t now = moat_now_us();
	return now >= deadline_us ? 0 : (int)((deadline_us - now + 999) / 1000);
}

static bool outputs_idle(struct moat_proc *pr);

/* Whether this process may read the memory of a process of the init's that
 * is not dumpable: CAP_SYS_PTRACE in its own user namespace, where the
 * init's memory belongs (the init is a clone of it that never exec'd). */
static bool may_read_undumpable(void)
{
	struct __user_cap_header_struct hd = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2] = {{0}};
	if (syscall(SYS_capget, &hd, d) < 0)
		return false;
	return d[CAP_SYS_PTRACE / 32].effective & (1u << (CAP_SYS_PTRACE % 32));
}

static void strv_free(char **v)
{
	for (unsigned i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static char **strv_copy(char *const *v)
{
	size_t n = 0;
	while (v[n])
		n++;
	char **c = calloc(n + 1, sizeof(*c));
	for (size_t i = 0; c && i < n; i++)
		if (!(c[i] = strdup(v[i]))) {
			strv_free(c);
			return NULL;
		}
	return c;
}

static void start_clear(struct moat_proc *pr)
{
	pr->starting = false;
	pr->rep_fd = safe_close(pr->rep_fd);
	strv_free(pr->argv_copy);
	pr->argv_copy = NULL;
	free(pr->cwd_copy);
	pr->cwd_copy = NULL;
}

/* A start that failed: nothing of it is the caller's any more. One that
 * runs (started, not at its command) is killed first; one that exits on
 * its own is forgotten when its EXITED record comes. */
static int start_failed(struct moat_proc *pr, int k, bool kill_it)
{
	start_clear(pr);
	if (pr->exited) {
		moat_proc_free(pr);
		return k;
	}
	if (kill_it && pr->started)
		moat_proc_signal(pr, SIGKILL);
	moat_stdio_free(pr);
	pr->released = true;
	return k;
}

int moat_sandbox_exec(struct moat_sandbox *sbx, const struct moat_exec *x, struct moat_proc **ret,
		      struct moat_error *err)
{
	return moat_sandbox_exec_for(sbx, x, false, ret, err, NULL, NULL);
}

int moat_sandbox_exec_start_async(struct moat_sandbox *sbx, const struct moat_exec *x,
				  struct moat_proc **ret, struct moat_error *err)
{
	return moat_sandbox_exec_start(sbx, x, false, ret, err);
}

int moat_sandbox_exec_start(struct moat_sandbox *sbx, const struct moat_exec *x, bool main_proc,
			    struct moat_proc **ret, struct moat_error *err)
{
	struct moat_run *r = &sbx->r;
	struct moat_error *saved_err = r->err;
	int k;
	*ret = NULL;
	if (!x || !x->argv || !x->argv[0] || !x->argv[0][0])
		return moat_error_set(err, "usage", EINVAL, "no command given");
	if (!r->ready || r->init_exited || r->killed)
		return moat_error_set(err, "exec", ESRCH, "the sandbox is not running");
	if (x->tty_mask & ~7u)
		return moat_error_set(err, "usage", EINVAL, "tty_mask: bits 0..2 only");
	unsigned slot = MOAT_MAX_PROCS;
	for (unsigned i = 0; i < MOAT_MAX_PROCS && slot == MOAT_MAX_PROCS; i++)
		if (!r->procs[i])
			slot = i;
	if (slot == MOAT_MAX_PROCS)
		return moat_error_set(err, "exec", EAGAIN,
				      "%d processes already run in the sandbox", MOAT_MAX_PROCS);
	struct moat_proc *pr = calloc(1, sizeof(*pr));
	if (!pr)
		return -ENOMEM;
	pr->r = r;
	pr->slot = slot;
	pr->id = ++r->next_id;
	pr->timerfd = pr->pty_fd = pr->tty_in = pr->tty_out = pr->rep_fd = -1;
	pr->tty_mask = x->tty_mask;
	pr->main = main_proc;
	pr->timeout_ms = x->timeout_ms ? x->timeout_ms : r->p->timeout_ms;
	pr->grace_ms = r->p->kill_grace_ms;
	for (int i = 0; i < 3; i++)
		pr->caller_fd[i] = x->fd[i];
	moat_stdio_init(pr);
	r->procs[slot] = pr;
	pr->start_us = moat_now_us();

	_cleanup_close_ int blob = -1, rep_w = -1, slave = -1;
	int p[2];
	r->err = err;
	if (!(pr->argv_copy = strv_copy(x->argv)) ||
	    !(pr->cwd_copy = strdup(x->cwd ? x->cwd : r->plan->cwd))) {
		k = moat_error_set(err, "exec", ENOMEM, "out of memory");
		goto fail;
	}
	if ((k = make_blob(r, x, &blob)) < 0) {
		k = moat_error_set(err, "exec", -k, "cannot pass the command to the sandbox: %s",
				   strerror(-k));
		goto fail;
	}
	if (pipe2(p, O_CLOEXEC) < 0) {
		k = moat_error_set(err, "exec", errno, "pipe: %s", strerror(errno));
		goto fail;
	}
	pr->rep_fd = p[0];
	rep_w = p[1];
	if ((k = moat_stdio_prepare(pr)) < 0)
		goto fail;
	if (pr->tty_mask) {
		if ((k = open_pty(r, &pr->pty_fd, &slave)) < 0) {
			k = moat_error_set(err, "pty", -k,
					   "cannot open a terminal in the sandbox: %s",
					   strerror(-k));
			goto fail;
		}
		pr->tty_in = (pr->tty_mask & 1) && x->fd[0] >= 0
			? fcntl(x->fd[0], F_DUPFD_CLOEXEC, 3)
			: -1;
		int out = (pr->tty_mask & 2) ? x->fd[1] : x->fd[2];
		pr->tty_out = out >= 0 ? fcntl(out, F_DUPFD_CLOEXEC, 3) : -1;
		tty_winsize(pr);
	}
	if ((pr->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0) {
		k = moat_error_set(err, "exec", errno, "timerfd: %s", strerror(errno));
		goto fail;
	}

	struct moat_ctl_req rq = {
		.type = MOAT_CTL_EXEC, .id = pr->id, .flags = main_proc ? MOAT_CTL_LAST : 0};
	if (may_read_undumpable())
		rq.flags |= MOAT_CTL_SHARED_MM;
	int fds[5] = {blob, rep_w};
	unsigned nfds = 2;
	for (int i = 0; i < 3; i++) {
		int fd = (pr->tty_mask & (1u << i)) ? slave : pr->std_fd[i];
		if (fd < 0)
			continue;
		if (pr->tty_mask & (1u << i))
			rq.flags |= MOAT_CTL_TTY(i);
		if (i == 2 && fd == pr->std_fd[1] && !(pr->tty_mask & 6u)) {
			rq.flags |= MOAT_CTL_ERR_IS_OUT;
			continue;
		}
		rq.flags |= MOAT_CTL_HAS_FD(i);
		fds[nfds++] = fd;
	}
	if ((k = moat_ctl_send(r, &rq, fds, nfds)) < 0) {
		k = moat_error_set(err, "exec", -k, "cannot reach the sandbox: %s", strerror(-k));
		goto fail;
	}
	moat_stdio_sent(pr);
	pr->starting = true;
	pr->start_deadline_us = moat_now_us() + exec_start_ms() * 1000ull;
	r->err = saved_err;
	*ret = pr;
	return 0;
fail:
	start_clear(pr);
	moat_proc_free(pr);
	r->err = saved_err;
	return k;
}

/* The exec's outcome, read: EOF when the new process executed its command
 * (the report fd is close-on-exec), a record when it could not. */
static int start_outcome(struct moat_proc *pr, struct moat_error *err, int *ret_stage)
{
	struct moat_setup_error e;
	ssize_t n;
	while ((n = read(pr->rep_fd, &e, sizeof(e))) < 0 && errno == EINTR)
		;
	if (n == 0)
		return 0;
	if (n != (ssize_t)sizeof(e))
		return moat_error_set(err, "exec", EPROTO, "the new process vanished before exec");
	e.detail[sizeof(e.detail) - 1] = '\0';
	pr->exec_errno = e.err ? e.err : ENOEXEC;
	*ret_stage = e.stage;
	snprintf(pr->exec_detail, sizeof(pr->exec_detail), "%s", e.detail);
	if (e.stage == MOAT_STAGE_EXEC)
		return moat_error_set(err, "exec", pr->exec_errno, "cannot execute %s: %s",
				      e.detail, strerror(pr->exec_errno));
	return moat_error_set(err, moat_setup_stage_name(e.stage), pr->exec_errno,
			      "%s step failed: %s: %s", moat_setup_stage_name(e.stage), e.detail,
			      strerror(pr->exec_errno));
}

/* It executed its command: its relays and limits are set up, its start
 * recorded. */
static int start_done(struct moat_proc *pr, struct moat_error *err)
{
	struct moat_run *r = pr->r;
	int k;
	if (pr->timeout_ms)
		arm_timer(pr->timerfd, pr->timeout_ms);
	uint32_t base = MOAT_TAG_PROC(pr->slot);
	if ((k = ep_add(r->epfd, pr->timerfd, EPOLLIN, base + MOAT_PT_TIMER)) < 0)
		goto fail;
	if (pr->pty_fd >= 0) {
		if ((k = ep_add(r->epfd, pr->pty_fd, EPOLLIN, base + MOAT_PT_PTY)) < 0)
			goto fail;
		if (pr->tty_in >= 0 &&
		    ep_add(r->epfd, pr->tty_in, EPOLLIN, base + MOAT_PT_TTY_IN) < 0)
			pr->tty_in = safe_close(pr->tty_in); /* e.g. /dev/null: nothing to relay */
	}
	moat_stdio_register(pr, r->epfd, base + MOAT_PT_STDIO);
	/* It may have exited already (its EXITED record came while the exec's
	 * outcome was awaited: a short command, or a vforked one, whose
	 * STARTED comes after its execve) and its output may be at its end:
	 * the drain then ends on the next dispatch, not after the one-second
	 * deadline nothing else would cut short. */
	if (pr->exited && !pr->main && outputs_idle(pr))
		arm_timer(pr->timerfd, 0);
	MOAT_AUDIT(moat_run_audit(r), MOAT_EV_PROCESS, MOAT_F_STR("event", "start"),
		   MOAT_F_UINT("id", pr->id), MOAT_F_INT("pid", pr->pid),
		   MOAT_F_STRV("argv", (const char *const *)pr->argv_copy),
		   MOAT_F_STR("cwd", pr->cwd_copy), MOAT_F_UINT("tty", pr->tty_mask),
		   MOAT_F_UINT("timeout_ms", pr->timeout_ms));
	start_clear(pr);
	return 1;
fail:
	k = moat_error_set(err, "exec", -k, "cannot watch the process: %s", strerror(-k));
	moat_proc_signal(pr, SIGKILL);
	return start_failed(pr, k, false);
}

/* One step of a start, without blocking. Two phases, each bounded at
 * EXEC_START_MS: the init's STARTED (through the sandbox's dispatch), then
 * the outcome on the report pipe. A process of the sandbox can stop a new
 * one (SIGSTOP, same uid) before its execve: past the bound, a forked one
 * is killed by the init (which still answers: it is not the one waiting)
 * and the exec fails; a vforked one holds the init itself, which can serve
 * nothing else: the sandbox is ended (its death ends the start). */
static int start_poll(struct moat_proc *pr, struct moat_error *err, int *ret_stage, int *ret_errno)
{
	struct moat_run *r = pr->r;
	if (!pr->starting)
		return 1;
	if (!pr->started) {
		if (pr->exited || r->init_exited) {
			if (pr->start_killed)
				return start_failed(
					pr,
					moat_error_set(err, "exec", ETIMEDOUT,
						       "the sandbox did not start the process "
						       "within %d s (stopped by a process of the "
						       "sandbox?): the sandbox was ended",
						       exec_start_ms() / 1000),
					true);
			if (pr->exec_errno)
				return start_failed(
					pr,
					moat_error_set(err, "exec", pr->exec_errno,
						       "the sandbox refused to start it: %s",
						       strerror(pr->exec_errno)),
					true);
			return start_failed(
				pr, moat_error_set(err, "exec", ESRCH, "the sandbox is gone"),
				true);
		}
		if (!pr->start_killed && moat_now_us() >= pr->start_deadline_us) {
			pr->start_killed = true;
			r->backend->kill(r);
		}
		return 0;
	}
	if (!pr->start_phase2) {
		pr->start_phase2 = true;
		pr->start_killed = false;
		pr->start_deadline_us = moat_now_us() + exec_start_ms() * 1000ull;
	}
	struct pollfd pf = {.fd = pr->rep_fd, .events = POLLIN};
	if (poll(&pf, 1, 0) == 0) {
		if (!pr->start_killed && moat_now_us() >= pr->start_deadline_us) {
			/* it dies by the init's hand; its end closes the pipe */
			pr->start_killed = true;
			if (moat_proc_signal(pr, SIGKILL) < 0) {
				r->backend->kill(r);
				return start_failed(
					pr,
					moat_error_set(err, "exec", ETIMEDOUT,
						       "the new process did not reach its command "
						       "within %d s: the sandbox was ended",
						       exec_start_ms() / 1000),
					false);
			}
		}
		return 0;
	}
	if (pr->start_killed)
		return start_failed(pr,
				    moat_error_set(err, "exec", ETIMEDOUT,
						   "the new process did not reach its command "
						   "within %d s (stopped by a process of the "
						   "sandbox?): it was killed",
						   exec_start_ms() / 1000),
				    false);
	int stage = 0, k = start_outcome(pr, err, &stage);
	if (k < 0) {
		if (ret_stage)
			*ret_stage = stage;
		if (ret_errno)
			*ret_errno = pr->exec_errno;
		/* it exits on its own: forget it when its EXITED record comes */
		return start_failed(pr, k, false);
	}
	return start_done(pr, err);
}

int moat_proc_start_poll(struct moat_proc *pr, struct moat_error *err)
{
	struct moat_run *r = pr->r; /* pr may be gone after: r is not */
	struct moat_error *saved_err = r->err;
	r->err = err;
	int k = start_poll(pr, err, NULL, NULL);
	r->err = saved_err;
	return k;
}

int moat_proc_start_fd(const struct moat_proc *pr)
{
	return pr->starting && pr->started ? pr->rep_fd : -1;
}

int moat_proc_start_due_ms(const struct moat_proc *pr)
{
	if (!pr->starting || pr->start_killed)
		return -1;
	return remaining_ms(pr->start_deadline_us);
}

/* moat_sandbox_exec(); when the new process could not exec its command,
 * *ret_stage and *ret_errno say at which step and why (else 0). The start,
 * then its completion awaited here: the init's records and the exec
 * recorder are served meanwhile (nothing else of the caller's). */
int moat_sandbox_exec_for(struct moat_sandbox *sbx, const struct moat_exec *x, bool main_proc,
			  struct moat_proc **ret, struct moat_error *err, int *ret_stage,
			  int *ret_errno)
{
	struct moat_run *r = &sbx->r;
	struct moat_error *saved_err = r->err;
	struct moat_proc *pr = NULL;
	int k;
	if (ret)
		*ret = NULL;
	if ((k = moat_sandbox_exec_start(sbx, x, main_proc, &pr, err)) < 0)
		return k;
	r->err = err;
	while ((k = start_poll(pr, err, ret_stage, ret_errno)) == 0) {
		struct pollfd pf[3];
		unsigned n = 0;
		if (!pr->started) {
			pf[n++] = (struct pollfd){.fd = r->sb.sock_sup, .events = POLLIN};
			pf[n++] = (struct pollfd){.fd = r->pidfd, .events = POLLIN};
		} else {
			pf[n++] = (struct pollfd){.fd = pr->rep_fd, .events = POLLIN};
		}
		unsigned nf = n;
		if (r->notify_fd >= 0)
			pf[n++] = (struct pollfd){.fd = r->notify_fd, .events = POLLIN};
		int c = poll(pf, n, moat_proc_start_due_ms(pr));
		if (c < 0 && errno == EINTR)
			continue;
		if (c < 0) {
			k = start_failed(
				pr, moat_error_set(err, "exec", errno, "poll: %s", strerror(errno)),
				true);
			break;
		}
		if (nf < n && (pf[nf].revents & POLLIN))
			moat_supervise_pending(r);
		if (nf == 2 && pf[0].revents)
			moat_proc_on_ctl(r);
		else if (nf == 2 && pf[1].revents)
			moat_proc_init_died(r);
	}
	r->err = saved_err;
	if (k < 0)
		return k;
	if (ret)
		*ret = pr;
	return 0;
}
/* ---- events --------------------------------------------------------------- */

static struct moat_proc *by_id(struct moat_run *r, uint32_t id)
{
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
		if (r->procs[i] && r->procs[i]->id == id)
			return r->procs[i];
	return NULL;
}

static void arm_drain_deadline(struct moat_proc *pr);

static void fill(const struct moat_proc *pr, struct moat_proc_status *st);

static void exited(struct moat_proc *pr, int status)
{
	pr->exited = true;
	pr->wait_status = status;
	pr->end_us = moat_now_us();
	if (pr->started && !pr->exec_errno) {
		struct moat_proc_status st;
		fill(pr, &st);
		MOAT_AUDIT(moat_run_audit(pr->r), MOAT_EV_PROCESS, MOAT_F_STR("event", "exit"),
			   MOAT_F_UINT("id", pr->id), MOAT_F_INT("pid", pr->pid),
			   MOAT_F_STR("reason", moat_reason_name(st.reason)),
			   MOAT_F_INT("exit_code", st.exit_code), MOAT_F_INT("status", st.status),
			   MOAT_F_INT("signal", st.signal), MOAT_F_UINT("wall_us", st.wall_us),
			   MOAT_F_UINT("cpu_user_us", st.cpu_user_us),
			   MOAT_F_UINT("cpu_sys_us", st.cpu_sys_us));
	}
	if (pr->released) {
		moat_proc_free(pr);
		return;
	}
	arm_drain_deadline(pr);
}

/* After the exit, driven by dispatch: the output is relayed until EOF, or
 * for one more second if another process of the sandbox holds it open (as
 * moat_proc_drain() waits; after a timeout the grace timer ends it). */
static void arm_drain_deadline(struct moat_proc *pr)
{
	if (pr->timerfd >= 0 && !pr->timed_out && !pr->main)
		arm_timer(pr->timerfd, 1000);
}

static bool outputs_idle(struct moat_proc *pr)
{
	for (int i = 1; i < 3; i++)
		if (pr->io.s[i].mode != MOAT_RELAY_NONE && !pr->io.s[i].done)
			return false;
	return pr->pty_fd < 0 || pr->pty_done || pr->out_broken;
}

static void finalize(struct moat_proc *pr)
{
	if (pr->drained)
		return;
	moat_stdio_stdin_finish(pr);
	moat_stdio_report(pr);
	pr->drained = true;
}

/* After a pass of the event loop: processes whose output has ended. */
void moat_proc_settle(struct moat_run *r)
{
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
		struct moat_proc *pr = r->procs[i];
		if (pr && pr->exited && !pr->drained && !pr->main && outputs_idle(pr))
			finalize(pr);
	}
}

void moat_proc_on_ctl(struct moat_run *r)
{
	for (;;) {
		struct moat_ctl_ev ev;
		ssize_t n = recv(r->sb.sock_sup, &ev, sizeof(ev), MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return;
		if (n != (ssize_t)sizeof(ev)) {
			/* EOF (the init is gone) or garbage: the pidfd will say */
			if (r->epfd >= 0)
				epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.sock_sup, NULL);
			return;
		}
		struct moat_proc *pr = by_id(r, ev.id);
		if (!pr)
			continue;
		switch (ev.type) {
		case MOAT_CTL_STARTED:
			pr->started = true;
			pr->pid = ev.pid;
			/* abandoned while it started (moat_proc_release()) */
			if (pr->released && !pr->exited)
				moat_proc_signal(pr, SIGKILL);
			break;
		case MOAT_CTL_REFUSED:
			pr->exec_errno = ev.err ? ev.err : EIO;
			pr->exited = true; /* never started */
			break;
		case MOAT_CTL_EXITED:
			pr->utime_us = ev.utime_us;
			pr->stime_us = ev.stime_us;
			pr->maxrss_kb = ev.maxrss_kb;
			exited(pr, ev.status);
			break;
		}
	}
}

/* The init died: every process of the sandbox is gone with it. */
void moat_proc_init_died(struct moat_run *r)
{
	moat_proc_on_ctl(r); /* what it said before */
	r->init_exited = true;
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
		struct moat_proc *pr = r->procs[i];
		if (pr && !pr->exited)
			exited(pr, SIGKILL); /* a wait status: killed by SIGKILL */
	}
}

static void on_timer(struct moat_proc *pr)
{
	struct moat_run *r = pr->r;
	uint64_t x;
	if (read(pr->timerfd, &x, sizeof(x)) != sizeof(x))
		return;
	if (pr->exited) {
		if (!pr->main)
			finalize(pr); /* the drain's deadline, or the grace after a timeout */
		return;
	}
	struct moat_ctl_req rq = {.type = pr->main ? MOAT_CTL_SIGNAL_ALL : MOAT_CTL_SIGNAL,
				  .id = pr->id,
				  .flags = MOAT_CTL_GROUP};
	if (!pr->grace_armed) {
		/* the wall-clock limit: SIGTERM, SIGKILL after the grace */
		pr->timed_out = true;
		pr->grace_armed = true;
		moat_supervise_event_limit(r, "timeout");
		rq.sig = SIGTERM;
		moat_ctl_send(r, &rq, NULL, 0);
		arm_timer(pr->timerfd, pr->grace_ms);
	} else if (pr->main && !pr->kill_sent) {
		/* SIGKILL by the init, which reaps each process with wait4 and
		 * reports the command's CPU time (init_serve.c, end_all); the
		 * init itself only if it has not ended MOAT_INIT_KILL_MS later */
		rq.sig = SIGKILL;
		moat_ctl_send(r, &rq, NULL, 0);
		pr->kill_sent = true;
		arm_timer(pr->timerfd, MOAT_INIT_KILL_MS);
	} else {
		rq.sig = SIGKILL;
		moat_ctl_send(r, &rq, NULL, 0);
		if (pr->main) {
			syscall(SYS_pidfd_send_signal, r->pidfd, SIGKILL, NULL, 0);
			moat_supervise_kill_all(r);
		}
	}
}

/* Copies what is readable from `from` to `to` (to < 0: discards it). Returns
 * bytes, 0 at EOF, -1 on a read error, -2 on a write error.
 * At most one page per call: after POLLOUT a pipe takes that without blocking. */
static ssize_t relay_once(int from, int to)
{
	char buf[4096];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n <= 0)
		return n < 0 && (errno == EAGAIN || errno == EINTR) ? 1 : n;
	if (to < 0)
		return n; /* discarded */
	for (ssize_t off = 0; off < n;) {
		ssize_t w = write(to, buf + off, (size_t)(n - off));
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			struct pollfd pfd = {.fd = to, .events = POLLOUT};
			poll(&pfd, 1, 1000);
			continue;
		}
		if (w <= 0)
			return -2; /* the writing side failed */
		off += w;
	}
	return n;
}

static void on_pty(struct moat_proc *pr)
{
	struct moat_run *r = pr->r;
	uint32_t base = MOAT_TAG_PROC(pr->slot);
	/* RT-069: a reader of moat's output that stalls must not block the
	 * supervisor (timeout, signals): stop reading the pty (the sandbox then
	 * blocks on its own terminal) until the output drains. Regular files
	 * never stall and cannot be polled (epoll_ctl fails): they are written
	 * directly. */
	struct pollfd out = {.fd = pr->tty_out, .events = POLLOUT};
	if (!pr->out_broken && pr->tty_out >= 0 && poll(&out, 1, 0) == 0 &&
	    ep_add(r->epfd, pr->tty_out, EPOLLOUT, base + MOAT_PT_TTY_OUT) == 0) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->pty_fd, NULL);
		return;
	}
	ssize_t k = relay_once(pr->pty_fd, pr->out_broken ? -1 : pr->tty_out);
	if (k == 0 || k == -1) {
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->pty_fd, NULL);
		pr->pty_done = true;
	} else if (k < 0) {
		/* the reader went away: keep draining the terminal (its output is
		 * lost), so the command neither blocks nor outlives its limits */
		pr->out_broken = true;
	}
}

void moat_proc_dispatch(struct moat_run *r, uint32_t tag)
{
	unsigned slot = (tag - MOAT_TAG_PROC_BASE) / MOAT_PT_N,
		 sub = (tag - MOAT_TAG_PROC_BASE) % MOAT_PT_N;
	struct moat_proc *pr = slot < MOAT_MAX_PROCS ? r->procs[slot] : NULL;
	if (!pr)
		return;
	switch (sub) {
	case MOAT_PT_TIMER:
		on_timer(pr);
		break;
	case MOAT_PT_PTY:
		on_pty(pr);
		break;
	case MOAT_PT_TTY_IN:
		if (relay_once(pr->tty_in, pr->pty_fd) <= 0) {
			epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->tty_in, NULL);
			pr->tty_in = safe_close(pr->tty_in);
			/* stdin ended: send EOF to the terminal's reader */
			char eof = 4;
			(void)!write(pr->pty_fd, &eof, 1);
		}
		break;
	case MOAT_PT_TTY_OUT:
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, pr->tty_out, NULL);
		if (!pr->pty_done)
			(void)ep_add(r->epfd, pr->pty_fd, EPOLLIN,
				     MOAT_TAG_PROC(slot) + MOAT_PT_PTY);
		break;
	default:
		if (sub >= MOAT_PT_STDIO && sub < MOAT_PT_STDIO + 3)
			moat_stdio_dispatch(pr, sub - MOAT_PT_STDIO);
	}
}

/* ---- the end of a process --------------------------------------------------- */

/* What the command wrote last is never lost: the pty until it ends (up to 2 s
 * for a slow reader), the relay pipes to EOF. The caller's reader sets the
 * pace, as it did for the command: moat waits for a slow reader, but after a
 * timeout one more second at most, and stop_fd (moat_run()'s signals) ends
 * the wait. A pipe that neither brings data nor EOF for a second is held open
 * by another process of the sandbox (or, after the sandbox is gone, outside
 * it): not waited for. */
void moat_proc_drain(struct moat_proc *pr, int stop_fd)
{
	if (pr->drained)
		return;
	if (pr->pty_fd >= 0 && !pr->pty_done && !pr->out_broken && pr->tty_out >= 0) {
		int fl = fcntl(pr->pty_fd, F_GETFL);
		fcntl(pr->pty_fd, F_SETFL, fl | O_NONBLOCK);
		for (int waits = 0; waits < 20;) {
			struct pollfd out = {.fd = pr->tty_out, .events = POLLOUT};
			if (poll(&out, 1, 100) == 0) {
				waits++;
				continue;
			}
			if (relay_once(pr->pty_fd, pr->tty_out) <= 1)
				break;
		}
	}
	moat_stdio_stdin_finish(pr);
	uint64_t cap_us = pr->timed_out ? moat_now_us() + 1000000u : 0;
	for (;;) {
		struct pollfd pfd[4];
		unsigned idx[2];
		unsigned n = moat_stdio_pending(pr, pfd, idx);
		if (n == 0)
			break;
		unsigned m = n;
		if (stop_fd >= 0)
			pfd[m++] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
		pfd[m++] = (struct pollfd){.fd = pr->timerfd, .events = POLLIN};
		int wait_ms = 1000;
		if (cap_us) {
			uint64_t now = moat_now_us();
			if (now >= cap_us)
				break;
			wait_ms = (int)MIN((cap_us - now) / 1000u + 1, 1000u);
		}
		int k = poll(pfd, m, wait_ms);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		if (k == 0) {
			if (moat_stdio_waiting_input_only(pr))
				break;
			continue;
		}
		if (pfd[m - 1].revents || (stop_fd >= 0 && pfd[n].revents))
			break; /* the time limit's grace, or a signal for moat_run() */
		for (unsigned i = 0; i < n; i++)
			if (pfd[i].revents)
				moat_stdio_dispatch(pr, idx[i]);
	}
	finalize(pr);
}

static void fill(const struct moat_proc *pr, struct moat_proc_status *st)
{
	memset(st, 0, sizeof(*st));
	int w = pr->wait_status;
	st->id = pr->id;
	st->pid = pr->pid;
	if (WIFEXITED(w)) {
		st->reason = MOAT_REASON_EXITED;
		st->status = WEXITSTATUS(w);
		st->exit_code = st->status;
	} else {
		st->reason = MOAT_REASON_SIGNALED;
		st->signal = WIFSIGNALED(w) ? WTERMSIG(w) : SIGKILL;
		st->exit_code = 128 + st->signal;
	}
	if (pr->timed_out) {
		st->reason = MOAT_REASON_TIMEOUT;
		st->exit_code = MOAT_EXIT_TIMEOUT;
	}
	st->wall_us = (pr->end_us ? pr->end_us : moat_now_us()) - pr->start_us;
	st->cpu_user_us = pr->utime_us;
	st->cpu_sys_us = pr->stime_us;
	st->mem_peak = pr->maxrss_kb * 1024u;
	memcpy(st->stdio_error, pr->stdio_error, sizeof(st->stdio_error));
}

int moat_proc_done(const struct moat_proc *pr)
{
	return pr && pr->exited && pr->drained;
}

int moat_proc_status(const struct moat_proc *pr, struct moat_proc_status *ret)
{
	if (!moat_proc_done(pr))
		return -EBUSY;
	fill(pr, ret);
	return 0;
}

/* The sandbox's event loop, one pass: the init's pidfd, the control channel
 * and the processes' fds here, everything else the layers' (supervise.c). */
int moat_sandbox_poll(struct moat_run *r, int timeout_ms)
{
	struct epoll_event evs[16];
	int n = epoll_wait(r->epfd, evs, (int)ELEMENTSOF(evs), timeout_ms);
	if (n < 0)
		return negerrno();
	for (int i = 0; i < n; i++) {
		uint32_t tag = evs[i].data.u32;
		if (tag == MOAT_TAG_PIDFD) {
			epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->pidfd, NULL);
			moat_proc_init_died(r);
		} else if (tag == MOAT_TAG_CTL)
			moat_proc_on_ctl(r);
		else if (tag >= MOAT_TAG_PROC_BASE)
			moat_proc_dispatch(r, tag);
		else if (tag == MOAT_TAG_BACKEND) {
			if (r->backend->dispatch)
				r->backend->dispatch(r);
		} else
			moat_supervise_dispatch(r, tag, evs[i].events);
	}
	moat_proc_settle(r);
	return r->init_exited && !r->killed ? -ESRCH : 0;
}

int moat_proc_wait(struct moat_proc *pr, struct moat_proc_status *ret)
{
	struct moat_run *r = pr->r;
	while (!pr->exited) {
		int k = moat_sandbox_poll(r, -1);
		if (k < 0 && k != -EINTR)
			return k;
	}
	moat_proc_drain(pr, -1);
	if (ret)
		fill(pr, ret);
	return 0;
}

int moat_proc_signal(struct moat_proc *pr, int sig)
{
	if (!pr || sig <= 0 || sig >= NSIG)
		return -EINVAL;
	if (pr->exited || !pr->started)
		return -ESRCH;
	struct moat_ctl_req rq = {
		.type = MOAT_CTL_SIGNAL, .id = pr->id, .sig = sig, .flags = MOAT_CTL_GROUP};
	return moat_ctl_send(pr->r, &rq, NULL, 0);
}

/* moat_run()'s SIGTERM: every process of the sandbox, SIGKILL after the grace. */
void moat_proc_terminate(struct moat_proc *pr)
{
	struct moat_ctl_req rq = {.type = MOAT_CTL_SIGNAL_ALL, .sig = SIGTERM};
	if (pr->exited)
		return;
	moat_ctl_send(pr->r, &rq, NULL, 0);
	if (!pr->grace_armed) {
		pr->grace_armed = true;
		arm_timer(pr->timerfd, pr->grace_ms);
	}
}

int moat_proc_resize(struct moat_proc *pr, unsigned rows, unsigned cols)
{
	if (!pr || pr->pty_fd < 0)
		return -ENOTTY;
	struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
	return ioctl(pr->pty_fd, TIOCSWINSZ, &ws) < 0 ? negerrno() : 0;
}

void moat_proc_release(struct moat_proc *pr)
{
	if (!pr)
		return;
	if (pr->exited) {
		moat_proc_free(pr);
		return;
	}
	if (pr->starting) /* not started yet: killed when STARTED comes */
		start_clear(pr);
	moat_proc_signal(pr, SIGKILL);
	moat_stdio_free(pr);
	pr->released = true;
}
