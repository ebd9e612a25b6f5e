/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading a policy file: the JSON walk, key by key, through the same setters
 * as the options, with errors at the key's line:column. */
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <sys/stat.h>

#include "policy/errors.h"
#include "sandbox/paths.h"
#include "policy/policy.h"
#include "policy/policy_int.h"
#include "shared/jsonpos.h"
#include "shared/macro.h"
#include "shared/parse.h"

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
static int jset(struct jctx *c, json_t *v, moat_policy_setter set, bool numbers_ok)
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
static int jset_array(struct jctx *c, json_t *v, moat_policy_setter set)
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
		if (!json_is_string(e) || !json_string_length(e) ||
		    moat_policy_has_ctl(json_string_value(e)) ||
		    json_string_length(e) > MOAT_MAX_STRING)
			r = jfail(c, false, EINVAL, "expected a non-empty string");
		else if ((r = moat_policy_strv_add(dst, n, MOAT_MAX_RULES, json_string_value(e))) <
			 0)
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
	moat_policy_setter set;
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
	int r = moat_pset_workspace(p, v, why, whylen);
	p->workspace_mode = keep;
	return r;
}

static int h_workspace(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"path", h_set, set_workspace_path_only, false},
		{"mode", h_set, moat_pset_workspace_mode, false},
	};
	if (json_is_string(v))
		return jset(c, v, moat_pset_workspace, false);
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

static int h_image_allow_setid(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->image_allow_setid);
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
		r = moat_policy_mount_add(c->p, kind, src, dest, size, why, sizeof(why));
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
		{"rootfs", h_set, moat_pset_rootfs, false},
		{"workspace", h_workspace, NULL, false},
		{"input", h_set, moat_pset_input, false},
		{"output", h_set, moat_pset_output, false},
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
		if (moat_policy_env_name_check(k) < 0)
			r = jfail(c, true, EINVAL, "\"%s\" is not a variable name", k);
		else if (!json_is_string(e) && !json_is_null(e))
			r = jfail(c, false, EINVAL, "expected a string or null, got %s",
				  json_type_name(e));
		else if (json_is_string(e) && json_string_length(e) > 128 * 1024)
			r = jfail(c, false, E2BIG, "value longer than 128 KiB");
		else if ((r = moat_policy_env_add(
				  c->p, k, json_is_string(e) ? json_string_value(e) : NULL)) < 0)
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
		{"uid", h_set, moat_pset_uid, true},
		{"gid", h_set, moat_pset_gid, true},
		{"user", h_set, moat_pset_user, false},
		{"hostname", h_set, moat_pset_hostname, false},
		{"cwd", h_set, moat_pset_cwd, false},
		{"env", h_env, NULL, false},
		{"tty", h_set, moat_pset_tty_mode, false},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_limits(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"cpus", h_set, moat_pset_cpus, true},
		{"memory", h_set, moat_pset_memory, true},
		{"pids", h_set, moat_pset_pids, true},
		{"timeout", h_set, moat_pset_timeout, true},
		{"kill_grace", h_set, moat_pset_kill_grace, true},
		{"disk", h_set, moat_pset_disk, true},
		{"max_output", h_set, moat_pset_max_output, true},
		{"nofile", h_set, moat_pset_nofile, true},
		{"fsize", h_set, moat_pset_fsize, true},
	};
	return jobject(c, v, hs, ELEMENTSOF(hs));
}

static int h_syscalls(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"allow", h_set_array, moat_pset_allow_syscall, false},
		{"deny", h_set_array, moat_pset_deny_syscall, false},
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
		else if ((r = moat_pset_resolve(c->p, buf, why, sizeof(why))) < 0)
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
				    moat_policy_has_ctl(json_string_value(f)))
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
		moat_policy_strv_free(r.methods, r.n_methods);
		moat_policy_strv_free(r.paths, r.n_paths);
		jpop(c);
		if (k_r < 0)
			return k_r;
	}
	return 0;
}

