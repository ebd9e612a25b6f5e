/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * config.json -> moat (oci.h): pure code, fuzzed (fuzz/fuzz_oci_config.c).
 * Every field is either translated into a moat policy option, satisfied by
 * what moat always does (a note), or refused with an error naming it; no
 * field is ignored in silence. The table in docs/OCI.md follows this file.
 */
#include <errno.h>
#include <jansson.h>
#include <seccomp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oci/oci.h"
#include "shared/parse.h"
#include "shared/macro.h"

#define MAX_ARGS 1024
#define MAX_ENV 256
#define MAX_MOUNTS 256
#define MAX_LIST 1024 /* masked paths, capabilities, rules, namespaces */

struct ctx {
	struct moat_oci_recs *r;
	const char *bundle;
	bool root_ro_ok; /* run.moat.root-readonly: the caller accepts a read-only root */
	const char *root_size; /* run.moat.root-size: the writable root's bytes */
	int k;
};

void moat_oci_recs_done(struct moat_oci_recs *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

const char *moat_oci_recs_next(const struct moat_oci_recs *r, size_t *pos)
{
	if (*pos >= r->len)
		return NULL;
	const char *s = r->buf + *pos;
	*pos += strlen(s) + 1;
	return s;
}

static int put(struct moat_oci_recs *r, const char *s)
{
	size_t n = strlen(s) + 1;
	if (r->len + n > MOAT_OCI_RECS_MAX)
		return -E2BIG;
	if (r->len + n > r->cap) {
		size_t cap = r->cap ? r->cap * 2 : 4096;
		while (cap < r->len + n)
			cap *= 2;
		char *b = realloc(r->buf, cap);
		if (!b)
			return -ENOMEM;
		r->buf = b;
		r->cap = cap;
	}
	memcpy(r->buf + r->len, s, n);
	r->len += n;
	return 0;
}

static int rec(struct ctx *c, const char *tag, const char *field, const char *a, const char *b)
{
	if (c->k < 0)
		return c->k;
	if (c->r->n >= MOAT_OCI_RECS_N)
		return c->k = -E2BIG;
	int k;
	if ((k = put(c->r, tag)) < 0 || (k = put(c->r, field ? field : "")) < 0 ||
	    (k = put(c->r, a ? a : "")) < 0 || (k = put(c->r, b ? b : "")) < 0)
		return c->k = k;
	c->r->n++;
	return 0;
}

/* The error record: only the first one counts (the rest of the records are
 * dropped so that nothing of a refused config is applied). */
__attribute__((format(printf, 3, 4))) static int fail(struct ctx *c, const char *field,
						      const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	if (c->r->failed || c->k < 0)
		return -EINVAL;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	c->r->len = 0;
	c->r->n = 0;
	rec(c, "err", field, msg, NULL);
	c->r->failed = true;
	return -EINVAL;
}

static int opt(struct ctx *c, const char *field, const char *name, const char *value)
{
	return rec(c, "opt", field, name, value);
}

static int note(struct ctx *c, const char *field, const char *text)
{
	return rec(c, "note", field, text, NULL);
}

/* A string without NUL bytes inside (jansson allows them). */
static const char *str(json_t *v)
{
	if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
		return NULL;
	return json_string_value(v);
}

static bool empty(json_t *v)
{
	return !v || json_is_null(v) || (json_is_array(v) && json_array_size(v) == 0) ||
		(json_is_object(v) && json_object_size(v) == 0) ||
		(json_is_string(v) && json_string_length(v) == 0);
}

/* Keys of o must all be in known[] (NULL-terminated): an unknown key is a
 * field moat does not know how to honour. */
static int only_keys(struct ctx *c, json_t *o, const char *where, const char *const *known)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		bool ok = false;
		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(key, known[i]);
		if (!ok) {
			char f[160];
			snprintf(f, sizeof(f), "%s%s%.100s", where, *where ? "." : "", key);
			return fail(c, f, "not supported by moat");
		}
	}
	return 0;
}

/* ---- annotations ----------------------------------------------------------- */

/* A comma-separated list, each item as one option. */
static int list_opt(struct ctx *c, const char *field, const char *name, const char *v)
{
	char item[512];
	const char *p = v;
	while (*p) {
		const char *e = strchr(p, ',');
		size_t n = e ? (size_t)(e - p) : strlen(p);
		if (n >= sizeof(item))
			return fail(c, field, "an item is longer than %zu bytes", sizeof(item) - 1);
		memcpy(item, p, n);
		item[n] = 0;
		if (n && opt(c, field, name, item) < 0)
			return c->k;
		p += n + (e ? 1 : 0);
	}
	return 0;
}

/* run.moat.root-size: the writable root's upper layers (docs/OCI.md
 * "root.readonly"), a size as --tmpfs takes it, from 1M (a smaller tmpfs
 * holds no copied-up library) to 16T. */
static int root_size(struct ctx *c, const char *f, const char *s)
{
	uint64_t n;
	int k = moat_parse_size(s, &n);
	if (k < 0 || n < (1u << 20) || n > (16ull << 40))
		return fail(c, f,
			    "%s: a size from 1M to 16T (a number with an optional unit K, M, "
			    "G, T, e.g. 512M)",
			    k == -EINVAL ? "not a size" : "out of range");
	c->root_size = s;
	return 0;
}

