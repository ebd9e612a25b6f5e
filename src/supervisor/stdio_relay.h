/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The command's standard streams (issue 13 item 6): the sandbox never holds
 * one of the caller's file descriptions. A stream that is not on the pty gets
 * a pipe owned by the supervisor, which moves the bytes between that pipe and
 * the caller's fd (splice/tee where the kernel allows it). Lives in the
 * supervisor; the init only dup2()s the sandbox ends onto 0..2.
 */
#pragma once

#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

struct moat_proc;

enum moat_relay_mode {
	MOAT_RELAY_NONE = 0, /* not relayed: on the pty, closed, or merged into stdout */
	MOAT_RELAY_SPLICE, /* output: splice our pipe -> caller's pipe, file, /dev/null */
	MOAT_RELAY_COPY, /* read + write/send: O_APPEND files, sockets, stdin from a socket */
	MOAT_RELAY_TEE, /* stdin from a pipe: tee (nothing consumed), consumed part discarded */
	MOAT_RELAY_FILE_IN, /* stdin from a seekable file: splice at our own offset */
};

struct moat_relay {
	enum moat_relay_mode mode;
	int from,
		to; /* output: our read end -> caller's fd; stdin: caller's fd 0 -> our write end */
	int keep_r; /* stdin: our copy of the sandbox's read end (FIONREAD of what is unread) */
	int wait_fd; /* registered on the epoll set (-1: none) */
	uint32_t wait_ev;
	bool output, done, is_socket, is_pipe;
	int err; /* output: errno of a failed write to the caller's fd (not EPIPE), 0 */
	uint64_t moved; /* bytes moved to the destination */
	uint64_t pending; /* TEE: bytes tee'd, not yet discarded from the caller's pipe */
	off_t start, offset; /* FILE_IN: the caller's offset at the start, ours */
	char *buf; /* COPY: a bounce buffer, bytes [buf_off, buf_len) not yet written */
	size_t buf_off, buf_len;
};

struct moat_stdio {
	struct moat_relay s[3];
	uint64_t total; /* stdout + stderr bytes relayed (limits.max_output) */
	bool limited; /* max_output reached: the output pipes were closed */
	int epfd;
	uint32_t tag;
};

/* The functions below work on one process of a sandbox (run.h): its
 * caller_fd[] (the caller's fds for 0..2, -1 = closed), tty_mask (streams on
 * its terminal, not relayed here), std_fd[] (the sandbox's ends, sent with
 * the exec request) and stdio_error. */

/* After the last byte: a write to the caller's stdout/stderr that failed
 * (ENOSPC, EIO...: bytes the command wrote were lost) is recorded in
 * pr->stdio_error and the audit log. A reader that went away (EPIPE) is
 * not an error, as without moat. */
void moat_stdio_report(struct moat_proc *pr);

/* At the start of moat_run(), before anything is opened: holds /dev/null
 * over each of 0..2 that is closed (placeholder[i], else -1), so that no fd
 * of moat lands on them; the command's fd i is then closed too. */
void moat_stdio_claim(int placeholder[3]);
/* Empty relays (no fds). */
void moat_stdio_init(struct moat_proc *pr);
/* The relay pipes; fills pr->std_fd. */
int moat_stdio_prepare(struct moat_proc *pr);
/* After the exec request carried std_fd[]: closes the sandbox's ends. */
void moat_stdio_sent(struct moat_proc *pr);
/* Starts relaying; later readiness arrives as tag + stream index. */
int moat_stdio_register(struct moat_proc *pr, int epfd, uint32_t tag);
void moat_stdio_dispatch(struct moat_proc *pr, unsigned stream);
/* After the process exited: the caller's stdin is left where the command
 * stopped reading (consumed bytes only). */
void moat_stdio_stdin_finish(struct moat_proc *pr);
/* The output streams still relaying: fills pfd[] (at most 2) with what each
 * waits for, the stream index in idx[]. */
unsigned moat_stdio_pending(struct moat_proc *pr, struct pollfd *pfd, unsigned *idx);
/* true if every stream still relaying waits for input from the sandbox. */
bool moat_stdio_waiting_input_only(struct moat_proc *pr);
void moat_stdio_free(struct moat_proc *pr);
