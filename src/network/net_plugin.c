/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat-net.so (see net_plugin.h): the OpenSSL part of --net allow. Linked
 * with its own copy of what it needs of libmoat; it exports only
 * moat_net_plugin_v2().
 *   - the credential proxy's state in the supervisor (struct
 *     moat_net_creds): placeholders and the per-run CA before clone, the
 *     secrets' values after it, handed to the helper in its configuration;
 *   - the proxy helper `moat __proxy` (helper_main), exec'd by the
 *     supervisor with the descriptors and configuration of net_config.h.
 */
#include "network/net_plugin.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/ssl.h>

#include "policy/errors.h"
#include "network/net_config.h"
#include "network/netns.h"
#include "policy/policy.h"
#include "proxy/proxy.h"
#include "proxy/resolver.h"
#include "proxy/secrets.h"
#include "proxy/tls.h"
#include "shared/fdset.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

/* Once it serves: 0-2 /dev/null, 3 events, 4 the resolver, 5... listeners. */
#define HELPER_FD_RESOLVER 4
#define HELPER_FD_LISTEN 5
#define HELPER_N_FDS (HELPER_FD_LISTEN + MOAT_NETNS_N_FDS)

_Static_assert(MOAT_NET_PLUGIN_MAX_FDS == MOAT_NETNS_N_FDS, "listener count");

/* ---- the credential proxy in the supervisor ------------------------------- */

struct moat_net_creds {
	struct moat_policy *p; /* the "network" and "secrets" sections */
	struct moat_secrets *secrets;
	struct moat_tls_ca *ca;
};

static struct moat_net_creds *creds_free(struct moat_net_creds *c)
{
	if (!c)
		return NULL;
	if (c->secrets) {
		moat_secrets_drop_values(c->secrets);
		c->secrets = moat_secrets_free(c->secrets);
	}
	c->ca = moat_tls_ca_free(c->ca);
	moat_policy_free(c->p);
	free(c);
	return NULL;
}

static int creds_new(const char *policy_json, size_t len, const char *run_id,
		     struct moat_net_creds **ret, struct moat_error *err)
{
	struct moat_net_creds *c = calloc(1, sizeof(*c));
	int k;

	if (!c || !(c->p = moat_policy_new())) {
		free(c);
		return moat_error_set(err, "credentials", ENOMEM, "out of memory");
	}
	k = moat_policy_load_string(c->p, policy_json, len, "credential proxy configuration", err);
	if (k < 0)
		goto fail;
	if (c->p->n_secrets) {
		k = moat_secrets_new_placeholders(c->p->secrets, c->p->n_secrets, &c->secrets, err);
		if (k < 0)
			goto fail;
	}
	k = moat_tls_ca_new(run_id, &c->ca);
	if (k < 0) {
		moat_error_set(err, "credentials", -k, "cannot create the per-run CA: %s",
			       strerror(-k));
		goto fail;
	}
	*ret = c;
	return 0;
fail:
	creds_free(c);
	return k;
}

static unsigned creds_count(const struct moat_net_creds *c)
{
	return moat_secrets_count(c->secrets);
}

static const char *creds_name(const struct moat_net_creds *c, unsigned i)
{
	return moat_secrets_name(c->secrets, i);
}

static const char *creds_placeholder(const struct moat_net_creds *c, unsigned i)
{
	return moat_secrets_placeholder(c->secrets, i);
}

static int creds_write_bundle(const struct moat_net_creds *c, const char *system_bundle, int fd)
{
	return c->ca ? moat_tls_write_bundle(c->ca, system_bundle, fd) : -EINVAL;
}

static int creds_load(struct moat_net_creds *c, struct moat_error *err)
{
	const char *ca_file = c->p->upstream_ca;
	SSL_CTX *upstream = NULL;
	int k;

	if (c->secrets) {
		/* The values are loaded only now, while the sandbox sets itself up
		 * and before its command can run: the sandbox's init (a fork of this
		 * process) never held them; they go to the proxy helper in its
		 * configuration and are wiped here once it runs. */
		k = moat_secrets_load(c->secrets, err);
		if (k < 0)
			return k;
	}
	/* The helper loads its own trust store; this one only makes a bad
	 * --upstream-ca an error of the run's set-up. */
	k = moat_tls_client_ctx(ca_file, &upstream);
	if (k < 0)
		return moat_error_set(err, "credentials", -k,
				      "cannot load the trust store for upstream TLS%s%s: %s",
				      ca_file ? " " : "", ca_file ? ca_file : "", strerror(-k));
	SSL_CTX_free(upstream);
	return 0;
}

