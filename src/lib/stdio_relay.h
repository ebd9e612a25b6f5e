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

struct moat_run;

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
	int placeholder[3]; /* /dev/null held over a 0..2 the caller had closed (left open) */
	bool closed[3]; /* the caller's fd i was closed: the command's is closed too */
	uint64_t total; /* stdout + stderr bytes relayed (limits.max_output) */
	bool limited; /* max_output reached: the output pipes were closed */
	int epfd;
	uint32_t tag;
};

/* After the last byte: a write to the caller's stdout/stderr that failed
 * (ENOSPC, EIO...: bytes the command wrote were lost) is recorded in
 * r->st->stdio_error and the audit log. A reader that went away (EPIPE) is
 * not an error, as without moat. */
void moat_stdio_report(struct moat_run *r);

/* At the start of moat_run(), before anything is opened: notes which of 0..2
 * are closed and holds /dev/null there, so that no fd of moat lands on them. */
void moat_stdio_claim(struct moat_run *r);
/* Before clone: the relay pipes; fills r->sb.std_fd / std_sup. */
int moat_stdio_prepare(struct moat_run *r);
/* After clone (parent): closes the sandbox's ends of the pipes. */
void moat_stdio_after_clone(struct moat_run *r);
/* Starts relaying; later readiness arrives as tag + stream index. */
int moat_stdio_register(struct moat_run *r, int epfd, uint32_t tag);
void moat_stdio_dispatch(struct moat_run *r, unsigned stream);
/* After the init exited: the caller's stdin is left where the command
 * stopped reading (consumed bytes only). */
void moat_stdio_stdin_finish(struct moat_run *r);
/* The output streams still relaying: fills pfd[] (at most 2) with what each
 * waits for, the stream index in idx[]. */
unsigned moat_stdio_pending(struct moat_run *r, struct pollfd *pfd, unsigned *idx);
/* true if every stream still relaying waits for input from the sandbox. */
bool moat_stdio_waiting_input_only(struct moat_run *r);
void moat_stdio_free(struct moat_run *r);