static int annotations(struct ctx *c, json_t *a)
{
	const char *key;
	json_t *v;
	if (!a)
		return 0;
	if (!json_is_object(a))
		return fail(c, "annotations", "must be an object");
	json_object_foreach(a, key, v)
	{
		const char *s = str(v);
		char f[160];
		snprintf(f, sizeof(f), "annotations.%.100s", key);
		if (!s)
			return fail(c, f, "must be a string");
		if (rec(c, "ann", NULL, key, s) < 0)
			return c->k;
		if (strncmp(key, "run.moat.", 9) != 0)
			continue;
		/* moat's own policy: only what adds a rule or a record; no
		 * annotation can switch a layer off (docs/OCI.md) */
		const char *k = key + 9;
		if (streq(k, "allow-hosts")) {
			if (opt(c, f, "--net", "allow") < 0 ||
			    list_opt(c, f, "--allow-host", s) < 0)
				return -EINVAL;
		} else if (streq(k, "deny-hosts")) {
			if (list_opt(c, f, "--deny-host", s) < 0)
				return -EINVAL;
		} else if (streq(k, "resolve") || streq(k, "secrets")) {
			/* whoever writes annotations must not choose which of the
			 * runtime's variables goes to which host, nor map a name onto
			 * a host-side address: the administrator's policy file does */
			return fail(c, f,
				    "not an annotation: name a policy file with run.moat.policy "
				    "(its secrets and resolve entries are the administrator's)");
		} else if (streq(k, "log")) {
			/* a name in the runtime's log directory, never a path: the
			 * runtime may be root */
			if (!*s || strlen(s) > 64 || s[0] == '.' ||
			    strspn(s,
				   "abcdefghijklmnopqrstuvwxyz"
				   "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				   "0123456789_.-") != strlen(s))
				return fail(
					c, f,
					"a log's name ([A-Za-z0-9_.-], at most 64), not a path");
			if (rec(c, "log", f, s, NULL) < 0)
				return c->k;
		} else if (streq(k, "apply")) {
			if (opt(c, f, "--apply", s) < 0)
				return c->k;
		} else if (streq(k, "policy")) {
			if (rec(c, "pol", f, s, NULL) < 0)
				return c->k;
		} else if (streq(k, "root-readonly")) {
			if (!streq(s, "true"))
				return fail(c, f, "the only value is \"true\"");
			c->root_ro_ok = true;
		} else if (streq(k, "root-size")) {
			if (root_size(c, f, s) < 0)
				return -EINVAL;
		} else if (streq(k, "timeout")) {
			if (opt(c, f, "--timeout", s) < 0)
				return c->k;
		} else
			return fail(c, f,
				    "unknown moat annotation (allow-hosts, deny-hosts, log, apply, "
				    "policy, root-readonly, root-size, timeout)");
	}
	return 0;
}

/* ---- root and mounts -------------------------------------------------------- */

static int root(struct ctx *c, json_t *o)
{
	static const char *const known[] = {"path", "readonly", NULL};
	char abs[4200];
	if (!json_is_object(o))
		return fail(c, "root", "required (an object with \"path\")");
	if (only_keys(c, o, "root", known) < 0)
		return -EINVAL;
	const char *path = str(json_object_get(o, "path"));
	if (!path || !*path)
		return fail(c, "root.path", "required (a string)");
	if (path[0] == '/')
		snprintf(abs, sizeof(abs), "%s", path);
	else if (snprintf(abs, sizeof(abs), "%s/%s", c->bundle, path) >= (int)sizeof(abs))
		return fail(c, "root.path", "too long");
	json_t *ro = json_object_get(o, "readonly");
	if (ro && !json_is_boolean(ro))
		return fail(c, "root.readonly", "must be a boolean");
	if (c->root_size && (json_is_true(ro) || c->root_ro_ok))
		return fail(c, "annotations.run.moat.root-size",
			    "only for a writable root (root.readonly false, without "
			    "run.moat.root-readonly)");
	if (!json_is_true(ro) && c->root_ro_ok) {
		if (note(c, "root.readonly", "false: the root is read-only nonetheless") < 0)
			return c->k;
	} else if (!json_is_true(ro)) {
		/* writes go to a tmpfs of the container's (run.moat.root-size, else
		 * --disk), never to the bundle; lost at delete */
		if (rec(c, "rrw", "root.readonly", c->root_size ? c->root_size : "", NULL) < 0 ||
		    note(c, "root.readonly",
			 "false: the root's trees are overlays, writes held in a tmpfs of the "
			 "container's and lost at delete") < 0)
			return c->k;
	}
	return opt(c, "root.path", "--rootfs", abs);
}

static bool has_opt(json_t *opts, const char *name)
{
	size_t i;
	json_t *v;
	json_array_foreach(opts, i, v)
	{
		const char *s = str(v);
		if (s && streq(s, name))
			return true;
	}
	return false;
}

static bool in(const char *s, const char *const *v, size_t n);

/* What moat mounts itself at these places, whatever the spec says. */
static const char *own_mount(const char *dest, const char *type)
{
	static const struct {
		const char *dest, *why;
	} own[] = {
		{"/proc", "moat's own /proc (its pid namespace; kernel files masked)"},
		{"/dev", "moat's own /dev (null, zero, full, random, urandom, tty)"},
		{"/dev/pts", "moat's own devpts"},
		{"/dev/shm", "moat's own /dev/shm (tmpfs, noexec)"},
		{"/dev/mqueue", "not mounted: moat gives no POSIX message queue mount"},
		{"/sys", "not mounted: moat does not expose /sys"},
		{"/sys/fs/cgroup", "not mounted: moat does not expose /sys"},
		{"/tmp", "moat's own /tmp (a tmpfs of --disk's size)"},
		{"/var/tmp", "moat's /var/tmp is /tmp"},
		{"/etc/passwd", "generated by moat (root, the container's user, nobody)"},
		{"/etc/group", "generated by moat"},
		{"/etc/hosts", "generated by moat (localhost and the hostname)"},
		{"/etc/hostname", "generated by moat"},
		{"/etc/resolv.conf", "generated by moat (its DNS stub with allow-hosts)"},
	};
	(void)type;
	for (size_t i = 0; i < ELEMENTSOF(own); i++)
		if (streq(dest, own[i].dest))
			return own[i].why;
	return NULL;
}

/* tmpfs size= into moat's SIZE ("65536k" -> "65536K"), "" if none */
static int tmpfs_size(json_t *opts, char *buf, size_t len)
{
	size_t i;
	json_t *v;
	buf[0] = 0;
	json_array_foreach(opts, i, v)
	{
		const char *s = str(v);
		if (!s || strncmp(s, "size=", 5) != 0)
			continue;
		s += 5;
		size_t n = strlen(s);
		if (!n || n >= len)
			return -EINVAL;
		for (size_t j = 0; j < n; j++) {
			char ch = s[j];
			if (j == n - 1 && (ch == 'k' || ch == 'm' || ch == 'g'))
				ch = (char)(ch - 'a' + 'A');
			buf[j] = ch;
		}
		buf[n] = 0;
	}
	return 0;
}

static int mount_one(struct ctx *c, size_t i, json_t *m)
{
	static const char *const known[] = {"destination", "type",	  "source", "options",
					    "uidMappings", "gidMappings", NULL};
	char f[64], val[4200];
	snprintf(f, sizeof(f), "mounts[%zu]", i);
	if (!json_is_object(m))
		return fail(c, f, "must be an object");
	if (only_keys(c, m, f, known) < 0)
		return -EINVAL;
	const char *dest = str(json_object_get(m, "destination"));
	json_t *jt = json_object_get(m, "type"), *js = json_object_get(m, "source");
	json_t *opts = json_object_get(m, "options");
	const char *type = jt ? str(jt) : "";
	const char *src = js ? str(js) : "";
	if (!dest || dest[0] != '/')
		return fail(c, f, "destination: required, an absolute path");
	if (!type || !src)
		return fail(c, f, "type and source must be strings");
	if (opts && !json_is_array(opts))
		return fail(c, f, "options: must be an array of strings");
	if (!empty(json_object_get(m, "uidMappings")) || !empty(json_object_get(m, "gidMappings")))
		return fail(c, f, "uidMappings/gidMappings (idmapped mounts): not supported");
	size_t j;
	json_t *o;
	json_array_foreach(opts, j, o) if (!str(o)) return fail(c, f, "options: must be strings");
	const char *why = own_mount(dest, type);
	if (why) {
		snprintf(val, sizeof(val), "%s (%s): %s", dest, *type ? type : "bind", why);
		return note(c, f, val);
	}
	if (strchr(dest, ':') || strchr(src, ':'))
		return fail(c, f, "a path with ':' is not supported");
	/* every option is one moat applies or does anyway; noexec it cannot */
	static const char *const ok_opts[] = {
		"bind",	   "rbind",	 "ro",	      "rw",	"nosuid",   "nodev",
		"private", "rprivate",	 "slave",     "rslave", "relatime", "strictatime",
		"noatime", "nodiratime", "tmpcopyup", "suid",	"dev",	    "exec",
	};
	json_array_foreach(opts, j, o)
	{
		const char *os = str(o);
		if (!strncmp(os, "size=", 5) || !strncmp(os, "mode=", 5))
			continue;
		if (!in(os, ok_opts, ELEMENTSOF(ok_opts)))
			return fail(c, f, "options: '%.40s' is not supported at %.200s%s", os, dest,
				    streq(os, "noexec") ? " (moat cannot make this mount noexec)"
							: "");
		if ((streq(os, "suid") || streq(os, "dev")) &&
		    note(c, f, "suid/dev: moat's mounts are always nosuid,nodev") < 0)
			return c->k;
		if (streq(os, "tmpcopyup") &&
		    note(c, f, "tmpcopyup: the tmpfs starts empty (the image's files are hidden)") <
			    0)
			return c->k;
	}
	bool bind = streq(type, "bind") || has_opt(opts, "bind") || has_opt(opts, "rbind");
	if (bind) {
		if (src[0] != '/')
			return fail(c, f, "source: a bind mount's source must be an absolute path");
		if (snprintf(val, sizeof(val), "%s:%s", src, dest) >= (int)sizeof(val))
			return fail(c, f, "too long");
		return opt(c, f, has_opt(opts, "ro") ? "--ro" : "--rw", val);
	}
	if (streq(type, "tmpfs")) {
		char size[32];
		if (tmpfs_size(opts, size, sizeof(size)) < 0)
			return fail(c, f, "options: size= is not a size");
		if (has_opt(opts, "ro"))
			return fail(c, f, "options: a read-only tmpfs is not supported");
		snprintf(val, sizeof(val), "%s%s%s", dest, *size ? ":" : "", size);
		return opt(c, f, "--tmpfs", val);
	}
	return fail(c, f, "type '%.40s' at %.200s: not supported (bind and tmpfs are)", type, dest);
}

static int mounts(struct ctx *c, json_t *a)
{
	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > MAX_MOUNTS)
		return fail(c, "mounts", "must be an array of at most %d mounts", MAX_MOUNTS);
	size_t i;
	json_t *m;
	json_array_foreach(a, i, m) if (mount_one(c, i, m) < 0) return -EINVAL;
	return 0;
}

/* ---- process ------------------------------------------------------------------ */

/* Capabilities moat never grants, whatever asks: each is a way out of a
 * sandbox or into the kernel (docs/THREAT_MODEL.md, "OCI runtime"). */
static const char *const caps_forbidden[] = {
	"CAP_SYS_ADMIN",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_PTRACE",
	"CAP_SYS_BOOT",
	"CAP_SYS_TIME",
	"CAP_MAC_ADMIN",
	"CAP_MAC_OVERRIDE",
	"CAP_NET_ADMIN",
	"CAP_BPF",
	"CAP_PERFMON",
	"CAP_SYSLOG",
	"CAP_DAC_READ_SEARCH",
	"CAP_LINUX_IMMUTABLE",
	"CAP_SYS_RESOURCE",
	"CAP_AUDIT_CONTROL",
	"CAP_SYS_PACCT",
	"CAP_SYS_TTY_CONFIG",
	"CAP_CHECKPOINT_RESTORE",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_IPC_LOCK",
	"CAP_SYS_NICE",
	"CAP_LEASE",
	"CAP_AUDIT_READ",
};
/* The engines' default set: accepted, but moat's processes hold no
 * capability at all (the spec's set is an upper bound). */
static const char *const caps_default[] = {
	"CAP_CHOWN",	     "CAP_DAC_OVERRIDE", "CAP_FOWNER",
	"CAP_FSETID",	     "CAP_KILL",	 "CAP_SETGID",
	"CAP_SETUID",	     "CAP_SETPCAP",	 "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT",    "CAP_SETFCAP",	 "CAP_MKNOD",
	"CAP_AUDIT_WRITE",   "CAP_NET_RAW",	 "CAP_IPC_OWNER",
	"CAP_NET_BROADCAST",
};

static bool in(const char *s, const char *const *v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (streq(s, v[i]))
			return true;
	return false;
}

static int capabilities(struct ctx *c, json_t *o)
{
	static const char *const sets[] = {"bounding",	"effective", "inheritable",
					   "permitted", "ambient",   NULL};
	bool any = false;
	if (!o)
		return 0;
	if (!json_is_object(o))
		return fail(c, "process.capabilities", "must be an object");
	if (only_keys(c, o, "process.capabilities", sets) < 0)
		return -EINVAL;
	for (size_t s = 0; sets[s]; s++) {
		json_t *a = json_object_get(o, sets[s]), *v;
		char f[64];
		size_t i;
		snprintf(f, sizeof(f), "process.capabilities.%s", sets[s]);
		if (!a)
			continue;
		if (!json_is_array(a) || json_array_size(a) > 64)
			return fail(c, f, "must be an array of capability names");
		json_array_foreach(a, i, v)
		{
			const char *n = str(v);
			if (!n)
				return fail(c, f, "must be strings");
			if (in(n, caps_forbidden, ELEMENTSOF(caps_forbidden)))
				return fail(c, f,
					    "%.40s: refused (moat never grants it: "
					    "docs/THREAT_MODEL.md)",
					    n);
			if (!in(n, caps_default, ELEMENTSOF(caps_default)))
				return fail(c, f, "%.40s: unknown capability", n);
			any = true;
		}
	}
	if (any)
		return note(c, "process.capabilities",
			    "accepted as an upper bound: moat's processes hold no capability");
	return 0;
}

/* The runtime-spec's RLIMIT_* names (getrlimit(2)); the applying side
 * (oci_load.c) maps them to resources again. */
static const char *const rlimit_names[] = {
	"RLIMIT_AS",	 "RLIMIT_CORE",	  "RLIMIT_CPU",	       "RLIMIT_DATA",
	"RLIMIT_FSIZE",	 "RLIMIT_LOCKS",  "RLIMIT_MEMLOCK",    "RLIMIT_MSGQUEUE",
	"RLIMIT_NICE",	 "RLIMIT_NOFILE", "RLIMIT_NPROC",      "RLIMIT_RSS",
	"RLIMIT_RTPRIO", "RLIMIT_RTTIME", "RLIMIT_SIGPENDING", "RLIMIT_STACK",
};

/* process.rlimits: one "rlim" record each (type, "SOFT HARD") for the
 * runtime to check against its own limits and the container to get (and
 * `exec --process` to compare); NOFILE and FSIZE also bound moat's policy
 * (--nofile, --fsize: the hard value); CORE stays 0 (moat's rule). */
static int rlimits(struct ctx *c, json_t *a)
{
	size_t i;
	json_t *r;
	bool seen[ELEMENTSOF(rlimit_names)] = {false};
	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 64)
		return fail(c, "process.rlimits", "must be an array");
	json_array_foreach(a, i, r)
	{
		char f[64], v[48];
		snprintf(f, sizeof(f), "process.rlimits[%zu]", i);
		const char *type = str(json_object_get(r, "type"));
		json_t *soft = json_object_get(r, "soft"), *hard = json_object_get(r, "hard");
		if (!json_is_object(r) || !type || !json_is_integer(soft) ||
		    !json_is_integer(hard) || json_integer_value(soft) < 0 ||
		    json_integer_value(hard) < 0 ||
		    json_integer_value(soft) > json_integer_value(hard))
			return fail(c, f, "needs type, soft and hard (0 <= soft <= hard)");
		if (only_keys(c, r, f, (const char *const[]){"type", "soft", "hard", NULL}) < 0)
			return -EINVAL;
		size_t t = 0;
		while (t < ELEMENTSOF(rlimit_names) && !streq(type, rlimit_names[t]))
			t++;
		if (t == ELEMENTSOF(rlimit_names))
			return fail(c, f, "%.40s: not an RLIMIT_* type moat knows", type);
		if (seen[t])
			return fail(c, f, "%s: given twice", type);
		seen[t] = true;
		long long sv = (long long)json_integer_value(soft);
		long long hv = (long long)json_integer_value(hard);
		if (streq(type, "RLIMIT_CORE")) {
			if (hv > 0 && note(c, f, "RLIMIT_CORE: moat sets 0 (no core dumps)") < 0)
				return c->k;
			continue;
		}
		snprintf(v, sizeof(v), "%lld", hv);
		if (streq(type, "RLIMIT_NOFILE") && opt(c, f, "--nofile", v) < 0)
			return c->k;
		if (streq(type, "RLIMIT_FSIZE") && opt(c, f, "--fsize", v) < 0)
			return c->k;
		snprintf(v, sizeof(v), "%lld %lld", sv, hv);
		if (rec(c, "rlim", f, type, v) < 0)
			return c->k;
	}
	return 0;
}

