/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "network/supervise_net.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/magic.h>
#include <linux/nsfs.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "audit/audit.h"
#include "policy/errors.h"
#include "network/net_config.h"
#include "network/net_env.h"
#include "network/net_plugin.h"
#include "network/netns.h"
#include "audit/observe.h"
#include "limits/supervise_limits.h"
#include "proxy/event.h"
#include "proxy/proxy.h"
#include "shared/fdset.h"
#include "shared/io.h"
#include "shared/jsonesc.h"
#include "shared/nsfile.h"
#include "shared/macro.h"

_Static_assert(MOAT_NET_PLUGIN_MAX_FDS == MOAT_NETNS_N_FDS, "listener count");

struct moat_net_run {
	bool checked; /* the rules are valid */
	/* credential proxy (moat-net.so): placeholders and CA before clone,
	 * values after it until the helper has them */
	const struct moat_net_plugin_ops *ops;
	struct moat_net_creds *creds;
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
	/* the engine's network namespace the helper dials from (OCI runtime,
	 * policy.h upstream_netns), or -1: the supervisor's */
	int netns_fd;
	bool drop_caps; /* not root mode: were the helper uid 0 of a user
			 * namespace, it execs with no capability */
	int ctl_fd; /* the helper's control socket, until it has the listeners */
	bool helper_reported; /* its one "helper" event is in the log */
	char line[MOAT_PROXY_EVENT_MAX + 1]; /* a partial event line */
	/* denied destinations, for the summary's top list */
	struct moat_denied denied[32]; /* destination is the key */
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
	n->netns_fd = -1;
	n->ctl_fd = -1;
	for (unsigned i = 0; i < MOAT_NETNS_N_FDS; i++)
		n->fds[i] = -1;
	r->net = n;
	return n;
}

/* An engine's network namespace, by a path the bundle names (the runtime
 * may be root): only a network namespace is kept (shared/nsfile.c opens it
 * without a side effect). */
static int open_netns(struct moat_run *r, struct moat_net_run *n, const char *path)
{
	static const char what[] = "linux.namespaces: the network namespace";
	int fd = moat_nsfile_open(path, CLONE_NEWNET);
	if (fd == -EINVAL || fd == -EPROTOTYPE)
		return moat_error_set(r->err, "network", EINVAL, "%s %s: %s", what, path,
				      fd == -EINVAL ? "not a namespace"
						    : "not a network namespace");
	if (fd < 0)
		return moat_error_set(r->err, "network", -fd, "%s %s: %s", what, path,
				      strerror(-fd));
	n->netns_fd = fd;
	return 0;
}

int moat_net_prepare(struct moat_run *r)
{
	struct moat_net_run *n;
	int k;

	if (r->plan->net.mode != MOAT_NET_ALLOW)
		return 0;
	/* the rules were converted once, by the plan; the helper converts the
	 * serialized policy for itself */
	n = net_get(r);
	if (!n)
		return -ENOMEM;
	if (n->checked)
		return 0;
	if ((k = moat_net_check_rules(r)) < 0)
		return k;
	if (r->p->upstream_netns && (k = open_netns(r, n, r->p->upstream_netns)) < 0)
		return k;
	n->checked = true;
	return 0;
}

static int policy_subset(const struct moat_policy *p, char **ret);

/* The credential proxy's part of the environment: placeholders, and the
 * variables that point at the per-run CA bundle (only when some host is
 * intercepted: a secret's host or an http rule's). Where the bundle is bound
 * and which variables point at it is the plan's (plan.h, creds); the
 * bundle's bytes are made at prepare (credentials_prepare), once the run's
 * state record exists to name their directory. */
static int credentials_env(struct moat_run *r, struct moat_net_run *n,
			   int (*push)(struct moat_run *, const char *, const char *))
{
	const struct moat_policy *p = r->p;
	const struct moat_plan_creds *c = &r->plan->creds;
	_cleanup_free_ char *json = NULL;
	int k;

	if (!c->intercept)
		return 0;
	n->ops = moat_net_plugin_load(r->err);
	if (!n->ops)
		return -ELIBBAD;
	if ((k = policy_subset(p, &json)) < 0)
		return moat_error_set(r->err, "credentials", -k,
				      "cannot serialize the credential proxy's configuration");
	k = n->ops->creds_new(json, strlen(json), r->run_id, &n->creds, r->err);
	if (k < 0)
		return k;
	for (unsigned i = 0; i < n->ops->creds_count(n->creds); i++)
		if ((k = push(r, n->ops->creds_name(n->creds, i),
			      n->ops->creds_placeholder(n->creds, i))) < 0)
			return k;
	for (unsigned i = 0; i < c->n_ca_env; i++)
		if ((k = push(r, c->ca_env[i], c->ca_dest)) < 0)
			return k;
	return 0;
}