static int h_network(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"mode", h_set, moat_pset_net, false},
		{"allow_hosts", h_set_array, moat_pset_allow_host, false},
		{"deny_hosts", h_set_array, moat_pset_deny_host, false},
		{"allow_cidrs", h_set_array, moat_pset_allow_cidr, false},
		{"resolve", h_resolve, NULL, false},
		{"http_rules", h_http_rules, NULL, false},
		{"upstream_ca", h_set, moat_pset_upstream_ca, false},
		{"inspect_tls", h_set, moat_pset_inspect_tls, false},
		{"no_inspect", h_set_array, moat_pset_no_inspect, false},
	};
	enum moat_net_mode before = c->p->net;
	int r = jobject(c, v, hs, ELEMENTSOF(hs));
	/* an explicit "mode" wins over the implication of allow_hosts */
	json_t *mode = json_object_get(v, "mode");
	if (r >= 0 && mode && json_is_string(mode)) {
		char why[64];
		moat_pset_net(c->p, json_string_value(mode), why, sizeof(why));
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
				if (moat_policy_env_name_check(sv) < 0)
					r = jfail(c, false, EINVAL, "\"%s\" is not a variable name",
						  sv);
				else
					r = moat_policy_str_set(&s.name, sv);
			} else if (startswith(k, "from_")) {
				sources++;
				s.source = streq(k, "from_env") ? MOAT_SECRET_ENV
					: streq(k, "from_file") ? MOAT_SECRET_FILE
								: MOAT_SECRET_COMMAND;
				char why[256] = "";
				if (s.source == MOAT_SECRET_FILE) {
					free(s.from);
					s.from = NULL;
					r = moat_policy_host_path_dup(c->p, sv, &s.from, why,
								      sizeof(why));
					if (r < 0)
						r = jfail(c, false, -r, "%s", why);
				} else
					r = moat_policy_str_set(&s.from, sv);
			} else if (streq(k, "header")) {
				if (moat_policy_has_ctl(sv) || strchr(sv, ':') || strchr(sv, ' '))
					r = jfail(c, false, EINVAL, "not a header name");
				else
					r = moat_policy_str_set(&s.header, sv);
			} else if (streq(k, "format")) {
				const char *pct = strstr(sv, "%s");
				if (!pct || strstr(pct + 2, "%") || moat_policy_has_ctl(sv))
					r = jfail(c, false, EINVAL,
						  "must contain %%s exactly once and no other %%");
				else
					r = moat_policy_str_set(&s.format, sv);
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
		else if ((r = moat_policy_secret_add(c->p, &s)) < 0)
			r = jfail(c, false, -r, "too many secrets");
		else if (c->p->net == MOAT_NET_NONE)
			c->p->net = MOAT_NET_ALLOW;
	next:
		moat_policy_secret_clear(&s);
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

static int h_log_sync(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->log_sync);
}

static int h_apply_on_failure(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->apply_on_failure);
}

static int h_accept_automatic(struct jctx *c, json_t *v, const struct key_handler *h)
{
	return jbool(c, v, &c->p->accept_automatic);
}

static int h_audit(struct jctx *c, json_t *v, const struct key_handler *h)
{
	static const struct key_handler hs[] = {
		{"log", h_set, moat_pset_log, false},
		{"on_alert", h_set, moat_pset_on_alert, false},
		{"record_exec", h_record_exec, NULL, false},
		{"apply", h_set, moat_pset_apply, false},
		{"flag_patterns", h_set_array, moat_pset_flag_pattern, false},
		{"accept", h_set_array, moat_pset_review_accept, false},
		{"hold", h_set_array, moat_pset_review_hold, false},
		{"accept_automatic", h_accept_automatic, NULL, false},
		{"log_sync", h_log_sync, NULL, false},
		{"held_max", h_set, moat_pset_held_max, true},
		{"held_exit", h_set, moat_pset_held_exit, true},
		{"apply_on_failure", h_apply_on_failure, NULL, false},
		{"runs_max", h_set, moat_pset_runs_max, true},
		{"retention", h_set, moat_pset_retention, false},
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
	{"isolation", h_set, moat_pset_isolation, false},
	{"vm_accel", h_set, moat_pset_vm_accel, false},
	{"vm_kernel", h_set, moat_pset_vm_kernel, false},
	{"image", h_set, moat_pset_image, false},
	{"image_allow_setid", h_image_allow_setid, NULL, false},
	{"filesystem", h_filesystem, NULL, false},
	{"process", h_process, NULL, false},
	{"limits", h_limits, NULL, false},
	{"allow_degraded", h_set_array, moat_pset_allow_degraded, false},
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
	int r = moat_policy_host_path_dup(p, path, &abs, why, sizeof(why));
	if (r < 0)
		return moat_error_set(ret_err, "policy", -r, "policy %s: %s", path, why);
	snprintf(dir, sizeof(dir), "%.*s", (int)(strrchr(abs, '/') - abs), abs);
	const char *saved = p->base_dir;
	p->base_dir = dir[0] ? dir : "/";
	r = moat_policy_load_string(p, buf, got, path, ret_err);
	p->base_dir = saved;
	return r;
}
