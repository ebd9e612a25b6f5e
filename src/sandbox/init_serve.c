/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The ready sandbox's init (PID 1 inside): after setup it serves the control
 * channel (ctl.h). It starts each requested process (fork; the new process
 * reads its argv and environment from the request's memfd and execs), signals
 * processes on request, reaps everything and reports each exit. It holds no
 * file of the caller (0..2 are /dev/null) and allocates nothing. It ends when
 * the channel closes (the supervisor destroyed the sandbox or died): its exit
 * takes the whole pid namespace with it.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "sandbox/ctl.h"
#include "sandbox/sandbox.h"
#include "shared/fdpass.h"
#include "shared/macro.h"

#define MAX_REQ_FDS 5 /* blob, report, fds 0..2 */
#define BLOB_MAX (256u << 20)

/* In the new process: report why it could not exec, then exit as a shell would. */
static _Noreturn void refuse(int report, int stage, int err, const char *what)
{
	struct moat_setup_error e = {.stage = stage, .err = err, .step = -1};
	size_t n = strnlen(what, sizeof(e.detail) - 1);
	memcpy(e.detail, what, n);
	(void)!write(report, &e, sizeof(e));
	_exit(err == ENOENT ? MOAT_EXIT_NOT_FOUND : MOAT_EXIT_CANNOT_EXEC);
}

/* What the new process mapped: when it was vforked these mappings are the
 * init's, which unmaps them once the process has exec'd or exited
 * (volatile: written by the vforked process, read by the init after it). */
static volatile struct {
	void *blob, *vec;
	size_t blob_len, vec_len;
} child_maps;

/* Points argv/envp into the blob mapping; arrays in an anonymous mapping (no
 * malloc: the init may be a fork of a threaded process). */
static void parse_blob(int report, int fd, const char **ret_cwd, char ***ret_argv, char ***ret_envp)
{
	struct stat st;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(struct moat_ctl_blob) ||
	    (uint64_t)st.st_size > BLOB_MAX)
		refuse(report, MOAT_STAGE_EXEC, EINVAL, "bad request");
	const char *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (m == MAP_FAILED)
		refuse(report, MOAT_STAGE_EXEC, errno, "cannot map the request");
	child_maps.blob = (void *)(uintptr_t)m;
	child_maps.blob_len = (size_t)st.st_size;
	const struct moat_ctl_blob *h = (const void *)m;
	size_t len = (size_t)st.st_size - sizeof(*h);
	if (h->magic != MOAT_CTL_BLOB_MAGIC || h->len != len || h->argc == 0 || h->argc > len ||
	    h->envc > len)
		refuse(report, MOAT_STAGE_EXEC, EINVAL, "bad request");
	size_t n = (size_t)h->argc + h->envc + 2;
	char **v = mmap(NULL, n * sizeof(char *), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (v == MAP_FAILED)
		refuse(report, MOAT_STAGE_EXEC, errno, "cannot map the request");
	child_maps.vec = v;
	child_maps.vec_len = n * sizeof(char *);
	const char *s = m + sizeof(*h), *end = s + len;
	const char *cwd = s;
	size_t k = 0;
	for (uint64_t want = 1 + (uint64_t)h->argc + h->envc; want; want--) {
		const char *z = memchr(s, 0, (size_t)(end - s));
		if (!z)
			refuse(report, MOAT_STAGE_EXEC, EINVAL, "bad request");
		if (s != cwd) {
			v[k++] = (char *)(uintptr_t)s;
			if (k == h->argc)
				v[k++] = NULL; /* end of argv; env follows */
		}
		s = z + 1;
	}
	v[k] = NULL;
	*ret_cwd = cwd;
	*ret_argv = v;
	*ret_envp = v + h->argc + 1;
}

/* close_range(lo, hi); gVisor (runsc 0.0~20221219) answers EINVAL for a
 * last descriptor above INT_MAX, so the range is retried up to there.
 * Where the sandbox's filter denies close_range (an OCI spec's seccomp
 * allowlist older than it: --deny-syscall close_range, EPERM), each
 * descriptor is closed in turn up to the hard RLIMIT_NOFILE: nothing in the
 * sandbox can raise that limit (CAP_SYS_RESOURCE is checked in the host's
 * user namespace) and the sandbox's set-up closed every descriptor above the
 * ones it keeps, so none is at or above it. No allocation: this runs in a
 * vforked child on the init's memory. */
static int close_fds(unsigned lo, unsigned hi)
{
	if (syscall(SYS_close_range, lo, hi, 0) == 0)
		return 0;
	if (errno == EPERM || errno == ENOSYS) {
		struct rlimit rl;
		if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
			return -1;
		rlim_t top = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > (1u << 20)
			? (rlim_t)1 << 20
			: rl.rlim_max;
		for (rlim_t fd = lo; fd <= hi && fd < top; fd++)
			if (close((int)fd) < 0 && errno != EBADF)
				return -1;
		return 0;
	}
	if (errno != EINVAL || hi <= INT_MAX)
		return -1;
	return syscall(SYS_close_range, lo, (unsigned)INT_MAX, 0) == 0 ? 0 : -1;
}

/* execvp(argv[0]) without the execve calls that can only fail. Each execve
 * of the sandbox stops in the exec recorder (a seccomp notification: two
 * wake-ups and the supervisor's reads) even when the file is not there, and
 * a bare name (`echo`) is tried in every PATH directory before its own
 * (four execve for echo under the default PATH). The directories where
 * faccessat finds no such file (ENOENT, ENOTDIR: the errors execvp passes
 * over, and what the recorder counts as missing and records nothing for)
 * are skipped; glibc's execvpe then searches the rest of PATH as before
 * (the same files tried in the same order, the EACCES and script rules,
 * the same environment: only its search list is the rest of PATH). With
 * no directory left, or a PATH longer than the buffer, plain execvp. No
 * allocation: this runs in a vforked child on the init's memory. */
static void exec_search(char **argv, char **envp)
{
	const char *file = argv[0], *path = NULL;
	for (char **e = envp; *e && !path; e++)
		if (strncmp(*e, "PATH=", 5) == 0)
			path = *e + 5;
	size_t flen = strlen(file);
	if (!path || !flen || strchr(file, '/') || flen > NAME_MAX || strlen(path) >= PATH_MAX)
		goto plain;
	char cand[PATH_MAX + NAME_MAX + 2];
	for (const char *p = path;;) {
		const char *end = strchrnul(p, ':');
		size_t dlen = (size_t)(end - p);
		/* an empty element is the current directory, as for execvp */
		memcpy(cand, p, dlen);
		size_t at = dlen ? dlen + 1 : 0;
		if (dlen)
			cand[dlen] = '/';
		memcpy(cand + at, file, flen + 1);
		if (faccessat(AT_FDCWD, cand, X_OK, AT_EACCESS) == 0 ||
		    (errno != ENOENT && errno != ENOTDIR)) {
			if (p == path)
				break;
			/* "PATH=" and the rest of PATH from this directory on */
			memcpy(cand, "PATH=", 5);
			memcpy(cand + 5, p, strlen(p) + 1);
			/* the init's memory when vforked: it restores environ */
			extern char **environ;
			static char *search[2];
			search[0] = cand;
			environ = search;
			execvpe(file, argv, envp);
			environ = envp;
			return;
		}
		if (!*end)
			break;
		p = end + 1;
	}
plain:
	execvp(file, argv);
}

/* --allow-degraded cgroup: the address-space limit each process gets */
static struct moat_init_late_rlimits late_rl; /* rlim_max 0: not set */

/* The new process: fds, session, terminal, signals, then exec. Vforked
 * (MOAT_CTL_SHARED_MM) it runs on the init's memory and stack: it changes
 * only its own fd table, session, directory, mask and limits (none of them
 * shared), the init's `environ` (restored by the init) and child_maps. */
static _Noreturn void start(const struct moat_ctl_req *rq, const int *fds, unsigned nfds)
{
	int blob = fds[0], report = fds[1], std[3] = {-1, -1, -1}, tty = -1;
	unsigned at = 2;
	for (int i = 0; i < 3; i++)
		if ((rq->flags & MOAT_CTL_HAS_FD(i)) && at < nfds)
			std[i] = fds[at++];
	if (rq->flags & MOAT_CTL_ERR_IS_OUT)
		std[2] = std[1];
	/* the report fd at the lowest number above 2, close-on-exec */
	int rep = fcntl(report, F_DUPFD_CLOEXEC, 3);
	if (rep < 0)
		_exit(MOAT_EXIT_SETUP);
	const char *cwd;
	char **argv, **envp;
	parse_blob(rep, blob, &cwd, &argv, &envp);
	if (setsid() < 0)
		refuse(rep, MOAT_STAGE_EXEC, errno, "setsid");
	for (int i = 0; i < 3; i++) {
		if (std[i] >= 0 ? dup2(std[i], i) < 0 : close(i) < 0 && errno != EBADF)
			refuse(rep, MOAT_STAGE_STDIO, errno, "cannot set up the standard streams");
		if (rq->flags & MOAT_CTL_TTY(i))
			tty = i;
	}
	if (tty >= 0 && ioctl(tty, TIOCSCTTY, 0) < 0)
		refuse(rep, MOAT_STAGE_PTY, errno, "cannot make the pty the controlling terminal");
	if (rep > 3 && close_fds(3, (unsigned)rep - 1) < 0)
		refuse(rep, MOAT_STAGE_EXEC, errno, "close_range");
	if (close_fds((unsigned)rep + 1, ~0U) < 0)
		refuse(rep, MOAT_STAGE_EXEC, errno, "close_range");
	if (chdir(cwd) < 0)
		refuse(rep, MOAT_STAGE_CHDIR, errno, cwd);
	/* every disposition is SIG_DFL already (moat_init_serve() reset them
	 * once, in the init); only the mask is the init's */
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	extern char **environ;
	environ = envp;
	/* The exec recorder (seccomp notification) reads this process's memory
	 * while it waits in execve. The init made itself non-dumpable and this
	 * fork has not exec'd, so its mm still belongs to moat's user namespace:
	 * an unprivileged supervisor could not read it. exec recomputes
	 * dumpability anyway, and nothing else in the sandbox can ptrace.
	 * Vforked, this memory is the init's: it stays non-dumpable (the
	 * supervisor that asked for a vfork may read it as it is). */
	if (!(rq->flags & MOAT_CTL_SHARED_MM))
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
	if (late_rl.as.rlim_max && setrlimit(RLIMIT_AS, &late_rl.as) < 0)
		refuse(rep, MOAT_STAGE_RLIMIT, errno, "cannot set RLIMIT_AS");
	if (late_rl.data.rlim_max && setrlimit(RLIMIT_DATA, &late_rl.data) < 0)
		refuse(rep, MOAT_STAGE_RLIMIT, errno, "cannot set RLIMIT_DATA");
	exec_search(argv, envp);
	refuse(rep, MOAT_STAGE_EXEC, errno, argv[0]);
}

static struct {
	pid_t pid;
	uint32_t id;
	bool last; /* MOAT_CTL_LAST: the init ends after it */
} procs[MOAT_MAX_PROCS];

/* A plain write (not send: under network recording sendto goes to the
 * seccomp listener); SIGPIPE is blocked here. */
static void send_ev(int sock, const struct moat_ctl_ev *ev)
{
	(void)moat_msg_send(sock, ev, sizeof(*ev), NULL, 0);
}

/* Starts the process: the pid, or -1 with errno. Vforked, the init waits
 * here until the process has exec'd or exited (its execve may wait for the
 * exec recorder: the supervisor serves that while it waits for STARTED). */
static pid_t spawn(const struct moat_ctl_req *rq, const int *fds, unsigned nfds)
{
	extern char **environ;
	char **env = environ;
	bool shared = rq->flags & MOAT_CTL_SHARED_MM;
	child_maps.blob = child_maps.vec = NULL;
	pid_t pid = shared ? vfork() : fork();
	if (pid == 0)
		start(rq, fds, nfds);
	if (shared) {
		int e = errno;
		environ = env;
		if (child_maps.blob)
			munmap((void *)child_maps.blob, child_maps.blob_len);
		if (child_maps.vec)
			munmap((void *)child_maps.vec, child_maps.vec_len);
		errno = e;
	}
	return pid;
}

static void on_request(int sock, const struct moat_ctl_req *rq, int *fds, unsigned nfds)
{
	struct moat_ctl_ev ev = {.id = rq->id};
	if (rq->type == MOAT_CTL_SIGNAL_ALL) {
		kill(-1, rq->sig);
		return;
	}
	if (rq->type == MOAT_CTL_SIGNAL) {
		for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
			if (procs[i].pid <= 0 || procs[i].id != rq->id)
				continue;
			/* the group is the process's own session's (setsid) */
			if (!(rq->flags & MOAT_CTL_GROUP) || kill(-procs[i].pid, rq->sig) < 0)
				kill(procs[i].pid, rq->sig);
		}
		return;
	}
	if (rq->type != MOAT_CTL_EXEC)
		return;
	unsigned slot = MOAT_MAX_PROCS;
	for (unsigned i = 0; i < MOAT_MAX_PROCS && slot == MOAT_MAX_PROCS; i++)
		if (procs[i].pid == 0)
			slot = i;
	ev.type = MOAT_CTL_REFUSED;
	if (nfds < 2)
		ev.err = EPROTO;
	else if (slot == MOAT_MAX_PROCS)
		ev.err = EAGAIN;
	else {
		pid_t pid = spawn(rq, fds, nfds);
		if (pid < 0)
			ev.err = errno;
		else {
			procs[slot].pid = pid;
			procs[slot].id = rq->id;
			procs[slot].last = rq->flags & MOAT_CTL_LAST;
			ev.type = MOAT_CTL_STARTED;
			ev.pid = pid;
		}
	}
	send_ev(sock, &ev);
}

