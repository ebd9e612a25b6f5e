/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The validated building blocks of a policy, shared by the option setters and
 * the JSON walk: strings, host paths, mounts, environment, host rules, secrets. */
#include <ctype.h>
#include <sys/stat.h>

#include "policy/errors.h"
#include "policy/policy.h"
#include "policy/policy_int.h"
#include "proxy/addr.h"
#include "proxy/hostmatch.h"
#include "shared/macro.h"
#include "shared/parse.h"

int moat_policy_str_set(char **dst, const char *v)
{
	char *n = strdup(v);
	if (!n)
		return -ENOMEM;
	free(*dst);
	*dst = n;
	return 0;
}

int moat_policy_strv_add(char ***v, unsigned *n, unsigned max, const char *s)
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

bool moat_policy_has_ctl(const char *s)
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
	if (moat_policy_has_ctl(path)) {
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
	if (moat_policy_has_ctl(v)) {
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
int moat_policy_host_path_dup(const struct moat_policy *p, const char *v, char **ret, char *why,
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
int moat_policy_split_src_dest(const char *v, char **ret_src, char **ret_dest)
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

int moat_policy_mount_add(struct moat_policy *p, enum moat_mount_kind kind, const char *src,
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
		int r = moat_policy_host_path_dup(p, src, &abs, why, whylen);
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

int moat_policy_env_name_check(const char *n)
{
	if (!*n || isdigit((unsigned char)*n) || strlen(n) > 255)
		return -EINVAL;
	for (const char *c = n; *c; c++)
		if (!isalnum((unsigned char)*c) && *c != '_')
			return -EINVAL;
	return 0;
}

int moat_policy_env_add(struct moat_policy *p, const char *name, const char *value)
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
	if (!*v || strlen(v) > 300 || moat_policy_has_ctl(v) || strchr(v, '/') != NULL) {
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

int moat_policy_rule_add(struct moat_host_rule **v, unsigned *n, const char *s, bool cidr,
			 char *why, size_t whylen)
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

bool moat_policy_syscall_name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (const char *c = s; *c; c++)
		if (!islower((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '_')
			return false;
	return true;
}

int moat_policy_secret_add(struct moat_policy *p, struct moat_secret *s)
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

/* One of a fixed list of words (`names` in enum order) -> its index, or a
 * message listing the choices. */
int moat_policy_keyword(const char *v, const char *const *names, unsigned n, unsigned *ret,
			char *why, size_t whylen)
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