static int creds_config(const struct moat_net_creds *c, int fd, uint32_t *ret_n)
{
	unsigned char *blob = NULL;
	size_t blob_len = 0;
	uint32_t n = 0;
	int k;

	if (c->ca) {
		if ((k = moat_tls_ca_to_blob(c->ca, &blob, &blob_len)) < 0)
			return k;
		k = moat_net_cfg_put(fd, MOAT_NET_CFG_CA, blob, blob_len, NULL, 0);
		moat_tls_ca_blob_free(blob, blob_len);
		if (k < 0)
			return k;
		n++;
	}
	for (unsigned i = 0; i < moat_secrets_count(c->secrets); i++) {
		const char *ph = moat_secrets_placeholder(c->secrets, i), *v;
		size_t vlen;
		uint32_t pre[2] = {i, (uint32_t)strlen(ph)};
		char head[sizeof(pre) + MOAT_SECRETS_PLACEHOLDER_MAX];
		if ((k = moat_secrets_value(c->secrets, i, &v, &vlen)) < 0)
			return k;
		if (!v)
			return -ENOKEY;
		if (pre[1] >= MOAT_SECRETS_PLACEHOLDER_MAX)
			return -E2BIG;
		memcpy(head, pre, sizeof(pre));
		memcpy(head + sizeof(pre), ph, pre[1]);
		if ((k = moat_net_cfg_put(fd, MOAT_NET_CFG_SECRET, head, sizeof(pre) + pre[1], v,
					  vlen)) < 0)
			return k;
		n++;
	}
	*ret_n = n;
	return 0;
}

