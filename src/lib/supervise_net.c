/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "lib/supervise_net.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/errors.h"
#include "lib/netns.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

struct moat_net_run {
	struct moat_proxy_config *cfg;
	int fds[MOAT_NETNS_N_FDS];
	unsigned n_fds;
	pid_t pid;
	int ev_fd;
	int log_fd;
	uint64_t n_allow, n_deny;
};

int moat_net_prepare(struct moat_run *r)
{
	struct moat_net_run *n;
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	n = calloc(1, sizeof(*n));
	if (!n)
		return -ENOMEM;
	n->pid = -1;
	n->ev_fd = n->log_fd = -1;
	for (unsigned i = 0; i < MOAT_NETNS_N_FDS; i++)
		n->fds[i] = -1;
	r->net = n;
	k = moat_proxy_config_from_policy(r->p, &n->cfg);
	if (k < 0)
		return moat_error_set(r->err, "network", -k, "invalid network rule");
	if (r->p->log_path) {
		n->log_fd = open(r->p->log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
		if (n->log_fd < 0)
			return moat_error_set(r->err, "log", errno, "cannot open %s",
					      r->p->log_path);
	}
	return 0;
}

int moat_net_env(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *))
{
	static const char *const vars[][2] = {
		{"HTTP_PROXY", "http://127.0.0.1:3128"},
		{"http_proxy", "http://127.0.0.1:3128"},
		{"HTTPS_PROXY", "http://127.0.0.1:3128"},
		{"https_proxy", "http://127.0.0.1:3128"},
		{"ALL_PROXY", "socks5h://127.0.0.1:1080"},
		{"all_proxy", "socks5h://127.0.0.1:1080"},
		{"NO_PROXY", "localhost,127.0.0.1,::1"},
		{"no_proxy", "localhost,127.0.0.1,::1"},
	};
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(vars); i++)
		if ((k = push(r, vars[i][0], vars[i][1])) < 0)
			return k;
	return 0;
}

int moat_net_take_fd(struct moat_run *r, int kind, int fd)
{
	struct moat_net_run *n = r->net;
	unsigned i;

	if (kind < MOAT_FD_NET || kind >= MOAT_FD_NET + MOAT_NETNS_N_FDS)
		return 0;
	i = (unsigned)(kind - MOAT_FD_NET);
	if (!n || n->fds[i] >= 0 || i != n->n_fds) {
		safe_close(fd); /* unexpected: never serve a listener twice */
		return 1;
	}
	n->fds[i] = fd;
	n->n_fds++;
	return 1;
}

_noreturn_ static void worker(struct moat_run *r, int ev_w)
{
	struct moat_net_run *n = r->net;
	struct moat_netns_fds f;
	sigset_t none;
	int k;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* The worker parses hostile bytes: in root mode it becomes the
	 * sandbox's unprivileged host uid (it only needs to dial out). */
	if (geteuid() == 0 &&
	    (setgroups(0, NULL) < 0 ||
	     setresgid(r->sb.host_gid, r->sb.host_gid, r->sb.host_gid) < 0 ||
	     setresuid(r->sb.host_uid, r->sb.host_uid, r->sb.host_uid) < 0))
		_exit(MOAT_EXIT_SETUP);
	if (moat_netns_fds_from_array(n->fds, n->n_fds, &f) < 0)
		_exit(MOAT_EXIT_SETUP);
	k = moat_proxy_main(n->cfg, &f, ev_w);
	_exit(k < 0 ? MOAT_EXIT_SETUP : 0);
}

int moat_net_start(struct moat_run *r, int epfd, uint32_t tag)
{
	struct moat_net_run *n = r->net;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	int p[2];

	if (!n)
		return 0;
	if (n->n_fds < MOAT_NETNS_N_FDS - 1)
		return moat_error_set(r->err, "network", EPROTO,
				      "the sandbox did not hand over its network listeners");
	if (pipe2(p, O_CLOEXEC) < 0)
		return moat_error_set(r->err, "network", errno, "pipe");
	n->pid = fork();
	if (n->pid < 0) {
		close(p[0]);
		close(p[1]);
		return moat_error_set(r->err, "network", errno, "cannot start the proxy");
	}
	if (n->pid == 0) {
		close(p[0]);
		worker(r, p[1]);
	}
	close(p[1]);
	n->ev_fd = p[0];
	(void)fcntl(n->ev_fd, F_SETFL, O_NONBLOCK);
	/* The worker holds the listeners now: the sandbox's network fails
	 * closed (connection refused) if it dies. */
	for (unsigned i = 0; i < n->n_fds; i++)
		n->fds[i] = safe_close(n->fds[i]);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, n->ev_fd, &ev) < 0)
		return moat_error_set(r->err, "network", errno, "epoll");
	return 0;
}

static void count(struct moat_net_run *n, const char *buf, size_t len)
{
	const char *p = buf, *end = buf + len;
	while ((p = memmem(p, (size_t)(end - p), "\"decision\":\"", 12))) {
		p += 12;
		if (end - p >= 5 && memcmp(p, "allow", 5) == 0)
			n->n_allow++;
		else
			n->n_deny++;
	}
}

void moat_net_dispatch(struct moat_run *r)
{
	struct moat_net_run *n = r->net;
	char buf[16384];
	ssize_t k;

	if (!n || n->ev_fd < 0)
		return;
	while ((k = read(n->ev_fd, buf, sizeof(buf))) > 0) {
		/* The worker writes whole lines (< PIPE_BUF, one write each). */
		count(n, buf, (size_t)k);
		if (n->log_fd >= 0)
			(void)!write(n->log_fd, buf, (size_t)k);
	}
	if (k == 0)
		n->ev_fd = safe_close(n->ev_fd); /* the worker is gone */
}

void moat_net_finish(struct moat_run *r)
{
	struct moat_net_run *n = r->net;

	/* Ask the worker to close what is still open (each connection writes
	 * its event) and exit; read until its end of the pipe closes (1 s at
	 * most). */
	if (!n || n->pid <= 0 || n->ev_fd < 0)
		return;
	kill(n->pid, SIGTERM);
	for (int i = 0; n->ev_fd >= 0 && i < 100; i++) {
		struct pollfd pf = {.fd = n->ev_fd, .events = POLLIN};
		if (poll(&pf, 1, 10) < 0 && errno != EINTR)
			break;
		moat_net_dispatch(r);
	}
}

void moat_net_teardown(struct moat_run *r)
{
	struct moat_net_run *n = r->net;

	if (!n)
		return;
	if (n->pid > 0) {
		kill(n->pid, SIGKILL);
		while (waitpid(n->pid, NULL, 0) < 0 && errno == EINTR)
			;
	}
	for (unsigned i = 0; i < MOAT_NETNS_N_FDS; i++)
		safe_close(n->fds[i]);
	safe_close(n->ev_fd);
	safe_close(n->log_fd);
	moat_proxy_config_free(n->cfg);
	free(n);
	r->net = NULL;
}
