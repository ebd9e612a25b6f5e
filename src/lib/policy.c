/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Policy: JSON file + command-line options -> one validated struct moat_policy.
 * Pure code: no syscalls except reading the policy file and moat's own
 * environment. Every value goes through the same setter whether it came from
 * a flag or a key, so flags and keys cannot drift apart.
 */
#include <ctype.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "lib/errors.h"
#include "lib/paths.h"
#include "lib/policy.h"
#include "lib/seccomp.h"
#include "proxy/addr.h"
#include "proxy/hostmatch.h"
#include "shared/jsonpos.h"
#include "shared/macro.h"
#include "shared/parse.h"

#define DEFAULT_UID 1000
#define DEFAULT_PIDS 4096
#define DEFAULT_DISK (1ull << 30)
#define DEFAULT_MAX_OUTPUT (1ull << 30)
#define DEFAULT_HELD_MAX (256ull << 20)
#define DEFAULT_RUNS_MAX (4ull << 30)
#define DEFAULT_RETENTION_MS (14ull * 24 * 3600 * 1000)
#define DEFAULT_NOFILE 4096
#define DEFAULT_KILL_GRACE_MS 2000

struct moat_policy *moat_policy_new(void)
{
	struct moat_policy *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->version = MOAT_POLICY_VERSION;
	p->uid = DEFAULT_UID;
	p->gid = DEFAULT_UID;
	p->user = strdup("agent");
	p->hostname = strdup("moat");
	if (!p->user || !p->hostname)
		return moat_policy_free(p);
	p->workspace_mode = MOAT_WS_OVERLAY;
	p->net = MOAT_NET_NONE;
	p->tty = MOAT_TTY_AUTO;
	p->pids = DEFAULT_PIDS;
	p->disk = DEFAULT_DISK;
	p->max_output = DEFAULT_MAX_OUTPUT;
	p->nofile = DEFAULT_NOFILE;
	p->kill_grace_ms = DEFAULT_KILL_GRACE_MS;
	p->record_exec = true;
	p->apply = MOAT_APPLY_SAFE;
	p->held_max = DEFAULT_HELD_MAX;
	p->runs_max = DEFAULT_RUNS_MAX;
	p->retention_ms = DEFAULT_RETENTION_MS;
	return p;
}

static void strv_free(char **v, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static void rules_free(struct moat_host_rule *r, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		free(r[i].pattern);
	free(r);
}

struct moat_policy *moat_policy_free(struct moat_policy *p)
{
	if (!p)
		return NULL;
	free(p->rootfs);
	free(p->workspace);
	free(p->input);
	free(p->output);
	for (unsigned i = 0; i < p->n_mounts; i++) {
		free(p->mounts[i].src);
		free(p->mounts[i].dest);
	}
	free(p->mounts);
	free(p->user);
	free(p->hostname);
	free(p->cwd);
	for (unsigned i = 0; i < p->n_env; i++) {
		free(p->env[i].name);
		free(p->env[i].value);
	}
	free(p->env);
	strv_free(p->allow_syscalls, p->n_allow_syscalls);
	strv_free(p->deny_syscalls, p->n_deny_syscalls);
	rules_free(p->allow_hosts, p->n_allow_hosts);
	rules_free(p->deny_hosts, p->n_deny_hosts);
	rules_free(p->allow_cidrs, p->n_allow_cidrs);
	for (unsigned i = 0; i < p->n_resolve; i++) {
		free(p->resolve[i].name);
		free(p->resolve[i].addr);
	}
	free(p->resolve);
	for (unsigned i = 0; i < p->n_http_rules; i++) {
		free(p->http_rules[i].host);
		strv_free(p->http_rules[i].methods, p->http_rules[i].n_methods);
		strv_free(p->http_rules[i].paths, p->http_rules[i].n_paths);
	}
	free(p->http_rules);
	free(p->upstream_ca);
	strv_free(p->no_inspect, p->n_no_inspect);
	for (unsigned i = 0; i < p->n_secrets; i++) {
		struct moat_secret *s = &p->secrets[i];
		free(s->name);
		free(s->from);
		strv_free(s->hosts, s->n_hosts);
		strv_free(s->methods, s->n_methods);
		strv_free(s->paths, s->n_paths);
		free(s->header);
		free(s->format);
	}
	free(p->secrets);
	free(p->log_path);
	free(p->status_path);
	free(p->on_alert);
	strv_free(p->flag_patterns, p->n_flag_patterns);
	free(p);
	return NULL;
}

/* ---- errors ---------------------------------------------------------------- */

int moat_error_set(struct moat_error *e, const char *stage, int err, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		memset(e, 0, sizeof(*e));
		snprintf(e->stage, sizeof(e->stage), "%s", stage);
		e->err = err;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof(e->message), fmt, ap);
		va_end(ap);
	}
	return err > 0 ? -err : -EINVAL;
}

/* ---- small validated setters (shared by flags and keys) -------------------- */

static int str_set(char **dst, const char *v)
{
	char *n = strdup(v);
	if (!n)
		return -ENOMEM;
	free(*dst);
	*dst = n;
	return 0;
}

static int strv_add(char ***v, unsigned *n, unsigned max, const char *s)
{
	if (*n >= max)
		return -E2BIG;
	char **nv = realloc(*v, sizeof(char *) * (*n + 1));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	(*n)++;
	return 0;
}

