/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The standard-stream relay (stdio_relay.h). Why: an inherited fd shares the
 * caller's open file description, so a command given `>> app.log` could clear
 * O_APPEND, seek and truncate the host file, reopen it through
 * /proc/self/fd/1, lock it or shrink the caller's pipe. The sandbox gets pipes
 * of its own; only the supervisor holds the caller's fds.
 *
 * How bytes move (no copy through user space where the kernel allows it):
 *   stdout/stderr -> pipe, FIFO      splice, SPLICE_F_NONBLOCK (pipe to pipe
 *                                    honours it on both ends: a stalled
 *                                    reader never blocks the supervisor)
 *   stdout/stderr -> /dev/null, dev splice
 *   stdout/stderr -> regular file    read + write through a 1 MiB buffer:
 *                                    splice refuses O_APPEND, and into a
 *                                    file it copies anyway, in pieces the
 *                                    size of what the pipe held (~36 KiB
 *                                    with a CPU free): ~1.5x faster so
 *                                    (bench/FINDINGS.md)
 *   stdout/stderr -> socket          read + send(MSG_DONTWAIT): splice to a
 *                                    socket would block on a blocking socket,
 *                                    and the caller's O_NONBLOCK is not ours
 *                                    to set
 *   stdin <- pipe, FIFO              tee into a one-slot pipe: nothing is
 *                                    taken from the caller's pipe until the
 *                                    command read it, so what it did not read
 *                                    stays there for the next reader
 *   stdin <- regular file            splice at our own offset; at the end
 *                                    the caller's offset is set to where the
 *                                    command stopped reading
 *   stdin <- socket, device          read ahead (at most one pipe's worth)
 */
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#include "audit/audit.h"
#include "policy/errors.h"
#include "audit/observe.h"
#include "supervisor/run.h"
#include "supervisor/stdio_relay.h"
#include "supervisor/supervise.h"
#include "shared/macro.h"

#ifndef KCMP_FILE
#define KCMP_FILE 0
#endif

#define RELAY_PIPE_SIZE (1u << 20) /* output pipes: fewer wake-ups per byte */
#define RELAY_CHUNK (1u << 20) /* bytes per splice call */
#define RELAY_BUF (1u << 20) /* the COPY bounce buffer */
#define RELAY_ROUNDS 16 /* calls per wake-up, then the loop serves others */

void moat_stdio_claim(int placeholder[3])
{
	for (int i = 0; i < 3; i++) {
		placeholder[i] = -1;
		if (fcntl(i, F_GETFD) >= 0 || errno != EBADF)
			continue;
		/* lowest free fd: i, since 0..i-1 are open (or were just filled) */
		int fd = open("/dev/null", O_RDWR | O_CLOEXEC);
		if (fd >= 0 && fd != i) {
			close(fd);
			fd = -1;
		}
		placeholder[i] = fd;
	}
}

void moat_stdio_init(struct moat_proc *pr)
{
	struct moat_stdio *io = &pr->io;
	for (int i = 0; i < 3; i++) {
		io->s[i].from = io->s[i].to = io->s[i].keep_r = io->s[i].wait_fd = -1;
		pr->std_fd[i] = -1;
	}
	io->epfd = -1;
}

/* Same open file description (kcmp), or without kcmp the same file. */
static bool same_description(int a, int b)
{
	long k = syscall(SYS_kcmp, (pid_t)getpid(), (pid_t)getpid(), KCMP_FILE, a, b);
	if (k >= 0)
		return k == 0;
	struct stat sa, sb;
	return fstat(a, &sa) == 0 && fstat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
		sa.st_ino == sb.st_ino && fcntl(a, F_GETFL) == fcntl(b, F_GETFL);
}

static int relay_buf(struct moat_relay *s)
{
	if (!s->buf && !(s->buf = malloc(RELAY_BUF)))
		return -ENOMEM;
	return 0;
}

static int prepare_output(struct moat_proc *pr, int i)
{
	struct moat_relay *s = &pr->io.s[i];
	struct stat st;
	int p[2];
	if (fstat(pr->caller_fd[i], &st) < 0)
		return negerrno();
	if (pipe2(p, O_CLOEXEC) < 0)
		return negerrno();
	s->output = true;
	s->from = p[0];
	pr->std_fd[i] = p[1];
	(void)fcntl(s->from, F_SETFL, O_NONBLOCK);
	/* best effort: a larger pipe means fewer wake-ups (the per-user pipe
	 * allowance may refuse it; the default 64 KiB works too) */
	for (unsigned sz = RELAY_PIPE_SIZE; sz >= 65536u; sz /= 4)
		if (fcntl(s->from, F_SETPIPE_SZ, sz) >= 0)
			break;
	/* a dup: the same description (nothing of it changes), but an epoll key
	 * of our own (the pty relay may watch fd i too) */
	if ((s->to = fcntl(pr->caller_fd[i], F_DUPFD_CLOEXEC, 3)) < 0)
		return negerrno();
	s->is_pipe = S_ISFIFO(st.st_mode);
	s->is_socket = S_ISSOCK(st.st_mode);
	if (s->is_socket || S_ISREG(st.st_mode))
		s->mode = MOAT_RELAY_COPY;
	else
		s->mode = MOAT_RELAY_SPLICE;
	return s->mode == MOAT_RELAY_COPY ? relay_buf(s) : 0;
}

static int prepare_input(struct moat_proc *pr)
{
	struct moat_relay *s = &pr->io.s[0];
	struct stat st;
	int p[2];
	if (fstat(pr->caller_fd[0], &st) < 0)
		return negerrno();
	if (pipe2(p, O_CLOEXEC) < 0)
		return negerrno();
	s->to = p[1];
	s->keep_r = p[0];
	pr->std_fd[0] = p[0];
	(void)fcntl(s->to, F_SETFL, O_NONBLOCK);
	if ((s->from = fcntl(pr->caller_fd[0], F_DUPFD_CLOEXEC, 3)) < 0)
		return negerrno();
	s->is_pipe = S_ISFIFO(st.st_mode);
	s->is_socket = S_ISSOCK(st.st_mode);
	/* One slot: the pipe is writable again only once the command has read
	 * all of it, so "writable" means "consumed" (see moat_stdio_dispatch). */
	if (s->is_pipe && fcntl(s->to, F_SETPIPE_SZ, 4096) >= 0 &&
	    fcntl(s->to, F_GETPIPE_SZ) <= 4096) {
		s->mode = MOAT_RELAY_TEE;
		return relay_buf(s);
	}
	if (S_ISREG(st.st_mode) && (s->start = lseek(pr->caller_fd[0], 0, SEEK_CUR)) >= 0) {
		s->offset = s->start;
		s->mode = MOAT_RELAY_FILE_IN;
		return 0;
	}
	s->start = -1;
	s->mode = MOAT_RELAY_COPY;
	return relay_buf(s);
}

int moat_stdio_prepare(struct moat_proc *pr)
{
	struct moat_stdio *io = &pr->io;
	int k = 0;
	for (int i = 0; i < 3; i++)
		pr->std_fd[i] = -1;
	for (int i = 0; i < 3 && k >= 0; i++) {
		if (pr->caller_fd[i] < 0 || (pr->tty_mask & (1u << i)))
			continue;
		if (i == 2 && io->s[1].mode != MOAT_RELAY_NONE &&
		    same_description(pr->caller_fd[1], pr->caller_fd[2])) {
			/* 2>&1: one pipe, so the order between the two is kept */
			pr->std_fd[2] = pr->std_fd[1];
			continue;
		}
		k = i == 0 ? prepare_input(pr) : prepare_output(pr, i);
	}
	if (k < 0)
		return moat_error_set(pr->r->err, "stdio", -k,
				      "cannot create the pipes for the standard streams: %s",
				      strerror(-k));
	return 0;
}

void moat_stdio_sent(struct moat_proc *pr)
{
	/* stdin's read end stays: FIONREAD tells what the command left unread */
	for (int i = 1; i < 3; i++) {
		if (pr->std_fd[i] >= 0 && (i == 1 || pr->std_fd[2] != pr->std_fd[1]))
			close(pr->std_fd[i]);
	}
	pr->std_fd[1] = pr->std_fd[2] = -1;
}

/* ---- moving bytes ----------------------------------------------------------- */

static void relay_wait(struct moat_stdio *io, unsigned i, int fd, uint32_t ev)
{
	struct moat_relay *s = &io->s[i];
	if (s->wait_fd == fd && s->wait_ev == ev)
		return;
	if (s->wait_fd >= 0 && io->epfd >= 0)
		epoll_ctl(io->epfd, EPOLL_CTL_DEL, s->wait_fd, NULL);
	s->wait_fd = fd;
	s->wait_ev = ev;
	if (fd < 0 || io->epfd < 0)
		return;
	struct epoll_event e = {.events = ev, .data.u32 = io->tag + i};
	if (epoll_ctl(io->epfd, EPOLL_CTL_ADD, fd, &e) < 0) {
		/* cannot be polled (e.g. a regular file): never waits anyway */
		s->wait_fd = -1;
		s->done = true;
	}
}

static bool writable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	return poll(&p, 1, 0) > 0 && (p.revents & POLLOUT);
}

