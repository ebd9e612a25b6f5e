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
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "lib/audit.h"
#include "lib/errors.h"
#include "lib/net_env.h"
#include "lib/net_plugin.h"
#include "lib/netns.h"
#include "lib/observe.h"
#include "proxy/event.h"
#include "proxy/resolver.h"
#include "proxy/proxy.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

struct moat_net_run {
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
	/* opened in moat_net_started(), before the sandbox's command can run:
	 * moat's own executable (for the helper's exec) and /dev/null */
	int exe_fd;
	int null_fd;
	int ctl_fd; /* the helper's control socket, until it has the listeners */
	bool helper_reported; /* its one "helper" event is in the log */
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
	n->exe_fd = -1;
	n->null_fd = -1;
	n->ctl_fd = -1;
	for (unsigned i = 0; i < MOAT_NETNS_N_FDS; i++)
		n->fds[i] = -1;
	r->net = n;
	return n;
}

int moat_net_prepare(struct moat_run *r)
{
	if (r->plan->net.mode != MOAT_NET_ALLOW)
		return 0;
	if (!net_get(r))
		return -ENOMEM;
	/* the rules were converted once, by the plan; the helper converts the
	 * serialized policy for itself (moat_net_helper_main) */
	return moat_net_check_rules(r);
}

/* The credential proxy's part before clone: placeholders into the sandbox's
 * environment, and a per-run CA whose bundle replaces the system bundle inside
 * (only when some host is intercepted: a secret's host or an http rule's).
 * Where the bundle is bound and which variables point at it is the plan's
 * (plan.h, creds); the bundle's bytes are made here. */
static int credentials_env(struct moat_run *r, struct moat_net_run *n,
			   int (*push)(struct moat_run *, const char *, const char *))
{
	const struct moat_policy *p = r->p;
	const struct moat_plan_creds *c = &r->plan->creds;
	int k;

	if (!c->intercept)
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
	k = moat_tls_write_bundle(n->ca, c->ca_dest, fd);
	close(fd);
	if (k < 0)
		return moat_error_set(r->err, "credentials", -k, "cannot write the CA bundle: %s",
				      strerror(-k));
	/* the plan's step (read-only over the system bundle, after the /etc
	 * layout) gets its source */
	struct moat_step *s = c->ca_step >= 0 && (unsigned)c->ca_step < r->plan->n_steps
		? &r->plan->steps[c->ca_step]
		: NULL;
	if (!s || !(s->flags & MOAT_STEPF_RUNTIME))
		return moat_error_set(r->err, "plan", EPROTO, "the plan has no CA bundle step");
	s->src = n->bundle_path;
	for (unsigned i = 0; i < c->n_ca_env; i++)
		if ((k = push(r, c->ca_env[i], c->ca_dest)) < 0)
			return k;
	return 0;
}

