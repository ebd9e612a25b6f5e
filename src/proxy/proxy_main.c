/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The proxy worker's start: limits and timeouts from the config, the resolver,
 * the listeners, the seccomp filter, then the loop until stop. */
#include "proxy/proxy_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "proxy/resolver.h"
#include "shared/fdset.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define TICK_MS 200

static volatile int terminate;

static void on_term(int sig)
{
	terminate = 1;
}

static int listen_add(struct proxy *p, int fd, moat_loop_fd_fn fn)
{
	if (fd < 0)
		return 0;
	if (fcntl(fd, F_SETFL, O_NONBLOCK) < 0)
		return negerrno();
	return moat_loop_add(p->loop, fd, EPOLLIN, fn, p);
}

int moat_proxy_main(const struct moat_proxy_config *cfg, const struct moat_netns_fds *fds,
		    int event_fd)
{
	struct proxy p = {.cfg = cfg, .event_fd = event_fd, .fds = *fds, .res_fd = -1};
	struct rlimit rl;
	int r;

	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return negerrno();
	if (getppid() == 1)
		return -ESRCH; /* the supervisor is already gone */
	signal(SIGPIPE, SIG_IGN);
	/* SIGTERM: close every connection (each writes its event), then exit. */
	{
		struct sigaction sa = {.sa_handler = on_term};
		sigemptyset(&sa.sa_mask);
		if (sigaction(SIGTERM, &sa, NULL) < 0)
			return negerrno();
	}
	/* Two sockets and up to four pipe ends per connection. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = MIN(rl.rlim_max, (rlim_t)1 << 16);
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	p.max_conns = cfg->max_conns ? cfg->max_conns : 1024;
	if (p.max_conns > 65535)
		p.max_conns = 65535;
	p.hlim.max_head = cfg->max_head ? cfg->max_head : MOAT_HTTP1_DEFAULT_MAX_HEAD;
	p.in_cap = MAX((size_t)p.hlim.max_head, (size_t)INSPECT_MAX);
	p.head_ms = cfg->head_timeout_ms ? cfg->head_timeout_ms : 10000;
	p.connect_ms = cfg->connect_timeout_ms ? cfg->connect_timeout_ms : 10000;
	p.idle_ms = cfg->idle_timeout_ms ? cfg->idle_timeout_ms : 600000;
	p.now = moat_loop_now_ms();
	p.nflog_budget = NFLOG_EVENTS_PER_TICK;
	p.conns = calloc(p.max_conns, sizeof(*p.conns));
	if (!p.conns)
		return -ENOMEM;
	r = moat_loop_new(getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < 1u << 16
				  ? (unsigned)rl.rlim_cur
				  : 1u << 16,
			  &p.loop);
	if (r < 0)
		return r;
	if (cfg->has_resolver) {
		p.res_pid = cfg->resolver_pid;
		p.res_fd = cfg->resolver_fd;
		if (fcntl(p.res_fd, F_SETFL, O_NONBLOCK) < 0)
			return negerrno();
		r = moat_loop_add(p.loop, p.res_fd, EPOLLIN, moat_proxy_on_resolver, &p);
		if (r < 0)
			return r;
	} else if (!cfg->no_resolver) {
		r = moat_resolver_start(&p.res_pid, &p.res_fd);
		if (r < 0)
			return r;
		r = moat_loop_add(p.loop, p.res_fd, EPOLLIN, moat_proxy_on_resolver, &p);
		if (r < 0)
			return r;
	}
	if ((r = listen_add(&p, fds->http, moat_proxy_on_listen)) < 0 ||
	    (r = listen_add(&p, fds->socks, moat_proxy_on_listen)) < 0 ||
	    (r = listen_add(&p, fds->transparent4, moat_proxy_on_listen)) < 0 ||
	    (r = listen_add(&p, fds->transparent6, moat_proxy_on_listen)) < 0 ||
	    (r = listen_add(&p, fds->dns_tcp, moat_proxy_on_listen)) < 0 ||
	    (r = listen_add(&p, fds->dns_udp, moat_proxy_on_dns_udp)) < 0 ||
	    (r = listen_add(&p, fds->nflog, moat_proxy_on_nflog)) < 0)
		return r;
	moat_loop_set_tick(p.loop, TICK_MS, moat_proxy_on_tick, &p);
	/* What the worker holds as it starts serving, for the audit log (the
	 * table is read from /proc, so before the filter). */
	if (cfg->report_fds && event_fd >= 0) {
		char fds_text[1024], esc[2048], line[2100];
		if ((r = moat_fdset_describe(fds_text, sizeof(fds_text))) < 0)
			return r;
		moat_json_escape(fds_text, strlen(fds_text), esc, sizeof(esc));
		int w = snprintf(line, sizeof(line), "{\"proto\":\"helper\",\"fds\":\"%s\"}\n",
				 esc);
		if (w > 0 && (size_t)w < sizeof(line))
			(void)!write(event_fd, line, (size_t)w);
	}
	/* From here on: no new files, no exec, only the sockets we have. The
	 * worker cannot chroot (unprivileged); it simply never opens a path. */
	if (!cfg->no_seccomp) {
		r = moat_proxy_install_seccomp();
		if (r < 0)
			return r;
	}
	moat_loop_set_stop_flag(p.loop, &terminate);
	/* The caller may have forked us with signals blocked; a SIGTERM that
	 * is already pending lands here and ends the loop after one pass. */
	{
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
	}
	r = moat_loop_run(p.loop);
	p.now = moat_loop_now_ms();
	/* Packets dropped just before the end are already queued: record them. */
	p.nflog_budget = NFLOG_EVENTS_PER_TICK;
	if (fds->nflog >= 0)
		moat_proxy_on_nflog(p.loop, fds->nflog, EPOLLIN, &p);
	for (unsigned i = 0; i < p.max_conns; i++)
		if (p.conns[i])
			moat_proxy_conn_close(p.conns[i]);
	return r;
}