static void relay_end(struct moat_stdio *io, unsigned i)
{
	struct moat_relay *s = &io->s[i];
	relay_wait(io, i, -1, 0);
	s->done = true;
	/* output: closing our read end gives the command EPIPE/SIGPIPE on its
	 * next write, as a reader that went away would; our copy of the
	 * caller's fd goes too (its reader sees EOF once nobody else holds
	 * it); stdin: EOF */
	if (s->output) {
		s->from = safe_close(s->from);
		s->to = safe_close(s->to);
	} else
		s->to = safe_close(s->to);
}

static void output_step(struct moat_proc *pr, unsigned i)
{
	struct moat_stdio *io = &pr->io;
	struct moat_relay *s = &io->s[i];
	uint64_t limit = pr->r->plan->limits.max_output; /* the plan's limits part */
	for (int round = 0; round < RELAY_ROUNDS && !s->done; round++) {
		ssize_t n;
		if (s->buf_off < s->buf_len) {
			size_t len = s->buf_len - s->buf_off;
			if (s->is_socket)
				n = send(s->to, s->buf + s->buf_off, len,
					 MSG_DONTWAIT | MSG_NOSIGNAL);
			else
				n = write(s->to, s->buf + s->buf_off, len);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				relay_wait(io, i, s->to, EPOLLOUT);
				return;
			}
			if (n <= 0) {
				if (n < 0 && errno != EPIPE && errno != ECONNRESET)
					s->err = errno;
				relay_end(io, i);
				return;
			}
			s->buf_off += (size_t)n;
			s->moved += (uint64_t)n;
			continue;
		}
		size_t want = RELAY_CHUNK;
		if (limit) {
			if (io->total >= limit) {
				/* exactly at the limit: only more bytes exceed it */
				int avail = 0;
				struct pollfd p = {.fd = s->from, .events = POLLIN};
				if (ioctl(s->from, FIONREAD, &avail) == 0 && avail == 0) {
					int k = poll(&p, 1, 0);
					if (k == 0) {
						relay_wait(io, i, s->from, EPOLLIN);
						return;
					}
					if (k > 0 && (p.revents & POLLHUP) &&
					    ioctl(s->from, FIONREAD, &avail) == 0 && avail == 0) {
						relay_end(io, i);
						return;
					}
				}
				if (!io->limited) {
					io->limited = true;
					moat_supervise_event_limit(pr->r, "stdio");
				}
				{
					relay_end(io, i);
					return;
				}
			}
			want = (size_t)MIN((uint64_t)want, limit - io->total);
		}
		if (s->mode == MOAT_RELAY_SPLICE) {
			n = splice(s->from, NULL, s->to, NULL, want,
				   SPLICE_F_NONBLOCK | SPLICE_F_MOVE);
			if (n > 0) {
				s->moved += (uint64_t)n;
				io->total += (uint64_t)n;
				continue;
			}
			if (n == 0) {
				relay_end(io, i);
				return;
			}
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				/* our pipe is empty, or (pipe to pipe) theirs is full */
				if (s->is_pipe && !writable(s->to)) {
					relay_wait(io, i, s->to, EPOLLOUT);
					return;
				}
				{
					relay_wait(io, i, s->from, EPOLLIN);
					return;
				}
			}
			if (errno == EINVAL && relay_buf(s) >= 0) {
				s->mode = MOAT_RELAY_COPY; /* a file that takes no splice */
				continue;
			}
			/* EPIPE: the reader went away; anything else lost bytes */
			if (errno != EPIPE && errno != ECONNRESET)
				s->err = errno;
			relay_end(io, i);
			return;
		}
		n = read(s->from, s->buf, MIN((size_t)RELAY_BUF, want));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			relay_wait(io, i, s->from, EPOLLIN);
			return;
		}
		if (n <= 0) {
			relay_end(io, i);
			return;
		}
		s->buf_off = 0;
		s->buf_len = (size_t)n;
		io->total += (uint64_t)n;
	}
	if (!s->done && s->wait_fd < 0)
		relay_wait(io, i, s->from, EPOLLIN);
}