/* The per-run CA bundle: a private directory under /tmp, named in the run's
 * state record (limits layer, before this one) before it is made, so that a
 * SIGKILL of the supervisor leaves nothing `moat gc` or the next run does
 * not remove. */
static int credentials_prepare(struct moat_run *r, struct moat_net_run *n)
{
	const struct moat_plan_creds *c = &r->plan->creds;
	int k;

	if (!c->intercept || !n->creds || n->bundle_dir[0])
		return 0;
	snprintf(n->bundle_dir, sizeof(n->bundle_dir), "/tmp/moat-ca-%s.XXXXXX", r->run_id);
	if ((k = moat_supervise_state_mkdtemp(r, "credentials", n->bundle_dir)) < 0) {
		n->bundle_dir[0] = 0;
		return k;
	}
	snprintf(n->bundle_path, sizeof(n->bundle_path), "%s/ca-bundle.crt", n->bundle_dir);
	chmod(n->bundle_dir, 0755);
	int fd = open(n->bundle_path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
	if (fd < 0)
		return moat_error_set(r->err, "credentials", errno,
				      "cannot write the CA bundle: %s", strerror(errno));
	k = n->ops->creds_write_bundle(n->creds, c->ca_dest, fd);
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
	return 0;
}

int moat_net_prepare_credentials(struct moat_run *r)
{
	if (r->plan->net.mode != MOAT_NET_ALLOW || !r->net)
		return 0;
	return credentials_prepare(r, r->net);
}

int moat_net_env_proxy(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	int k;

	if (r->plan->net.mode != MOAT_NET_ALLOW)
		return 0;
	/* Before clone: both plugins must be there and of this build (a clear
	 * error now, not after clone); moat-net.so is loaded now only for the
	 * credential proxy. */
	if ((k = moat_net_plugins_present(r->err)) < 0)
		return k;
	return moat_net_proxy_env(r, push);
}

int moat_net_env_credentials(struct moat_run *r,
			     int (*push)(struct moat_run *, const char *, const char *))
{
	struct moat_net_run *n;

	if (r->plan->net.mode != MOAT_NET_ALLOW)
		return 0;
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
 * The helper (helper_main in moat-net.so, which `moat __proxy` loads through
 * net_loader.c's checks) checks that table against the kernel's before it
 * reads anything, parses the configuration, loads the upstream trust store,
 * becomes the sandbox's host uid (root mode), starts its resolver, and only
 * then reads the CA and the secret values into locked memory and wipes the
 * memfd. Then it waits for the listeners and serves with exactly 0-2
 * /dev/null, 3 the event pipe, 4 its resolver, 5... the listeners (and its
 * epoll instance), checked again. The supervisor drops its own copies of the
 * values and the CA key once the helper runs (creds_drop).
 *
 * The configuration's format: net_config.h.
 */
#define HELPER_FD_EVENTS MOAT_NET_HELPER_FD_EVENTS
#define HELPER_FD_CONFIG MOAT_NET_HELPER_FD_CONFIG
#define HELPER_FD_CTL MOAT_NET_HELPER_FD_CTL
#define HELPER_ENV_MAX 16

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
	/* uid, gid: what the helper becomes in root mode; else it keeps its
	 * own (UINT32_MAX) */
	struct moat_net_cfg_head h = {
		.magic = MOAT_NET_CFG_MAGIC,
		.version = MOAT_NET_CFG_VERSION,
		.uid = r->sb.root_mode ? (uint32_t)r->sb.host_uid : UINT32_MAX,
		.gid = r->sb.root_mode ? (uint32_t)r->sb.host_gid : UINT32_MAX};
	_cleanup_free_ char *policy = NULL;
	_cleanup_close_ int fd = -1;
	uint32_t n_creds = 0;
	int k;

	snprintf(h.abi, sizeof(h.abi), "%s", MOAT_NET_PLUGIN_ABI);
	if ((k = policy_subset(r->p, &policy)) < 0)
		return k;
	fd = memfd_create("moat-proxy-config", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (fd < 0)
		return negerrno();
	/* the header again once the count is known */
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h) || lseek(fd, 0, SEEK_END) < 0)
		return -EIO;
	if ((k = moat_net_cfg_put(fd, MOAT_NET_CFG_POLICY, policy, strlen(policy), NULL, 0)) < 0)
		return k;
	if (n->creds && (k = n->ops->creds_config(n->creds, fd, &n_creds)) < 0)
		return k;
	h.n_records = 1 + n_creds;
	if (pwrite(fd, &h, sizeof(h), 0) != (ssize_t)sizeof(h))
		return -EIO;
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

/* In the child, between fork and exec: a set-up failure as the helper
 * itself reports one (helper_error reads it), then exit. */
_noreturn_ static void helper_exec_fail(int ev_w, const char *msg)
{
	static const char a[] = "{\"error\":\"";
	static const char b[] = "\"}\n";
	(void)!write(ev_w, a, sizeof(a) - 1);
	(void)!write(ev_w, msg, strlen(msg));
	(void)!write(ev_w, b, sizeof(b) - 1);
	_exit(MOAT_EXIT_SETUP);
}

/* setns into the network namespace; where this process lacks the
 * privilege over it (an unprivileged user's namespace, made by `unshare
 * -rn` or an engine), first into the user namespace that owns it, which
 * the user owns too (the helper then has capabilities only there, and
 * drops them before it execs). */
static int join_netns(int fd)
{
	if (setns(fd, CLONE_NEWNET) == 0)
		return 0;
	if (errno != EPERM)
		return -errno;
	int u = ioctl(fd, NS_GET_USERNS);
	if (u < 0)
		return -errno;
	int k = setns(u, CLONE_NEWUSER) < 0 ? -errno : 0;
	close(u);
	if (k == 0 && setns(fd, CLONE_NEWNET) < 0)
		k = -errno;
	return k;
}

static int drop_all_caps(void)
{
	for (int c = 0; c <= 63; c++)
		if (prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
			return -errno;
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
		return -errno;
	struct __user_cap_header_struct h = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct d[2];
	if (syscall(SYS_capget, &h, d) < 0)
		return -errno;
	d[0].inheritable = d[1].inheritable = 0;
	if (syscall(SYS_capset, &h, d) < 0)
		return -errno;
	return 0;
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
	if (n->netns_fd >= 0 && join_netns(n->netns_fd) < 0)
		helper_exec_fail(ev_w,
				 "cannot join the engine's network namespace (setns needs "
				 "CAP_SYS_ADMIN over it: the runtime's user must own it)");
	/* uid 0 of a user namespace (rootless podman; or the namespace of the
	 * engine's that was joined): exec would give the helper every
	 * capability there. It needs none: an empty bounding set and no
	 * inheritable or ambient capability make the exec'd helper hold none. */
	if (n->drop_caps && geteuid() == 0 && drop_all_caps() < 0)
		helper_exec_fail(ev_w, "cannot drop the proxy helper's capabilities");
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
	if (n->creds)
		n->ops->creds_drop(n->creds);
}

static int helper_spawn(struct moat_run *r, struct moat_net_run *n);

int moat_net_started(struct moat_run *r)
{
	struct moat_net_run *n;
	int k;

	/* done before clone (moat_supervise_prepare); once */
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
	/* moat-net.so must load here, before the sandbox's command can run
	 * (in parallel with its root assembly): the helper loads it again, and
	 * a plugin that cannot load (a missing library) fails the run now, not
	 * after the command started with its network refusing everything. */
	if (!n->ops && !(n->ops = moat_net_plugin_load(r->err)))
		return -ELIBBAD;
	/* The secrets' values and the upstream trust store (moat-net.so). */
	if (n->creds && (k = n->ops->creds_load(n->creds, r->err)) < 0)
		return k;
	return helper_spawn(r, n);
}

/* Fork and exec the helper (after clone, before the listeners arrive). */
static int helper_spawn(struct moat_run *r, struct moat_net_run *n)
{
	const char *envp[HELPER_ENV_MAX];
	int p[2], ctl[2], cfg_fd = -1, k;
	pid_t self = getpid();

	n->drop_caps = !r->sb.root_mode;
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
	n->netns_fd = safe_close(n->netns_fd);
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
static void count_denied(struct moat_net_run *n, const struct moat_denied *t)
{
	if (!n)
		return;
	for (unsigned i = 0; i < n->n_denied; i++)
		if (streq(n->denied[i].destination, t->destination)) {
			n->denied[i].count++;
			return;
		}
	if (n->n_denied >= ELEMENTSOF(n->denied))
		return; /* the summary shows the first ones; the log has them all */
	n->denied[n->n_denied] = *t;
	n->denied[n->n_denied++].count = 1;
}

/* A refused destination as fields; its key ("destination") is what the
 * status record's net_top_denied showed before: "dns NAME", "HOST:PORT". */
static void denied_of(struct moat_denied *t, json_t *o, bool dns)
{
	const char *host = jstr(o, "name"), *raw = jstr(o, "raw"), *addr = jstr(o, "addr");
	const char *reason = jstr(o, "reason"), *rule = jstr(o, "rule"), *proto = jstr(o, "proto");
	uint64_t port = jnum(o, "port");

	memset(t, 0, sizeof(*t));
	t->dns = dns;
	/* DNS: the name as asked (raw); a connection: the normalized name, or
	 * none for an address (raw then holds "ADDR:PORT", never shown) */
	snprintf(t->host, sizeof(t->host), "%s",
		 dns		? (raw		  ? raw
					   : host ? host
						  : "?")
			 : host ? host
				: "");
	snprintf(t->addr, sizeof(t->addr), "%s", addr ? addr : "");
	t->port = dns || port > UINT16_MAX ? 0 : (uint16_t)port;
	snprintf(t->proto, sizeof(t->proto), "%s", proto ? proto : "");
	snprintf(t->reason, sizeof(t->reason), "%s", reason ? reason : "");
	snprintf(t->rule, sizeof(t->rule), "%s", rule ? rule : "");
	if (dns)
		snprintf(t->destination, sizeof(t->destination), "dns %s", t->host);
	else if (t->host[0] || !t->addr[0])
		snprintf(t->destination, sizeof(t->destination), "%s:%u",
			 t->host[0] ? t->host : "?", t->port);
	else
		snprintf(t->destination, sizeof(t->destination),
			 strchr(t->addr, ':') ? "[%s]:%u" : "%s:%u", t->addr, t->port);
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
	struct moat_denied t;
	if (proto && streq(proto, "dns")) {
		if (allow)
			r->st->dns_allowed++;
		else {
			r->st->dns_denied++;
			denied_of(&t, o, true);
			count_denied(r->net, &t);
		}
		MOAT_AUDIT(a, MOAT_EV_DNS, MOAT_F_STR("name", host ? host : raw),
			   MOAT_F_STR("qtype", jstr(o, "method")),
			   MOAT_F_STR("action", allow ? "allow" : "deny"),
			   MOAT_F_STR("answers", jstr(o, "addr")), MOAT_F_STR("reason", reason),
			   MOAT_F_STR("suggest", allow ? NULL : rule),
			   MOAT_F_BOOL("denied", !allow));
		if (!allow)
			MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "dns_denied"),
				   MOAT_F_STR("name", raw), MOAT_F_STR("reason", reason));
	} else {
		if (allow) {
			r->st->net_allowed++;
		} else {
			r->st->net_denied++;
			denied_of(&t, o, false);
			count_denied(r->net, &t);
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
	const struct moat_denied *x = a, *y = b;
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
	for (i = 0; i < n->n_denied && i < ELEMENTSOF(r->st->top_denied); i++)
		r->st->top_denied[i] = n->denied[i];
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
	safe_close(n->netns_fd);
	safe_close(n->ctl_fd);
	drop_credentials(n);
	if (n->creds)
		n->creds = n->ops->creds_free(n->creds);
	if (n->bundle_dir[0]) {
		unlink(n->bundle_path);
		rmdir(n->bundle_dir);
	}
	free(n);
	r->net = NULL;
}