static bool has_ctl(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

/* An absolute path, normalised: no "//", no "." or ".." components, no
 * trailing slash (except "/" itself), no control characters. */
int moat_path_check(const char *path, char *why, size_t whylen)
{
	size_t len = strlen(path);
	if (len == 0 || path[0] != '/') {
		snprintf(why, whylen, "must be an absolute path");
		return -EINVAL;
	}
	if (len >= MOAT_MAX_PATH) {
		snprintf(why, whylen, "longer than %d bytes", MOAT_MAX_PATH);
		return -ENAMETOOLONG;
	}
	if (has_ctl(path)) {
		snprintf(why, whylen, "contains control characters");
		return -EINVAL;
	}
	if (len > 1 && path[len - 1] == '/') {
		snprintf(why, whylen, "must not end with '/'");
		return -EINVAL;
	}
	for (const char *c = path; *c;) {
		const char *next = strchr(c + 1, '/');
		size_t n = next ? (size_t)(next - c - 1) : strlen(c + 1);
		if (len > 1 &&
		    (n == 0 || (n == 1 && c[1] == '.') || (n == 2 && c[1] == '.' && c[2] == '.'))) {
			snprintf(why, whylen, "must be normalised (no '//', '.' or '..')");
			return -EINVAL;
		}
		if (!next)
			break;
		c = next;
	}
	return 0;
}

/* ---- host paths the user names ----------------------------------------------
 * A host path may be given relative ("."), with "..", trailing or doubled
 * slashes, or as "~" / "~/x" where no shell expanded it (--workspace=~/proj, a
 * policy file). It is made absolute here, once, so that the plan, the audit
 * start event and every later step see the same absolute path: relative to
 * the policy file's directory for a key (p->base_dir while a file loads), to
 * the caller's working directory (getcwd(), which names it without symlinks)
 * for a flag. "." and empty components are dropped; ".." removes the
 * component before it, by name. The kernel resolves "link/.." through the
 * link instead, so a ".." is accepted only where the component it removes is
 * a real directory (lstat: not a symlink), where both readings agree; else it
 * is refused, naming the component. This check is only about meaning: the
 * result is then walked by paths.c, which follows no symlink a sandbox could
 * have planted, so a rename between the two cannot redirect anything. */
static int host_path(const struct moat_policy *p, const char *v, char *out, size_t outlen,
		     char *why, size_t whylen)
{
	char cwd[MOAT_MAX_PATH];
	const char *base = "", *rest = v;
	size_t len = 0;

	if (!*v) {
		snprintf(why, whylen, "must be a path");
		return -EINVAL;
	}
	if (has_ctl(v)) {
		snprintf(why, whylen, "contains control characters");
		return -EINVAL;
	}
	if (v[0] == '~') {
		const char *home = getenv("HOME");
		if (v[1] && v[1] != '/') {
			snprintf(why, whylen,
				 "'~NAME' is not expanded: give the path (or ~/... for $HOME)");
			return -EINVAL;
		}
		if (!home || home[0] != '/') {
			snprintf(why, whylen, "'~' needs $HOME set to an absolute path");
			return -EINVAL;
		}
		base = home;
		rest = v + 1;
	} else if (v[0] != '/') {
		if (p->base_dir)
			base = p->base_dir;
		else if (getcwd(cwd, sizeof(cwd)))
			base = cwd;
		else {
			snprintf(why, whylen, "relative, and the working directory is unknown: %s",
				 strerror(errno));
			return -errno;
		}
	}
	if (strlen(base) + strlen(rest) + 2 > outlen || outlen > MOAT_MAX_PATH) {
		snprintf(why, whylen, "longer than %d bytes", MOAT_MAX_PATH - 1);
		return -ENAMETOOLONG;
	}
	out[0] = 0;
	for (int pass = 0; pass < 2; pass++) {
		for (const char *c = pass ? rest : base; *c;) {
			const char *e = strchrnul(c, '/');
			size_t n = (size_t)(e - c);
			if (n == 2 && c[0] == '.' && c[1] == '.') {
				struct stat st;
				if (len > 0 && lstat(out, &st) < 0) {
					int err = errno;
					snprintf(why, whylen, "%s (before '..'): %s", out,
						 strerror(err));
					return -err;
				}
				if (len > 0 && S_ISLNK(st.st_mode)) {
					snprintf(why, whylen,
						 "%s is a symlink: moat resolves '..' by name, not "
						 "through links; give the path without '..'",
						 out);
					return -ELOOP;
				}
				if (len > 0 && !S_ISDIR(st.st_mode)) {
					snprintf(why, whylen, "%s (before '..'): %s", out,
						 strerror(ENOTDIR));
					return -ENOTDIR;
				}
				while (len > 0 && out[len - 1] != '/')
					len--;
				if (len > 0)
					len--;
				out[len] = 0;
			} else if (n > 0 && !(n == 1 && c[0] == '.')) {
				out[len++] = '/';
				memcpy(out + len, c, n);
				len += n;
				out[len] = 0;
			}
			c = *e ? e + 1 : e;
		}
	}
	if (len == 0)
		snprintf(out, outlen, "/");
	return moat_path_check(out, why, whylen);
}

/* host_path into a fresh string */
static int host_path_dup(const struct moat_policy *p, const char *v, char **ret, char *why,
			 size_t whylen)
{
	char buf[MOAT_MAX_PATH];
	int r = host_path(p, v, buf, sizeof(buf), why, whylen);
	if (r < 0)
		return r;
	*ret = strdup(buf);
	return *ret ? 0 : -ENOMEM;
}

/* Destinations inside the sandbox may not replace its own structure. */
static int dest_check(const char *dest, char *why, size_t whylen)
{
	int r = moat_path_check(dest, why, whylen);
	if (r < 0)
		return r;
	static const char *const reserved[] = {"/", "/proc", "/dev", "/etc", "/output", "/data"};
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (streq(dest, reserved[i])) {
			snprintf(why, whylen, "%s is managed by moat", dest);
			return -EINVAL;
		}
	if (startswith(dest, "/proc/") || startswith(dest, "/dev/")) {
		snprintf(why, whylen, "cannot mount under /proc or /dev");
		return -EINVAL;
	}
	return 0;
}

/* "PATH[:DEST]" -> src, dest. Paths containing ':' cannot be given this way
 * (use the policy file's object form). */
static int split_src_dest(const char *v, char **ret_src, char **ret_dest)
{
	const char *colon = strchr(v, ':');
	_cleanup_free_ char *src = colon ? strndup(v, (size_t)(colon - v)) : strdup(v);
	_cleanup_free_ char *dest = strdup(colon ? colon + 1 : v);
	if (!src || !dest)
		return -ENOMEM;
	*ret_src = TAKE_PTR(src);
	*ret_dest = TAKE_PTR(dest);
	return 0;
}

static int mount_add(struct moat_policy *p, enum moat_mount_kind kind, const char *src,
		     const char *dest, uint64_t size, char *why, size_t whylen)
{
	if (p->n_mounts >= MOAT_MAX_MOUNTS) {
		snprintf(why, whylen, "more than %d mounts", MOAT_MAX_MOUNTS);
		return -E2BIG;
	}
	_cleanup_free_ char *abs = NULL;
	if (src) {
		/* the same path inside unless a destination was given */
		bool same = streq(src, dest);
		int r = host_path_dup(p, src, &abs, why, whylen);
		if (r < 0)
			return r;
		src = abs;
		if (same)
			dest = abs;
	}
	int r = dest_check(dest, why, whylen);
	if (r < 0)
		return r;
	struct moat_mount *m = realloc(p->mounts, sizeof(*m) * (p->n_mounts + 1));
	if (!m)
		return -ENOMEM;
	p->mounts = m;
	m = &p->mounts[p->n_mounts];
	*m = (struct moat_mount){.kind = kind, .size = size};
	m->dest = strdup(dest);
	m->src = src ? strdup(src) : NULL;
	if (!m->dest || (src && !m->src)) {
		free(m->dest);
		free(m->src);
		return -ENOMEM;
	}
	p->n_mounts++;
	return 0;
}

static int env_name_check(const char *n)
{
	if (!*n || isdigit((unsigned char)*n) || strlen(n) > 255)
		return -EINVAL;
	for (const char *c = n; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return -EINVAL;
	return 0;
}

static int env_add(struct moat_policy *p, const char *name, const char *value)
{
	for (unsigned i = 0; i < p->n_env; i++)
		if (streq(p->env[i].name, name)) {
			free(p->env[i].value);
			p->env[i].value = value ? strdup(value) : NULL;
			return value && !p->env[i].value ? -ENOMEM : 0;
		}
	if (p->n_env >= MOAT_MAX_ENV)
		return -E2BIG;
	struct moat_env *e = realloc(p->env, sizeof(*e) * (p->n_env + 1));
	if (!e)
		return -ENOMEM;
	p->env = e;
	e[p->n_env].name = strdup(name);
	e[p->n_env].value = value ? strdup(value) : NULL;
	if (!e[p->n_env].name || (value && !e[p->n_env].value)) {
		free(e[p->n_env].name);
		free(e[p->n_env].value);
		return -ENOMEM;
	}
	p->n_env++;
	return 0;
}

/* "host[:port,port]" -> rule. Pattern syntax is checked by the proxy's host
 * matcher at validation time (moat_policy_validate); here only the shape. */
static int host_rule_parse(const char *v, bool cidr, struct moat_host_rule *ret, char *why,
			   size_t whylen)
{
	memset(ret, 0, sizeof(*ret));
	if (!*v || strlen(v) > 300 || has_ctl(v) || strchr(v, '/') != NULL) {
		if (!cidr || !*v) {
			snprintf(why, whylen, "expected NAME[:PORTS]%s",
				 cidr ? "" : " (no scheme or path)");
			return -EINVAL;
		}
	}
	if (strstr(v, "://")) {
		snprintf(why, whylen, "no scheme: give the host name only");
		return -EINVAL;
	}
	const char *ports = NULL;
	size_t hostlen = strlen(v);
	if (v[0] == '[') { /* [v6]:ports */
		const char *close = strchr(v, ']');
		if (!close) {
			snprintf(why, whylen, "unterminated '['");
			return -EINVAL;
		}
		hostlen = (size_t)(close - v) + 1;
		if (close[1] == ':')
			ports = close + 2;
		else if (close[1]) {
			snprintf(why, whylen, "junk after ']'");
			return -EINVAL;
		}
	} else {
		const char *colon = strchr(v, ':');
		if (colon && strchr(colon + 1, ':') && cidr) {
			/* bare IPv6 CIDR without port */
			colon = NULL;
		}
		if (colon) {
			hostlen = (size_t)(colon - v);
			ports = colon + 1;
		}
	}
	ret->pattern = strndup(v, hostlen);
	if (!ret->pattern)
		return -ENOMEM;
	for (char *c = ret->pattern; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	if (!*ret->pattern) {
		snprintf(why, whylen, "empty host");
		goto fail;
	}
	if (ports) {
		_cleanup_free_ char *copy = strdup(ports);
		char *save = NULL;
		if (!copy)
			goto fail;
		for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			uint64_t port;
			if (moat_parse_u64(t, 1, 65535, &port) < 0) {
				snprintf(why, whylen, "bad port '%s' (1-65535)", t);
				goto fail;
			}
			if (ret->n_ports >= MOAT_MAX_PORTS) {
				snprintf(why, whylen, "more than %d ports", MOAT_MAX_PORTS);
				goto fail;
			}
			ret->ports[ret->n_ports++] = (uint16_t)port;
		}
		if (ret->n_ports == 0) {
			snprintf(why, whylen, "empty port list");
			goto fail;
		}
	}
	return 0;
fail:
	free(ret->pattern);
	ret->pattern = NULL;
	return -EINVAL;
}

static int rule_add(struct moat_host_rule **v, unsigned *n, const char *s, bool cidr, char *why,
		    size_t whylen)
{
	if (*n >= MOAT_MAX_RULES) {
		snprintf(why, whylen, "more than %d rules", MOAT_MAX_RULES);
		return -E2BIG;
	}
	struct moat_host_rule r;
	int k = host_rule_parse(s, cidr, &r, why, whylen);
	if (k < 0)
		return k;
	/* the proxy's own parsers, so that a rule it would refuse at start is a
	 * usage error here, naming the flag or key */
	struct moat_cidr c;
	char norm[256];
	if (cidr ? moat_cidr_parse(r.pattern, &c) < 0
		 : moat_host_pattern_normalize(r.pattern, norm, sizeof(norm)) < 0) {
		snprintf(why, whylen,
			 cidr ? "not an address or CIDR (host bits must be zero)"
			      : "not a valid host name pattern");
		free(r.pattern);
		return -EINVAL;
	}
	struct moat_host_rule *nv = realloc(*v, sizeof(*nv) * (*n + 1));
	if (!nv) {
		free(r.pattern);
		return -ENOMEM;
	}
	*v = nv;
	nv[(*n)++] = r;
	return 0;
}

static bool syscall_name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (const char *c = s; *c; c++)
		if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '_')
			return false;
	return true;
}

static int secret_add(struct moat_policy *p, struct moat_secret *s)
{
	if (p->n_secrets >= MOAT_MAX_SECRETS)
		return -E2BIG;
	struct moat_secret *nv = realloc(p->secrets, sizeof(*nv) * (p->n_secrets + 1));
	if (!nv)
		return -ENOMEM;
	p->secrets = nv;
	nv[p->n_secrets++] = *s;
	memset(s, 0, sizeof(*s));
	return 0;
}

static void secret_clear(struct moat_secret *s)
{
	free(s->name);
	free(s->from);
	strv_free(s->hosts, s->n_hosts);
	strv_free(s->methods, s->n_methods);
	strv_free(s->paths, s->n_paths);
	free(s->header);
	free(s->format);
	memset(s, 0, sizeof(*s));
}

/* One of a fixed list of words (`names` in enum order) -> its index, or a
 * message listing the choices. */
static int keyword(const char *v, const char *const *names, unsigned n, unsigned *ret, char *why,
		   size_t whylen)
{
	size_t len = 0;
	for (unsigned i = 0; i < n; i++)
		if (streq(v, names[i])) {
			*ret = i;
			return 0;
		}
	len = (size_t)snprintf(why, whylen, "must be");
	for (unsigned i = 0; i < n && len < whylen; i++)
		len += (size_t)snprintf(why + len, whylen - len, "%s %s",
					i == 0		     ? ""
						: i + 1 == n ? " or"
							     : ",",
					names[i]);
	return -EINVAL;
}

