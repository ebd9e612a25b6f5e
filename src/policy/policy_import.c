/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat policy import --from srt FILE`: Anthropic sandbox-runtime settings
 * (~/.srt-settings.json; the same "network" and "filesystem" objects under
 * "sandbox" in Claude Code's settings.json) as a moat policy.
 *
 * The rule: the policy is never wider than the input. What srt allows and
 * moat cannot express is left out (narrower) and named; what srt denies and
 * moat cannot express inside something the policy allows makes the import
 * drop that allowance (or fail), never keep it. srt reads everywhere but
 * denyRead; moat shows only the workspace, the mounts and system
 * directories: narrower, and said so once.
 *
 *   network.allowedDomains  -> network.allow_hosts (none: --net none)
 *   network.deniedDomains   -> network.deny_hosts
 *   filesystem.allowWrite   -> "." (the current directory): the workspace
 *                              (overlay, reviewed: narrower); others: rw mounts
 *   filesystem.denyWrite    -> inside a writable path: a hide mount (also
 *                              unreadable: narrower); elsewhere nothing to do
 *   filesystem.denyRead     -> a hide mount (wherever it is); a pattern is
 *                              refused (the import fails) when it may reach
 *                              what every sandbox sees (/usr, /bin, /lib,
 *                              /etc), and drops writable paths it reaches
 */
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/errors.h"
#include "moat/moat.h"
#include "shared/macro.h"

#define IMPORT_MAX_BYTES (1u << 20)
#define IMPORT_MAX_ENTRIES 1024u

struct imp {
	FILE *notes;
	json_t *mounts, *allow, *deny;
	char *workspace;
	char *writable[IMPORT_MAX_ENTRIES];
	size_t n_writable;
	const char *home, *cwd;
};

static void note(struct imp *m, const char *fmt, const char *arg)
{
	fputs("moat policy import: ", m->notes);
	/* arg comes from the input file: control bytes escaped */
	const char *pct = strstr(fmt, "%s");
	if (!pct) {
		fputs(fmt, m->notes);
	} else {
		fwrite(fmt, 1, (size_t)(pct - fmt), m->notes);
		for (const unsigned char *s = (const unsigned char *)arg; *s; s++)
			if (*s < 0x20 || *s == 0x7f)
				fprintf(m->notes, "\\x%02x", *s);
			else
				fputc(*s, m->notes);
		fputs(pct + 2, m->notes);
	}
	fputc('\n', m->notes);
}

static bool has_glob(const char *s)
{
	return strpbrk(s, "*?[]{}") != NULL;
}

/* @in as an absolute path without '.'/'..' segments or a trailing slash;
 * NULL when it cannot be (a relative path with no cwd, '~user', too long). */
static char *absolute(struct imp *m, const char *in)
{
	char buf[PATH_MAX], out[PATH_MAX];
	size_t o = 0;

	if (in[0] == '~' && (in[1] == '/' || in[1] == '\0')) {
		if (!m->home ||
		    snprintf(buf, sizeof(buf), "%s%s", m->home, in + 1) >= (int)sizeof(buf))
			return NULL;
	} else if (in[0] == '/') {
		if (snprintf(buf, sizeof(buf), "%s", in) >= (int)sizeof(buf))
			return NULL;
	} else if (in[0] != '~' && m->cwd) {
		if (snprintf(buf, sizeof(buf), "%s/%s", m->cwd, in) >= (int)sizeof(buf))
			return NULL;
	} else
		return NULL;
	for (char *save = NULL, *seg = strtok_r(buf, "/", &save); seg;
	     seg = strtok_r(NULL, "/", &save)) {
		if (streq(seg, "."))
			continue;
		if (streq(seg, "..")) {
			while (o > 0 && out[o - 1] != '/')
				o--;
			if (o > 0)
				o--;
			continue;
		}
		size_t l = strlen(seg);
		if (o + 1 + l + 1 > sizeof(out))
			return NULL;
		out[o++] = '/';
		memcpy(out + o, seg, l);
		o += l;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return strdup(out);
}

static bool under(const char *path, const char *dir)
{
	size_t n = strlen(dir);
	if (streq(dir, "/"))
		return true;
	return strncmp(path, dir, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

/* The string entries of @key in @obj ("not a list" is an error). */
static int strings(json_t *obj, const char *key, json_t **ret, struct moat_error *err)
{
	json_t *v = json_object_get(obj, key);
	size_t i;
	json_t *e;

	*ret = NULL;
	if (!v)
		return 0;
	if (!json_is_array(v) || json_array_size(v) > IMPORT_MAX_ENTRIES)
		return moat_error_set(err, "policy", EINVAL,
				      "srt: %s is not a list of at most %u strings", key,
				      IMPORT_MAX_ENTRIES);
	json_array_foreach(v, i, e) if (!json_is_string(e)) return moat_error_set(
		err, "policy", EINVAL, "srt: %s[%zu] is not a string", key, i);
	*ret = v;
	return 0;
}

static void unknown_keys(struct imp *m, json_t *obj, const char *where, const char *const *known)
{
	const char *k;
	json_t *v;
	json_object_foreach(obj, k, v)
	{
		bool ok = false;
		for (size_t i = 0; known[i] && !ok; i++)
			ok = streq(known[i], k);
		if (!ok) {
			char what[160];
			snprintf(what, sizeof(what), "%s.%s", where, k);
			note(m, "%s: no equivalent in moat, ignored", what);
		}
	}
}

static int do_network(struct imp *m, json_t *net, struct moat_error *err)
{
	static const char *const known[] = {"allowedDomains",	 "deniedDomains",
					    "allowUnixSockets",	 "allowAllUnixSockets",
					    "allowLocalBinding", NULL};
	json_t *allowed, *denied, *e;
	size_t i;
	int k;

	if (net && !json_is_object(net))
		return moat_error_set(err, "policy", EINVAL, "srt: network is not an object");
	if ((k = strings(net, "allowedDomains", &allowed, err)) < 0 ||
	    (k = strings(net, "deniedDomains", &denied, err)) < 0)
		return k;
	json_array_foreach(allowed, i, e)
	{
		const char *d = json_string_value(e);
		if (streq(d, "*")) {
			note(m,
			     "network.allowedDomains \"%s\": any host; moat imports no wildcard "
			     "for everything (left out: add --net host yourself if you mean it)",
			     d);
			continue;
		}
		json_array_append_new(m->allow, json_string(d));
	}
	json_array_foreach(denied, i, e)
		json_array_append_new(m->deny, json_string(json_string_value(e)));
	if (json_object_get(net, "allowUnixSockets") || json_object_get(net, "allowAllUnixSockets"))
		note(m, "network.allowUnixSockets: %s",
		     "moat passes no host Unix socket into the sandbox (left out: narrower)");
	if (json_object_get(net, "allowLocalBinding"))
		note(m, "network.allowLocalBinding: %s",
		     "the sandbox's loopback is its own in moat; host ports are never bound");
	if (net)
		unknown_keys(m, net, "network", known);
	return 0;
}

static int add_writable(struct imp *m, const char *raw)
{
	_cleanup_free_ char *p = NULL;

	if (has_glob(raw)) {
		note(m, "filesystem.allowWrite \"%s\": a pattern; moat mounts paths (left out)",
		     raw);
		return 0;
	}
	p = absolute(m, raw);
	if (!p) {
		note(m, "filesystem.allowWrite \"%s\": not a path moat can resolve (left out)",
		     raw);
		return 0;
	}
	if (streq(p, "/")) {
		note(m, "filesystem.allowWrite \"%s\": the whole file system (left out)", raw);
		return 0;
	}
	if (m->n_writable >= IMPORT_MAX_ENTRIES)
		return -E2BIG;
	if (m->cwd && streq(p, m->cwd) && !m->workspace) {
		m->workspace = strdup(p);
		if (!m->workspace)
			return -ENOMEM;
		note(m,
		     "filesystem.allowWrite \"%s\": the workspace; moat reviews its changes "
		     "before they reach the host (narrower than srt's direct writes)",
		     raw);
	}
	m->writable[m->n_writable++] = TAKE_PTR(p);
	return 0;
}

/* A deny inside a writable path: hide it, or drop the writable path when the
 * deny cannot be expressed (a pattern). */
/* What moat shows every sandbox read-only (the plan's system binds, /etc). */
static bool shown(const char *path)
{
	static const char *const sys[] = {"/usr",   "/bin",   "/sbin",	 "/lib",
					  "/lib32", "/lib64", "/libx32", "/etc"};
	for (size_t i = 0; i < ELEMENTSOF(sys); i++)
		if (under(path, sys[i]) || under(sys[i], path))
			return true;
	return false;
}

/* The directory a pattern is rooted in (before its first wildcard). */
static char *pattern_root(struct imp *m, const char *raw)
{
	char buf[PATH_MAX];
	size_t n = strcspn(raw, "*?[]{}");

	if (n >= sizeof(buf))
		return NULL;
	memcpy(buf, raw, n);
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash)
		slash[slash == buf ? 1 : 0] = '\0';
	else
		snprintf(buf, sizeof(buf), ".");
	return absolute(m, buf);
}

static int do_deny(struct imp *m, const char *list, const char *raw, bool read,
		   struct moat_error *err)
{
	_cleanup_free_ char *p = has_glob(raw) ? NULL : absolute(m, raw);
	/* a pattern may match anywhere under its root (unresolvable: anywhere) */
	_cleanup_free_ char *proot = p ? NULL : pattern_root(m, raw);
	bool inside = false;

	for (size_t i = 0; i < m->n_writable; i++) {
		if (!m->writable[i])
			continue;
		const char *d = p ?: proot;
		bool hit = !d || under(d, m->writable[i]) || under(m->writable[i], d);
		if (!hit)
			continue;
		if (!p || under(m->writable[i], p)) {
			/* the whole writable path is denied, or cannot tell: drop it */
			note(m,
			     "%s: a deny moat cannot express inside it (or over it): the "
			     "writable path is left out",
			     m->writable[i]);
			if (m->workspace && streq(m->workspace, m->writable[i])) {
				free(m->workspace);
				m->workspace = NULL;
			}
			free(m->writable[i]);
			m->writable[i] = NULL;
			continue;
		}
		inside = true;
	}
	if (read) {
		if (!p) {
			/* a pattern moat cannot hide: refused where it may reach
			 * what every sandbox sees, rather than imported wider */
			_cleanup_free_ char *root = pattern_root(m, raw);
			if (!root || shown(root)) {
				note(m,
				     "filesystem.denyRead \"%s\": a pattern over what moat shows",
				     raw);
				return moat_error_set(
					err, "policy", EINVAL,
					"srt: a denyRead pattern (above) may match files every "
					"moat sandbox sees (/usr, /bin, /lib, /etc): not imported, "
					"the policy would be wider; list the paths instead");
			}
			note(m,
			     "filesystem.denyRead \"%s\": a pattern outside what moat shows "
			     "(nothing to do)",
			     raw);
		} else if (streq(p, "/")) {
			return moat_error_set(err, "policy", EINVAL,
					      "srt: denyRead \"/\": moat cannot hide everything");
		} else {
			json_array_append_new(m->mounts,
					      json_pack("{s:s, s:s}", "type", "hide", "dest", p));
			if (!inside && !shown(p))
				note(m,
				     "filesystem.denyRead \"%s\": hidden, though outside what moat "
				     "shows the sandbox anyway",
				     raw);
		}
	} else if (p && inside) {
		json_array_append_new(m->mounts,
				      json_pack("{s:s, s:s}", "type", "hide", "dest", p));
		if (!read)
			note(m,
			     "filesystem.denyWrite \"%s\": hidden in moat (not readable either: "
			     "narrower)",
			     raw);
	}
	(void)list;
	return 0;
}

static int do_filesystem(struct imp *m, json_t *fs, struct moat_error *err)
{
	static const char *const known[] = {"allowWrite", "denyWrite", "denyRead", NULL};
	json_t *aw, *dw, *dr, *e;
	size_t i;
	int k;

	if (fs && !json_is_object(fs))
		return moat_error_set(err, "policy", EINVAL, "srt: filesystem is not an object");
	if ((k = strings(fs, "allowWrite", &aw, err)) < 0 ||
	    (k = strings(fs, "denyWrite", &dw, err)) < 0 ||
	    (k = strings(fs, "denyRead", &dr, err)) < 0)
		return k;
	json_array_foreach(aw, i, e) if ((k = add_writable(m, json_string_value(e))) < 0) return k;
	json_array_foreach(dw, i, e) if ((k = do_deny(m, "denyWrite", json_string_value(e), false,
						      err)) < 0) return k;
	json_array_foreach(dr, i, e) if ((k = do_deny(m, "denyRead", json_string_value(e), true,
						      err)) < 0) return k;
	note(m, "%s",
	     "srt reads everywhere but denyRead; moat shows only the workspace, the mounts "
	     "and system directories (narrower)");
	if (fs)
		unknown_keys(m, fs, "filesystem", known);
	for (size_t j = 0; j < m->n_writable; j++) {
		if (!m->writable[j] || (m->workspace && streq(m->workspace, m->writable[j])))
			continue;
		json_array_append_new(m->mounts,
				      json_pack("{s:s, s:s, s:s}", "type", "rw", "src",
						m->writable[j], "dest", m->writable[j]));
	}
	return 0;
}

int moat_policy_import_srt(const char *path, char **ret_policy, char **ret_notes,
			   struct moat_error *ret_err)
{
	static const char *const known_top[] = {"network", "filesystem", "sandbox", "permissions",
						NULL};
	char cwd[PATH_MAX];
	struct imp m = {0};
	json_error_t jerr;
	size_t nlen = 0;
	int k = 0;

	*ret_policy = *ret_notes = NULL;
	json_t *in = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	if (!in)
		return moat_error_set(ret_err, "policy", EINVAL, "%s:%d:%d: %s", path, jerr.line,
				      jerr.column, jerr.text);
	if (!json_is_object(in)) {
		json_decref(in);
		return moat_error_set(ret_err, "policy", EINVAL, "%s: not a JSON object", path);
	}
	m.notes = open_memstream(ret_notes, &nlen);
	m.mounts = json_array();
	m.allow = json_array();
	m.deny = json_array();
	m.home = getenv("HOME");
	m.cwd = getcwd(cwd, sizeof(cwd));
	if (!m.notes || !m.mounts || !m.allow || !m.deny) {
		k = -ENOMEM;
		goto out;
	}
	json_t *top = in;
	json_t *sb = json_object_get(in, "sandbox");
	if (sb && json_is_object(sb)) {
		/* Claude Code's settings.json */
		top = sb;
		if (json_object_get(in, "permissions"))
			note(&m,
			     "%s: Claude Code's tool permissions are not a sandbox setting "
			     "(ignored)",
			     "permissions");
		if (json_is_false(json_object_get(sb, "enabled")))
			note(&m,
			     "%s: the input has the sandbox disabled; importing its "
			     "settings anyway",
			     "sandbox.enabled");
	} else
		unknown_keys(&m, in, "(top)", known_top);
	if ((k = do_network(&m, json_object_get(top, "network"), ret_err)) < 0 ||
	    (k = do_filesystem(&m, json_object_get(top, "filesystem"), ret_err)) < 0)
		goto out;
	if (sb && json_is_object(sb)) {
		static const char *const known_sb[] = {"enabled", "network", "filesystem", NULL};
		unknown_keys(&m, sb, "sandbox", known_sb);
	}

	json_t *fsout = json_object();
	if (m.workspace)
		json_object_set_new(fsout, "workspace", json_string(m.workspace));
	if (json_array_size(m.mounts))
		json_object_set(fsout, "mounts", m.mounts);
	json_t *netout = json_object();
	json_object_set_new(netout, "mode",
			    json_string(json_array_size(m.allow) ? "allow" : "none"));
	if (json_array_size(m.allow))
		json_object_set(netout, "allow_hosts", m.allow);
	if (json_array_size(m.deny))
		json_object_set(netout, "deny_hosts", m.deny);
	json_t *out =
		json_pack("{s:i, s:o, s:o}", "version", 1, "filesystem", fsout, "network", netout);
	*ret_policy = out ? json_dumps(out, JSON_INDENT(2) | JSON_PRESERVE_ORDER) : NULL;
	json_decref(out);
	if (!*ret_policy) {
		k = -ENOMEM;
		goto out;
	}
	/* what was produced must load: a deny that does not is an error */
	struct moat_policy *p = moat_policy_new();
	if (!p) {
		k = -ENOMEM;
		goto out;
	}
	k = moat_policy_load_string(p, *ret_policy, strlen(*ret_policy), "imported policy",
				    ret_err);
	moat_policy_free(p);
	if (k < 0) {
		free(*ret_policy);
		*ret_policy = NULL;
	}
out:
	for (size_t i = 0; i < m.n_writable; i++)
		free(m.writable[i]);
	free(m.workspace);
	json_decref(m.mounts);
	json_decref(m.allow);
	json_decref(m.deny);
	json_decref(in);
	if (m.notes)
		fclose(m.notes);
	return k;
}