static int process(struct ctx *c, json_t *o)
{
	static const char *const known[] = {"terminal",
					    "consoleSize",
					    "user",
					    "args",
					    "env",
					    "cwd",
					    "capabilities",
					    "rlimits",
					    "noNewPrivileges",
					    "apparmorProfile",
					    "selinuxLabel",
					    "oomScoreAdj",
					    "commandLine",
					    NULL};
	size_t i;
	json_t *v;
	if (!json_is_object(o))
		return fail(c, "process", "required (an object)");
	if (only_keys(c, o, "process", known) < 0)
		return -EINVAL;
	json_t *t = json_object_get(o, "terminal");
	if (t && !json_is_boolean(t))
		return fail(c, "process.terminal", "must be a boolean");
	if (json_is_true(t) && rec(c, "tty", NULL, NULL, NULL) < 0)
		return c->k;
	json_t *args = json_object_get(o, "args");
	if (!json_is_array(args) || !json_array_size(args) || json_array_size(args) > MAX_ARGS)
		return fail(c, "process.args", "required: 1 to %d strings", MAX_ARGS);
	json_array_foreach(args, i, v)
	{
		if (!str(v))
			return fail(c, "process.args", "must be strings");
		if (rec(c, "arg", NULL, str(v), NULL) < 0)
			return c->k;
	}
	if (!str(json_array_get(args, 0))[0])
		return fail(c, "process.args", "args[0] is empty");
	if (json_object_get(o, "commandLine"))
		return fail(c, "process.commandLine", "not supported (Windows only)");
	json_t *env = json_object_get(o, "env");
	if (env && (!json_is_array(env) || json_array_size(env) > MAX_ENV))
		return fail(c, "process.env", "must be an array of at most %d strings", MAX_ENV);
	json_array_foreach(env, i, v)
	{
		const char *s = str(v);
		if (!s || !strchr(s, '=') || s[0] == '=')
			return fail(c, "process.env", "entries are NAME=VALUE");
		if (rec(c, "env", NULL, s, NULL) < 0)
			return c->k;
	}
	const char *cwd = str(json_object_get(o, "cwd"));
	if (!cwd || cwd[0] != '/')
		return fail(c, "process.cwd", "required, an absolute path");
	if (rec(c, "cwd", NULL, cwd, NULL) < 0)
		return c->k;
	json_t *u = json_object_get(o, "user");
	if (u) {
		static const char *const uk[] = {"uid",	     "gid", "umask", "additionalGids",
						 "username", NULL};
		char num[24];
		if (!json_is_object(u) || only_keys(c, u, "process.user", uk) < 0)
			return c->k < 0 ? c->k : fail(c, "process.user", "must be an object");
		json_t *uid = json_object_get(u, "uid"), *gid = json_object_get(u, "gid");
		if (!json_is_integer(uid) || !json_is_integer(gid))
			return fail(c, "process.user", "uid and gid are required integers");
		/* 0 is accepted: the container's own root, which moat maps to the
		 * sandbox's unprivileged host uid with no capability (policy_set.c
		 * checks the range when the option is applied) */
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(uid));
		if (opt(c, "process.user.uid", "--uid", num) < 0)
			return c->k;
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(gid));
		if (opt(c, "process.user.gid", "--gid", num) < 0)
			return c->k;
		json_t *ag = json_object_get(u, "additionalGids");
		json_array_foreach(ag, i, v) if (
			!json_is_integer(v) ||
			json_integer_value(v) !=
				json_integer_value(
					gid)) return fail(c, "process.user.additionalGids",
							  "supplementary groups are not supported: moat maps "
							  "one gid into the sandbox; a supplementary group "
							  "would need its host gid mapped too");
		json_t *um = json_object_get(u, "umask");
		if (um && (!json_is_integer(um) || json_integer_value(um) != 022))
			return fail(c, "process.user.umask", "only 0022 (18) is supported");
		if (!empty(json_object_get(u, "username")))
			return fail(c, "process.user.username", "not supported (Windows only)");
	} else
		return fail(c, "process.user", "required (uid and gid)");
	json_t *nnp = json_object_get(o, "noNewPrivileges");
	if (nnp && !json_is_boolean(nnp))
		return fail(c, "process.noNewPrivileges", "must be a boolean");
	if (!json_is_true(nnp) &&
	    note(c, "process.noNewPrivileges", "false: moat always sets no_new_privs") < 0)
		return c->k;
	if (!empty(json_object_get(o, "apparmorProfile")))
		return fail(c, "process.apparmorProfile",
			    "not supported (moat confines with seccomp and Landlock; e.g. podman "
			    "--security-opt apparmor=unconfined)");
	if (!empty(json_object_get(o, "selinuxLabel")))
		return fail(c, "process.selinuxLabel", "not supported");
	/* the runtime compares it with its own and refuses a lower one (that
	 * needs CAP_SYS_RESOURCE and makes the container less killable) */
	json_t *oom = json_object_get(o, "oomScoreAdj");
	if (oom) {
		char num[24];
		if (!json_is_integer(oom) || json_integer_value(oom) < -1000 ||
		    json_integer_value(oom) > 1000)
			return fail(c, "process.oomScoreAdj", "must be an integer, -1000 to 1000");
		snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(oom));
		if (rec(c, "oom", "process.oomScoreAdj", num, NULL) < 0)
			return c->k;
	}
	if (json_object_get(o, "consoleSize") &&
	    note(c, "process.consoleSize", "the terminal's size comes from the console socket") < 0)
		return c->k;
	if (capabilities(c, json_object_get(o, "capabilities")) < 0 ||
	    rlimits(c, json_object_get(o, "rlimits")) < 0)
		return -EINVAL;
	return c->k;
}