/* The last command ended: so does every process of the sandbox. The init
 * kills and reaps them itself, so that their CPU time is in its own
 * children's usage, which the supervisor's wait of the init adds to its own
 * (moat_status cpu_*). Were the init to exit first, the kernel would reap
 * them with SIGCHLD ignored (zap_pid_ns_processes) and their time would be
 * lost. A process that does not die (uninterruptible sleep) keeps the init
 * here until the supervisor kills it (INIT_EXIT_WAIT_MS in supervisor/run.c). */
_Noreturn static void end_all(void)
{
	kill(-1, SIGKILL); /* pid 1 of the namespace: every other process of it */
	while (wait4(-1, NULL, __WALL, NULL) > 0 || errno == EINTR)
		;
	_exit(0);
}

static void reap(int sock)
{
	int st;
	struct rusage ru;
	pid_t w;
	while ((w = wait4(-1, &st, WNOHANG, &ru)) > 0) {
		for (unsigned i = 0; i < MOAT_MAX_PROCS; i++) {
			if (procs[i].pid != w)
				continue;
			struct moat_ctl_ev ev = {
				.type = MOAT_CTL_EXITED,
				.id = procs[i].id,
				.pid = w,
				.status = st,
				.utime_us = (uint64_t)ru.ru_utime.tv_sec * 1000000u +
					(uint64_t)ru.ru_utime.tv_usec,
				.stime_us = (uint64_t)ru.ru_stime.tv_sec * 1000000u +
					(uint64_t)ru.ru_stime.tv_usec,
				.maxrss_kb = (uint64_t)ru.ru_maxrss,
			};
			procs[i].pid = 0;
			send_ev(sock, &ev);
			if (procs[i].last)
				end_all(); /* the record stays readable in the socket */
		}
	}
}

