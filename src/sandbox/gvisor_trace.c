/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * gVisor's trace messages, decoded by hand (gvisor_trace.h). The fields moat
 * reads, described here from gVisor's wire format (field number: type):
 *
 *   header:  u16 header_size, u16 message_type, u32 dropped_count (LE)
 *   Handshake:        1: uint32 version
 *   ContextData:      4: int32 thread_group_id, 8: string cwd
 *   Exit:             2: int64 errorno
 *   syscall Execve:   1: ContextData, 2: Exit, 3: uint64 sysno, 4: int64 fd,
 *                     6: string pathname, 7: repeated string argv,
 *                     9: uint32 flags
 *   sentry CloneInfo: 1: ContextData, 4: int32 created_thread_group_id,
 *                     6: uint64 flags
 *
 * Everything else is skipped by its wire type. Protobuf's wire types: 0
 * varint (at most 10 bytes), 1 eight bytes, 2 a varint length then that
 * many bytes, 5 four bytes; 3 and 4 (groups) are never sent by gVisor and
 * refused. Nesting is at most one level (ContextData, Exit in a message).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "sandbox/gvisor_trace.h"
#include "shared/macro.h"

const uint8_t moat_gvt_handshake_reply[2] = {0x08, 0x01};

struct pb {
	const uint8_t *p, *end;
};

static int pb_varint(struct pb *b, uint64_t *ret)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < 10; i++) {
		if (b->p >= b->end)
			return -EBADMSG;
		uint8_t c = *b->p++;
		if (i == 9 && c > 1)
			return -EBADMSG; /* past 64 bits */
		v |= (uint64_t)(c & 0x7f) << (7 * i);
		if (!(c & 0x80)) {
			*ret = v;
			return 0;
		}
	}
	return -EBADMSG;
}

/* One field: its number and wire type; a varint's value in *v, a
 * length-delimited field's bytes in *s. Fixed fields are skipped. */
static int pb_field(struct pb *b, uint32_t *num, unsigned *wt, uint64_t *v, struct moat_gvt_str *s)
{
	uint64_t key;
	int k = pb_varint(b, &key);
	if (k < 0)
		return k;
	if ((key >> 3) == 0 || (key >> 3) > 0x1fffffff)
		return -EBADMSG;
	*num = (uint32_t)(key >> 3);
	*wt = (unsigned)(key & 7);
	*v = 0;
	s->p = NULL;
	s->len = 0;
	switch (*wt) {
	case 0:
		return pb_varint(b, v);
	case 1:
	case 5: {
		size_t n = *wt == 1 ? 8 : 4;
		if ((size_t)(b->end - b->p) < n)
			return -EBADMSG;
		b->p += n;
		return 0;
	}
	case 2: {
		uint64_t n;
		if ((k = pb_varint(b, &n)) < 0)
			return k;
		if (n > (uint64_t)(b->end - b->p))
			return -EBADMSG;
		s->p = b->p;
		s->len = (size_t)n;
		b->p += n;
		return 0;
	}
	default:
		return -EBADMSG;
	}
}

/* Strings from a real Sentry never hold a NUL (they are C strings in the
 * sandbox); one that does is forged, and would cut a record short. */
static bool clean(const struct moat_gvt_str *s)
{
	return !s->len || !memchr(s->p, 0, s->len);
}

static int decode_context(struct moat_gvt_str in, struct moat_gvt_point *pt)
{
	struct pb b = {in.p, in.p + in.len};
	while (b.p < b.end) {
		uint32_t num;
		unsigned wt;
		uint64_t v;
		struct moat_gvt_str s;
		int k = pb_field(&b, &num, &wt, &v, &s);
		if (k < 0)
			return k;
		if (num == 4 && wt == 0)
			pt->tgid = (int32_t)v;
		else if (num == 8 && wt == 2) {
			if (!clean(&s))
				return -EBADMSG;
			pt->cwd = s;
		}
	}
	return 0;
}

static int decode_exit(struct moat_gvt_str in, struct moat_gvt_point *pt)
{
	struct pb b = {in.p, in.p + in.len};
	while (b.p < b.end) {
		uint32_t num;
		unsigned wt;
		uint64_t v;
		struct moat_gvt_str s;
		int k = pb_field(&b, &num, &wt, &v, &s);
		if (k < 0)
			return k;
		if (num == 2 && wt == 0)
			pt->errorno = (int64_t)v;
	}
	return 0;
}

static void add_arg(struct moat_gvt_point *pt, struct moat_gvt_str s)
{
	if (pt->argc >= MOAT_GVT_ARGC || pt->argv_bytes + s.len + 1 > MOAT_GVT_ARGV_BYTES) {
		pt->truncated = true;
		return;
	}
	pt->argv[pt->argc++] = s;
	pt->argv_bytes += s.len + 1;
}