/* ---- linux -------------------------------------------------------------------- */

static int namespaces(struct ctx *c, json_t *a)
{
	static const char *const types[] = {"pid", "network", "mount",	"ipc",
					    "uts", "user",    "cgroup", "time"};
	unsigned seen = 0;
	size_t i;
	json_t *n;
	if (!a)
		return note(c, "linux.namespaces", "moat creates its own namespaces of every kind");
	if (!json_is_array(a) || json_array_size(a) > 16)
		return fail(c, "linux.namespaces", "must be an array");
	json_array_foreach(a, i, n)
	{
		char f[64];
		snprintf(f, sizeof(f), "linux.namespaces[%zu]", i);
		const char *t = str(json_object_get(n, "type"));
		size_t k = 0;
		while (t && k < ELEMENTSOF(types) && !streq(t, types[k]))
			k++;
		if (!t || k == ELEMENTSOF(types))
			return fail(c, f, "type: unknown namespace type");
		json_t *pv = json_object_get(n, "path");
		if (!empty(pv)) {
			/* an engine's network namespace (podman's bridge, a pod's):
			 * the egress proxy's upstream, never the container's own
			 * (oci_load.c); a pod's ipc or uts namespace (containerd's
			 * CRI names the sandbox's for every container): not joined,
			 * the container keeps moat's own (stricter: it shares no
			 * System V IPC, message queues or hostname with the pod),
			 * said in a note; any other kind: refused */
			const char *path = str(pv);
			bool pod_ns = streq(t, "ipc") || streq(t, "uts");
			if (!streq(t, "network") && !pod_ns)
				return fail(c, f,
					    "path: joining an existing %s namespace is not "
					    "supported (moat creates its own)",
					    t);
			if (!path || path[0] != '/' || strlen(path) >= 4096 || strchr(path, '\n'))
				return fail(c, f, "path: an absolute path");
			if (seen & (1u << k))
				return fail(c, f, "type: a second %s namespace", t);
			if (pod_ns) {
				seen |= 1u << k;
				/* not joined, but still a namespace of its kind
				 * (checked by the runtime: oci_load.c) */
				rec(c, "nspath", f, path, t);
				note(c, f,
				     streq(t, "ipc")
					     ? "path not joined: the container has moat's own ipc "
					       "namespace (no System V IPC or message queue shared "
					       "with the pod)"
					     : "path not joined: the container has moat's own uts "
					       "namespace (its hostname is the spec's)");
				continue;
			}
			rec(c, "netns", f, path, NULL);
		}
		seen |= 1u << k;
	}
	if (seen != 0xffu)
		return note(c, "linux.namespaces",
			    "a kind not listed is not shared with the host: moat creates its own "
			    "namespaces of every kind");
	return 0;
}