const char *const moat_ws_mode_names[] = {
	[MOAT_WS_OVERLAY] = "overlay", [MOAT_WS_RW] = "rw", [MOAT_WS_RO] = "ro"};
const char *const moat_net_mode_names[] = {
	[MOAT_NET_NONE] = "none", [MOAT_NET_ALLOW] = "allow", [MOAT_NET_HOST] = "host"};
const char *const moat_tty_mode_names[] = {
	[MOAT_TTY_AUTO] = "auto", [MOAT_TTY_ALWAYS] = "always", [MOAT_TTY_NEVER] = "never"};
const char *const moat_apply_mode_names[] = {
	[MOAT_APPLY_SAFE] = "safe", [MOAT_APPLY_NEVER] = "never", [MOAT_APPLY_ALL] = "all"};

static int set_workspace_mode_only(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = keyword(v, moat_ws_mode_names, ELEMENTSOF(moat_ws_mode_names), &m, why, whylen);
	if (r >= 0)
		p->workspace_mode = (enum moat_workspace_mode)m;
	return r;
}

/* ---- the option table -------------------------------------------------------
 * Every option is a (name, takes value, setter, help). The same setters serve
 * the policy keys that hold strings, so "--ro X" and {"mounts":[{"ro":"X"}]}
 * cannot mean different things. */

typedef int (*setter_fn)(struct moat_policy *p, const char *v, char *why, size_t whylen);

static int set_workspace(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *path = strdup(v);
	if (!path)
		return -ENOMEM;
	char *colon = strrchr(path, ':');
	if (colon) {
		int r = set_workspace_mode_only(p, colon + 1, why, whylen);
		if (r < 0)
			return r;
		*colon = 0;
	}
	_cleanup_free_ char *abs = NULL;
	int r = host_path_dup(p, path, &abs, why, whylen);
	if (r < 0)
		return r;
	if (streq(abs, "/")) {
		snprintf(why, whylen, "the whole filesystem cannot be the workspace");
		return -EINVAL;
	}
	free(p->workspace);
	p->workspace = TAKE_PTR(abs);
	return 0;
}

static int set_ro(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *src = NULL, *dest = NULL;
	int r = split_src_dest(v, &src, &dest);
	return r < 0 ? r : mount_add(p, MOAT_MOUNT_RO, src, dest, 0, why, whylen);
}

static int set_rw(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *src = NULL, *dest = NULL;
	int r = split_src_dest(v, &src, &dest);
	return r < 0 ? r : mount_add(p, MOAT_MOUNT_RW, src, dest, 0, why, whylen);
}

/* Bounds of the limits (docs/POLICY.md, "Values and units"): values that can
 * mean nothing are refused with the accepted range, never clamped. Sizes end
 * at 16 TiB (no cgroup, tmpfs or file this sandbox manages is larger; a typo
 * such as 100T or 16E is caught), durations at 30 days. */
#define MAX_SIZE (16ull << 40)
#define MAX_DURATION_MS (30ull * 24 * 3600 * 1000)
#define SIZE_SYNTAX \
	"a number with an optional unit K, M, G, T (binary: 1K = 1024; any case), then " \
	"optionally B or iB, e.g. 512M, 4G, 1.5GiB ('b' would be bits)"

static int set_size_range(uint64_t *dst, const char *v, uint64_t min, uint64_t max, char *why,
			  size_t whylen);

static int set_tmpfs(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	_cleanup_free_ char *dest = NULL, *size_s = NULL;
	uint64_t size = 0;
	int r = split_src_dest(v, &dest, &size_s);
	if (r < 0)
		return r;
	if (strchr(v, ':')) {
		char w[200];
		r = set_size_range(&size, size_s, 4096, MAX_SIZE, w, sizeof(w));
		if (r < 0) {
			snprintf(why, whylen, "size '%s': %s", size_s, w);
			return r;
		}
	}
	return mount_add(p, MOAT_MOUNT_TMPFS, NULL, dest, size, why, whylen);
}

static int set_hide(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return mount_add(p, MOAT_MOUNT_HIDE, NULL, v, 0, why, whylen);
}

static int set_abs_path(char **dst, const char *v, char *why, size_t whylen)
{
	int r = moat_path_check(v, why, whylen);
	return r < 0 ? r : str_set(dst, v);
}

/* a host path (host_path: relative, "..", "~" made absolute) */
static int set_host_path(struct moat_policy *p, char **dst, const char *v, char *why, size_t whylen)
{
	char *abs = NULL;
	int r = host_path_dup(p, v, &abs, why, whylen);
	if (r < 0)
		return r;
	free(*dst);
	*dst = abs;
	return 0;
}

static int set_input(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->input, v, why, whylen);
}

static int set_output(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->output, v, why, whylen);
}

static int set_rootfs(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->rootfs, v, why, whylen);
}

static int set_output_overwrite(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->output_overwrite = true;
	return 0;
}

static int set_cwd(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_abs_path(&p->cwd, v, why, whylen);
}

static int set_id(uint32_t *dst, const char *v, char *why, size_t whylen)
{
	uint64_t n;
	if (moat_parse_u64(v, 1, 65533, &n) < 0) {
		snprintf(why, whylen,
			 "must be a number from 1 to 65533 (never 0: the sandbox has no root)");
		return -EINVAL;
	}
	*dst = (uint32_t)n;
	return 0;
}

static int set_uid(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_id(&p->uid, v, why, whylen);
}

static int set_gid(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_id(&p->gid, v, why, whylen);
}

static int set_name_like(char **dst, const char *v, const char *what, char *why, size_t whylen)
{
	size_t n = strlen(v);
	if (n == 0 || n > 63) {
		snprintf(why, whylen, "%s must be 1-63 characters", what);
		return -EINVAL;
	}
	for (const char *c = v; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_' && *c != '.') {
			snprintf(why, whylen, "%s may contain only letters, digits, '-', '_', '.'",
				 what);
			return -EINVAL;
		}
	return str_set(dst, v);
}

static int set_user(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_name_like(&p->user, v, "user name", why, whylen);
}

static int set_hostname(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_name_like(&p->hostname, v, "hostname", why, whylen);
}

static int set_env(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	const char *eq = strchr(v, '=');
	_cleanup_free_ char *name = eq ? strndup(v, (size_t)(eq - v)) : strdup(v);
	if (!name)
		return -ENOMEM;
	if (env_name_check(name) < 0) {
		snprintf(why, whylen, "'%s' is not a variable name", name);
		return -EINVAL;
	}
	if (eq && strlen(eq + 1) > 128 * 1024) {
		snprintf(why, whylen, "value longer than 128 KiB");
		return -E2BIG;
	}
	int r = env_add(p, name, eq ? eq + 1 : NULL);
	if (r == -E2BIG)
		snprintf(why, whylen, "more than %d variables", MOAT_MAX_ENV);
	return r;
}

static int set_tty(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->tty = MOAT_TTY_ALWAYS;
	return 0;
}

static int set_no_tty(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->tty = MOAT_TTY_NEVER;
	return 0;
}

static int set_tty_mode(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = keyword(v, moat_tty_mode_names, ELEMENTSOF(moat_tty_mode_names), &m, why, whylen);
	if (r >= 0)
		p->tty = (enum moat_tty_mode)m;
	return r;
}

static int set_cpus(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	/* a policy written for a bigger machine still loads (up to 4x the CPUs
	 * online here); more than that can only be a mistake */
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t max = online > 0 ? (uint64_t)online * 4 : 4096;
	uint64_t m;
	int r = moat_parse_milli(v, &m);
	if (max > 4096)
		max = 4096;
	if (r == -EINVAL) {
		snprintf(why, whylen, "not a number of CPUs, e.g. 2 or 0.5");
		return -EINVAL;
	}
	if (r < 0 || m < 10 || m > max * 1000) {
		snprintf(why, whylen,
			 "out of range: from 0.01 to %llu CPUs (4 times the %ld online here)",
			 (unsigned long long)max, online);
		return -ERANGE;
	}
	p->cpus_milli = m;
	p->limits_set |= MOAT_LIMIT_CPUS;
	return 0;
}

static int set_size_range(uint64_t *dst, const char *v, uint64_t min, uint64_t max, char *why,
			  size_t whylen)
{
	uint64_t n;
	int r = moat_parse_size(v, &n);
	if (r == -EINVAL) {
		snprintf(why, whylen, "not a size: %s", SIZE_SYNTAX);
		return -EINVAL;
	}
	if (r < 0 || n < min || n > max) {
		char a[32], b[32];
		snprintf(why, whylen, "out of range: from %s to %s",
			 min ? moat_format_size(min, a, sizeof(a)) : "0",
			 moat_format_size(max, b, sizeof(b)));
		return -ERANGE;
	}
	*dst = n;
	return 0;
}

static int set_size_min(uint64_t *dst, const char *v, uint64_t min, char *why, size_t whylen)
{
	return set_size_range(dst, v, min, MAX_SIZE, why, whylen);
}

/* A duration in [min_ms, max_ms]. */
static int set_duration(uint64_t *dst, const char *v, uint64_t min_ms, uint64_t max_ms,
			const char *maxname, char *why, size_t whylen)
{
	uint64_t ms;
	int r = moat_parse_duration(v, &ms);
	if (r == -EINVAL) {
		snprintf(why, whylen,
			 "not a duration: numbers with units ms, s, m, h, d (lowercase), e.g. "
			 "90s, 10m, 1h30m; a bare number is seconds");
		return -EINVAL;
	}
	if (r < 0 || ms < min_ms || ms > max_ms) {
		snprintf(why, whylen, "out of range: from %s to %s", min_ms ? "1ms" : "0", maxname);
		return -ERANGE;
	}
	*dst = ms;
	return 0;
}

