/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The gvisor and vm backends' wait for moat's init (holder_wait.h). */
#include "sandbox/holder_wait.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "policy/errors.h"
#include "sandbox/backend_gvisor.h"
#include "sandbox/sandbox.h"
#include "shared/macro.h"
#include "supervisor/run.h"
#include "supervisor/supervise.h"

int moat_holder_wait_start(struct moat_run *r, struct moat_holder_wait *w)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = MOAT_TAG_CREATE};
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sb.sock_sup, &ev) < 0 ||
	    epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sb.setup_r, &ev) < 0)
		return moat_error_set(r->err, "setup", errno, "epoll: %s", strerror(errno));
	w->setup_open = true;
	return 0;
}

/* The init is ready: the control channel is the sandbox's from here. */
static int ready(struct moat_run *r, struct moat_holder_wait *w)
{
	if (!w->sock_hup)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.sock_sup, NULL);
	if (w->setup_open)
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.setup_r, NULL);
	w->setup_open = false;
	r->sb.setup_r = safe_close(r->sb.setup_r);
	if (w->trace) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = MOAT_TAG_BACKEND};
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, moat_gvt_fd(w->trace), &ev) < 0)
			return moat_error_set(r->err, "isolation", errno,
					      "cannot watch the exec records: %s", strerror(errno));
	}
	return 1;
}

static int setup_record(struct moat_run *r, struct moat_setup_error *e)
{
	e->detail[sizeof(e->detail) - 1] = '\0';
	char step[32] = "";
	if (e->step >= 0)
		snprintf(step, sizeof(step), " (plan step %d)", e->step + 1);
	return moat_error_set(r->err, moat_setup_stage_name(e->stage), e->err,
			      "%s step failed%s: %s: %s", moat_setup_stage_name(e->stage), step,
			      e->detail, strerror(e->err));
}

int moat_holder_wait_poll(struct moat_run *r, struct moat_holder_wait *w)
{
	for (;;) {
		if (w->done && (!w->done_after_setup || !w->setup_open))
			return ready(r, w);
		struct pollfd pf[3] = {{.fd = w->sock_hup ? -1 : r->sb.sock_sup, .events = POLLIN},
				       {.fd = w->setup_open ? r->sb.setup_r : -1, .events = POLLIN},
				       {.fd = r->pidfd, .events = POLLIN}};
		int k = poll(pf, 3, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return moat_error_set(r->err, "setup", errno, "poll: %s", strerror(errno));
		if (pf[1].revents) {
			struct moat_setup_error e;
			ssize_t n = read(r->sb.setup_r, &e, sizeof(e));
			if (n < 0 && errno == EINTR)
				continue;
			if (n == (ssize_t)sizeof(e))
				return setup_record(r, &e);
			/* EOF (or a short record): the holder's end is closed */
			epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.setup_r, NULL);
			w->setup_open = false;
		}
		bool hup = pf[0].revents & (POLLHUP | POLLERR);
		if (pf[0].revents & POLLIN) {
			int kind = 0, fd = -1;
			if (moat_sandbox_recv_fd(r->sb.sock_sup, &kind, &fd) >= 0) {
				if (kind == MOAT_FD_DONE)
					w->done = true;
				else if (kind == MOAT_FD_UPPER && r->upper_fd < 0)
					r->upper_fd = TAKE_FD(fd);
				else if (kind == MOAT_FD_OUTPUT && r->output_fd < 0)
					r->output_fd = TAKE_FD(fd);
				else if (moat_supervise_take_fd(r, kind, fd) > 0)
					fd = -1; /* a network listener (--net allow) */
				safe_close(fd);
				continue;
			}
			hup = true; /* the channel ended (or broke) before DONE */
		}
		if (hup && !w->sock_hup) {
			/* level-triggered: off the epoll set, or it wakes forever */
			epoll_ctl(r->epfd, EPOLL_CTL_DEL, r->sb.sock_sup, NULL);
			w->sock_hup = true;
		}
		if (!w->done && (w->sock_hup || pf[2].revents)) {
			if (w->setup_open)
				return 0; /* the pipe says why (its record or EOF) first */
			char tail[200] = "";
			if (w->ended_detail)
				w->ended_detail(r, tail, sizeof(tail));
			return moat_error_set(r->err, "isolation", EPROTO, "%s%s%s", w->ended,
					      tail[0] ? ": " : "", tail);
		}
		if (!pf[1].revents)
			return 0; /* nothing more now */
	}
}