static void creds_drop(struct moat_net_creds *c)
{
	if (!c)
		return;
	if (c->secrets) {
		moat_secrets_drop_values(c->secrets);
		moat_secrets_scrub_environ(c->secrets);
	}
	c->ca = moat_tls_ca_free(c->ca);
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
		(void)!write(MOAT_NET_HELPER_FD_EVENTS, line, (size_t)w);
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
	struct moat_net_cfg_head h;
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
	if (st.st_size < (off_t)sizeof(x->h) || st.st_size > (off_t)MOAT_NET_CFG_MAX_BYTES)
		return snprintf(why, whylen, "size %lld", (long long)st.st_size), -EBADMSG;
	x->size = (uint64_t)st.st_size;
	if ((k = pread_all(fd, &x->h, sizeof(x->h), 0)) < 0)
		return k;
	x->h.magic[sizeof(x->h.magic) - 1] = 0;
	x->h.abi[sizeof(x->h.abi) - 1] = 0;
	if (!streq(x->h.magic, MOAT_NET_CFG_MAGIC) || x->h.version != MOAT_NET_CFG_VERSION ||
	    !streq(x->h.abi, MOAT_NET_PLUGIN_ABI))
		return snprintf(why, whylen, "from another build of moat"), -EBADMSG;
	if (x->h.n_records == 0 || x->h.n_records > MOAT_NET_CFG_MAX_RECORDS)
		return snprintf(why, whylen, "bad counts"), -EBADMSG;
	off = sizeof(x->h);
	for (uint32_t i = 0; i < x->h.n_records; i++) {
		struct moat_net_cfg_rec rec;
		if (x->size - off < sizeof(rec))
			return snprintf(why, whylen, "truncated"), -EBADMSG;
		if ((k = pread_all(fd, &rec, sizeof(rec), off)) < 0)
			return k;
		off += sizeof(rec);
		if (rec.len > x->size - off)
			return snprintf(why, whylen, "record %u truncated", i), -EBADMSG;
		if (i == 0 && rec.type != MOAT_NET_CFG_POLICY)
			return snprintf(why, whylen, "no policy first"), -EBADMSG;
		switch (rec.type) {
		case MOAT_NET_CFG_POLICY:
			if (i != 0 || rec.len == 0 || rec.len > MOAT_MAX_POLICY_BYTES)
				return snprintf(why, whylen, "bad policy record"), -EBADMSG;
			x->policy_off = off;
			x->policy_len = rec.len;
			break;
		case MOAT_NET_CFG_CA:
			if (x->ca_len || rec.len == 0)
				return snprintf(why, whylen, "bad CA record"), -EBADMSG;
			x->ca_off = off;
			x->ca_len = rec.len;
			break;
		case MOAT_NET_CFG_SECRET:
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

	while ((k = recvmsg(MOAT_NET_HELPER_FD_CTL, &msg, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR)
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

static int helper_main(void)
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
	if ((k = cfg_scan(MOAT_NET_HELPER_FD_CONFIG, &x, why, sizeof(why))) < 0)
		return helper_fail("configuration", k, why);
	/* Exactly the descriptors it was given, before it reads anything else. */
	for (unsigned i = 0; i < HELPER_N_FDS; i++)
		want[i] = i < MOAT_NET_HELPER_FD_EVENTS	 ? MOAT_FDSET_NULL
			: i == MOAT_NET_HELPER_FD_EVENTS ? MOAT_FDSET_PIPE
			: i == MOAT_NET_HELPER_FD_CONFIG ? MOAT_FDSET_MEMFD
							 : MOAT_FDSET_SOCKET;
	if ((k = moat_fdset_check(want, MOAT_NET_HELPER_FD_CTL + 1, why, sizeof(why))) < 0)
		return helper_fail("descriptors", k, why);

	/* The rules, parsed again by the policy parser. */
	p = moat_policy_new();
	text = malloc(x.policy_len);
	if (!p || !text)
		return helper_fail("configuration", -ENOMEM, NULL);
	if ((k = pread_all(MOAT_NET_HELPER_FD_CONFIG, text, x.policy_len, x.policy_off)) < 0)
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
	 * needs to dial out. Else (UINT32_MAX) it keeps its uid; as uid 0 of a
	 * user namespace it was exec'd with no capability (supervise_net.c). */
	if (geteuid() == 0 && x.h.uid != UINT32_MAX) {
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
		k = pread_all(MOAT_NET_HELPER_FD_CONFIG, blob, x.ca_len, x.ca_off);
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
			if ((k = cfg_secret(MOAT_NET_HELPER_FD_CONFIG, &x, i, secrets)) < 0)
				return helper_fail("secrets", k, NULL);
		cfg->secrets = secrets;
	}
	if ((k = cfg_wipe(MOAT_NET_HELPER_FD_CONFIG, x.size)) < 0)
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
		keep[nk++] = MOAT_NET_HELPER_FD_EVENTS;
		keep[nk++] = cfg->resolver_fd;
		for (unsigned i = 0; i < n_listen; i++)
			keep[nk++] = listen[i];
		if ((k = moat_fdset_compact(keep, nk)) < 0)
			return helper_fail("descriptors", k, NULL);
		cfg->resolver_fd = HELPER_FD_RESOLVER;
		for (unsigned i = 0; i < nk; i++)
			want[i] = i < MOAT_NET_HELPER_FD_EVENTS	 ? MOAT_FDSET_NULL
				: i == MOAT_NET_HELPER_FD_EVENTS ? MOAT_FDSET_PIPE
								 : MOAT_FDSET_SOCKET;
		if ((k = moat_fdset_check(want, nk, why, sizeof(why))) < 0)
			return helper_fail("descriptors", k, why);
	}
	for (unsigned i = 0; i < n_listen; i++)
		listen[i] = HELPER_FD_LISTEN + (int)i;
	if (moat_netns_fds_from_array(listen, n_listen, &f) < 0)
		return helper_fail("listeners", -EBADF, NULL);
	cfg->report_fds = true;
	k = moat_proxy_main(cfg, &f, MOAT_NET_HELPER_FD_EVENTS);
	return k < 0 ? MOAT_EXIT_SETUP : 0;
}

static const struct moat_net_plugin_ops ops = {
	.abi_version = MOAT_NET_PLUGIN_ABI_VERSION,
	.size = sizeof(struct moat_net_plugin_ops),
	.abi = MOAT_NET_PLUGIN_ABI,
	.creds_new = creds_new,
	.creds_count = creds_count,
	.creds_name = creds_name,
	.creds_placeholder = creds_placeholder,
	.creds_write_bundle = creds_write_bundle,
	.creds_load = creds_load,
	.creds_config = creds_config,
	.creds_drop = creds_drop,
	.creds_free = creds_free,
	.helper_main = helper_main,
};

__attribute__((visibility("default"))) const struct moat_net_plugin_ops *moat_net_plugin_v2(void)
{
	return &ops;
}

/* What the loader reads before clone, without loading this file. */
__attribute__((section(".moat_abi"), used)) static const char abi_marker[] = MOAT_NET_PLUGIN_ABI;
