/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat serve`: tenants (the tokens file) and the narrowing of the
 * operator's policy by a request. A create may name a few fields (memory,
 * cpus, pids, timeout, disk, net, allow_hosts, workspace_mode, env); each
 * is applied with the policy library's own option parser on a copy of the
 * operator's policy, and the result is compared with the operator's: a
 * value that asks for more (a higher limit, a limit where the operator set
 * one and the request none cannot happen: absent fields keep the
 * operator's), a wider network mode, a host the operator did not allow, a
 * writable workspace the operator made read-only) is refused with the
 * field named. Nothing else of the policy can be named at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <nettle/sha2.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "policy/errors.h"
#include "policy/policy.h"
#include "api/serve_int.h"
#include "shared/macro.h"

#define TOKENS_MAX_BYTES (1u << 20)
#define TOKEN_MIN 16u

static void token_hash(const char *token, uint8_t out[32])
{
	struct sha256_ctx c;
	sha256_init(&c);
	sha256_update(&c, strlen(token), (const uint8_t *)token);
	sha256_digest(&c, 32, out);
}

struct moat_serve_tenant *moat_serve_tenant_find(struct moat_serve_tenants *ts, const char *token)
{
	uint8_t h[32];
	struct moat_serve_tenant *found = NULL;
	if (!token || !token[0])
		return NULL;
	token_hash(token, h);
	/* every tenant compared, every byte: no early exit */
	for (size_t i = 0; i < ts->n; i++) {
		unsigned diff = 0;
		for (size_t b = 0; b < 32; b++)
			diff |= (unsigned)(h[b] ^ ts->t[i].hash[b]);
		/* branch-free select */
		uintptr_t m = (uintptr_t)0 - (uintptr_t)(diff == 0);
		found = (struct moat_serve_tenant *)(((uintptr_t)found & ~m) |
						     ((uintptr_t)&ts->t[i] & m));
	}
	explicit_bzero(h, sizeof(h));
	return found;
}

void moat_serve_tenants_free(struct moat_serve_tenants *ts)
{
	if (ts->t)
		explicit_bzero(ts->t, ts->n * sizeof(*ts->t));
	free(ts->t);
	*ts = (struct moat_serve_tenants){0};
}

static int size_value(json_t *v, uint64_t *ret)
{
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v))
		return -EINVAL;
	struct moat_policy *p = moat_policy_new();
	if (!p)
		return -ENOMEM;
	struct moat_error e = {0};
	int k = moat_policy_set_option(p, "--memory", json_string_value(v), &e);
	*ret = p->memory;
	moat_policy_free(p);
	return k < 0 ? -EINVAL : 0;
}

static bool name_ok(const char *s)
{
	size_t n = strlen(s);
	if (n == 0 || n > MOAT_SERVE_TENANT_NAME)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z') ||
		      (s[i] >= '0' && s[i] <= '9') || s[i] == '-' || s[i] == '_' || s[i] == '.'))
			return false;
	return true;
}

static bool token_ok(const char *s)
{
	size_t n = strlen(s);
	if (n < TOKEN_MIN || n > 512)
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] < 0x21 || s[i] > 0x7e)
			return false;
	return true;
}

int moat_serve_tenants_load(const char *path, struct moat_serve_tenants *ret,
			    struct moat_error *ret_err)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	*ret = (struct moat_serve_tenants){0};
	if (fd < 0)
		return moat_error_set(ret_err, "tokens", errno, "%s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > TOKENS_MAX_BYTES)
		return moat_error_set(ret_err, "tokens", EINVAL,
				      "%s: not a regular file of at most 1 MiB", path);
	if (st.st_mode & 077)
		return moat_error_set(ret_err, "tokens", EPERM,
				      "%s: others can read or write it (mode %o): chmod 600", path,
				      (unsigned)(st.st_mode & 0777));
	_cleanup_free_ char *buf = malloc((size_t)st.st_size + 1);
	if (!buf)
		return moat_error_set(ret_err, "tokens", ENOMEM, "out of memory");
	ssize_t n = read(fd, buf, (size_t)st.st_size);
	if (n != st.st_size)
		return moat_error_set(ret_err, "tokens", EIO, "%s: short read", path);
	buf[n] = '\0';
	size_t i = 0;
	while (buf[i] == ' ' || buf[i] == '\n' || buf[i] == '\t' || buf[i] == '\r')
		i++;
	if (buf[i] != '{') {
		/* one token on one line */
		char *e = buf + i + strcspn(buf + i, "\r\n");
		*e = '\0';
		if (!token_ok(buf + i))
			return moat_error_set(ret_err, "tokens", EINVAL,
					      "%s: the token must be 16 to 512 printable ASCII "
					      "bytes without spaces",
					      path);
		ret->t = calloc(1, sizeof(*ret->t));
		if (!ret->t)
			return moat_error_set(ret_err, "tokens", ENOMEM, "out of memory");
		ret->n = 1;
		snprintf(ret->t[0].name, sizeof(ret->t[0].name), "default");
		token_hash(buf + i, ret->t[0].hash);
		explicit_bzero(buf, (size_t)n);
		return 0;
	}
	json_error_t je;
	json_t *j = json_loadb(buf, (size_t)n, JSON_REJECT_DUPLICATES, &je);
	explicit_bzero(buf, (size_t)n);
	json_t *arr = json_object_get(j, "tenants"), *e;
	if (!j || !json_is_array(arr) || json_object_size(j) != 1 || json_array_size(arr) == 0 ||
	    json_array_size(arr) > MOAT_SERVE_MAX_TENANTS) {
		json_decref(j);
		return moat_error_set(
			ret_err, "tokens", EINVAL,
			"%s: expected {\"tenants\":[{\"token\":..,\"name\":..}, ...]} "
			"(1 to %u tenants)%s%s",
			path, MOAT_SERVE_MAX_TENANTS, j ? "" : ": ", j ? "" : je.text);
	}
	ret->t = calloc(json_array_size(arr), sizeof(*ret->t));
	if (!ret->t) {
		json_decref(j);
		return moat_error_set(ret_err, "tokens", ENOMEM, "out of memory");
	}
	json_array_foreach(arr, i, e)
	{
		const char *tok = json_string_value(json_object_get(e, "token"));
		const char *name = json_string_value(json_object_get(e, "name"));
		json_t *ms = json_object_get(e, "max_sandboxes"),
		       *mm = json_object_get(e, "max_memory");
		struct moat_serve_tenant *t = &ret->t[i];
		const char *k;
		json_t *v;
		int bad = 0;
		json_object_foreach(e, k, v) if (!streq(k, "token") && !streq(k, "name") &&
						 !streq(k, "max_sandboxes") &&
						 !streq(k, "max_memory")) bad = 1;
		if (bad || !tok || !token_ok(tok) || !name || !name_ok(name) ||
		    (ms &&
		     (!json_is_integer(ms) || json_integer_value(ms) < 0 ||
		      json_integer_value(ms) > 100000)) ||
		    (mm && size_value(mm, &t->max_memory) < 0)) {
			moat_serve_tenants_free(ret);
			json_decref(j);
			return moat_error_set(
				ret_err, "tokens", EINVAL,
				"%s: tenant %zu: token (16-512 printable bytes), name "
				"([A-Za-z0-9_.-], at most 64), max_sandboxes, "
				"max_memory; nothing else",
				path, i + 1);
		}
		snprintf(t->name, sizeof(t->name), "%s", name);
		t->max_sandboxes = ms ? (unsigned)json_integer_value(ms) : 0;
		token_hash(tok, t->hash);
		ret->n = i + 1;
		for (size_t o = 0; o < i; o++)
			if (streq(ret->t[o].name, t->name) ||
			    !memcmp(ret->t[o].hash, t->hash, 32)) {
				moat_serve_tenants_free(ret);
				json_decref(j);
				return moat_error_set(ret_err, "tokens", EINVAL,
						      "%s: tenant %zu: its name or token is "
						      "another tenant's",
						      path, i + 1);
			}
	}
	json_decref(j);
	return 0;
}

/* ---- the policy --------------------------------------------------------------------- */

struct moat_policy *moat_serve_policy_copy(const struct moat_policy *p, struct moat_error *ret_err)
{
	_cleanup_free_ char *json = NULL;
	struct moat_policy *c = moat_policy_new();
	if (!c || moat_policy_to_json(p, &json) < 0 ||
	    moat_policy_load_string(c, json, strlen(json), "the operator's policy", ret_err) < 0) {
		if (c && ret_err && !ret_err->message[0])
			moat_error_set(ret_err, "policy", ENOMEM, "cannot copy the policy");
		return moat_policy_free(c);
	}
	c->base_dir = p->base_dir;
	/* which limits were asked for (a limit asked for fails closed when it
	 * cannot be enforced; a default one falls back): not in the JSON */
	c->limits_set = p->limits_set;
	/* --image: the tree moat serve opened (and holds), not in the JSON */
	if (moat_policy_image_copy(c, p) < 0) {
		moat_error_set(ret_err, "policy", ENOMEM, "cannot copy the policy");
		return moat_policy_free(c);
	}
	return c;
}

uint64_t moat_serve_policy_memory(const struct moat_policy *p)
{
	return p->memory;
}

uint64_t moat_serve_policy_timeout(const struct moat_policy *p)
{
	return p->timeout_ms;
}

json_t *moat_serve_policy_summary(const struct moat_policy *p)
{
	json_t *h = json_array();
	for (unsigned i = 0; h && i < p->n_allow_hosts; i++)
		json_array_append_new(h, json_string(p->allow_hosts[i].pattern));
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:s,s:o,s:s}", "memory", (json_int_t)p->memory,
			 "cpus_milli", (json_int_t)p->cpus_milli, "pids", (json_int_t)p->pids,
			 "timeout_ms", (json_int_t)p->timeout_ms, "disk", (json_int_t)p->disk,
			 "net", moat_net_mode_names[p->net], "allow_hosts", h ? h : json_array(),
			 "workspace_mode",
			 p->workspace ? moat_ws_mode_names[p->workspace_mode] : "none");
}

_printf_(7, 8) static int refuse(int err, char *field, size_t flen, const char *f, char *msg,
				 size_t mlen, const char *fmt, ...)
{
	va_list ap;
	snprintf(field, flen, "%s", f);
	va_start(ap, fmt);
	vsnprintf(msg, mlen, fmt, ap);
	va_end(ap);
	return err;
}

/* A scalar field as the option's text. */
static int scalar_text(json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		return snprintf(buf, len, "%lld", (long long)json_integer_value(v)) >= (int)len
			? -EINVAL
			: 0;
	if (json_is_real(v))
		return snprintf(buf, len, "%g", json_real_value(v)) >= (int)len ? -EINVAL : 0;
	if (json_is_string(v))
		return snprintf(buf, len, "%s", json_string_value(v)) >= (int)len ? -EINVAL : 0;
	return -EINVAL;
}

/* One limit: parsed by the option's own parser, then compared. */
static int narrow_limit(struct moat_policy *p, const struct moat_policy *ceil, json_t *args,
			const char *field, const char *option, size_t off, char *f, size_t flen,
			char *msg, size_t mlen)
{
	json_t *v = json_object_get(args, field);
	char text[64];
	struct moat_error e = {0};
	if (!v)
		return 0;
	if (scalar_text(v, text, sizeof(text)) < 0)
		return refuse(-EINVAL, f, flen, field, msg, mlen, "%s: not a valid value", field);
	if (moat_policy_set_option(p, option, text, &e) < 0)
		return refuse(-EINVAL, f, flen, field, msg, mlen, "%s: %s", field, e.message);
	uint64_t want = *(const uint64_t *)((const char *)p + off);
	uint64_t max = *(const uint64_t *)((const char *)ceil + off);
	if (max && (want == 0 || want > max))
		return refuse(-EPERM, f, flen, field, msg, mlen,
			      "%s: %s asks for more than the operator's policy allows (%llu): a "
			      "request can narrow the policy, never widen it",
			      field, text, (unsigned long long)max);
	return 0;
}

int moat_serve_narrow(struct moat_policy *p, const struct moat_policy *ceil, json_t *args, char *f,
		      size_t flen, char *msg, size_t mlen)
{
	static const struct {
		const char *field, *option;
		size_t off;
	} limits[] = {
		{"memory", "--memory", offsetof(struct moat_policy, memory)},
		{"cpus", "--cpus", offsetof(struct moat_policy, cpus_milli)},
		{"pids", "--pids", offsetof(struct moat_policy, pids)},
		{"timeout", "--timeout", offsetof(struct moat_policy, timeout_ms)},
		{"disk", "--disk", offsetof(struct moat_policy, disk)},
	};
	struct moat_error e = {0};
	json_t *v;
	int k;

	for (size_t i = 0; i < ELEMENTSOF(limits); i++)
		if ((k = narrow_limit(p, ceil, args, limits[i].field, limits[i].option,
				      limits[i].off, f, flen, msg, mlen)) < 0)
			return k;

	if ((v = json_object_get(args, "net"))) {
		const char *s = json_string_value(v);
		int mode = -1;
		for (int m = 0; s && m < 3; m++)
			if (streq(s, moat_net_mode_names[m]))
				mode = m;
		if (mode < 0)
			return refuse(-EINVAL, f, flen, "net", msg, mlen,
				      "net: must be none, allow or host");
		/* none < allow < host */
		if ((unsigned)mode > (unsigned)ceil->net)
			return refuse(-EPERM, f, flen, "net", msg, mlen,
				      "net: %s is wider than the operator's --net %s: a request "
				      "can narrow the policy, never widen it",
				      s, moat_net_mode_names[ceil->net]);
		if (mode == MOAT_NET_NONE && p->n_secrets)
			return refuse(-EINVAL, f, flen, "net", msg, mlen,
				      "net: none is not possible with the operator's secrets");
		if (mode != (int)p->net && moat_policy_set_option(p, "--net", s, &e) < 0)
			return refuse(-EINVAL, f, flen, "net", msg, mlen, "net: %s", e.message);
		if (mode != MOAT_NET_ALLOW) {
			/* the allowlist goes with the mode it needs */
			for (unsigned r = 0; r < p->n_allow_hosts; r++)
				free(p->allow_hosts[r].pattern);
			for (unsigned r = 0; r < p->n_allow_cidrs; r++)
				free(p->allow_cidrs[r].pattern);
			p->n_allow_hosts = p->n_allow_cidrs = 0;
		}
	}

	if ((v = json_object_get(args, "allow_hosts"))) {
		size_t i;
		json_t *h;
		if (p->net != MOAT_NET_ALLOW)
			return refuse(-EINVAL, f, flen, "allow_hosts", msg, mlen,
				      "allow_hosts: only with net allow");
		json_array_foreach(v, i, h)
		{
			bool found = false;
			for (unsigned r = 0; r < ceil->n_allow_hosts && !found; r++)
				found = streq(json_string_value(h), ceil->allow_hosts[r].pattern);
			if (!found)
				return refuse(-EPERM, f, flen, "allow_hosts", msg, mlen,
					      "allow_hosts: %.200s is not one of the operator's "
					      "--allow-host patterns: a request can narrow the "
					      "policy, never widen it",
					      json_string_value(h));
		}
		/* keep the operator's rules the request names, in order */
		unsigned n = 0;
		for (unsigned r = 0; r < p->n_allow_hosts; r++) {
			bool keep = false;
			json_array_foreach(v, i, h) keep =
				keep || streq(json_string_value(h), p->allow_hosts[r].pattern);
			if (keep)
				p->allow_hosts[n++] = p->allow_hosts[r];
			else
				free(p->allow_hosts[r].pattern);
		}
		p->n_allow_hosts = n;
	}

	if ((v = json_object_get(args, "workspace_mode"))) {
		const char *s = json_string_value(v);
		/* how much the sandbox can change the host's workspace: ro < overlay < rw */
		static const int rank[] = {
			[MOAT_WS_RO] = 0, [MOAT_WS_OVERLAY] = 1, [MOAT_WS_RW] = 2};
		int mode = -1;
		for (int m = 0; s && m < 3; m++)
			if (streq(s, moat_ws_mode_names[m]))
				mode = m;
		if (mode < 0)
			return refuse(-EINVAL, f, flen, "workspace_mode", msg, mlen,
				      "workspace_mode: must be ro, overlay or rw");
		if (!p->workspace)
			return refuse(-EINVAL, f, flen, "workspace_mode", msg, mlen,
				      "workspace_mode: the operator's policy has no workspace");
		if (rank[mode] > rank[ceil->workspace_mode])
			return refuse(-EPERM, f, flen, "workspace_mode", msg, mlen,
				      "workspace_mode: %s is wider than the operator's %s: a "
				      "request can narrow the policy, never widen it",
				      s, moat_ws_mode_names[ceil->workspace_mode]);
		p->workspace_mode = (enum moat_workspace_mode)mode;
	}

	if ((v = json_object_get(args, "env"))) {
		const char *name;
		json_t *val;
		json_object_foreach(v, name, val)
		{
			char kv[33000];
			if (snprintf(kv, sizeof(kv), "%s=%s", name, json_string_value(val)) >=
				    (int)sizeof(kv) ||
			    moat_policy_set_option(p, "--env", kv, &e) < 0)
				return refuse(-EINVAL, f, flen, "env", msg, mlen, "env: %s: %s",
					      name, e.message[0] ? e.message : "too long");
		}
	}
	if (moat_policy_validate(p, &e) < 0)
		return refuse(-EINVAL, f, flen, "policy", msg, mlen, "%s", e.message);
	return 0;
}