int moat_net_env(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *))
{
	struct moat_net_run *n;
	int k;

	if (r->plan->net.mode != MOAT_NET_ALLOW)
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

/* ---- the exec'd proxy helper -------------------------------------------------
 *
 * The proxy parses hostile bytes, so it is not a fork of the supervisor that
 * keeps the supervisor's memory and descriptors (the audit log, the epoll
 * instance, the timers, the init's pidfd, the seccomp listener, ...). Right
 * after clone (moat_net_started, while the sandbox assembles its root, so
 * that its start-up costs the run nothing), a child moves exactly these
 * descriptors into place, closes every other one and execs moat's own
 * executable as "moat __proxy" with a short environment (helper_env):
 *
 *   0, 1, 2   /dev/null
 *   3         the event pipe (JSON lines to the supervisor)
 *   4         its configuration: a memfd whose size is sealed (below)
 *   5         a control socket: moat_net_start() sends the listeners on it
 *             (SCM_RIGHTS) once the sandbox has handed them over
 *
 * The helper (moat_net_helper_main, in this plugin, loaded by the helper
 * through the same checks as the supervisor's) checks that table against the
 * kernel's before it reads anything, parses the configuration, loads the
 * upstream trust store, becomes the sandbox's host uid (root mode), starts its
 * resolver, and only then reads the CA and the secret values into locked
 * memory and wipes the memfd. Then it waits for the listeners and serves with
 * exactly 0-2 /dev/null, 3 the event pipe, 4 its resolver, 5... the listeners
 * (and its epoll instance), checked again. The supervisor drops its own
 * copies of the values and the CA key once the helper runs.
 *
 * The configuration: a header (magic, version, the plugin ABI, the uid/gid
 * to become, the number of records), then records
 * [u32 type, u32 len, bytes]: one POLICY (the "network" and "secrets"
 * sections of the effective policy as JSON, parsed again by the policy parser
 * with its limits), at most one CA (moat_tls_ca_to_blob) and one SECRET per
 * secret ([u32 index, u32 placeholder length, placeholder, value]). Native
 * byte order: writer and reader are the same build (the ABI string).
 */
#define HELPER_FD_EVENTS 3
#define HELPER_FD_CONFIG 4
#define HELPER_FD_CTL 5
#define HELPER_FD_RESOLVER 4 /* once it serves */
#define HELPER_FD_LISTEN 5 /* once it serves */
#define HELPER_N_FDS (HELPER_FD_LISTEN + MOAT_NETNS_N_FDS)
#define CFG_MAGIC "moat proxy config"
#define CFG_VERSION 1u
#define CFG_MAX_BYTES (16u << 20)
#define CFG_MAX_RECORDS (2u + MOAT_MAX_SECRETS)
#define HELPER_ENV_MAX 16

enum {
	CFG_POLICY = 1,
	CFG_CA = 2,
	CFG_SECRET = 3
};

struct cfg_head {
	char magic[24];
	uint32_t version;
	char abi[64];
	uint32_t uid, gid; /* what the helper becomes when it starts as root */
	uint32_t n_records;
};

struct cfg_rec {
	uint32_t type;
	uint32_t len;
};

static int put_rec(int fd, uint32_t type, const void *a, size_t alen, const void *b, size_t blen)
{
	struct cfg_rec h = {.type = type, .len = (uint32_t)(alen + blen)};
	int k;

	if (alen + blen > CFG_MAX_BYTES)
		return -E2BIG;
	if ((k = moat_write_all(fd, &h, sizeof(h))) < 0 || (k = moat_write_all(fd, a, alen)) < 0)
		return k;
	return blen ? moat_write_all(fd, b, blen) : 0;
}

/* The network and secrets sections of the effective policy. */
static int policy_subset(const struct moat_policy *p, char **ret)
{
	_cleanup_free_ char *full = NULL;
	json_t *root, *sub;
	int k;

	if ((k = moat_policy_to_json(p, &full)) < 0)
		return k;
	root = json_loads(full, JSON_REJECT_DUPLICATES, NULL);
	sub = json_object();
	if (!root || !sub) {
		json_decref(root);
		json_decref(sub);
		return -ENOMEM;
	}
	json_object_set(sub, "version", json_object_get(root, "version"));
	json_object_set(sub, "network", json_object_get(root, "network"));
	if (json_array_size(json_object_get(root, "secrets")))
		json_object_set(sub, "secrets", json_object_get(root, "secrets"));
	*ret = json_dumps(sub, JSON_COMPACT);
	json_decref(root);
	json_decref(sub);
	return *ret ? 0 : -ENOMEM;
}

/* The helper's configuration, in a new memfd (closed on exec: the child
 * moves it into place). */
static int helper_config(struct moat_run *r, struct moat_net_run *n, int *ret_fd)
{
	struct cfg_head h = {.magic = CFG_MAGIC,
			     .version = CFG_VERSION,
			     .uid = (uint32_t)r->sb.host_uid,
			     .gid = (uint32_t)r->sb.host_gid};
	_cleanup_free_ char *policy = NULL;
	_cleanup_close_ int fd = -1;
	unsigned char *blob = NULL;
	size_t blob_len = 0;
	int k;

	snprintf(h.abi, sizeof(h.abi), "%s", MOAT_NET_PLUGIN_ABI);
	if ((k = policy_subset(r->p, &policy)) < 0)
		return k;
	fd = memfd_create("moat-proxy-config", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return negerrno();
	h.n_records = 1 + (n->ca ? 1 : 0) + moat_secrets_count(n->secrets);
	if ((k = moat_write_all(fd, &h, sizeof(h))) < 0 ||
	    (k = put_rec(fd, CFG_POLICY, policy, strlen(policy), NULL, 0)) < 0)
		return k;
	if (n->ca) {
		if ((k = moat_tls_ca_to_blob(n->ca, &blob, &blob_len)) < 0)
			return k;
		k = put_rec(fd, CFG_CA, blob, blob_len, NULL, 0);
		moat_tls_ca_blob_free(blob, blob_len);
		if (k < 0)
			return k;
	}
	for (unsigned i = 0; i < moat_secrets_count(n->secrets); i++) {
		const char *ph = moat_secrets_placeholder(n->secrets, i), *v;
		size_t vlen;
		uint32_t pre[2] = {i, (uint32_t)strlen(ph)};
		char head[sizeof(pre) + MOAT_SECRETS_PLACEHOLDER_MAX];
		if ((k = moat_secrets_value(n->secrets, i, &v, &vlen)) < 0)
			return k;
		if (!v)
			return -ENOKEY;
		memcpy(head, pre, sizeof(pre));
		memcpy(head + sizeof(pre), ph, pre[1]);
		if ((k = put_rec(fd, CFG_SECRET, head, sizeof(pre) + pre[1], v, vlen)) < 0)
			return k;
	}
	/* Its size cannot change under the reader; the helper wipes it. */
	if (fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_SEAL) < 0)
		return negerrno();
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* What the helper's environment keeps of the supervisor's: what OpenSSL and
 * the resolver read, and the sanitizers' options. Nothing else (the user's
 * tokens, the secrets' source variables) reaches the process that parses
 * hostile bytes. Pointers into environ, collected before fork. */
static void helper_env(const char **envp)
{
	static const char *const keep[] = {
		"SSL_CERT_FILE=", "SSL_CERT_DIR=", "OPENSSL_CONF=", "OPENSSL_MODULES=",
		"RES_OPTIONS=",	  "LOCALDOMAIN=",  "HOSTALIASES=",  "ASAN_OPTIONS=",
		"UBSAN_OPTIONS=", "LSAN_OPTIONS=",
	};
	unsigned n = 0;

	for (char **e = environ; e && *e && n < HELPER_ENV_MAX - 1; e++)
		for (size_t i = 0; i < ELEMENTSOF(keep); i++)
			if (startswith(*e, keep[i])) {
				envp[n++] = *e;
				break;
			}
	envp[n] = NULL;
}

/* In the child, between fork and exec: only async-signal-safe calls. */
_noreturn_ static void helper_exec(struct moat_net_run *n, int ev_w, int cfg_fd, int ctl,
				   pid_t parent, const char *const *envp)
{
	static char arg0[] = "moat", arg1[] = "__proxy";
	char *const argv[] = {arg0, arg1, NULL};
	int fds[HELPER_FD_CTL + 2];
	unsigned k = 0;

	fds[k++] = n->null_fd;
	fds[k++] = n->null_fd;
	fds[k++] = n->null_fd;
	fds[k++] = ev_w;
	fds[k++] = cfg_fd;
	fds[k++] = ctl;
	fds[k++] = n->exe_fd; /* last: closed by the exec itself */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0 || getppid() != parent)
		_exit(MOAT_EXIT_SETUP);
	if (moat_fdset_compact(fds, k) < 0 || fcntl((int)k - 1, F_SETFD, FD_CLOEXEC) < 0)
		_exit(MOAT_EXIT_SETUP);
	/* Signals stay blocked (as in the supervisor) across the exec until the
	 * worker has its SIGTERM handler: a run that ends at once still gets
	 * its events. */
	syscall(SYS_execveat, (int)k - 1, "", argv, envp, AT_EMPTY_PATH);
	_exit(MOAT_EXIT_SETUP);
}

static void drop_credentials(struct moat_net_run *n)
{
	if (n->secrets) {
		moat_secrets_drop_values(n->secrets);
		moat_secrets_scrub_environ(n->secrets);
	}
	n->ca = moat_tls_ca_free(n->ca);
	if (n->upstream_tls) {
		SSL_CTX_free(n->upstream_tls);
		n->upstream_tls = NULL;
	}
}

static int helper_spawn(struct moat_run *r, struct moat_net_run *n);

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
	/* Before the sandbox's command can run: /proc/self/exe is this very
	 * executable, whatever happens to its path meanwhile. */
	n->exe_fd = open("/proc/self/exe", O_PATH | O_CLOEXEC);
	n->null_fd = open("/dev/null", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (n->exe_fd < 0 || n->null_fd < 0)
		return moat_error_set(r->err, "network", errno,
				      "cannot open moat's executable for the proxy helper: %s",
				      strerror(errno));
	if (n->secrets) {
		/* The values are loaded only now, while the sandbox sets itself up
		 * and before its command can run: the sandbox's init (a fork of this
		 * process) never held them; they go to the proxy helper in its
		 * configuration and are wiped here once it runs. */
		k = moat_secrets_load(n->secrets, r->err);
		if (k < 0)
			return k;
	}
	if (n->ca) {
		/* The helper loads its own trust store; this one only makes a
		 * bad --upstream-ca an error of the run's set-up. */
		k = moat_tls_client_ctx(r->p->upstream_ca, &n->upstream_tls);
		if (k < 0)
			return moat_error_set(
				r->err, "credentials", -k,
				"cannot load the trust store for upstream TLS%s%s: %s",
				r->p->upstream_ca ? " " : "",
				r->p->upstream_ca ? r->p->upstream_ca : "", strerror(-k));
		SSL_CTX_free(n->upstream_tls);
		n->upstream_tls = NULL;
	}
	return helper_spawn(r, n);
}

/* Fork and exec the helper (after clone, before the listeners arrive). */
static int helper_spawn(struct moat_run *r, struct moat_net_run *n)
{
	const char *envp[HELPER_ENV_MAX];
	int p[2], ctl[2], cfg_fd = -1, k;
	pid_t self = getpid();

	if ((k = helper_config(r, n, &cfg_fd)) < 0)
		return moat_error_set(r->err, "network", -k,
				      "cannot write the proxy helper's configuration: %s",
				      strerror(-k));
	/* The values and the CA key are in the configuration now. */
	drop_credentials(n);
	helper_env(envp);
	if (pipe2(p, O_CLOEXEC) < 0) {
		close(cfg_fd);
		return moat_error_set(r->err, "network", errno, "pipe");
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, ctl) < 0) {
		k = errno;
		close(p[0]);
		close(p[1]);
		close(cfg_fd);
		return moat_error_set(r->err, "network", k, "socketpair");
	}
	n->pid = fork();
	if (n->pid < 0) {
		k = errno;
		close(p[0]);
		close(p[1]);
		close(ctl[0]);
		close(ctl[1]);
		close(cfg_fd);
		return moat_error_set(r->err, "network", k, "cannot start the proxy");
	}
	if (n->pid == 0)
		helper_exec(n, p[1], cfg_fd, ctl[1], self, envp);
	close(p[1]);
	close(ctl[1]);
	close(cfg_fd);
	n->exe_fd = safe_close(n->exe_fd);
	n->null_fd = safe_close(n->null_fd);
	n->ev_fd = p[0];
	n->ctl_fd = ctl[0];
	(void)fcntl(n->ev_fd, F_SETFL, O_NONBLOCK);
	return 0;
}