_Noreturn void moat_init_serve(int sock, const struct moat_init_late_rlimits *late,
			       bool fresh_signals)
{
	if (late)
		late_rl = *late;
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	/* Every disposition back to the default once, here, not in each new
	 * process (64 calls per exec): they inherit it with the fork, exec keeps
	 * an ignored signal ignored, and the init itself takes every signal
	 * through the signalfd (all blocked), so none acts on it. A fresh
	 * process of gVisor's Sentry has nothing to reset. */
	for (int s = 1; !fresh_signals && s < NSIG; s++)
		signal(s, SIG_DFL);
	int sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
	if (sfd < 0)
		_exit(MOAT_EXIT_SETUP);
	for (;;) {
		struct pollfd pf[2] = {{.fd = sock, .events = POLLIN},
				       {.fd = sfd, .events = POLLIN}};
		if (poll(pf, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			_exit(MOAT_EXIT_SETUP);
		}
		if (pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGTERM)
					kill(-1, SIGTERM); /* the whole sandbox */
			}
			reap(sock);
		}
		if (!pf[0].revents)
			continue;
		struct moat_ctl_req rq;
		int fds[MAX_REQ_FDS];
		unsigned nfds = 0;
		ssize_t n = moat_msg_recv(sock, &rq, sizeof(rq), fds, MAX_REQ_FDS, &nfds);
		if (n == -EINTR || n == -EBADMSG)
			continue; /* a bad record is dropped (its fds closed) */
		if (n <= 0)
			_exit(0); /* the supervisor is gone: so is the sandbox */
		if (n == (ssize_t)sizeof(rq))
			on_request(sock, &rq, fds, nfds);
		for (unsigned i = 0; i < nfds; i++)
			close(fds[i]);
	}
}