static int set_memory(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = set_size_min(&p->memory, v, 4u << 20, why, whylen);
	if (r >= 0)
		p->limits_set |= MOAT_LIMIT_MEMORY;
	return r;
}

static int set_pids(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (moat_parse_u64(v, 2, 4194304, &p->pids) < 0) {
		snprintf(why, whylen, "must be a number from 2 to 4194304");
		return -EINVAL;
	}
	p->limits_set |= MOAT_LIMIT_PIDS;
	return 0;
}

static int set_timeout(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = set_duration(&p->timeout_ms, v, 1, MAX_DURATION_MS, "30d", why, whylen);
	if (r >= 0)
		p->limits_set |= MOAT_LIMIT_TIMEOUT;
	return r;
}

static int set_kill_grace(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_duration(&p->kill_grace_ms, v, 0, 600000, "10m", why, whylen);
}

static int set_disk(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = set_size_min(&p->disk, v, 1u << 20, why, whylen);
	if (r >= 0)
		p->limits_set |= MOAT_LIMIT_DISK;
	return r;
}

static int set_max_output(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->max_output, v, 0, why, whylen);
}

static int set_fsize(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->fsize, v, 4096, why, whylen);
}

static int set_nofile(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (moat_parse_u64(v, 16, 1048576, &p->nofile) < 0) {
		snprintf(why, whylen, "must be a number from 16 to 1048576");
		return -EINVAL;
	}
	return 0;
}

static int set_allow_degraded(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (streq(v, "landlock"))
		p->allow_degraded |= MOAT_DEGRADE_LANDLOCK;
	else if (streq(v, "cgroup"))
		p->allow_degraded |= MOAT_DEGRADE_CGROUP;
	else if (streq(v, "seccomp-notify"))
		p->allow_degraded |= MOAT_DEGRADE_SECCOMP_NOTIFY;
	else {
		snprintf(why, whylen, "'%s' is not landlock, cgroup or seccomp-notify", v);
		return -EINVAL;
	}
	return 0;
}

static int syscall_list_add(char ***v, unsigned *n, const char *s, char *why, size_t whylen)
{
	if (!syscall_name_ok(s)) {
		snprintf(why, whylen, "'%s' is not a syscall name", s);
		return -EINVAL;
	}
	int r = strv_add(v, n, MOAT_MAX_SYSCALL_NAMES, s);
	if (r == -E2BIG)
		snprintf(why, whylen, "more than %d names", MOAT_MAX_SYSCALL_NAMES);
	return r;
}

static int set_allow_syscall(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return syscall_list_add(&p->allow_syscalls, &p->n_allow_syscalls, v, why, whylen);
}

static int set_deny_syscall(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return syscall_list_add(&p->deny_syscalls, &p->n_deny_syscalls, v, why, whylen);
}

#ifdef MOAT_TESTING
/* Test build only (moat-testing): the shipped moat has no such option. */
static int set_test_disable(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	const char *gate = getenv("MOAT_TEST_LAYERS");
	if (!gate || !streq(gate, "1")) {
		snprintf(why, whylen,
			 "a test-only switch: needs MOAT_TEST_LAYERS=1 in the environment");
		return -EPERM;
	}
	if (streq(v, "seccomp"))
		p->test_no_seccomp = true;
	else if (streq(v, "landlock"))
		p->test_no_landlock = true;
	else {
		snprintf(why, whylen, "must be seccomp or landlock");
		return -EINVAL;
	}
	return 0;
}
#endif

static int set_net(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = keyword(v, moat_net_mode_names, ELEMENTSOF(moat_net_mode_names), &m, why, whylen);
	if (r >= 0)
		p->net = (enum moat_net_mode)m;
	return r;
}

static int set_allow_host(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = rule_add(&p->allow_hosts, &p->n_allow_hosts, v, false, why, whylen);
	if (r >= 0 && p->net == MOAT_NET_NONE)
		p->net = MOAT_NET_ALLOW;
	return r;
}

static int set_deny_host(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return rule_add(&p->deny_hosts, &p->n_deny_hosts, v, false, why, whylen);
}

static int set_allow_cidr(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	int r = rule_add(&p->allow_cidrs, &p->n_allow_cidrs, v, true, why, whylen);
	if (r >= 0 && p->net == MOAT_NET_NONE)
		p->net = MOAT_NET_ALLOW;
	return r;
}

static int set_resolve(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	const char *eq = strchr(v, '=');
	if (!eq || eq == v || !eq[1] || has_ctl(v) || strlen(v) > 300) {
		snprintf(why, whylen, "expected NAME=ADDRESS");
		return -EINVAL;
	}
	if (p->n_resolve >= MOAT_MAX_RULES) {
		snprintf(why, whylen, "more than %d entries", MOAT_MAX_RULES);
		return -E2BIG;
	}
	{
		char name[256], host[256];
		struct sockaddr_storage ss;
		snprintf(name, sizeof(name), "%.*s", (int)(eq - v), v);
		if (moat_host_normalize(name, host, sizeof(host)) < 0 ||
		    moat_addr_parse(eq + 1, &ss) < 0) {
			snprintf(why, whylen,
				 "expected NAME=ADDRESS (a host name and an IP address)");
			return -EINVAL;
		}
	}
	struct moat_resolve *nv = realloc(p->resolve, sizeof(*nv) * (p->n_resolve + 1));
	if (!nv)
		return -ENOMEM;
	p->resolve = nv;
	nv[p->n_resolve].name = strndup(v, (size_t)(eq - v));
	nv[p->n_resolve].addr = strdup(eq + 1);
	if (!nv[p->n_resolve].name || !nv[p->n_resolve].addr)
		return -ENOMEM;
	for (char *c = nv[p->n_resolve].name; *c; c++)
		*c = (char)tolower((unsigned char)*c);
	p->n_resolve++;
	return 0;
}

static int set_upstream_ca(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->upstream_ca, v, why, whylen);
}

static int set_inspect_tls(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (streq(v, "all"))
		p->inspect_tls_all = true;
	else if (streq(v, "auto"))
		p->inspect_tls_all = false;
	else {
		snprintf(why, whylen, "must be auto or all");
		return -EINVAL;
	}
	return 0;
}

static int set_no_inspect(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (moat_host_pattern_validate(v, why, whylen) < 0)
		return -EINVAL;
	return strv_add(&p->no_inspect, &p->n_no_inspect, MOAT_MAX_RULES, v);
}

/* --secret NAME@HOST[,HOST...]: the value comes from moat's environment variable NAME. */
static int set_secret(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	struct moat_secret s = {.source = MOAT_SECRET_ENV};
	const char *at = strchr(v, '@');
	_cleanup_free_ char *hosts = NULL;
	char *save = NULL;
	int r = -EINVAL;
	if (!at || at == v || !at[1]) {
		snprintf(why, whylen, "expected NAME@HOST[,HOST...]");
		return -EINVAL;
	}
	s.name = strndup(v, (size_t)(at - v));
	if (!s.name)
		return -ENOMEM;
	if (env_name_check(s.name) < 0) {
		snprintf(why, whylen, "'%s' is not a variable name", s.name);
		goto out;
	}
	if (!(s.from = strdup(s.name)))
		goto out;
	hosts = strdup(at + 1);
	if (!hosts)
		goto out;
	for (char *t = strtok_r(hosts, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		if (has_ctl(t) || strchr(t, '/') || strchr(t, ':')) {
			snprintf(why, whylen, "'%s' is not a host name", t);
			goto out;
		}
		r = strv_add(&s.hosts, &s.n_hosts, MOAT_MAX_RULES, t);
		if (r < 0)
			goto out;
	}
	r = secret_add(p, &s);
	if (r == -E2BIG)
		snprintf(why, whylen, "more than %d secrets", MOAT_MAX_SECRETS);
	if (r >= 0 && p->net == MOAT_NET_NONE)
		p->net = MOAT_NET_ALLOW;
out:
	secret_clear(&s);
	return r;
}

static int set_log(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_host_path(p, &p->log_path, v, why, whylen);
}

static int set_status(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (!*v || has_ctl(v)) {
		snprintf(why, whylen, "must be a file name");
		return -EINVAL;
	}
	return set_host_path(p, &p->status_path, v, why, whylen);
}

static int set_on_alert(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (!*v || strlen(v) > MOAT_MAX_STRING) {
		snprintf(why, whylen, "must be a command line up to %d bytes", MOAT_MAX_STRING);
		return -EINVAL;
	}
	return str_set(&p->on_alert, v);
}

static int set_no_record_exec(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->record_exec = false;
	return 0;
}

static int set_apply(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	unsigned m;
	int r = keyword(v, moat_apply_mode_names, ELEMENTSOF(moat_apply_mode_names), &m, why,
			whylen);
	if (r >= 0)
		p->apply = (enum moat_apply_mode)m;
	return r;
}

static int set_flag_pattern(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (!*v || has_ctl(v) || v[0] == '/') {
		snprintf(why, whylen, "must be a relative glob pattern");
		return -EINVAL;
	}
	return strv_add(&p->flag_patterns, &p->n_flag_patterns, MOAT_MAX_RULES, v);
}

static int set_quiet(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->quiet = true;
	return 0;
}

static int set_log_sync(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->log_sync = true;
	return 0;
}

static int set_allow_rw_git(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->allow_rw_git = true;
	return 0;
}

static int set_allow_hardlinks(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	p->allow_hardlinks = true;
	return 0;
}

static int set_held_max(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->held_max, v, 1u << 20, why, whylen);
}

static int set_runs_max(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	return set_size_min(&p->runs_max, v, 1u << 20, why, whylen);
}

static int set_retention(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	size_t n = strlen(v);
	/* days: the unit retention is thought in ("14d") */
	if (n > 1 && n < 12 && v[n - 1] == 'd' && strspn(v, "0123456789") == n - 1) {
		p->retention_ms = strtoull(v, NULL, 10) * 24 * 3600 * 1000;
		if (p->retention_ms)
			return 0;
	}
	if (moat_parse_duration(v, &p->retention_ms) < 0 || p->retention_ms == 0) {
		snprintf(why, whylen, "expected a duration such as 14d, 36h");
		return -EINVAL;
	}
	return 0;
}

