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

#include <jansson.h>

#include "lib/audit.h"
#include "lib/errors.h"
#include "lib/netns.h"
#include "lib/observe.h"
#include "proxy/event.h"
#include "proxy/proxy.h"
#include "shared/macro.h"

struct moat_net_run {
	struct moat_proxy_config *cfg;
	int fds[MOAT_NETNS_N_FDS];
	unsigned n_fds;
	pid_t pid;
	int ev_fd;
	char line[MOAT_PROXY_EVENT_MAX + 1]; /* a partial event line */
	size_t line_len;
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
	n->ev_fd = -1;
	for (unsigned i = 0; i < MOAT_NETNS_N_FDS; i++)
		n->fds[i] = -1;
	r->net = n;
	k = moat_proxy_config_from_policy(r->p, &n->cfg);
	if (k < 0)
		return moat_error_set(r->err, "network", -k, "invalid network rule");
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
	int k;

	/* Signals stay blocked (as in the supervisor) until the worker has
	 * its SIGTERM handler: a run that ends at once still gets its events. */
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

static const char *jstr(json_t *o, const char *key)
{
	const char *v = json_string_value(json_object_get(o, key));
	return v && *v ? v : NULL;
}

static uint64_t jnum(json_t *o, const char *key)
{
	json_int_t v = json_integer_value(json_object_get(o, key));
	return v > 0 ? (uint64_t)v : 0;
}

/* One line from the worker (which parses hostile bytes, so its output is
 * parsed as untrusted too) becomes an audit event; a refusal also an alert. */
static void record(struct moat_run *r, const char *line, size_t len)
{
	struct moat_audit *a = moat_run_audit(r);
	json_t *o = json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
	const char *proto, *host, *raw, *reason, *rule, *decision;
	bool allow;

	if (!json_is_object(o)) {
		json_decref(o);
		return;
	}
	proto = jstr(o, "proto");
	decision = jstr(o, "decision");
	allow = decision && streq(decision, "allow");
	host = jstr(o, "name");
	raw = jstr(o, "raw");
	reason = jstr(o, "reason");
	rule = jstr(o, "rule");
	if (proto && streq(proto, "dns")) {
		MOAT_AUDIT(a, MOAT_EV_DNS, MOAT_F_STR("name", host ? host : raw),
			   MOAT_F_STR("qtype", jstr(o, "method")),
			   MOAT_F_STR("action", allow ? "allow" : "deny"),
			   MOAT_F_STR("answers", jstr(o, "addr")), MOAT_F_STR("reason", reason),
			   MOAT_F_BOOL("denied", !allow));
		if (!allow)
			MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "dns_denied"),
				   MOAT_F_STR("name", raw), MOAT_F_STR("reason", reason));
	} else {
		MOAT_AUDIT(a, MOAT_EV_NET, MOAT_F_STR("proto", proto), MOAT_F_STR("host", host),
			   MOAT_F_STR("raw", raw), MOAT_F_STR("addr", jstr(o, "addr")),
			   MOAT_F_UINT("port", jnum(o, "port")),
			   MOAT_F_STR("method", jstr(o, "method")),
			   MOAT_F_STR("sni", jstr(o, "sni")),
			   MOAT_F_STR("action", allow ? "allow" : "deny"),
			   MOAT_F_STR("rule", allow ? rule : NULL), MOAT_F_STR("reason", reason),
			   MOAT_F_STR("suggest", allow ? NULL : rule),
			   MOAT_F_UINT("bytes_up", jnum(o, "bytes_up")),
			   MOAT_F_UINT("bytes_down", jnum(o, "bytes_down")),
			   MOAT_F_UINT("duration_ms", jnum(o, "duration_ms")),
			   MOAT_F_BOOL("denied", !allow));
		if (!allow)
			MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "net_denied"),
				   MOAT_F_STR("proto", proto),
				   MOAT_F_STR("host", host ? host : raw),
				   MOAT_F_UINT("port", jnum(o, "port")),
				   MOAT_F_STR("reason", reason), MOAT_F_STR("suggest", rule));
	}
	json_decref(o);
}

void moat_net_dispatch(struct moat_run *r)
{
	struct moat_net_run *n = r->net;
	char buf[16384];
	ssize_t k;

	if (!n || n->ev_fd < 0)
		return;
	while ((k = read(n->ev_fd, buf, sizeof(buf))) > 0) {
		for (ssize_t i = 0; i < k; i++) {
			if (buf[i] == '\n') {
				record(r, n->line, n->line_len);
				n->line_len = 0;
			} else if (n->line_len < sizeof(n->line) - 1) {
				n->line[n->line_len++] = buf[i];
			}
		}
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
	moat_proxy_config_free(n->cfg);
	free(n);
	r->net = NULL;
}