int moat_gvt_decode(const uint8_t *msg, size_t len, struct moat_gvt_point *pt)
{
	memset(pt, 0, offsetof(struct moat_gvt_point, argv));
	pt->child_tgid = 0;
	pt->clone_flags = 0;
	if (len > MOAT_GVT_MSG_MAX)
		return -EMSGSIZE;
	if (len < MOAT_GVT_HEADER)
		return -EBADMSG;
	uint16_t hsz = (uint16_t)(msg[0] | msg[1] << 8);
	if (hsz < MOAT_GVT_HEADER || hsz > len)
		return -EBADMSG;
	pt->type = (uint16_t)(msg[2] | msg[3] << 8);
	pt->dropped = (uint32_t)msg[4] | (uint32_t)msg[5] << 8 | (uint32_t)msg[6] << 16 |
		(uint32_t)msg[7] << 24;
	if (pt->type != MOAT_GVT_MSG_SYSCALL_EXECVE && pt->type != MOAT_GVT_MSG_SENTRY_CLONE)
		return 0;
	bool exec = pt->type == MOAT_GVT_MSG_SYSCALL_EXECVE;
	struct pb b = {msg + hsz, msg + len};
	while (b.p < b.end) {
		uint32_t num;
		unsigned wt;
		uint64_t v;
		struct moat_gvt_str s;
		int k = pb_field(&b, &num, &wt, &v, &s);
		if (k < 0)
			return k;
		if (num == 1 && wt == 2)
			k = decode_context(s, pt);
		else if (exec && num == 2 && wt == 2)
			k = decode_exit(s, pt);
		else if (exec && num == 3 && wt == 0)
			pt->sysno = v;
		else if (exec && num == 4 && wt == 0)
			pt->fd = (int64_t)v;
		else if (exec && num == 6 && wt == 2) {
			if (!clean(&s))
				return -EBADMSG;
			if (s.len > MOAT_GVT_PATH_MAX) {
				s.len = MOAT_GVT_PATH_MAX;
				pt->truncated = true;
			}
			pt->path = s;
		} else if (exec && num == 7 && wt == 2) {
			if (!clean(&s))
				return -EBADMSG;
			add_arg(pt, s);
		} else if (exec && num == 9 && wt == 0)
			pt->flags = (uint32_t)v;
		else if (!exec && num == 4 && wt == 0)
			pt->child_tgid = (int32_t)v;
		else if (!exec && num == 6 && wt == 0)
			pt->clone_flags = v;
		if (k < 0)
			return k;
	}
	if (pt->cwd.len > MOAT_GVT_PATH_MAX) {
		pt->cwd.len = MOAT_GVT_PATH_MAX;
		pt->truncated = true;
	}
	return 0;
}

bool moat_gvt_handshake_ok(const uint8_t *msg, size_t len)
{
	struct pb b = {msg, msg + len};
	uint64_t version = 0;
	while (b.p < b.end) {
		uint32_t num;
		unsigned wt;
		uint64_t v;
		struct moat_gvt_str s;
		if (pb_field(&b, &num, &wt, &v, &s) < 0)
			return false;
		if (num == 1 && wt == 0)
			version = v;
	}
	return version == 1;
}

bool moat_gvt_exec_recorded(const struct moat_gvt_point *pt)
{
	return pt->type == MOAT_GVT_MSG_SYSCALL_EXECVE && pt->errorno != ENOENT &&
		pt->errorno != ENOTDIR;
}

void moat_gvt_parent_add(struct moat_gvt_parents *t, int32_t child, int32_t parent)
{
	t->child[t->next] = child;
	t->parent[t->next] = parent;
	t->next = (t->next + 1) % MOAT_GVT_PARENTS;
	if (t->n < MOAT_GVT_PARENTS)
		t->n++;
}

int32_t moat_gvt_parent_of(const struct moat_gvt_parents *t, int32_t child)
{
	/* newest first: a pid gVisor reused belongs to its latest clone */
	for (unsigned i = 0; i < t->n; i++) {
		unsigned j = (t->next + MOAT_GVT_PARENTS - 1 - i) % MOAT_GVT_PARENTS;
		if (t->child[j] == child)
			return t->parent[j];
	}
	return 0;
}

/* ---- frames ---------------------------------------------------------------- */

size_t moat_gvt_frame_exec(const struct moat_gvt_point *pt, int32_t ppid, uint8_t *buf)
{
	struct moat_gvt_frame h = {
		.kind = MOAT_GVT_FRAME_EXEC,
		.flags = pt->truncated ? MOAT_GVT_F_TRUNCATED : 0,
		.pid = pt->tgid,
		.ppid = ppid,
		.sysno = (uint32_t)pt->sysno,
		.path_len = (uint32_t)pt->path.len,
		.cwd_len = (uint32_t)pt->cwd.len,
		.argc = pt->argc,
		.argv_len = (uint32_t)pt->argv_bytes,
	};
	size_t o = sizeof(h);
	if (pt->path.len)
		memcpy(buf + o, pt->path.p, pt->path.len);
	o += pt->path.len;
	if (pt->cwd.len)
		memcpy(buf + o, pt->cwd.p, pt->cwd.len);
	o += pt->cwd.len;
	for (unsigned i = 0; i < pt->argc; i++) {
		if (pt->argv[i].len)
			memcpy(buf + o, pt->argv[i].p, pt->argv[i].len);
		o += pt->argv[i].len;
		buf[o++] = '\0';
	}
	h.len = (uint32_t)o;
	memcpy(buf, &h, sizeof(h));
	return o;
}

