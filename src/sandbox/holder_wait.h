/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The wait of the gvisor and vm backends for moat's init inside their
 * engine (runsc's sandbox, QEMU's guest), as one poll step of the
 * lifecycle (backend.h poll): the holder's setup pipe (a record: a step
 * failed; EOF: the holder executed the engine) and the control channel
 * (the fds the init hands over, DONE last). Both stay on r->epfd with tag
 * MOAT_TAG_CREATE until the init is ready, so a caller holding many
 * sandboxes (moat serve) goes on while an engine starts or a guest boots.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

struct moat_run;
struct moat_gvt_sup;

struct moat_holder_wait {
	bool setup_open; /* the setup pipe is on r->epfd */
	bool sock_hup; /* the control channel ended before DONE */
	bool done; /* DONE came (ready once the setup pipe is closed too) */
	/* DONE counts only after the setup pipe's EOF (gvisor: the init's
	 * DONE can only follow runsc's exec; vm: the holder keeps the pipe) */
	bool done_after_setup;
	/* the holder ended during set-up without a record: the message,
	 * and an optional detail (gvisor: the tail of runsc's log) */
	const char *ended;
	void (*ended_detail)(struct moat_run *r, char *buf, size_t len);
	struct moat_gvt_sup *trace; /* the exec records' receiver, or NULL */
};

/* After the holder was released: the channels join r->epfd. */
int moat_holder_wait_start(struct moat_run *r, struct moat_holder_wait *w);
/* One step, never blocking: 1 ready (the set-up's channels left r->epfd,
 * the setup pipe is closed, the trace's fd joined it with tag
 * MOAT_TAG_BACKEND), 0 not yet, < 0 with r->err filled. */
int moat_holder_wait_poll(struct moat_run *r, struct moat_holder_wait *w);