static int id_mappings(struct ctx *c, json_t *a, const char *field)
{
	size_t i;
	json_t *m;
	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 64)
		return fail(c, field, "must be an array");
	json_array_foreach(a, i, m)
	{
		json_t *h = json_object_get(m, "hostID"), *s = json_object_get(m, "size");
		if (!json_is_integer(h) || !json_is_integer(s) || json_integer_value(s) <= 0)
			return fail(c, field, "entries need hostID, containerID and size");
		if (json_integer_value(h) == 0)
			return fail(c, field, "maps host id 0: refused");
	}
	return note(c, field, "moat maps the container's one user itself");
}

/* memory.disableOOMKiller: true is the runtime's to apply (cgroup v1's
 * memory.oom_control, oci_place.c); false is what moat does anyway. */
static int oom_killer(struct ctx *c, json_t *v)
{
	const char *f = "linux.resources.memory.disableOOMKiller";
	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(c, f, "must be a boolean");
	if (json_is_true(v))
		return rec(c, "nooom", f, NULL, NULL);
	return note(c, f, "false: the kernel's OOM killer acts at the memory limit");
}

static int resources(struct ctx *c, json_t *o)
{
	static const char *const known[] = {
		"memory",	  "pids",    "cpu",  "devices", "blockIO",
		"hugepageLimits", "network", "rdma", "unified", NULL};
	char v[64];
	if (!o)
		return 0;
	if (!json_is_object(o) || only_keys(c, o, "linux.resources", known) < 0)
		return c->k < 0 ? c->k : fail(c, "linux.resources", "must be an object");
	json_t *mem = json_object_get(o, "memory");
	if (mem) {
		static const char *const mk[] = {"limit",
						 "reservation",
						 "swap",
						 "kernel",
						 "kernelTCP",
						 "swappiness",
						 "disableOOMKiller",
						 "useHierarchy",
						 "checkBeforeUpdate",
						 NULL};
		if (!json_is_object(mem) || only_keys(c, mem, "linux.resources.memory", mk) < 0)
			return c->k < 0 ? c->k : fail(c, "linux.resources.memory", "bad");
		json_t *l = json_object_get(mem, "limit");
		if (l && !json_is_integer(l))
			return fail(c, "linux.resources.memory.limit", "must be an integer");
		if (l && json_integer_value(l) > 0) {
			snprintf(v, sizeof(v), "%lld", (long long)json_integer_value(l));
			if (opt(c, "linux.resources.memory.limit", "--memory", v) < 0)
				return c->k;
		}
		if (oom_killer(c, json_object_get(mem, "disableOOMKiller")) < 0)
			return -EINVAL;
		json_t *kl = json_object_get(mem, "kernel");
		if (kl && !(json_is_integer(kl) && json_integer_value(kl) <= 0))
			return fail(c, "linux.resources.memory.kernel", "not supported");
		if (json_object_get(mem, "swap") &&
		    note(c, "linux.resources.memory.swap", "moat runs without swap") < 0)
			return c->k;
	}
	json_t *pids = json_object_get(o, "pids");
	if (pids) {
		json_t *l = json_object_get(pids, "limit");
		if (!json_is_integer(l))
			return fail(c, "linux.resources.pids.limit", "must be an integer");
		if (json_integer_value(l) > 0) {
			snprintf(v, sizeof(v), "%lld", (long long)json_integer_value(l));
			if (opt(c, "linux.resources.pids.limit", "--pids", v) < 0)
				return c->k;
		}
	}
	json_t *cpu = json_object_get(o, "cpu");
	if (cpu) {
		static const char *const ck[] = {
			"shares", "quota", "period", "realtimeRuntime", "realtimePeriod",
			"cpus",	  "mems",  "idle",   "burst",		NULL};
		if (!json_is_object(cpu) || only_keys(c, cpu, "linux.resources.cpu", ck) < 0)
			return c->k < 0 ? c->k : fail(c, "linux.resources.cpu", "bad");
		json_t *q = json_object_get(cpu, "quota"), *p = json_object_get(cpu, "period");
		if (q && json_is_integer(q) && json_integer_value(q) > 0) {
			long long per = p && json_is_integer(p) && json_integer_value(p) > 0
				? (long long)json_integer_value(p)
				: 100000;
			long long milli = (long long)json_integer_value(q) * 1000 / per;
			if (milli < 10)
				milli = 10;
			snprintf(v, sizeof(v), "%lld.%03lld", milli / 1000, milli % 1000);
			if (opt(c, "linux.resources.cpu.quota", "--cpus", v) < 0)
				return c->k;
		}
		if (!empty(json_object_get(cpu, "cpus")) || !empty(json_object_get(cpu, "mems")))
			return fail(c, "linux.resources.cpu.cpus", "cpusets are not supported");
		if (json_object_get(cpu, "realtimeRuntime") &&
		    json_integer_value(json_object_get(cpu, "realtimeRuntime")) != 0)
			return fail(c, "linux.resources.cpu.realtimeRuntime", "not supported");
		if (json_object_get(cpu, "shares") &&
		    note(c, "linux.resources.cpu.shares", "a relative weight: not applied") < 0)
			return c->k;
	}
	if (json_object_get(o, "devices") &&
	    note(c, "linux.resources.devices",
		 "moat's /dev holds only null, zero, full, random, urandom, tty and ptmx") < 0)
		return c->k;
	static const char *const nope[] = {"blockIO", "hugepageLimits", "network", "rdma",
					   "unified"};
	for (size_t i = 0; i < ELEMENTSOF(nope); i++)
		if (!empty(json_object_get(o, nope[i]))) {
			char f[64];
			snprintf(f, sizeof(f), "linux.resources.%s", nope[i]);
			return fail(c, f, "not supported");
		}
	return 0;
}