/* A set-up failure the helper wrote on its event pipe, into @buf. */
static void helper_error(struct moat_net_run *n, char *buf, size_t len)
{
	char line[1024];
	struct pollfd pf = {.fd = n->ev_fd, .events = POLLIN};
	ssize_t k;

	buf[0] = 0;
	/* it reports before it exits: wait briefly for the line */
	if (n->ev_fd < 0 || poll(&pf, 1, 200) <= 0)
		return;
	k = read(n->ev_fd, line, sizeof(line) - 1);
	if (k <= 0)
		return;
	line[k] = 0;
	json_t *o = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL);
	const char *e = json_string_value(json_object_get(o, "error"));
	if (e)
		snprintf(buf, len, ": %s", e);
	json_decref(o);
}

int moat_net_start(struct moat_run *r, int epfd, uint32_t tag)
{
	struct moat_net_run *n = r->net;
	struct epoll_event ev = {.events = EPOLLIN, .data.u32 = tag};
	uint32_t count;
	union {
		char buf[CMSG_SPACE(sizeof(int) * MOAT_NETNS_N_FDS)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &count, .iov_len = sizeof(count)};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf};
	struct cmsghdr *c;
	ssize_t k;

	if (!n)
		return 0;
	if (n->n_fds < MOAT_NETNS_N_FDS - 1)
		return moat_error_set(r->err, "network", EPROTO,
				      "the sandbox did not hand over its network listeners");
	if (n->ctl_fd < 0 || n->pid <= 0)
		return moat_error_set(r->err, "network", ESRCH, "the proxy helper is not running");
	/* The listeners to the helper, in one message. */
	count = n->n_fds;
	memset(u.buf, 0, sizeof(u.buf));
	msg.msg_controllen = CMSG_SPACE(sizeof(int) * n->n_fds);
	c = CMSG_FIRSTHDR(&msg);
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(sizeof(int) * n->n_fds);
	memcpy(CMSG_DATA(c), n->fds, sizeof(int) * n->n_fds);
	while ((k = sendmsg(n->ctl_fd, &msg, MSG_NOSIGNAL)) < 0 && errno == EINTR)
		;
	n->ctl_fd = safe_close(n->ctl_fd);
	if (k != (ssize_t)sizeof(count)) {
		char why[600];
		int e = k < 0 ? errno : EPROTO;
		helper_error(n, why, sizeof(why));
		return moat_error_set(r->err, "network", e,
				      "the proxy helper exited before it got its listeners%s", why);
	}
	/* The helper holds the listeners now: the sandbox's network fails
	 * closed (connection refused) if it dies. */
	for (unsigned i = 0; i < n->n_fds; i++)
		n->fds[i] = safe_close(n->fds[i]);
	if (epoll_ctl(epfd, EPOLL_CTL_ADD, n->ev_fd, &ev) < 0)
		return moat_error_set(r->err, "network", errno, "epoll");
	return 0;
}