struct option_def {
	const char *flag;
	const char *arg; /* NULL: takes no value */
	setter_fn set;
	const char *help;
};

static const struct option_def options[] = {
	{"--workspace", "DIR[:MODE]", set_workspace,
	 "the project directory, at the same path, the working directory (MODE rw, ro, overlay)"},
	{"--ro", "PATH[:DEST]", set_ro, "bind PATH read-only at DEST (default: the same path)"},
	{"--rw", "PATH[:DEST]", set_rw, "bind PATH read-write at DEST"},
	{"--tmpfs", "DEST[:SIZE]", set_tmpfs, "a fresh tmpfs at DEST (size default: --disk)"},
	{"--hide", "PATH", set_hide, "an empty read-only file or directory over PATH"},
	{"--input", "DIR", set_input, "DIR read-only at /data"},
	{"--output", "DIR", set_output, "an empty writable /output, copied to DIR after the run"},
	{"--output-overwrite", NULL, set_output_overwrite, "allow --output into a non-empty DIR"},
	{"--rootfs", "DIR", set_rootfs,
	 "use DIR (e.g. a debootstrap tree) as the read-only system"},
	{"--cwd", "DIR", set_cwd,
	 "working directory inside (default: the workspace or /home/agent)"},
	{"--uid", "N", set_uid, "uid inside (default 1000)"},
	{"--gid", "N", set_gid, "gid inside (default 1000)"},
	{"--user", "NAME", set_user, "user name inside (default agent)"},
	{"--hostname", "NAME", set_hostname, "hostname inside (default moat)"},
	{"--env", "NAME[=VALUE]", set_env,
	 "set NAME inside (without =VALUE: copy moat's own NAME)"},
	{"--tty", NULL, set_tty, "always give the command a pseudo-terminal"},
	{"--no-tty", NULL, set_no_tty, "never give the command a pseudo-terminal"},
	{"--tty-mode", "auto|always|never", set_tty_mode, "pseudo-terminal mode"},
	{"--cpus", "N", set_cpus, "CPU limit, fractional allowed"},
	{"--memory", "SIZE", set_memory, "memory limit (swap off)"},
	{"--pids", "N", set_pids, "process limit (default 4096)"},
	{"--timeout", "DURATION", set_timeout, "wall-clock limit (exit 124), e.g. 90s, 10m"},
	{"--kill-grace", "DURATION", set_kill_grace,
	 "time between SIGTERM and SIGKILL at the limit (default 2s)"},
	{"--disk", "SIZE", set_disk, "size of every writable tmpfs (default 1G)"},
	{"--max-output", "SIZE", set_max_output,
	 "bytes collected from /output, and of stdout+stderr (default 1G)"},
	{"--nofile", "N", set_nofile, "open file limit (default 4096)"},
	{"--fsize", "SIZE", set_fsize, "largest file the command may write"},
	{"--allow-degraded", "LAYER", set_allow_degraded,
	 "run even if LAYER (landlock, cgroup, seccomp-notify) cannot be applied"},
	{"--allow-syscall", "NAME", set_allow_syscall,
	 "allow a syscall the default filter denies (e.g. ptrace)"},
	{"--deny-syscall", "NAME", set_deny_syscall, "deny one more syscall (EPERM)"},
#ifdef MOAT_TESTING
	{"--test-disable-layer", "seccomp|landlock", set_test_disable,
	 "test build only (MOAT_TEST_LAYERS=1)"},
#endif
	{"--net", "none|allow|host", set_net, "network mode (default none: loopback only)"},
	{"--allow-host", "PATTERN[:PORTS]", set_allow_host,
	 "allow a destination by name (*.x.com = subdomains); implies --net allow"},
	{"--deny-host", "PATTERN", set_deny_host, "deny a destination by name (wins over allow)"},
	{"--allow-cidr", "CIDR[:PORTS]", set_allow_cidr, "allow destinations by address"},
	{"--resolve", "NAME=ADDR", set_resolve, "map NAME to ADDR (also allows that address)"},
	{"--upstream-ca", "FILE", set_upstream_ca,
	 "verify TLS upstreams with this CA instead of the system store"},
	{"--inspect-tls", "auto|all", set_inspect_tls,
	 "all: intercept every allowed TLS host (placeholder and http rules everywhere)"},
	{"--no-inspect", "HOST", set_no_inspect,
	 "with --inspect-tls all: pass TLS to HOST through (pinned clients)"},
	{"--secret", "NAME@HOST[,HOST]", set_secret,
	 "inject moat's $NAME for HOST; the sandbox sees a placeholder"},
	{"--log", "FILE", set_log, "write the audit stream (JSON lines) to FILE"},
	{"--json-status", "FILE", set_status, "write the status record (JSON) to FILE at the end"},
	{"--on-alert", "COMMAND", set_on_alert,
	 "run COMMAND on the host with each alert as JSON on stdin"},
	{"--no-record-exec", NULL, set_no_record_exec, "do not record every exec"},
	{"--apply", "never|safe|all", set_apply,
	 "how overlay workspace changes are applied (default safe)"},
	{"--flag-pattern", "GLOB", set_flag_pattern, "hold back changes to paths matching GLOB"},
	{"--allow-rw-git", NULL, set_allow_rw_git,
	 "allow --workspace DIR:rw over a git repository (no review of hooks and config)"},
	{"--allow-hardlinks", NULL, set_allow_hardlinks,
	 "allow --workspace DIR:rw with files that have other names outside"},
	{"--held-max", "SIZE", set_held_max,
	 "held-back workspace data kept per run (default 256M; over it none is kept)"},
	{"--runs-max", "SIZE", set_runs_max,
	 "total size of the runs directory (default 4G; moat gc trims to it)"},
	{"--retention", "DURATION", set_retention,
	 "age past which moat gc removes a run's logs and held data (default 14d)"},
	{"--quiet", NULL, set_quiet, "no summary on stderr"},
	{"--log-sync", NULL, set_log_sync,
	 "wait until the audit stream is on disk before exiting (fdatasync)"},
};

static const struct option_def *option_find(const char *flag)
{
	for (size_t i = 0; i < ELEMENTSOF(options); i++)
		if (streq(options[i].flag, flag))
			return &options[i];
	return NULL;
}

int moat_policy_option_takes_value(const char *option)
{
	const struct option_def *o = option_find(option);
	return o ? (o->arg != NULL) : -ENOENT;
}

/* The options that hold one value: a second one on the command line would
 * silently replace the first, so the CLI refuses it. Kept as a list beside
 * the table (not a column in it) so that adding an option is one line; an
 * option not listed here may be repeated, as before. */
static const char *const single_value_options[] = {
	"--workspace",	 "--input",	  "--output",	"--rootfs",	 "--cwd",
	"--uid",	 "--gid",	  "--user",	"--hostname",	 "--tty-mode",
	"--cpus",	 "--memory",	  "--pids",	"--timeout",	 "--kill-grace",
	"--disk",	 "--max-output",  "--nofile",	"--fsize",	 "--net",
	"--upstream-ca", "--inspect-tls", "--log",	"--json-status", "--on-alert",
	"--apply",	 "--held-max",	  "--runs-max", "--retention",
};

int moat_policy_option_single(const char *option)
{
	const struct option_def *o = option_find(option);
	if (!o)
		return -ENOENT;
	for (size_t i = 0; i < ELEMENTSOF(single_value_options); i++)
		if (streq(single_value_options[i], option))
			return 1;
	return 0;
}

const char *const *moat_policy_option_help(void)
{
	static char *lines[ELEMENTSOF(options) + 1];
	static char storage[ELEMENTSOF(options)][192];
	if (!lines[0]) {
		for (size_t i = 0; i < ELEMENTSOF(options); i++) {
			snprintf(storage[i], sizeof(storage[i]), "%s%s%s\t%s", options[i].flag,
				 options[i].arg ? " " : "", options[i].arg ? options[i].arg : "",
				 options[i].help);
			lines[i] = storage[i];
		}
	}
	return (const char *const *)lines;
}

int moat_policy_option_info(size_t i, struct moat_option_info *ret)
{
	if (i >= ELEMENTSOF(options) || !ret)
		return -ENOENT;
	*ret = (struct moat_option_info){options[i].flag, options[i].arg, options[i].help};
	return 0;
}

int moat_policy_set_option(struct moat_policy *p, const char *option, const char *value,
			   struct moat_error *ret_err)
{
	const struct option_def *o = option_find(option);
	char why[256] = "";
	if (!o)
		return moat_error_set(ret_err, "usage", ENOENT, "unknown option %s", option),
		       -ENOENT;
	if (o->arg && !value)
		return moat_error_set(ret_err, "usage", EINVAL, "%s needs a value: %s %s", option,
				      option, o->arg);
	if (value && strlen(value) > MOAT_MAX_PATH + 256)
		return moat_error_set(ret_err, "usage", E2BIG, "%s: value too long", option);
	int r = o->set(p, value ? value : "", why, sizeof(why));
	if (r < 0)
		return moat_error_set(ret_err, "usage", -r, "%s %s: %s", option, value ? value : "",
				      why[0] ? why : strerror(-r));
	return 0;
}

/* ---- JSON policy ------------------------------------------------------------ */

#define MAX_DEPTH 8

struct jctx {
	struct moat_policy *p;
	const char *text;
	size_t len;
	const char *name;
	struct moat_error *err;
	struct moat_json_path_elem path[MAX_DEPTH];
	size_t depth;
};