/* Paths moat's /proc makes read-only or masks itself (sandbox.c, do_proc). */
static bool proc_covered(const char *p)
{
	static const char *const cov[] = {
		"/proc/sys",	     "/proc/sysrq-trigger",
		"/proc/irq",	     "/proc/bus",
		"/proc/fs",	     "/proc/kcore",
		"/proc/keys",	     "/proc/timer_list",
		"/proc/sched_debug", "/proc/kallsyms",
		"/proc/kpagecount",  "/proc/kpageflags",
		"/proc/sysvipc",     "/proc/asound",
		"/proc/acpi",	     "/proc/latency_stats",
		"/proc/timer_stats", "/proc/scsi",
	};
	return in(p, cov, ELEMENTSOF(cov));
}

static int paths(struct ctx *c, json_t *a, const char *field)
{
	size_t i;
	json_t *v;
	if (!a)
		return 0;
	if (!json_is_array(a) || json_array_size(a) > MAX_LIST)
		return fail(c, field, "must be an array of paths");
	json_array_foreach(a, i, v)
	{
		const char *p = str(v);
		if (!p || p[0] != '/')
			return fail(c, field, "entries must be absolute paths");
		if (!strncmp(p, "/sys/", 5) || streq(p, "/sys") || proc_covered(p))
			continue; /* no /sys at all; moat's /proc does it */
		if (!strncmp(p, "/proc/", 6) || !strncmp(p, "/dev/", 5))
			return fail(c, field,
				    "%.200s: moat's /proc and /dev are its own (a fixed set of "
				    "masked and read-only paths: docs/OCI.md)",
				    p);
		/* masked: an empty read-only node (stricter than read-only) */
		if (opt(c, field, "--hide", p) < 0)
			return c->k;
	}
	return 0;
}