/* Takes `len` bytes the command consumed out of the caller's pipe (they are
 * there: tee left them). Never blocks: another reader of the same pipe may
 * have taken them meanwhile. */
static void discard(struct moat_relay *s, uint64_t len)
{
	char buf[4096];
	while (len > 0) {
		struct pollfd p = {.fd = s->from, .events = POLLIN};
		if (poll(&p, 1, 0) <= 0 || !(p.revents & POLLIN))
			break;
		ssize_t n = read(s->from, buf, (size_t)MIN((uint64_t)sizeof(buf), len));
		if (n <= 0)
			break;
		len -= (uint64_t)n;
	}
}

static void input_step(struct moat_proc *pr)
{
	struct moat_stdio *io = &pr->io;
	struct moat_relay *s = &io->s[0];
	for (int round = 0; round < RELAY_ROUNDS && !s->done; round++) {
		ssize_t n;
		if (s->mode == MOAT_RELAY_TEE) {
			if (!writable(s->to)) {
				relay_wait(io, 0, s->to, EPOLLOUT);
				return;
			}
			/* writable = the one slot is free = what was tee'd was read */
			discard(s, s->pending);
			s->pending = 0;
			n = tee(s->from, s->to, RELAY_CHUNK, SPLICE_F_NONBLOCK);
			if (n > 0) {
				s->pending = (uint64_t)n;
				s->moved += (uint64_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				relay_wait(io, 0, s->from, EPOLLIN);
				return;
			}
			{
				relay_end(io, 0);
				return;
			} /* EOF (or an error: EOF too) */
		}
		if (s->mode == MOAT_RELAY_FILE_IN) {
			n = splice(s->from, &s->offset, s->to, NULL, RELAY_CHUNK,
				   SPLICE_F_NONBLOCK);
			if (n > 0) {
				s->moved += (uint64_t)n;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				relay_wait(io, 0, s->to, EPOLLOUT);
				return;
			}
			if (n < 0 && errno == EINVAL && relay_buf(s) >= 0) {
				s->mode = MOAT_RELAY_COPY; /* a file without splice_read */
				continue;
			}
			{
				relay_end(io, 0);
				return;
			}
		}
		/* COPY */
		if (s->buf_off < s->buf_len) {
			n = write(s->to, s->buf + s->buf_off, s->buf_len - s->buf_off);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN) {
				relay_wait(io, 0, s->to, EPOLLOUT);
				return;
			}
			if (n <= 0) {
				relay_end(io, 0);
				return;
			}
			s->buf_off += (size_t)n;
			s->moved += (uint64_t)n;
			continue;
		}
		if (!s->is_socket && s->start < 0) {
			/* a blocking pipe or device: read only what is there */
			struct pollfd p = {.fd = s->from, .events = POLLIN};
			if (poll(&p, 1, 0) == 0) {
				relay_wait(io, 0, s->from, EPOLLIN);
				return;
			}
		}
		if (s->is_socket)
			n = recv(s->from, s->buf, RELAY_BUF, MSG_DONTWAIT);
		else if (s->start >= 0)
			n = pread(s->from, s->buf, RELAY_BUF, s->offset);
		else
			n = read(s->from, s->buf, RELAY_BUF);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN) {
			relay_wait(io, 0, s->from, EPOLLIN);
			return;
		}
		if (n <= 0) {
			relay_end(io, 0);
			return;
		}
		if (s->start >= 0)
			s->offset += n;
		s->buf_off = 0;
		s->buf_len = (size_t)n;
	}
	if (!s->done && s->wait_fd < 0) {
		/* the round budget ran out: come back when there is room */
		relay_wait(io, 0, s->to, EPOLLOUT);
	}
}

