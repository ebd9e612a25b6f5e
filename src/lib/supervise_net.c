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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/ssl.h>

#include "lib/audit.h"
#include "lib/errors.h"
#include "lib/net_env.h"
#include "lib/netns.h"
#include "lib/observe.h"
#include "proxy/event.h"
#include "proxy/proxy.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "shared/macro.h"

/* Where the sandbox's CA bundle (system roots + the per-run CA) is bound. */
#define SANDBOX_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct moat_net_run {
	struct moat_proxy_config *cfg;
	/* credential proxy: placeholders before clone, values only in the worker */
	struct moat_secrets *secrets;
	struct moat_tls_ca *ca;
	struct ssl_ctx_st *upstream_tls;
	char bundle_dir[64]; /* a private temp dir holding the CA bundle, or "" */
	char bundle_path[96];
	int fds[MOAT_NETNS_N_FDS];
	unsigned n_fds;
	pid_t pid;
	int ev_fd;
	char line[MOAT_PROXY_EVENT_MAX + 1]; /* a partial event line */
	/* denied destinations, for the summary's top list */
	struct denied_dest {
		char dest[160];
		char rule[160];
		uint64_t count;
	} denied[32];
	unsigned n_denied;
	size_t line_len;
};

static struct moat_net_run *net_get(struct moat_run *r)
{
	struct moat_net_run *n = r->net;
	if (n)
		return n;
	n = calloc(1, sizeof(*n));
	if (!n)
		return NULL;
	n->pid = -1;
	n->ev_fd = -1;
	for (unsigned i = 0; i < MOAT_NETNS_N_FDS; i++)
		n->fds[i] = -1;
	r->net = n;
	return n;
}

int moat_net_prepare(struct moat_run *r)
{
	struct moat_net_run *n;
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	n = net_get(r);
	if (!n)
		return -ENOMEM;
	if (n->cfg)
		return 0;
	k = moat_proxy_config_from_policy(r->p, &n->cfg);
	if (k < 0)
		return moat_error_set(r->err, "network", -k, "invalid network rule");
	return 0;
}

/* The credential proxy's part before clone: placeholders into the sandbox's
 * environment, and a per-run CA whose bundle replaces the system bundle inside
 * (only when some host is intercepted: a secret's host or an http rule's). */
