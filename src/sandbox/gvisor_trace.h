/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Exec records under gVisor (docs/ISOLATION.md, "Exec records"): the pure
 * parts. runsc 0.0~20221219 reports its trace points to a "remote" sink, a
 * unix SOCK_SEQPACKET connection that runsc opens to a path moat listens on
 * (its pod-init config); after a handshake (a protobuf gvisor.common.Handshake
 * each way) every message is an 8-byte header (header size, message type,
 * dropped count; little endian) and one protobuf message. The bytes come
 * from gVisor's Sentry, which runs the sandbox's code: hostile. They are
 * decoded by hand here (the few fields moat needs, described in
 * gvisor_trace.c, every length bounded, unknown fields skipped) in a
 * confined receiver (backend_gvisor_trace.c), which sends the supervisor
 * fixed-layout frames that the supervisor checks again.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "kernel/seccomp.h"

/* gVisor's message types (pkg/sentry/seccheck/points/common.proto). */
#define MOAT_GVT_MSG_SENTRY_CLONE 2
#define MOAT_GVT_MSG_SYSCALL_EXECVE 11
#define MOAT_GVT_HEADER 8 /* wire.HeaderStructSize */
#define MOAT_GVT_MSG_MAX 65536 /* a message larger than this is refused */

/* The caps of an exec record, as at the process level (seccomp.h). */
#define MOAT_GVT_PATH_MAX (MOAT_SECCOMP_EV_PATH - 1)
#define MOAT_GVT_ARGC MOAT_SECCOMP_EV_ARGC
#define MOAT_GVT_ARGV_BYTES MOAT_SECCOMP_EV_ARGV_BYTES

struct moat_gvt_str {
	const uint8_t *p; /* into the message; not NUL-terminated */
	size_t len;
};

/* One decoded message. Strings point into the message given to decode. */
struct moat_gvt_point {
	uint16_t type; /* MOAT_GVT_MSG_* (others: decoded as far as the header) */
	uint32_t dropped; /* points gVisor could not send so far (wraps) */
	int32_t tgid; /* context_data.thread_group_id (gVisor's pid) */
	struct moat_gvt_str cwd; /* context_data.cwd */
	/* MOAT_GVT_MSG_SYSCALL_EXECVE (syscall/execve/exit, execveat/exit) */
	uint64_t sysno;
	int64_t errorno; /* exit.errorno: 0 when the exec succeeded */
	int64_t fd; /* execveat's dirfd */
	uint32_t flags; /* execveat's flags */
	struct moat_gvt_str path; /* pathname as given */
	unsigned argc; /* entries kept in argv[] */
	size_t argv_bytes; /* their bytes, a NUL each included */
	bool truncated; /* argv or path over the caps: cut */
	struct moat_gvt_str argv[MOAT_GVT_ARGC];
	/* MOAT_GVT_MSG_SENTRY_CLONE */
	int32_t child_tgid; /* created_thread_group_id */
	uint64_t clone_flags;
};

/* Decodes one message (header + protobuf). 0, or -EBADMSG for bytes that
 * are not such a message (a length past the end, a varint over 10 bytes, a
 * group, field number 0, a string with a NUL byte, a nesting gVisor does
 * not send), -EMSGSIZE over MOAT_GVT_MSG_MAX. Pure. */
int moat_gvt_decode(const uint8_t *msg, size_t len, struct moat_gvt_point *ret);

/* Whether the handshake runsc sends is one this decoder understands
 * (gvisor.common.Handshake, version 1). Pure. */
bool moat_gvt_handshake_ok(const uint8_t *msg, size_t len);
/* The answer: Handshake{version: 1}. */
extern const uint8_t moat_gvt_handshake_reply[2];

/* Parents of gVisor's thread groups, from sentry/clone points: a bounded
 * ring (the oldest entry is forgotten first; its ppid is then 0). */
#define MOAT_GVT_PARENTS 4096
struct moat_gvt_parents {
	int32_t child[MOAT_GVT_PARENTS], parent[MOAT_GVT_PARENTS];
	unsigned next, n;
};
void moat_gvt_parent_add(struct moat_gvt_parents *t, int32_t child, int32_t parent);
int32_t moat_gvt_parent_of(const struct moat_gvt_parents *t, int32_t child);

/* ---- receiver -> supervisor frames --------------------------------------- */

enum moat_gvt_frame_kind {
	MOAT_GVT_FRAME_EXEC = 1, /* an exec record */
	MOAT_GVT_FRAME_COUNTS, /* the dropped / malformed counters (at the end) */
};

/* A frame: this header, then path, cwd and argv (each entry NUL-ended). */
struct moat_gvt_frame {
	uint32_t len; /* of the whole frame */
	uint16_t kind;
	uint16_t flags; /* MOAT_GVT_F_* */
	int32_t pid, ppid;
	uint32_t sysno;
	uint32_t path_len, cwd_len, argc, argv_len;
	uint32_t dropped, malformed; /* COUNTS */
};
#define MOAT_GVT_F_TRUNCATED 1u
#define MOAT_GVT_FRAME_MAX \
	(sizeof(struct moat_gvt_frame) + 2 * MOAT_GVT_PATH_MAX + MOAT_GVT_ARGV_BYTES)

/* Writes the frame of exec point pt (ppid looked up by the caller) into
 * buf (at least MOAT_GVT_FRAME_MAX bytes); returns its length. Pure. */
size_t moat_gvt_frame_exec(const struct moat_gvt_point *pt, int32_t ppid, uint8_t *buf);

/* The frame of an exec event of a seccomp listener (the vm level's guest
 * init: vm_guest.c), with the same caps (a longer path or argv is cut and
 * flagged truncated). Pure. */
size_t moat_gvt_frame_event(const struct moat_seccomp_event *ev, uint8_t *buf);

/* Checks one frame at the start of buf[0..len) again (the supervisor does
 * not trust the receiver either) and, for an exec frame, fills ev as the
 * seccomp listener would (type EXEC, pid, ppid, path, cwd, argv, syscall,
 * truncated). Returns the frame's length, 0 when buf holds no complete
 * frame yet, -EBADMSG for a frame that is not well formed. Pure. */
ssize_t moat_gvt_frame_parse(const uint8_t *buf, size_t len, struct moat_gvt_frame *ret_hdr,
			     struct moat_seccomp_event *ev);

/* Whether an exec point is recorded: as at the process level, an exec
 * whose path did not resolve (ENOENT, ENOTDIR: one step of a PATH search)
 * is not. Pure. */
bool moat_gvt_exec_recorded(const struct moat_gvt_point *pt);