void moat_stdio_dispatch(struct moat_proc *pr, unsigned stream)
{
	if (stream >= 3 || pr->io.s[stream].done || pr->io.s[stream].mode == MOAT_RELAY_NONE)
		return;
	if (stream == 0)
		input_step(pr);
	else
		output_step(pr, stream);
}

int moat_stdio_register(struct moat_proc *pr, int epfd, uint32_t tag)
{
	pr->io.epfd = epfd;
	pr->io.tag = tag;
	for (unsigned i = 0; i < 3; i++)
		moat_stdio_dispatch(pr, i);
	return 0;
}

void moat_stdio_stdin_finish(struct moat_proc *pr)
{
	struct moat_relay *s = &pr->io.s[0];
	int unread = 0;
	if (s->mode == MOAT_RELAY_NONE || (s->from < 0 && s->to < 0 && s->keep_r < 0))
		return; /* none, or finished already */
	relay_wait(&pr->io, 0, -1, 0);
	if (s->keep_r >= 0 && ioctl(s->keep_r, FIONREAD, &unread) < 0)
		unread = 0;
	uint64_t left = (uint64_t)unread + (s->buf_len - s->buf_off);
	if (s->mode == MOAT_RELAY_TEE) {
		/* what was tee'd and read: take it from the caller's pipe */
		discard(s, s->pending > (uint64_t)unread ? s->pending - (uint64_t)unread : 0);
		s->pending = 0;
	} else if (s->start >= 0) {
		/* a file: its offset just after what the command read */
		uint64_t read_by_cmd =
			s->moved > (uint64_t)unread ? s->moved - (uint64_t)unread : 0;
		if (s->mode == MOAT_RELAY_COPY)
			read_by_cmd = (uint64_t)(s->offset - s->start) > left
				? (uint64_t)(s->offset - s->start) - left
				: 0;
		(void)lseek(s->from, s->start + (off_t)read_by_cmd, SEEK_SET);
	}
	s->done = true;
	s->to = safe_close(s->to);
	s->from = safe_close(s->from);
	s->keep_r = safe_close(s->keep_r);
}