/* One name the spec's profile refuses: moat's --deny-syscall (EPERM), but
 * clone3, which moat's baseline refuses already for every process of the
 * sandbox (ENOSYS, so that the C library falls back to clone(), which moat
 * filters; EPERM would break the sandbox's init): a note. */
static int seccomp_deny(struct ctx *c, const char *name)
{
	if (streq(name, "clone3"))
		return note(c, "linux.seccomp",
			    "clone3: refused by moat's baseline already (ENOSYS: the C library "
			    "falls back to clone(), which moat filters)");
	return opt(c, "linux.seccomp", "--deny-syscall", name);
}

/* The spec's seccomp profile, intersected with moat's baseline: every
 * syscall the profile refuses is refused (moat's --deny-syscall, EPERM) on
 * top of moat's own filter. Argument conditions of an allow rule are not
 * evaluated (docs/OCI.md): such a syscall is left to moat's baseline. */
static const char *action_kind(const char *a)
{
	if (!a)
		return NULL;
	if (streq(a, "SCMP_ACT_ALLOW") || streq(a, "SCMP_ACT_LOG"))
		return "allow";
	if (streq(a, "SCMP_ACT_ERRNO") || streq(a, "SCMP_ACT_KILL") ||
	    streq(a, "SCMP_ACT_KILL_PROCESS") || streq(a, "SCMP_ACT_KILL_THREAD") ||
	    streq(a, "SCMP_ACT_TRAP"))
		return "deny";
	return NULL;
}

static bool name_ok(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9') || *s == '_'))
			return false;
	return true;
}

static int seccomp_profile(struct ctx *c, json_t *o)
{
	static const char *const known[] = {
		"defaultAction", "defaultErrnoRet", "architectures",	"flags",
		"syscalls",	 "listenerPath",    "listenerMetadata", NULL};
	if (!o)
		return 0;
	if (!json_is_object(o) || only_keys(c, o, "linux.seccomp", known) < 0)
		return c->k < 0 ? c->k : fail(c, "linux.seccomp", "must be an object");
	if (!empty(json_object_get(o, "listenerPath")))
		return fail(c, "linux.seccomp.listenerPath", "not supported");
	const char *def = action_kind(str(json_object_get(o, "defaultAction")));
	if (!def)
		return fail(c, "linux.seccomp.defaultAction", "unknown or unsupported action");
	json_t *rules = json_object_get(o, "syscalls");
	if (rules && (!json_is_array(rules) || json_array_size(rules) > MAX_LIST))
		return fail(c, "linux.seccomp.syscalls", "must be an array");
	/* names the profile allows (allowlist) or denies (denylist) */
	char **named = NULL;
	size_t n_named = 0, cap = 0, i, j;
	json_t *r, *nm;
	int k = 0;
	json_array_foreach(rules, i, r)
	{
		char f[64];
		snprintf(f, sizeof(f), "linux.seccomp.syscalls[%zu]", i);
		const char *act = action_kind(str(json_object_get(r, "action")));
		json_t *names = json_object_get(r, "names");
		if (!act) {
			k = fail(c, f, "action: unknown or unsupported (TRACE, NOTIFY)");
			goto out;
		}
		if (!json_is_array(names) || json_array_size(names) > 1024) {
			k = fail(c, f, "names: must be an array");
			goto out;
		}
		bool has_args = !empty(json_object_get(r, "args"));
		/* a deny rule with conditions is applied unconditionally
		 * (stricter); an allow rule with conditions counts as allowed */
		if (streq(act, def))
			continue;
		(void)has_args;
		json_array_foreach(names, j, nm)
		{
			const char *s = str(nm);
			if (!s || !name_ok(s)) {
				k = fail(c, f, "names: not syscall names");
				goto out;
			}
			if (n_named == cap) {
				cap = cap ? cap * 2 : 64;
				if (cap > 8192) {
					k = fail(c, f, "too many names");
					goto out;
				}
				char **nv = realloc(named, cap * sizeof(char *));
				if (!nv) {
					k = c->k = -ENOMEM;
					goto out;
				}
				named = nv;
			}
			named[n_named++] = (char *)(uintptr_t)s;
		}
	}
	if (streq(def, "allow")) {
		for (i = 0; i < n_named && k >= 0; i++)
			k = seccomp_deny(c, named[i]);
	} else {
		/* an allowlist: every syscall of this architecture it does not name */
		for (int nr = 0; nr < 1024 && k >= 0; nr++) {
			char *s = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
			if (!s)
				continue;
			bool allowed = false;
			for (i = 0; i < n_named && !allowed; i++)
				allowed = streq(named[i], s);
			if (!allowed && name_ok(s))
				k = seccomp_deny(c, s);
			free(s);
		}
	}
	if (k >= 0)
		k = note(c, "linux.seccomp", "applied on top of moat's baseline (both must allow)");
out:
	free(named);
	return k;
}