static int jfail(struct jctx *c, bool at_key, int err, const char *fmt, ...) _printf_(4, 5);
static int jfail(struct jctx *c, bool at_key, int err, const char *fmt, ...)
{
	char msg[400], where[160] = "";
	va_list ap;
	unsigned line = 0, col = 0;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	/* the key path, e.g. limits.memory or mounts[2].dest */
	for (size_t i = 0; i < c->depth; i++) {
		size_t n = strlen(where);
		if (c->path[i].key)
			snprintf(where + n, sizeof(where) - n, "%s%s", n ? "." : "",
				 c->path[i].key);
		else
			snprintf(where + n, sizeof(where) - n, "[%zu]", c->path[i].index);
	}
	/* a key written with escapes is not found by its decoded name: point at
	 * the nearest enclosing value that can be found */
	for (size_t d = c->depth + 1; d-- > 0;)
		if (moat_json_locate(c->text, c->len, c->path, d, at_key && d == c->depth, &line,
				     &col) == 0)
			break;
	if (c->err) {
		moat_error_set(c->err, "policy", err, "%s:%u:%u: %s%s%s", c->name, line, col, where,
			       where[0] ? ": " : "", msg);
		c->err->line = line;
		c->err->column = col;
	}
	return err > 0 ? -err : -EINVAL;
}

static void jpush_key(struct jctx *c, const char *k)
{
	c->path[c->depth++] = (struct moat_json_path_elem){.key = k};
}

static void jpush_index(struct jctx *c, size_t i)
{
	c->path[c->depth++] = (struct moat_json_path_elem){.index = i};
}

static void jpop(struct jctx *c)
{
	c->depth--;
}

static const char *json_type_name(const json_t *v)
{
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		return "an object";
	case JSON_ARRAY:
		return "an array";
	case JSON_STRING:
		return "a string";
	case JSON_INTEGER:
		return "an integer";
	case JSON_REAL:
		return "a number";
	case JSON_TRUE:
	case JSON_FALSE:
		return "a boolean";
	case JSON_NULL:
		return "null";
	}
	return "?";
}

/* A string key handled by an option setter. Numbers are accepted where the
 * setter parses numbers (limits), converted to their decimal text. */
static int jset(struct jctx *c, json_t *v, setter_fn set, bool numbers_ok)
{
	char buf[64], why[256] = "";
	const char *s;
	if (json_is_string(v))
		s = json_string_value(v);
	else if (numbers_ok && json_is_integer(v) && json_integer_value(v) >= 0) {
		snprintf(buf, sizeof(buf), "%lld", (long long)json_integer_value(v));
		s = buf;
	} else if (numbers_ok && json_is_real(v) && json_real_value(v) > 0) {
		snprintf(buf, sizeof(buf), "%.3f", json_real_value(v));
		s = buf;
	} else if (numbers_ok && json_is_number(v))
		return jfail(c, false, ERANGE, "must not be negative or zero");
	else
		return jfail(c, false, EINVAL, "expected a string%s, got %s",
			     numbers_ok ? " or a number" : "", json_type_name(v));
	if (strlen(s) > MOAT_MAX_PATH + 256)
		return jfail(c, false, E2BIG, "value too long");
	int r = set(c->p, s, why, sizeof(why));
	if (r < 0)
		return jfail(c, false, -r, "%s", why[0] ? why : strerror(-r));
	return 0;
}

static int jbool(struct jctx *c, json_t *v, bool *dst)
{
	if (!json_is_boolean(v))
		return jfail(c, false, EINVAL, "expected true or false, got %s", json_type_name(v));
	*dst = json_is_true(v);
	return 0;
}

