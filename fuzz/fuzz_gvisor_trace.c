/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: one message of gVisor's remote trace sink (header + protobuf,
 * as the Sentry sends it; corpus recorded from runsc 0.0~20221219) through
 * the receiver's decoder, then its frame through the supervisor's check
 * (sandbox/gvisor_trace.c). Every string stays inside the message, an
 * exec's frame always passes the check and gives back the same record, and
 * the same bytes as a frame or a handshake never crash; a frame that
 * passes, framed again from its event (the vm level's guest: vm_guest.c),
 * passes and gives back the same record. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "sandbox/gvisor_trace.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct moat_gvt_point pt;
static uint8_t frame[MOAT_GVT_FRAME_MAX];
static struct moat_seccomp_event ev, ev2;

static void inside(const struct moat_gvt_str *s, const uint8_t *data, size_t size)
{
	if (s->len && (s->p < data || s->p + s->len > data + size || memchr(s->p, 0, s->len)))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_gvt_frame h;
	(void)moat_gvt_handshake_ok(data, size);
	/* the frame the supervisor's check gives back as an event, framed
	 * again as the vm level's guest frames a listener's event: the same */
	ssize_t fl = moat_gvt_frame_parse(data, size, &h, &ev);
	if (fl > 0 && h.kind == MOAT_GVT_FRAME_EXEC) {
		size_t len = moat_gvt_frame_event(&ev, frame);
		struct moat_gvt_frame h2;
		if (len > sizeof(frame) ||
		    moat_gvt_frame_parse(frame, len, &h2, &ev2) != (ssize_t)len ||
		    strcmp(ev2.path, ev.path) || strcmp(ev2.syscall, ev.syscall) ||
		    strcmp(ev2.cwd, ev.cwd) || ev2.argc != ev.argc || ev2.pid != ev.pid ||
		    ev2.ppid != ev.ppid || ev2.truncated != ev.truncated)
			abort();
	}
	if (moat_gvt_decode(data, size, &pt) < 0)
		return 0;
	inside(&pt.path, data, size);
	inside(&pt.cwd, data, size);
	if (pt.argc > MOAT_GVT_ARGC || pt.argv_bytes > MOAT_GVT_ARGV_BYTES ||
	    pt.path.len > MOAT_GVT_PATH_MAX || pt.cwd.len > MOAT_GVT_PATH_MAX)
		abort();
	for (unsigned i = 0; i < pt.argc; i++)
		inside(&pt.argv[i], data, size);
	if (pt.type != MOAT_GVT_MSG_SYSCALL_EXECVE)
		return 0;
	size_t len = moat_gvt_frame_exec(&pt, 7, frame);
	if (len > sizeof(frame) || moat_gvt_frame_parse(frame, len, &h, &ev) != (ssize_t)len)
		abort();
	if (moat_gvt_frame_parse(frame, len - 1, &h, &ev) != 0)
		abort(); /* a partial frame is "not yet" */
	if (ev.pid != pt.tgid || ev.ppid != 7 || ev.argc != pt.argc ||
	    strlen(ev.path) != pt.path.len ||
	    (pt.path.len && memcmp(ev.path, pt.path.p, pt.path.len)) ||
	    strlen(ev.cwd) != pt.cwd.len || ev.truncated != pt.truncated)
		abort();
	for (unsigned i = 0; i < pt.argc; i++) {
		const char *a = moat_seccomp_event_arg(&ev, i);
		if (!a || strlen(a) != pt.argv[i].len ||
		    (pt.argv[i].len && memcmp(a, pt.argv[i].p, pt.argv[i].len)))
			abort();
	}
	return 0;
}