static int credentials_env(struct moat_run *r, struct moat_net_run *n,
			   int (*push)(struct moat_run *, const char *, const char *))
{
	const struct moat_policy *p = r->p;
	int k;

	if (!moat_net_needs_credentials(p))
		return 0;
	if (p->n_secrets) {
		k = moat_secrets_new_placeholders(p->secrets, p->n_secrets, &n->secrets, r->err);
		if (k < 0)
			return k;
		for (unsigned i = 0; i < moat_secrets_count(n->secrets); i++)
			if ((k = push(r, moat_secrets_name(n->secrets, i),
				      moat_secrets_placeholder(n->secrets, i))) < 0)
				return k;
	}
	k = moat_tls_ca_new(r->run_id, &n->ca);
	if (k < 0)
		return moat_error_set(r->err, "credentials", -k, "cannot create the per-run CA: %s",
				      strerror(-k));
	snprintf(n->bundle_dir, sizeof(n->bundle_dir), "/tmp/moat-ca-%s.XXXXXX", r->run_id);
	if (!mkdtemp(n->bundle_dir)) {
		k = -errno;
		n->bundle_dir[0] = 0;
		return moat_error_set(r->err, "credentials", -k,
				      "cannot create a directory for the CA bundle: %s",
				      strerror(-k));
	}
	chmod(n->bundle_dir, 0755);
	snprintf(n->bundle_path, sizeof(n->bundle_path), "%s/ca-bundle.crt", n->bundle_dir);
	int fd = open(n->bundle_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return moat_error_set(r->err, "credentials", errno,
				      "cannot write the CA bundle: %s", strerror(errno));
	k = moat_tls_write_bundle(n->ca, SANDBOX_CA_BUNDLE, fd);
	close(fd);
	if (k < 0)
		return moat_error_set(r->err, "credentials", -k, "cannot write the CA bundle: %s",
				      strerror(-k));
	/* bound read-only over the system bundle, after the /etc layout */
	if (r->plan->n_steps >= MOAT_PLAN_MAX_STEPS)
		return moat_error_set(r->err, "plan", E2BIG,
				      "no room in the plan for the CA bundle");
	r->plan->steps[r->plan->n_steps++] = (struct moat_step){
		.op = MOAT_STEP_BIND,
		.src = n->bundle_path,
		.dest = SANDBOX_CA_BUNDLE,
		.flags = MOAT_STEPF_RO,
	};
	for (const char *const *v = moat_tls_bundle_env(); *v; v++)
		if ((k = push(r, *v, SANDBOX_CA_BUNDLE)) < 0)
			return k;
	return 0;
}

int moat_net_env(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *))
{
	struct moat_net_run *n;
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	if ((k = moat_net_proxy_env(r, push)) < 0)
		return k;
	n = net_get(r);
	if (!n)
		return -ENOMEM;
	return credentials_env(r, n, push);
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

	/* Not dumpable, no core, secure heap: it holds the secrets' values. */
	if (n->secrets && moat_secrets_harden_process() < 0)
		_exit(MOAT_EXIT_SETUP);
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

static void drop_credentials(struct moat_net_run *n)
{
	if (n->secrets) {
		moat_secrets_drop_values(n->secrets);
		moat_secrets_scrub_environ(n->secrets);
	}
	if (n->cfg) {
		n->cfg->ca = NULL;
		n->cfg->upstream_tls = NULL;
	}
	n->ca = moat_tls_ca_free(n->ca);
	if (n->upstream_tls) {
		SSL_CTX_free(n->upstream_tls);
		n->upstream_tls = NULL;
	}
}

int moat_net_started(struct moat_run *r)
{
	struct moat_net_run *n;
	int k;

	/* The moat executable loads this code only after clone for a run
	 * without credentials: the configuration is made here then. */
	if ((k = moat_net_prepare(r)) < 0)
		return k;
	n = r->net;
	if (!n)
		return 0;
	if (n->secrets) {
		/* The values are loaded only now, while the sandbox sets itself up
		 * and before its command can run: the sandbox's init (a fork of this
		 * process) never held them, the proxy worker (forked later) does. */
		k = moat_secrets_load(n->secrets, r->err);
		if (k < 0)
			return k;
		n->cfg->secrets = n->secrets;
	}
	if (n->ca) {
		k = moat_tls_client_ctx(r->p->upstream_ca, &n->upstream_tls);
		if (k < 0)
			return moat_error_set(
				r->err, "credentials", -k,
				"cannot load the trust store for upstream TLS%s%s: %s",
				r->p->upstream_ca ? " " : "",
				r->p->upstream_ca ? r->p->upstream_ca : "", strerror(-k));
		n->cfg->ca = n->ca;
		n->cfg->upstream_tls = n->upstream_tls;
		n->cfg->http_rules = r->p->http_rules;
		n->cfg->n_http_rules = r->p->n_http_rules;
	}
	return 0;
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
	/* Only the worker keeps the values and the CA key. */
	drop_credentials(n);
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
static void count_denied(struct moat_net_run *n, const char *dest, const char *rule)
{
	if (!n || !dest)
		return;
	for (unsigned i = 0; i < n->n_denied; i++)
		if (streq(n->denied[i].dest, dest)) {
			n->denied[i].count++;
			return;
		}
	if (n->n_denied >= ELEMENTSOF(n->denied))
		return; /* the summary shows the first ones; the log has them all */
	struct denied_dest *d = &n->denied[n->n_denied++];
	snprintf(d->dest, sizeof(d->dest), "%s", dest);
	snprintf(d->rule, sizeof(d->rule), "%s", rule ? rule : "");
	d->count = 1;
}

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
	char dest[200];
	if (proto && streq(proto, "dns")) {
		if (!allow) {
			snprintf(dest, sizeof(dest), "dns %s", raw ? raw : host ? host : "?");
			count_denied(r->net, dest, NULL);
		}
		MOAT_AUDIT(a, MOAT_EV_DNS, MOAT_F_STR("name", host ? host : raw),
			   MOAT_F_STR("qtype", jstr(o, "method")),
			   MOAT_F_STR("action", allow ? "allow" : "deny"),
			   MOAT_F_STR("answers", jstr(o, "addr")), MOAT_F_STR("reason", reason),
			   MOAT_F_BOOL("denied", !allow));
		if (!allow)
			MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "dns_denied"),
				   MOAT_F_STR("name", raw), MOAT_F_STR("reason", reason));
	} else {
		if (allow) {
			r->st->net_allowed++;
		} else {
			r->st->net_denied++;
			snprintf(dest, sizeof(dest), "%s:%llu",
				 host			   ? host
					 : raw		   ? raw
					 : jstr(o, "addr") ? jstr(o, "addr")
							   : "?",
				 (unsigned long long)jnum(o, "port"));
			count_denied(r->net, dest, rule);
		}
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

static int by_count(const void *a, const void *b)
{
	const struct denied_dest *x = a, *y = b;
	return x->count < y->count ? 1 : x->count > y->count ? -1 : 0;
}

/* The top denied destinations into the status, for the summary. */
static void top_denied(struct moat_run *r)
{
	struct moat_net_run *n = r->net;
	size_t len = 0;
	if (!n || !n->n_denied)
		return;
	qsort(n->denied, n->n_denied, sizeof(n->denied[0]), by_count);
	for (unsigned i = 0; i < n->n_denied && i < 5; i++) {
		int w = snprintf(r->st->net_top_denied + len, sizeof(r->st->net_top_denied) - len,
				 "%llu %s\t%s\n", (unsigned long long)n->denied[i].count,
				 n->denied[i].dest, n->denied[i].rule);
		if (w < 0 || (size_t)w >= sizeof(r->st->net_top_denied) - len)
			break;
		len += (size_t)w;
	}
}

void moat_net_finish(struct moat_run *r)
{
	struct moat_net_run *n = r->net;

	/* Ask the worker to close what is still open (each connection writes
	 * its event) and exit; read until its end of the pipe closes (1 s at
	 * most). */
	if (!n || n->pid <= 0 || n->ev_fd < 0) {
		top_denied(r);
		return;
	}
	kill(n->pid, SIGTERM);
	for (int i = 0; n->ev_fd >= 0 && i < 100; i++) {
		struct pollfd pf = {.fd = n->ev_fd, .events = POLLIN};
		if (poll(&pf, 1, 10) < 0 && errno != EINTR)
			break;
		moat_net_dispatch(r);
	}
	top_denied(r);
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
	drop_credentials(n);
	n->secrets = moat_secrets_free(n->secrets);
	if (n->bundle_dir[0]) {
		unlink(n->bundle_path);
		rmdir(n->bundle_dir);
	}
	moat_proxy_config_free(n->cfg);
	free(n);
	r->net = NULL;
}