size_t moat_gvt_frame_event(const struct moat_seccomp_event *ev, uint8_t *buf)
{
	struct moat_gvt_point pt = {
		.type = MOAT_GVT_MSG_SYSCALL_EXECVE,
		.tgid = ev->pid,
		.sysno = (uint64_t)(ev->nr == SYS_execveat ? SYS_execveat : SYS_execve),
		.truncated = ev->truncated,
	};
	size_t n = strnlen(ev->path, sizeof(ev->path));
	if (n > MOAT_GVT_PATH_MAX) {
		n = MOAT_GVT_PATH_MAX;
		pt.truncated = true;
	}
	pt.path = (struct moat_gvt_str){(const uint8_t *)ev->path, n};
	n = strnlen(ev->cwd, sizeof(ev->cwd));
	if (n > MOAT_GVT_PATH_MAX) {
		n = MOAT_GVT_PATH_MAX;
		pt.truncated = true;
	}
	pt.cwd = (struct moat_gvt_str){(const uint8_t *)ev->cwd, n};
	/* argv as the listener left it: each entry inside argv_buf, NUL-ended */
	for (unsigned i = 0; i < ev->argc && i < MOAT_GVT_ARGC; i++) {
		uint32_t off = ev->argv_off[i];
		if (off >= sizeof(ev->argv_buf)) {
			pt.truncated = true;
			break;
		}
		size_t len = strnlen(ev->argv_buf + off, sizeof(ev->argv_buf) - off);
		if (off + len >= sizeof(ev->argv_buf) ||
		    pt.argv_bytes + len + 1 > MOAT_GVT_ARGV_BYTES) {
			pt.truncated = true;
			break;
		}
		pt.argv[pt.argc++] =
			(struct moat_gvt_str){(const uint8_t *)ev->argv_buf + off, len};
		pt.argv_bytes += len + 1;
	}
	if (ev->argc > pt.argc)
		pt.truncated = true;
	return moat_gvt_frame_exec(&pt, ev->ppid, buf);
}

static const char *exec_name(uint32_t sysno)
{
	return sysno == SYS_execveat ? "execveat" : "execve";
}

ssize_t moat_gvt_frame_parse(const uint8_t *buf, size_t len, struct moat_gvt_frame *h,
			     struct moat_seccomp_event *ev)
{
	if (len < sizeof(*h))
		return 0;
	memcpy(h, buf, sizeof(*h));
	if (h->len < sizeof(*h) || h->len > MOAT_GVT_FRAME_MAX)
		return -EBADMSG;
	if (len < h->len)
		return 0;
	if (h->kind == MOAT_GVT_FRAME_COUNTS)
		return h->len == sizeof(*h) ? (ssize_t)h->len : -EBADMSG;
	if (h->kind != MOAT_GVT_FRAME_EXEC || h->path_len > MOAT_GVT_PATH_MAX ||
	    h->cwd_len > MOAT_GVT_PATH_MAX || h->argc > MOAT_GVT_ARGC ||
	    h->argv_len > MOAT_GVT_ARGV_BYTES ||
	    (uint64_t)sizeof(*h) + h->path_len + h->cwd_len + h->argv_len != h->len)
		return -EBADMSG;
	const uint8_t *p = buf + sizeof(*h);
	const uint8_t *argv = p + h->path_len + h->cwd_len;
	/* no NUL in path and cwd; argv exactly argc NUL-ended entries */
	if (memchr(p, 0, h->path_len + h->cwd_len))
		return -EBADMSG;
	unsigned nuls = 0;
	for (uint32_t i = 0; i < h->argv_len; i++)
		nuls += argv[i] == 0;
	if (nuls != h->argc || (h->argv_len && argv[h->argv_len - 1] != 0))
		return -EBADMSG;
	memset(ev, 0, offsetof(struct moat_seccomp_event, argv_off));
	ev->type = MOAT_SECCOMP_EVENT_EXEC;
	ev->pid = h->pid;
	ev->ppid = h->ppid;
	snprintf(ev->syscall, sizeof(ev->syscall), "%s", exec_name(h->sysno));
	ev->nr = h->sysno == SYS_execveat ? SYS_execveat : SYS_execve;
	memcpy(ev->path, p, h->path_len);
	ev->path[h->path_len] = '\0';
	memcpy(ev->cwd, p + h->path_len, h->cwd_len);
	ev->cwd[h->cwd_len] = '\0';
	memcpy(ev->argv_buf, argv, h->argv_len);
	uint32_t off = 0;
	for (unsigned i = 0; i < h->argc; i++) {
		ev->argv_off[i] = off;
		off += (uint32_t)strlen(ev->argv_buf + off) + 1;
	}
	ev->argc = h->argc;
	ev->truncated = (h->flags & MOAT_GVT_F_TRUNCATED) != 0;
	ev->dirfd = -100; /* AT_FDCWD: the fd inside gVisor means nothing here */
	return (ssize_t)h->len;
}