/* ---- in the helper ("moat __proxy") ---------------------------------------- */

/* A failure before the worker serves: one line on the event pipe, so the
 * supervisor logs why the sandbox's network refuses everything. */
static int helper_fail(const char *step, int k, const char *detail)
{
	char msg[400], esc[800], line[900];
	snprintf(msg, sizeof(msg), "%s: %s%s%s", step, strerror(k < 0 ? -k : k),
		 detail && *detail ? ": " : "", detail ? detail : "");
	moat_json_escape(msg, strlen(msg), esc, sizeof(esc));
	int w = snprintf(line, sizeof(line), "{\"proto\":\"helper\",\"error\":\"%s\"}\n", esc);
	if (w > 0 && (size_t)w < sizeof(line))
		(void)!write(HELPER_FD_EVENTS, line, (size_t)w);
	return MOAT_EXIT_SETUP;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	char *p = buf;
	while (len > 0) {
		ssize_t k = pread(fd, p, len, (off_t)off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return k < 0 ? negerrno() : -EBADMSG;
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

struct cfg_index {
	struct cfg_head h;
	uint64_t size;
	uint64_t policy_off, ca_off;
	uint32_t policy_len, ca_len;
	uint64_t secret_off[MOAT_MAX_SECRETS];
	uint32_t secret_len[MOAT_MAX_SECRETS];
	unsigned n_secrets;
};

/* The header and where each record is; nothing secret is read yet. */
static int cfg_scan(int fd, struct cfg_index *x, char *why, size_t whylen)
{
	struct stat st;
	uint64_t off;
	int seals = fcntl(fd, F_GET_SEALS);
	int k;

	if (seals < 0 || (seals & (F_SEAL_SHRINK | F_SEAL_GROW)) != (F_SEAL_SHRINK | F_SEAL_GROW))
		return snprintf(why, whylen, "not a sealed memfd"), -EBADMSG;
	if (fstat(fd, &st) < 0)
		return negerrno();
	if (st.st_size < (off_t)sizeof(x->h) || st.st_size > (off_t)CFG_MAX_BYTES)
		return snprintf(why, whylen, "size %lld", (long long)st.st_size), -EBADMSG;
	x->size = (uint64_t)st.st_size;
	if ((k = pread_all(fd, &x->h, sizeof(x->h), 0)) < 0)
		return k;
	x->h.magic[sizeof(x->h.magic) - 1] = 0;
	x->h.abi[sizeof(x->h.abi) - 1] = 0;
	if (!streq(x->h.magic, CFG_MAGIC) || x->h.version != CFG_VERSION ||
	    !streq(x->h.abi, MOAT_NET_PLUGIN_ABI))
		return snprintf(why, whylen, "from another build of moat"), -EBADMSG;
	if (x->h.n_records == 0 || x->h.n_records > CFG_MAX_RECORDS)
		return snprintf(why, whylen, "bad counts"), -EBADMSG;
	off = sizeof(x->h);
	for (uint32_t i = 0; i < x->h.n_records; i++) {
		struct cfg_rec rec;
		if (x->size - off < sizeof(rec))
			return snprintf(why, whylen, "truncated"), -EBADMSG;
		if ((k = pread_all(fd, &rec, sizeof(rec), off)) < 0)
			return k;
		off += sizeof(rec);
		if (rec.len > x->size - off)
			return snprintf(why, whylen, "record %u truncated", i), -EBADMSG;
		if (i == 0 && rec.type != CFG_POLICY)
			return snprintf(why, whylen, "no policy first"), -EBADMSG;
		switch (rec.type) {
		case CFG_POLICY:
			if (i != 0 || rec.len == 0 || rec.len > MOAT_MAX_POLICY_BYTES)
				return snprintf(why, whylen, "bad policy record"), -EBADMSG;
			x->policy_off = off;
			x->policy_len = rec.len;
			break;
		case CFG_CA:
			if (x->ca_len || rec.len == 0)
				return snprintf(why, whylen, "bad CA record"), -EBADMSG;
			x->ca_off = off;
			x->ca_len = rec.len;
			break;
		case CFG_SECRET:
			if (x->n_secrets >= MOAT_MAX_SECRETS || rec.len < 2 * sizeof(uint32_t) ||
			    rec.len > 2 * sizeof(uint32_t) + MOAT_SECRETS_PLACEHOLDER_MAX +
					    MOAT_SECRETS_MAX_VALUE)
				return snprintf(why, whylen, "bad secret record"), -EBADMSG;
			x->secret_off[x->n_secrets] = off;
			x->secret_len[x->n_secrets++] = rec.len;
			break;
		default:
			return snprintf(why, whylen, "unknown record %u", rec.type), -EBADMSG;
		}
		off += rec.len;
	}
	if (off != x->size)
		return snprintf(why, whylen, "trailing bytes"), -EBADMSG;
	return 0;
}

/* Secret record @i into the secrets, through locked memory. */
static int cfg_secret(int fd, const struct cfg_index *x, unsigned i, struct moat_secrets *s)
{
	uint32_t len = x->secret_len[i], pre[2];
	char *buf = OPENSSL_secure_malloc(len);
	int k;

	if (!buf)
		return -ENOMEM;
	k = pread_all(fd, buf, len, x->secret_off[i]);
	if (k >= 0) {
		memcpy(pre, buf, sizeof(pre));
		if (pre[0] != i || pre[1] == 0 || pre[1] >= MOAT_SECRETS_PLACEHOLDER_MAX ||
		    pre[1] > len - sizeof(pre))
			k = -EBADMSG;
	}
	if (k >= 0)
		k = moat_secrets_adopt(s, i, buf + sizeof(pre), pre[1], buf + sizeof(pre) + pre[1],
				       len - sizeof(pre) - pre[1]);
	OPENSSL_secure_clear_free(buf, len);
	return k;
}

static int cfg_wipe(int fd, uint64_t size)
{
	static const char zero[4096];
	for (uint64_t off = 0; off < size;) {
		size_t n = (size_t)MIN((uint64_t)sizeof(zero), size - off);
		ssize_t w = pwrite(fd, zero, n, (off_t)off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return w < 0 ? negerrno() : -EIO;
		off += (uint64_t)w;
	}
	return 0;
}

/* The one message moat_net_start() sends: the count, and as many listeners. */
static int recv_listeners(int *ret, unsigned *ret_n)
{
	uint32_t count = 0;
	union {
		char buf[CMSG_SPACE(sizeof(int) * (MOAT_NETNS_N_FDS + 1))];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = &count, .iov_len = sizeof(count)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = u.buf,
			     .msg_controllen = sizeof(u)};
	unsigned n = 0;
	ssize_t k;
	int r = 0;

	while ((k = recvmsg(HELPER_FD_CTL, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
		;
	if (k < 0)
		return negerrno();
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		size_t m = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		int fds[MOAT_NETNS_N_FDS + 1];
		if (m > ELEMENTSOF(fds))
			m = ELEMENTSOF(fds);
		memcpy(fds, CMSG_DATA(c), m * sizeof(int));
		for (size_t i = 0; i < m; i++) {
			if (n < MOAT_NETNS_N_FDS && r == 0)
				ret[n++] = fds[i];
			else {
				close(fds[i]);
				r = -EBADMSG;
			}
		}
	}
	if (r == 0 &&
	    (k != (ssize_t)sizeof(count) || (msg.msg_flags & (MSG_CTRUNC | MSG_TRUNC)) ||
	     count != n || n < MOAT_NETNS_N_FDS - 1))
		r = -EBADMSG;
	if (r < 0) {
		for (unsigned i = 0; i < n; i++)
			close(ret[i]);
		return r;
	}
	*ret_n = n;
	return 0;
}

int moat_net_helper_main(void)
{
	static struct cfg_index x; /* static: the secrets' offsets are large */
	enum moat_fdset_kind want[HELPER_N_FDS];
	struct moat_policy *p = NULL;
	struct moat_proxy_config *cfg = NULL;
	struct moat_secrets *secrets = NULL;
	struct moat_tls_ca *ca = NULL;
	SSL_CTX *upstream = NULL;
	struct moat_error e = {0};
	struct moat_netns_fds f;
	int listen[MOAT_NETNS_N_FDS];
	char why[256] = "";
	char *text = NULL;
	int k;

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return helper_fail("dumpable", negerrno(), NULL);
	if ((k = cfg_scan(HELPER_FD_CONFIG, &x, why, sizeof(why))) < 0)
		return helper_fail("configuration", k, why);
	/* Exactly the descriptors it was given, before it reads anything else. */
	for (unsigned i = 0; i < HELPER_N_FDS; i++)
		want[i] = i < HELPER_FD_EVENTS	? MOAT_FDSET_NULL
			: i == HELPER_FD_EVENTS ? MOAT_FDSET_PIPE
			: i == HELPER_FD_CONFIG ? MOAT_FDSET_MEMFD
						: MOAT_FDSET_SOCKET;
	if ((k = moat_fdset_check(want, HELPER_FD_CTL + 1, why, sizeof(why))) < 0)
		return helper_fail("descriptors", k, why);

	/* The rules, parsed again by the policy parser. */
	p = moat_policy_new();
	text = malloc(x.policy_len);
	if (!p || !text)
		return helper_fail("configuration", -ENOMEM, NULL);
	if ((k = pread_all(HELPER_FD_CONFIG, text, x.policy_len, x.policy_off)) < 0)
		return helper_fail("configuration", k, NULL);
	if ((k = moat_policy_load_string(p, text, x.policy_len, "proxy configuration", &e)) < 0)
		return helper_fail("configuration", k, e.message);
	free(text);
	if ((k = moat_proxy_config_from_policy(p, &cfg)) < 0)
		return helper_fail("configuration", k, "invalid network rule");
	if (x.h.n_records != 1 + (x.ca_len ? 1 : 0) + p->n_secrets || x.n_secrets != p->n_secrets ||
	    (p->n_secrets && !x.ca_len))
		return helper_fail("configuration", -EBADMSG, "records do not match the policy");
	if (x.ca_len && (k = moat_tls_client_ctx(p->upstream_ca, &upstream)) < 0)
		return helper_fail("upstream trust store", k, p->upstream_ca);

	/* In root mode it becomes the sandbox's unprivileged host uid: it only
	 * needs to dial out. */
	if (geteuid() == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(x.h.gid, x.h.gid, x.h.gid) < 0 ||
		    setresuid(x.h.uid, x.h.uid, x.h.uid) < 0)
			return helper_fail("identity", negerrno(), NULL);
		/* a change of credentials clears these */
		if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0 ||
		    prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) < 0)
			return helper_fail("identity", negerrno(), NULL);
	}
	if (getppid() == 1)
		return MOAT_EXIT_SETUP; /* the supervisor is already gone */
	/* Its resolver (which parses DNS answers from outside) is forked
	 * before this process holds any key material. */
	if ((k = moat_resolver_start(&cfg->resolver_pid, &cfg->resolver_fd)) < 0)
		return helper_fail("resolver", k, NULL);
	cfg->has_resolver = true;

	/* Not dumpable, no core, secure heap: then the keys and values. */
	if (x.ca_len) {
		unsigned char *blob;
		if (moat_secrets_harden_process() < 0)
			return helper_fail("harden", negerrno(), NULL);
		blob = OPENSSL_secure_malloc(x.ca_len);
		if (!blob)
			return helper_fail("CA", -ENOMEM, NULL);
		k = pread_all(HELPER_FD_CONFIG, blob, x.ca_len, x.ca_off);
		if (k >= 0)
			k = moat_tls_ca_from_blob(blob, x.ca_len, &ca);
		OPENSSL_secure_clear_free(blob, x.ca_len);
		if (k < 0)
			return helper_fail("CA", k, NULL);
		cfg->ca = ca;
		cfg->upstream_tls = upstream;
		cfg->http_rules = p->http_rules;
		cfg->n_http_rules = p->n_http_rules;
	}
	if (p->n_secrets) {
		if ((k = moat_secrets_new_placeholders(p->secrets, p->n_secrets, &secrets, &e)) < 0)
			return helper_fail("secrets", k, e.message);
		for (unsigned i = 0; i < x.n_secrets; i++)
			if ((k = cfg_secret(HELPER_FD_CONFIG, &x, i, secrets)) < 0)
				return helper_fail("secrets", k, NULL);
		cfg->secrets = secrets;
	}
	if ((k = cfg_wipe(HELPER_FD_CONFIG, x.size)) < 0)
		return helper_fail("configuration", k, "cannot wipe it");

	/* The listeners, once the sandbox has handed them over; then exactly
	 * 0-2 /dev/null, 3 events, 4 the resolver, 5... the listeners. */
	unsigned n_listen;
	if ((k = recv_listeners(listen, &n_listen)) < 0)
		return helper_fail("listeners", k, NULL);
	{
		int keep[HELPER_N_FDS];
		unsigned nk = 0;
		keep[nk++] = 0;
		keep[nk++] = 0;
		keep[nk++] = 0;
		keep[nk++] = HELPER_FD_EVENTS;
		keep[nk++] = cfg->resolver_fd;
		for (unsigned i = 0; i < n_listen; i++)
			keep[nk++] = listen[i];
		if ((k = moat_fdset_compact(keep, nk)) < 0)
			return helper_fail("descriptors", k, NULL);
		cfg->resolver_fd = HELPER_FD_RESOLVER;
		for (unsigned i = 0; i < nk; i++)
			want[i] = i < HELPER_FD_EVENTS	? MOAT_FDSET_NULL
				: i == HELPER_FD_EVENTS ? MOAT_FDSET_PIPE
							: MOAT_FDSET_SOCKET;
		if ((k = moat_fdset_check(want, nk, why, sizeof(why))) < 0)
			return helper_fail("descriptors", k, why);
	}
	for (unsigned i = 0; i < n_listen; i++)
		listen[i] = HELPER_FD_LISTEN + (int)i;
	if (moat_netns_fds_from_array(listen, n_listen, &f) < 0)
		return helper_fail("listeners", -EBADF, NULL);
	cfg->report_fds = true;
	k = moat_proxy_main(cfg, &f, HELPER_FD_EVENTS);
	return k < 0 ? MOAT_EXIT_SETUP : 0;
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
	if (proto && streq(proto, "helper")) {
		/* the worker's first line (or why it could not start): once */
		struct moat_net_run *n = r->net;
		if (n && !n->helper_reported) {
			n->helper_reported = true;
			MOAT_AUDIT(a, MOAT_EV_HELPER, MOAT_F_STR("name", "proxy"),
				   MOAT_F_INT("pid", n->pid), MOAT_F_STR("fds", jstr(o, "fds")),
				   MOAT_F_STR("error", jstr(o, "error")));
		}
		json_decref(o);
		return;
	}
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
	if (!n || !n->n_denied)
		return;
	qsort(n->denied, n->n_denied, sizeof(n->denied[0]), by_count);
	unsigned i;
	for (i = 0; i < n->n_denied && i < ELEMENTSOF(r->st->top_denied); i++) {
		struct moat_denied *d = &r->st->top_denied[i];
		d->count = n->denied[i].count;
		snprintf(d->destination, sizeof(d->destination), "%s", n->denied[i].dest);
		snprintf(d->rule, sizeof(d->rule), "%s", n->denied[i].rule);
	}
	r->st->n_top_denied = i;
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
	safe_close(n->exe_fd);
	safe_close(n->null_fd);
	safe_close(n->ctl_fd);
	drop_credentials(n);
	n->secrets = moat_secrets_free(n->secrets);
	if (n->bundle_dir[0]) {
		unlink(n->bundle_path);
		rmdir(n->bundle_dir);
	}
	free(n);
	r->net = NULL;
}