static int linux_(struct ctx *c, json_t *o)
{
	static const char *const known[] = {
		"namespaces",  "uidMappings", "gidMappings",	   "resources",
		"cgroupsPath", "sysctl",      "maskedPaths",	   "readonlyPaths",
		"seccomp",     "devices",     "rootfsPropagation", "mountLabel",
		"intelRdt",    "personality", "timeOffsets",	   NULL};
	if (!o)
		return note(c, "linux", "absent: moat creates its own namespaces of every kind");
	if (!json_is_object(o))
		return fail(c, "linux", "must be an object");
	if (only_keys(c, o, "linux", known) < 0)
		return -EINVAL;
	if (namespaces(c, json_object_get(o, "namespaces")) < 0 ||
	    id_mappings(c, json_object_get(o, "uidMappings"), "linux.uidMappings") < 0 ||
	    id_mappings(c, json_object_get(o, "gidMappings"), "linux.gidMappings") < 0 ||
	    resources(c, json_object_get(o, "resources")) < 0 ||
	    paths(c, json_object_get(o, "maskedPaths"), "linux.maskedPaths") < 0 ||
	    paths(c, json_object_get(o, "readonlyPaths"), "linux.readonlyPaths") < 0 ||
	    seccomp_profile(c, json_object_get(o, "seccomp")) < 0)
		return -EINVAL;
	if (!empty(json_object_get(o, "sysctl")))
		return fail(c, "linux.sysctl",
			    "not supported: net.* belong to moat's own network namespace, "
			    "which its egress proxy design owns; ipc (kernel.msg*, kernel.sem, "
			    "kernel.shm*) keys are not done");
	if (!empty(json_object_get(o, "devices")))
		return fail(c, "linux.devices", "device nodes are not supported");
	static const char *const nope[] = {"intelRdt", "personality", "timeOffsets", "mountLabel"};
	for (size_t i = 0; i < ELEMENTSOF(nope); i++)
		if (!empty(json_object_get(o, nope[i]))) {
			char f[64];
			snprintf(f, sizeof(f), "linux.%s", nope[i]);
			return fail(c, f, "not supported");
		}
	const char *prop = str(json_object_get(o, "rootfsPropagation"));
	if (json_object_get(o, "rootfsPropagation") &&
	    (!prop ||
	     !(streq(prop, "private") || streq(prop, "rprivate") || streq(prop, "slave") ||
	       streq(prop, "rslave") || !*prop)))
		return fail(c, "linux.rootfsPropagation", "only private or slave");
	json_t *cgp = json_object_get(o, "cgroupsPath");
	if (cgp && !json_is_string(cgp))
		return fail(c, "linux.cgroupsPath", "must be a string");
	/* systemd's form (slice:prefix:name) needs systemd's manager */
	if (cgp && strchr(json_string_value(cgp), ':'))
		return fail(c, "linux.cgroupsPath",
			    "%s: systemd's form (slice:prefix:name) is not supported; use cgroupfs "
			    "(podman --cgroup-manager cgroupfs, containerd SystemdCgroup = false)",
			    json_string_value(cgp));
	if (cgp && json_string_value(cgp)[0] &&
	    rec(c, "cgp", "linux.cgroupsPath", json_string_value(cgp), NULL) < 0)
		return c->k;
	return c->k;
}

static int hooks(struct ctx *c, json_t *o)
{
	if (!o || empty(o))
		return 0;
	/* hooks run on the host, with the runtime's privileges, outside every
	 * layer of moat's: never */
	return fail(c, "hooks",
		    "not supported: a hook runs on the host outside the sandbox (moat runs none)");
}

int moat_oci_parse_process(const char *json, size_t len, struct moat_oci_recs *out)
{
	struct ctx c = {.r = out, .bundle = ""};
	json_error_t je;
	memset(out, 0, sizeof(*out));
	if (len > MOAT_OCI_CONFIG_MAX)
		return fail(&c, "process", "larger than %u bytes", MOAT_OCI_CONFIG_MAX);
	json_t *o = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!o)
		return fail(&c, "process", "not valid JSON (line %d, column %d): %.200s", je.line,
			    je.column, je.text);
	int k = process(&c, o);
	json_decref(o);
	if (out->failed)
		return -EINVAL;
	return c.k < 0 ? c.k : k < 0 ? k : 0;
}

int moat_oci_parse(const char *json, size_t len, const char *bundle, struct moat_oci_recs *out)
{
	struct ctx c = {.r = out, .bundle = bundle ? bundle : ""};
	json_error_t je;
	memset(out, 0, sizeof(*out));
	if (len > MOAT_OCI_CONFIG_MAX) {
		fail(&c, "config.json", "larger than %u bytes", MOAT_OCI_CONFIG_MAX);
		return -EINVAL;
	}
	json_t *root_ = json_loadb(json, len, JSON_REJECT_DUPLICATES, &je);
	if (!root_) {
		fail(&c, "config.json", "not valid JSON (line %d, column %d): %.200s", je.line,
		     je.column, je.text);
		return -EINVAL;
	}
	static const char *const known[] = {"ociVersion",  "root",	 "mounts", "process",
					    "hostname",	   "domainname", "linux",  "hooks",
					    "annotations", NULL};
	int k = 0;
	const char *ver = str(json_object_get(root_, "ociVersion"));
	if (!json_is_object(root_))
		k = fail(&c, "config.json", "must be an object");
	else if (!ver)
		k = fail(&c, "ociVersion", "required");
	else if (strncmp(ver, "1.0", 3) && strncmp(ver, "1.1", 3) && strncmp(ver, "1.2", 3) &&
		 strncmp(ver, "1.3", 3))
		k = fail(&c, "ociVersion", "%.40s: moat supports 1.0 to 1.3", ver);
	else if (only_keys(&c, root_, "", known) < 0)
		k = -EINVAL;
	/* annotations first: run.moat.root-readonly is read by root() */
	if (k >= 0)
		k = annotations(&c, json_object_get(root_, "annotations"));
	if (k >= 0)
		k = root(&c, json_object_get(root_, "root"));
	if (k >= 0)
		k = process(&c, json_object_get(root_, "process"));
	if (k >= 0 && json_object_get(root_, "hostname")) {
		const char *h = str(json_object_get(root_, "hostname"));
		if (!h)
			k = fail(&c, "hostname", "must be a string");
		else if (*h)
			k = opt(&c, "hostname", "--hostname", h);
	}
	if (k >= 0 && !empty(json_object_get(root_, "domainname")))
		k = fail(&c, "domainname", "not supported");
	if (k >= 0)
		k = mounts(&c, json_object_get(root_, "mounts"));
	if (k >= 0)
		k = linux_(&c, json_object_get(root_, "linux"));
	if (k >= 0)
		k = hooks(&c, json_object_get(root_, "hooks"));
	json_decref(root_);
	if (out->failed)
		return -EINVAL;
	return c.k < 0 ? c.k : k < 0 ? k : 0;
}