unsigned moat_stdio_pending(struct moat_proc *pr, struct pollfd *pfd, unsigned *idx)
{
	unsigned n = 0;
	for (unsigned i = 1; i < 3; i++) {
		struct moat_relay *s = &pr->io.s[i];
		if (s->mode == MOAT_RELAY_NONE || s->done)
			continue;
		if (s->wait_fd < 0)
			relay_wait(&pr->io, i, s->from, EPOLLIN);
		if (s->done)
			continue;
		pfd[n].fd = s->wait_fd;
		pfd[n].events = s->wait_ev == EPOLLOUT ? POLLOUT : POLLIN;
		pfd[n].revents = 0;
		idx[n++] = i;
	}
	return n;
}

bool moat_stdio_waiting_input_only(struct moat_proc *pr)
{
	for (unsigned i = 1; i < 3; i++) {
		struct moat_relay *s = &pr->io.s[i];
		if (s->mode != MOAT_RELAY_NONE && !s->done &&
		    (s->wait_ev == EPOLLOUT || s->buf_off < s->buf_len))
			return false;
	}
	return true;
}

void moat_stdio_free(struct moat_proc *pr)
{
	struct moat_stdio *io = &pr->io;
	for (int i = 0; i < 3; i++) {
		struct moat_relay *s = &io->s[i];
		if (s->wait_fd >= 0 && io->epfd >= 0)
			epoll_ctl(io->epfd, EPOLL_CTL_DEL, s->wait_fd, NULL);
		s->wait_fd = -1;
		if (s->mode != MOAT_RELAY_NONE) {
			s->from = safe_close(s->from);
			s->to = safe_close(s->to);
		}
		s->keep_r = safe_close(s->keep_r);
		free(s->buf);
		s->buf = NULL;
		s->mode = MOAT_RELAY_NONE;
	}
	/* before clone (a failed setup): the sandbox's output ends; its stdin
	 * end is keep_r, closed above */
	for (int i = 1; i < 3; i++)
		if (pr->std_fd[i] >= 0 && (i != 2 || pr->std_fd[2] != pr->std_fd[1]))
			close(pr->std_fd[i]);
	/* the /dev/null placeholders stay: nothing opened later (by moat's
	 * caller) may become its stdout by accident */
	for (int i = 0; i < 3; i++)
		pr->std_fd[i] = -1;
}

void moat_stdio_report(struct moat_proc *pr)
{
	for (unsigned i = 1; i < 3; i++) {
		const struct moat_relay *s = &pr->io.s[i];
		if (!s->err || pr->stdio_error[0])
			continue;
		snprintf(pr->stdio_error, sizeof(pr->stdio_error),
			 "cannot write the command's %s: %s (after %llu bytes; the rest was lost)",
			 i == 1 ? "stdout" : "stderr", strerror(s->err),
			 (unsigned long long)s->moved);
		MOAT_AUDIT(moat_run_audit(pr->r), MOAT_EV_LIMIT, MOAT_F_STR("what", "stdio"),
			   MOAT_F_STR("stream", i == 1 ? "stdout" : "stderr"),
			   MOAT_F_STR("error", strerrorname_np(s->err)),
			   MOAT_F_UINT("bytes", s->moved));
	}
}