/* Each string of an array through a setter. */
static int jset_array(struct jctx *c, json_t *v, setter_fn set)
{
	size_t i;
	json_t *e;
	if (!json_is_array(v))
		return jfail(c, false, EINVAL, "expected an array of strings, got %s",
			     json_type_name(v));
	json_array_foreach(v, i, e)
	{
		jpush_index(c, i);
		int r = jset(c, e, set, false);
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int jstrv(struct jctx *c, json_t *v, char ***dst, unsigned *n)
{
	size_t i;
	json_t *e;
	if (!json_is_array(v))
		return jfail(c, false, EINVAL, "expected an array of strings, got %s",
			     json_type_name(v));
	json_array_foreach(v, i, e)
	{
		jpush_index(c, i);
		int r;
		if (!json_is_string(e) || !json_string_length(e) || has_ctl(json_string_value(e)) ||
		    json_string_length(e) > MOAT_MAX_STRING)
			r = jfail(c, false, EINVAL, "expected a non-empty string");
		else if ((r = strv_add(dst, n, MOAT_MAX_RULES, json_string_value(e))) < 0)
			r = jfail(c, false, -r, "too many entries");
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

struct key_handler {
	const char *key;
	int (*fn)(struct jctx *c, json_t *v, const struct key_handler *h);
	setter_fn set;
	bool numbers_ok;
};

static int h_set(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jset(c, v, h->set, h->numbers_ok);
}

static int h_set_array(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jset_array(c, v, h->set);
}

/* Walks an object, dispatching each member to its handler; unknown keys are
 * errors pointing at the key. */
static int jobject(struct jctx *c, json_t *obj, const struct key_handler *hs, size_t n)
{
	const char *k;
	json_t *v;
	if (!json_is_object(obj))
		return jfail(c, false, EINVAL, "expected an object, got %s", json_type_name(obj));
	if (c->depth >= MAX_DEPTH - 1)
		return jfail(c, false, EINVAL, "nested too deeply");
	json_object_foreach(obj, k, v)
	{
		const struct key_handler *h = NULL;
		for (size_t i = 0; i < n; i++)
			if (streq(hs[i].key, k))
				h = &hs[i];
		jpush_key(c, k);
		int r;
		if (!h) {
			char known[400] = "";
			for (size_t i = 0; i < n; i++) {
				size_t l = strlen(known);
				snprintf(known + l, sizeof(known) - l, "%s%s", i ? ", " : "",
					 hs[i].key);
			}
			r = jfail(c, true, EINVAL, "unknown key \"%s\" (known: %s)", k, known);
		} else
			r = h->fn(c, v, h);
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int set_workspace_path_only(struct moat_policy *p, const char *v, char *why, size_t whylen)
{
	if (strchr(v, ':')) {
		snprintf(why, whylen, "give the mode in \"mode\", not after ':'");
		return -EINVAL;
	}
	enum moat_workspace_mode keep = p->workspace_mode;
	int r = set_workspace(p, v, why, whylen);
	p->workspace_mode = keep;
	return r;
}

static int h_workspace(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"path", h_set, set_workspace_path_only, false},
		{"mode", h_set, set_workspace_mode_only, false},
	};
	if (json_is_string(v))
		return jset(c, v, set_workspace, false);
	int r = jobject(c, v, hs, ELEMENTSOF(hs));
	if (r >= 0 && !c->p->workspace)
		return jfail(c, false, EINVAL, "\"path\" is required");
	return r;
}

static int h_output_overwrite(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->output_overwrite);
}

static int h_allow_rw_git(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->allow_rw_git);
}

static int h_allow_hardlinks(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->allow_hardlinks);
}

/* mounts: [{"type": "ro"|"rw"|"tmpfs"|"hide", "src": ..., "dest": ..., "size": ...}] */
static int h_mounts(struct jctx *c, json_t *v, const struct key_handler *h)
{
	size_t i;
	json_t *m;
	if (!json_is_array(v))
		return jfail(c, false, EINVAL, "expected an array of mount objects");
	json_array_foreach(v, i, m)
	{
		jpush_index(c, i);
		const char *k;
		json_t *f;
		const char *type = NULL, *src = NULL, *dest = NULL, *size_s = NULL;
		int r = 0;
		char why[256] = "";
		uint64_t size = 0;
		enum moat_mount_kind kind = MOAT_MOUNT_RO;
		if (!json_is_object(m)) {
			r = jfail(c, false, EINVAL, "expected a mount object");
			goto next;
		}
		json_object_foreach(m, k, f)
		{
			const char **slot = streq(k, "type") ? &type
				: streq(k, "src")	     ? &src
				: streq(k, "dest")	     ? &dest
				: streq(k, "size")	     ? &size_s
							     : NULL;
			jpush_key(c, k);
			if (!slot)
				r = jfail(c, true, EINVAL,
					  "unknown key \"%s\" (known: type, src, dest, size)", k);
			else if (!json_is_string(f))
				r = jfail(c, false, EINVAL, "expected a string, got %s",
					  json_type_name(f));
			else
				*slot = json_string_value(f);
			jpop(c);
			if (r < 0)
				goto next;
		}
		if (!type) {
			r = jfail(c, false, EINVAL, "\"type\" is required (ro, rw, tmpfs, hide)");
			goto next;
		}
		if (streq(type, "ro") || streq(type, "rw")) {
			kind = streq(type, "ro") ? MOAT_MOUNT_RO : MOAT_MOUNT_RW;
			if (!src) {
				r = jfail(c, false, EINVAL, "\"src\" is required for %s", type);
				goto next;
			}
			if (!dest)
				dest = src;
		} else if (streq(type, "tmpfs") || streq(type, "hide")) {
			kind = streq(type, "tmpfs") ? MOAT_MOUNT_TMPFS : MOAT_MOUNT_HIDE;
			if (src) {
				jpush_key(c, "src");
				r = jfail(c, true, EINVAL, "%s takes no \"src\"", type);
				jpop(c);
				goto next;
			}
			if (!dest) {
				r = jfail(c, false, EINVAL, "\"dest\" is required for %s", type);
				goto next;
			}
		} else {
			jpush_key(c, "type");
			r = jfail(c, false, EINVAL, "type \"%s\" is not ro, rw, tmpfs or hide",
				  type);
			jpop(c);
			goto next;
		}
		if (size_s && (kind != MOAT_MOUNT_TMPFS || moat_parse_size(size_s, &size) < 0)) {
			jpush_key(c, "size");
			r = jfail(c, false, EINVAL,
				  "size applies to tmpfs only and must look like 64M");
			jpop(c);
			goto next;
		}
		r = mount_add(c->p, kind, src, dest, size, why, sizeof(why));
		if (r < 0)
			r = jfail(c, false, -r, "%s", why);
	next:
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int h_filesystem(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"rootfs", h_set, set_rootfs, false},
		{"workspace", h_workspace, NULL, false},
		{"input", h_set, set_input, false},
		{"output", h_set, set_output, false},
		{"output_overwrite", h_output_overwrite, NULL, false},
		{"mounts", h_mounts, NULL, false},
		{"allow_rw_git", h_allow_rw_git, NULL, false},
		{"allow_hardlinks", h_allow_hardlinks, NULL, false},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_env(struct jctx *c, json_t *v, const struct key_handler *h)
{
	const char *k;
	json_t *e;
	if (!json_is_object(v))
		return jfail(c, false, EINVAL,
			     "expected an object of NAME: value (null = copy moat's own)");
	json_object_foreach(v, k, e)
	{
		int r = 0;
		jpush_key(c, k);
		if (env_name_check(k) < 0)
			r = jfail(c, true, EINVAL, "\"%s\" is not a variable name", k);
		else if (!json_is_string(e) && !json_is_null(e))
			r = jfail(c, false, EINVAL, "expected a string or null, got %s",
				  json_type_name(e));
		else if (json_is_string(e) && json_string_length(e) > 128 * 1024)
			r = jfail(c, false, E2BIG, "value longer than 128 KiB");
		else if ((r = env_add(c->p, k, json_is_string(e) ? json_string_value(e) : NULL)) <
			 0)
			r = jfail(c, false, -r, "cannot add variable");
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int h_process(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"uid", h_set, set_uid, true},	     {"gid", h_set, set_gid, true},
		{"user", h_set, set_user, false},    {"hostname", h_set, set_hostname, false},
		{"cwd", h_set, set_cwd, false},	     {"env", h_env, NULL, false},
		{"tty", h_set, set_tty_mode, false},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_limits(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"cpus", h_set, set_cpus, true},
		{"memory", h_set, set_memory, true},
		{"pids", h_set, set_pids, true},
		{"timeout", h_set, set_timeout, true},
		{"kill_grace", h_set, set_kill_grace, true},
		{"disk", h_set, set_disk, true},
		{"max_output", h_set, set_max_output, true},
		{"nofile", h_set, set_nofile, true},
		{"fsize", h_set, set_fsize, true},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_syscalls(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"allow", h_set_array, set_allow_syscall, false},
		{"deny", h_set_array, set_deny_syscall, false},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_resolve(struct jctx *c, json_t *v, const struct key_handler *h)
{
	const char *k;
	json_t *e;
	if (!json_is_object(v))
		return jfail(c, false, EINVAL, "expected an object of NAME: ADDRESS");
	json_object_foreach(v, k, e)
	{
		char buf[600], why[256] = "";
		int r = 0;
		jpush_key(c, k);
		if (!json_is_string(e))
			r = jfail(c, false, EINVAL, "expected an address string");
		else if ((size_t)snprintf(buf, sizeof(buf), "%s=%s", k, json_string_value(e)) >=
			 sizeof(buf))
			r = jfail(c, false, E2BIG, "too long");
		else if ((r = set_resolve(c->p, buf, why, sizeof(why))) < 0)
			r = jfail(c, false, -r, "%s", why);
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int h_http_rules(struct jctx *c, json_t *v, const struct key_handler *h)
{
	size_t i;
	json_t *o;
	if (!json_is_array(v))
		return jfail(c, false, EINVAL, "expected an array of {host, methods, paths}");
	json_array_foreach(v, i, o)
	{
		struct moat_http_rule r = {0};
		const char *k;
		json_t *f;
		int k_r = 0;
		jpush_index(c, i);
		if (!json_is_object(o)) {
			k_r = jfail(c, false, EINVAL, "expected an object");
			goto next;
		}
		json_object_foreach(o, k, f)
		{
			jpush_key(c, k);
			if (streq(k, "host")) {
				if (!json_is_string(f) || !json_string_length(f) ||
				    has_ctl(json_string_value(f)))
					k_r = jfail(c, false, EINVAL, "expected a host name");
				else if (!(r.host = strdup(json_string_value(f))))
					k_r = -ENOMEM;
			} else if (streq(k, "methods"))
				k_r = jstrv(c, f, &r.methods, &r.n_methods);
			else if (streq(k, "paths"))
				k_r = jstrv(c, f, &r.paths, &r.n_paths);
			else
				k_r = jfail(c, true, EINVAL,
					    "unknown key \"%s\" (known: host, methods, paths)", k);
			jpop(c);
			if (k_r < 0)
				goto next;
		}
		if (!r.host)
			k_r = jfail(c, false, EINVAL, "\"host\" is required");
		else if (c->p->n_http_rules >= MOAT_MAX_RULES)
			k_r = jfail(c, false, E2BIG, "too many rules");
		else {
			struct moat_http_rule *nv =
				realloc(c->p->http_rules, sizeof(*nv) * (c->p->n_http_rules + 1));
			if (!nv)
				k_r = -ENOMEM;
			else {
				c->p->http_rules = nv;
				nv[c->p->n_http_rules++] = r;
				memset(&r, 0, sizeof(r));
			}
		}
	next:
		free(r.host);
		strv_free(r.methods, r.n_methods);
		strv_free(r.paths, r.n_paths);
		jpop(c);
		if (k_r < 0)
			return k_r;
	}
	return 0;
}

static int h_network(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"mode", h_set, set_net, false},
		{"allow_hosts", h_set_array, set_allow_host, false},
		{"deny_hosts", h_set_array, set_deny_host, false},
		{"allow_cidrs", h_set_array, set_allow_cidr, false},
		{"resolve", h_resolve, NULL, false},
		{"http_rules", h_http_rules, NULL, false},
		{"upstream_ca", h_set, set_upstream_ca, false},
		{"inspect_tls", h_set, set_inspect_tls, false},
		{"no_inspect", h_set_array, set_no_inspect, false},
	};
	enum moat_net_mode before = c->p->net;
	int r = jobject(c, v, hs, ELEMENTSOF(hs));
	/* an explicit "mode" wins over the implication of allow_hosts */
	json_t *mode = json_object_get(v, "mode");
	if (r >= 0 && mode && json_is_string(mode)) {
		char why[64];
		set_net(c->p, json_string_value(mode), why, sizeof(why));
	}
	(void)before;
	return r;
}

static int h_secrets(struct jctx *c, json_t *v, const struct key_handler *h)
{
	size_t i;
	json_t *o;
	if (!json_is_array(v))
		return jfail(c, false, EINVAL, "expected an array of secret objects");
	json_array_foreach(v, i, o)
	{
		struct moat_secret s = {0};
		const char *k;
		json_t *f;
		int r = 0, sources = 0;
		jpush_index(c, i);
		if (!json_is_object(o)) {
			r = jfail(c, false, EINVAL, "expected an object");
			goto next;
		}
		json_object_foreach(o, k, f)
		{
			jpush_key(c, k);
			bool is_str = json_is_string(f) && json_string_length(f) > 0 &&
				json_string_length(f) <= MOAT_MAX_STRING;
			const char *sv = is_str ? json_string_value(f) : NULL;
			if (streq(k, "hosts"))
				r = jstrv(c, f, &s.hosts, &s.n_hosts);
			else if (streq(k, "methods"))
				r = jstrv(c, f, &s.methods, &s.n_methods);
			else if (streq(k, "paths"))
				r = jstrv(c, f, &s.paths, &s.n_paths);
			else if (!streq(k, "name") && !streq(k, "from_env") &&
				 !streq(k, "from_file") && !streq(k, "from_command") &&
				 !streq(k, "header") && !streq(k, "format"))
				r = jfail(
					c, true, EINVAL,
					"unknown key \"%s\" (known: name, from_env, from_file, from_command, hosts, methods, paths, header, format)",
					k);
			else if (!sv)
				r = jfail(c, false, EINVAL, "expected a non-empty string");
			else if (streq(k, "name")) {
				if (env_name_check(sv) < 0)
					r = jfail(c, false, EINVAL, "\"%s\" is not a variable name",
						  sv);
				else
					r = str_set(&s.name, sv);
			} else if (startswith(k, "from_")) {
				sources++;
				s.source = streq(k, "from_env") ? MOAT_SECRET_ENV
					: streq(k, "from_file") ? MOAT_SECRET_FILE
								: MOAT_SECRET_COMMAND;
				char why[256] = "";
				if (s.source == MOAT_SECRET_FILE) {
					free(s.from);
					s.from = NULL;
					r = host_path_dup(c->p, sv, &s.from, why, sizeof(why));
					if (r < 0)
						r = jfail(c, false, -r, "%s", why);
				} else
					r = str_set(&s.from, sv);
			} else if (streq(k, "header")) {
				if (has_ctl(sv) || strchr(sv, ':') || strchr(sv, ' '))
					r = jfail(c, false, EINVAL, "not a header name");
				else
					r = str_set(&s.header, sv);
			} else if (streq(k, "format")) {
				const char *pct = strstr(sv, "%s");
				if (!pct || strstr(pct + 2, "%") || has_ctl(sv))
					r = jfail(c, false, EINVAL,
						  "must contain %%s exactly once and no other %%");
				else
					r = str_set(&s.format, sv);
			}
			jpop(c);
			if (r < 0)
				goto next;
		}
		if (!s.name)
			r = jfail(c, false, EINVAL, "\"name\" is required");
		else if (sources != 1)
			r = jfail(c, false, EINVAL,
				  "exactly one of from_env, from_file, from_command is required");
		else if (!s.n_hosts)
			r = jfail(c, false, EINVAL,
				  "\"hosts\" is required: where the secret may be sent");
		else if (s.format && !s.header)
			r = jfail(c, false, EINVAL, "\"format\" needs \"header\"");
		else if ((r = secret_add(c->p, &s)) < 0)
			r = jfail(c, false, -r, "too many secrets");
		else if (c->p->net == MOAT_NET_NONE)
			c->p->net = MOAT_NET_ALLOW;
	next:
		secret_clear(&s);
		jpop(c);
		if (r < 0)
			return r;
	}
	return 0;
}

static int h_record_exec(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->record_exec);
}

static int h_quiet(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->quiet);
}

static int h_log_sync(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->log_sync);
}

static int h_audit(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"log", h_set, set_log, false},
		{"status", h_set, set_status, false},
		{"on_alert", h_set, set_on_alert, false},
		{"record_exec", h_record_exec, NULL, false},
		{"apply", h_set, set_apply, false},
		{"flag_patterns", h_set_array, set_flag_pattern, false},
		{"quiet", h_quiet, NULL, false},
		{"log_sync", h_log_sync, NULL, false},
		{"held_max", h_set, set_held_max, true},
		{"runs_max", h_set, set_runs_max, true},
		{"retention", h_set, set_retention, false},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_version(struct jctx *c, json_t *v, const struct key_handler *h)
{
	if (!json_is_integer(v) || json_integer_value(v) != MOAT_POLICY_VERSION)
		return jfail(c, false, EINVAL, "unsupported version (this moat reads version %d)",
			     MOAT_POLICY_VERSION);
	return 0;
}

static const struct key_handler top_keys[] = {
	{"version", h_version, NULL, false},
	{"filesystem", h_filesystem, NULL, false},
	{"process", h_process, NULL, false},
	{"limits", h_limits, NULL, false},
	{"allow_degraded", h_set_array, set_allow_degraded, false},
	{"syscalls", h_syscalls, NULL, false},
	{"network", h_network, NULL, false},
	{"secrets", h_secrets, NULL, false},
	{"audit", h_audit, NULL, false},
};

int moat_policy_load_string(struct moat_policy *p, const char *text, size_t len, const char *name,
			    struct moat_error *ret_err)
{
	json_error_t je;
	struct jctx c = {
		.p = p, .text = text, .len = len, .name = name ? name : "policy", .err = ret_err};
	if (len > MOAT_MAX_POLICY_BYTES)
		return moat_error_set(ret_err, "policy", EFBIG, "%s: larger than %u bytes", c.name,
				      MOAT_MAX_POLICY_BYTES);
	json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
	if (!root) {
		int r = moat_error_set(ret_err, "policy", EINVAL, "%s:%d:%d: %s", c.name, je.line,
				       je.column, je.text);
		if (ret_err) {
			ret_err->line = je.line > 0 ? (unsigned)je.line : 0;
			ret_err->column = je.column > 0 ? (unsigned)je.column : 0;
		}
		return r;
	}
	int r;
	if (!json_is_object(root))
		r = jfail(&c, false, EINVAL, "the policy must be a JSON object");
	else if (!json_object_get(root, "version"))
		r = jfail(&c, false, EINVAL, "\"version\": %d is required", MOAT_POLICY_VERSION);
	else
		r = jobject(&c, root, top_keys, ELEMENTSOF(top_keys));
	json_decref(root);
	return r;
}

int moat_policy_load_file(struct moat_policy *p, const char *path, struct moat_error *ret_err)
{
	/* never through a symlink a sandbox could have planted (paths.h) */
	_cleanup_close_ int fd = moat_path_read_file(path, NULL);
	struct stat st;
	if (fd < 0)
		return moat_error_set(ret_err, "policy", -fd, "cannot open policy %s: %s%s", path,
				      strerror(-fd),
				      fd == -ELOOP ? " (a symlink: pass the resolved path)" : "");
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return moat_error_set(ret_err, "policy", EINVAL, "policy %s is not a regular file",
				      path);
	if ((uint64_t)st.st_size > MOAT_MAX_POLICY_BYTES)
		return moat_error_set(ret_err, "policy", EFBIG, "policy %s is larger than %u bytes",
				      path, MOAT_MAX_POLICY_BYTES);
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return -ENOMEM;
	size_t got = 0;
	while (got < (size_t)st.st_size) {
		ssize_t n = read(fd, buf + got, (size_t)st.st_size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return moat_error_set(ret_err, "policy", n < 0 ? errno : EIO,
					      "cannot read %s", path);
		got += (size_t)n;
	}
	/* relative paths in the file are relative to its directory, so that a
	 * project can commit its policy (host_path) */
	char dir[MOAT_MAX_PATH], why[256];
	_cleanup_free_ char *abs = NULL;
	int r = host_path_dup(p, path, &abs, why, sizeof(why));
	if (r < 0)
		return moat_error_set(ret_err, "policy", -r, "policy %s: %s", path, why);
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(abs, '/') - abs), abs);
	const char *saved = p->base_dir;
	p->base_dir = dir[0] ? dir : "/";
	r = moat_policy_load_string(p, buf, got, path, ret_err);
	p->base_dir = saved;
	return r;
}

/* ---- validation --------------------------------------------------------------- */

/* Could some name match both host patterns? (normalized: "a.b" or "*.a.b") */
static bool patterns_overlap(const char *a, const char *b)
{
	char na[256], nb[256];
	bool wa, wb;
	size_t la, lb;

	if (moat_host_pattern_normalize(a, na, sizeof(na)) < 0 ||
	    moat_host_pattern_normalize(b, nb, sizeof(nb)) < 0)
		return true; /* in doubt: overlap (refused below) */
	wa = na[0] == '*';
	wb = nb[0] == '*';
	if (!wa && !wb)
		return streq(na, nb);
	if (wa && !wb)
		return moat_host_pattern_match(na, nb);
	if (!wa && wb)
		return moat_host_pattern_match(nb, na);
	/* "*.x" and "*.y" overlap when one suffix is the other or under it */
	la = strlen(na + 1);
	lb = strlen(nb + 1);
	return la >= lb ? streq(na + 1 + la - lb, nb + 1) : streq(nb + 1 + lb - la, na + 1);
}

/* --no-inspect only narrows --inspect-tls all, and never a host whose
 * secret or http rules need interception: pass-through there would make
 * placeholders and method/path rules invisible, so the run is refused. */
static int validate_inspect(const struct moat_policy *p, struct moat_error *ret_err)
{
	if (p->n_no_inspect && !p->inspect_tls_all)
		return moat_error_set(ret_err, "policy", EINVAL,
				      "--no-inspect %s needs --inspect-tls all", p->no_inspect[0]);
	for (unsigned i = 0; i < p->n_no_inspect; i++) {
		const char *ni = p->no_inspect[i];
		for (unsigned j = 0; j < p->n_secrets; j++)
			for (unsigned k = 0; k < p->secrets[j].n_hosts; k++)
				if (patterns_overlap(ni, p->secrets[j].hosts[k]))
					return moat_error_set(
						ret_err, "policy", EINVAL,
						"--no-inspect %s covers %s, a host of secret %s: "
						"its placeholder would travel unchecked",
						ni, p->secrets[j].hosts[k], p->secrets[j].name);
		for (unsigned j = 0; j < p->n_http_rules; j++)
			if (patterns_overlap(ni, p->http_rules[j].host))
				return moat_error_set(
					ret_err, "policy", EINVAL,
					"--no-inspect %s covers %s, which has http rules", ni,
					p->http_rules[j].host);
	}
	return 0;
}

int moat_policy_validate(const struct moat_policy *p, struct moat_error *ret_err)
{
	for (unsigned i = 0; i < p->n_mounts; i++)
		for (unsigned j = i + 1; j < p->n_mounts; j++)
			if (streq(p->mounts[i].dest, p->mounts[j].dest))
				return moat_error_set(ret_err, "policy", EINVAL, "two mounts at %s",
						      p->mounts[i].dest);
	if (p->workspace) {
		static const char *const bad[] = {"/usr",   "/bin",    "/sbin", "/lib",
						  "/lib64", "/etc",    "/proc", "/dev",
						  "/tmp",   "/output", "/data"};
		for (size_t i = 0; i < ELEMENTSOF(bad); i++)
			if (streq(p->workspace, bad[i]))
				return moat_error_set(
					ret_err, "policy", EINVAL,
					"--workspace %s would replace a system directory",
					p->workspace);
	}
	if (p->net != MOAT_NET_ALLOW && (p->n_allow_hosts || p->n_allow_cidrs || p->n_secrets))
		return moat_error_set(
			ret_err, "policy", EINVAL,
			"allow rules and secrets need network mode \"allow\" (mode is %s)",
			p->net == MOAT_NET_HOST ? "host" : "none");
	for (unsigned i = 0; i < p->n_allow_syscalls; i++)
		if (moat_seccomp_validate_name(p->allow_syscalls[i]) < 0)
			return moat_error_set(
				ret_err, "policy", EINVAL,
				"--allow-syscall %s: not a syscall of this architecture",
				p->allow_syscalls[i]);
	for (unsigned i = 0; i < p->n_deny_syscalls; i++)
		if (moat_seccomp_validate_name(p->deny_syscalls[i]) < 0)
			return moat_error_set(
				ret_err, "policy", EINVAL,
				"--deny-syscall %s: not a syscall of this architecture",
				p->deny_syscalls[i]);
	for (unsigned i = 0; i < p->n_allow_syscalls; i++)
		for (unsigned j = 0; j < p->n_deny_syscalls; j++)
			if (streq(p->allow_syscalls[i], p->deny_syscalls[j]))
				return moat_error_set(ret_err, "policy", EINVAL,
						      "syscall %s is both allowed and denied",
						      p->allow_syscalls[i]);
	for (unsigned i = 0; i < p->n_secrets; i++)
		for (unsigned j = i + 1; j < p->n_secrets; j++)
			if (streq(p->secrets[i].name, p->secrets[j].name))
				return moat_error_set(ret_err, "policy", EINVAL,
						      "secret %s given twice", p->secrets[i].name);
	return validate_inspect(p, ret_err);
}
