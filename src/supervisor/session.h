/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions (moat.h, "sessions"): a sandbox served by its own supervisor
 * process over a unix socket. session.c is the supervisor (the daemon and
 * its loop), session_client.c the caller's side, session_proto.c the one
 * framing both use, session_dir.c the per-user directory.
 *
 * Wire format (SOCK_SEQPACKET: one request or reply a datagram): a header
 * (magic, version, type, length) and a JSON object of at most
 * MOAT_SESS_MSG_MAX bytes; descriptors travel as SCM_RIGHTS with it (at most
 * MOAT_SESS_MAX_FDS). Both ends are the same user (SO_PEERCRED is checked)
 * and the same moat version (a header of another version is refused).
 */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "moat/moat.h"

#define MOAT_SESS_MAGIC 0x7461656du /* "meat" little-endian: just a marker */
#define MOAT_SESS_VERSION 1u
#define MOAT_SESS_MSG_MAX (64u << 10)
#define MOAT_SESS_MAX_FDS 3
#define MOAT_SESS_MAX_CONNS 64
#define MOAT_SESS_PATH 1024

enum moat_sess_type {
	MOAT_SESS_INFO = 1, /* -> INFO_REPLY */
	MOAT_SESS_EXEC, /* {argv, env, cwd, tty, timeout_ms, fds} + fds -> STARTED | ERROR */
	MOAT_SESS_SIGNAL, /* {sig} on an exec connection */
	MOAT_SESS_RESIZE, /* {rows, cols} on an exec connection */
	MOAT_SESS_STOP, /* -> OK */
	MOAT_SESS_REMOVE, /* {force} -> STATUS | ERROR */
	MOAT_SESS_COPY_IN, /* {path, max} + fd -> OK {len} | ERROR */
	MOAT_SESS_MKDIR, /* {path} -> OK | ERROR (a new directory, for a copy in) */
	MOAT_SESS_COPY_OUT, /* {path, max} -> OK {len} | ERROR, then COPY_OUT_FD + fd -> OK */
	MOAT_SESS_COPY_OUT_FD,
	MOAT_SESS_LIST, /* {path} -> OK {type, size, entries: [{name, type, size}]} | ERROR */
	/* snapshots (moat_sandbox_snapshot() and the others) */
	MOAT_SESS_SNAPSHOT, /* {name?, force} -> OK {name} | ERROR */
	MOAT_SESS_RESTORE, /* {name, force} -> OK | ERROR */
	MOAT_SESS_RESET, /* {force} -> OK | ERROR */
	MOAT_SESS_SNAP_LIST, /* -> OK {snapshots: [{name, created_us, bytes, current}]} */
	MOAT_SESS_SNAP_DELETE, /* {name} -> OK | ERROR */

	/* the container's process (OCI, moat_session_prepare()): as EXEC's
	 * request, kept until START; -> OK {pid: the supervisor's} | ERROR */
	MOAT_SESS_PREPARE,
	MOAT_SESS_START, /* -> OK | ERROR */
	MOAT_SESS_KILL, /* {sig, all} -> OK | ERROR */
	MOAT_SESS_PAUSE, /* {on} -> OK | ERROR (no freezer) */

	MOAT_SESS_OK = 100,
	MOAT_SESS_ERROR, /* {stage, err, message} */
	MOAT_SESS_INFO_REPLY,
	MOAT_SESS_STARTED, /* {id} */
	MOAT_SESS_EXITED, /* a moat_proc_status */
	MOAT_SESS_STATUS, /* a moat_status */
};

/* One message. */
struct moat_sess_msg {
	unsigned type;
	json_t *body; /* owned */
	int fds[MOAT_SESS_MAX_FDS];
	unsigned n_fds;
};

/* Sends type + body (NULL: {}) and n_fds descriptors (stay the caller's). */
int moat_sess_send(int sock, unsigned type, json_t *body, const int *fds, unsigned n_fds);
/* Receives one message: 1, 0 at EOF, < 0 on error (-EBADMSG for anything
 * malformed: wrong magic or version, bad JSON, too many fds; nothing is
 * left open then). dontwait: MSG_DONTWAIT (-EAGAIN when nothing is there). */
int moat_sess_recv(int sock, bool dontwait, struct moat_sess_msg *ret);
void moat_sess_msg_done(struct moat_sess_msg *m);
/* An ERROR message's body from e / into e. */
json_t *moat_sess_error_json(const struct moat_error *e);
int moat_sess_error_from(json_t *body, struct moat_error *e);
json_t *moat_sess_proc_status_json(const struct moat_proc_status *ps);
void moat_sess_proc_status_from(json_t *o, struct moat_proc_status *ps);
json_t *moat_sess_status_json(const struct moat_status *st);
void moat_sess_status_from(json_t *o, struct moat_status *st);
json_t *moat_sess_info_json(const struct moat_session_info *in);
void moat_sess_info_from(json_t *o, struct moat_session_info *in);

/* ---- session_dir.c -------------------------------------------------------- */

/* The sessions directory path of this user into buf. */
int moat_sess_dir_path(char *buf, size_t len);
/* The directory opened (O_DIRECTORY), created 0700 if mkdirs; refused
 * (-EPERM, ret_err says why) unless it is the caller's own and 0700. */
int moat_sess_dir_open(bool mkdirs, struct moat_error *ret_err);
bool moat_sess_name_valid(const char *name);
bool moat_sess_id_valid(const char *id);
/* "/proc/self/fd/DFD/NAME" into buf: a socket address that does not go
 * through the directory's path again (and fits sun_path). */
int moat_sess_sockaddr(int dfd, const char *name, void *ret_sun, unsigned *ret_len);
/* Connects to the session id or name (resolved in dfd); *ret_id gets its id.
 * -ENOENT: no such session; -ECONNREFUSED: its supervisor is gone. */
int moat_sess_connect(int dfd, const char *id_or_name, char ret_id[40], struct moat_error *ret_err);
/* The same, with connect and every later send/receive on the socket bounded
 * by timeout_ms (0: unbounded); a full accept queue or a silent supervisor
 * gives ETIMEDOUT. */
int moat_sess_connect_within(int dfd, const char *id_or_name, char ret_id[40], unsigned timeout_ms,
			     struct moat_error *ret_err);

/* ---- session.c ------------------------------------------------------------ */

/* The supervisor: never returns. report: where "ready" (or the error) goes,
 * one JSON line. */
_Noreturn void moat_sess_serve(const struct moat_policy *p, const struct moat_session_opts *o,
			       int report);
/* Whether a live session holds name (its name file is locked). */
bool moat_sess_name_taken(int dfd, const char *name);
