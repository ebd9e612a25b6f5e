/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * E2B's protocol for `moat serve --e2b` (serve_e2b.h): routes and the strict
 * check of the SDK's requests. Every field of a request is known or the
 * request is refused with the field named; a field whose E2B meaning moat
 * does not provide (templates, pause, volumes, network rules, PTYs, another
 * user) is refused, never ignored.
 */
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/serve_e2b.h"
#include "shared/macro.h"

_printf_(3, 4) static int bad_set(struct moat_e2b_bad *b, int err, const char *fmt, ...)
{
	va_list ap;
	b->err = err;
	va_start(ap, fmt);
	vsnprintf(b->msg, sizeof(b->msg), fmt, ap);
	va_end(ap);
	return err;
}
#define BAD(b, ...) bad_set(b, -EINVAL, __VA_ARGS__)
#define UNSUPPORTED(b, ...) bad_set(b, -EOPNOTSUPP, __VA_ARGS__)

/* ---- routes ---- */

bool moat_e2b_id_ok(const char *id)
{
	size_t n = 0;
	for (; id[n]; n++) {
		char c = id[n];
		if (n >= MOAT_E2B_ID_MAX ||
		    !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '-'))
			return false;
	}
	return n > 0;
}

struct rpc_route {
	const char *path;
	enum moat_e2b_route route;
	bool stream;
};

static const struct rpc_route rpc_routes[] = {
	{"/process.Process/Start", MOAT_E2B_PROC_START, true},
	{"/process.Process/Connect", MOAT_E2B_PROC_CONNECT, true},
	{"/process.Process/List", MOAT_E2B_PROC_LIST, false},
	{"/process.Process/SendSignal", MOAT_E2B_PROC_SIGNAL, false},
	{"/process.Process/SendInput", MOAT_E2B_PROC_INPUT, false},
	{"/process.Process/CloseStdin", MOAT_E2B_PROC_CLOSE_STDIN, false},
	{"/filesystem.Filesystem/Stat", MOAT_E2B_FS_STAT, false},
	{"/filesystem.Filesystem/ListDir", MOAT_E2B_FS_LIST, false},
	{"/filesystem.Filesystem/MakeDir", MOAT_E2B_FS_MKDIR, false},
	{"/filesystem.Filesystem/Remove", MOAT_E2B_FS_REMOVE, false},
	{"/filesystem.Filesystem/Move", MOAT_E2B_FS_MOVE, false},
};

int moat_e2b_route(const char *method, const char *url, struct moat_e2b_target *ret)
{
	struct moat_e2b_target t = {.route = MOAT_E2B_NONE};
	bool get = streq(method, "GET"), post = streq(method, "POST"),
	     del = streq(method, "DELETE");

	if (startswith(url, "/process.Process/") || startswith(url, "/filesystem.Filesystem/")) {
		t.envd = t.rpc = true;
		t.route = MOAT_E2B_RPC_UNSUPPORTED;
		for (size_t i = 0; i < ELEMENTSOF(rpc_routes); i++)
			if (streq(url, rpc_routes[i].path)) {
				t.route = rpc_routes[i].route;
				t.stream = rpc_routes[i].stream;
			}
		snprintf(t.name, sizeof(t.name), "%.60s", strchr(url + 1, '.') + 1);
		if (!post)
			return -EBADRQC;
	} else if (streq(url, "/health")) {
		t.envd = true;
		t.route = MOAT_E2B_HEALTH;
		snprintf(t.name, sizeof(t.name), "health");
		if (!get)
			return -EBADRQC;
	} else if (streq(url, "/files")) {
		t.envd = true;
		t.route = get ? MOAT_E2B_FILES_GET : MOAT_E2B_FILES_POST;
		snprintf(t.name, sizeof(t.name), "files");
		if (!get && !post)
			return -EBADRQC;
	} else if (streq(url, "/v2/sandboxes") || streq(url, "/sandboxes")) {
		t.route = post ? MOAT_E2B_CREATE : MOAT_E2B_LIST;
		snprintf(t.name, sizeof(t.name), "sandboxes");
		if (!get && !post)
			return -EBADRQC;
	} else if (startswith(url, "/sandboxes/") || startswith(url, "/v2/sandboxes/")) {
		const char *id = strchr(url + 1, '/');
		if (startswith(url, "/v2/"))
			id = strchr(id + 1, '/');
		id++;
		const char *slash = strchr(id, '/');
		size_t n = slash ? (size_t)(slash - id) : strlen(id);
		if (n == 0 || n > MOAT_E2B_ID_MAX)
			return -EINVAL;
		memcpy(t.sandbox, id, n);
		t.sandbox[n] = 0;
		if (!moat_e2b_id_ok(t.sandbox))
			return -EINVAL;
		snprintf(t.name, sizeof(t.name), "%.60s", slash ? slash + 1 : "sandbox");
		if (startswith(url, "/v2/") && slash && streq(slash, "/connect")) {
			/* Sandbox.connect(id): the sandbox's object again */
			t.route = MOAT_E2B_CONNECT;
			if (!post)
				return -EBADRQC;
		} else if (slash || startswith(url, "/v2/")) {
			/* timeout, pause, resume, connect, metrics, logs,
			 * snapshots, fork, network: not provided */
			t.route = MOAT_E2B_REST_UNSUPPORTED;
		} else if (get) {
			t.route = MOAT_E2B_INFO;
		} else if (del) {
			t.route = MOAT_E2B_KILL;
		} else {
			return -EBADRQC;
		}
	} else if (startswith(url, "/templates") || startswith(url, "/v2/templates") ||
		   startswith(url, "/v3/templates") || startswith(url, "/volumes") ||
		   startswith(url, "/snapshots") || startswith(url, "/secrets")) {
		t.route = MOAT_E2B_REST_UNSUPPORTED;
		snprintf(t.name, sizeof(t.name), "%.60s", url + 1);
	} else {
		return -ENOENT;
	}
	*ret = t;
	return 0;
}

/* ---- JSON helpers ---- */

static json_t *parse_object(const char *msg, size_t len, const char *what, struct moat_e2b_bad *b)
{
	json_error_t e;
	/* no duplicate keys (two values for one field would be read two ways) */
	json_t *o = json_loadb(msg, len, JSON_REJECT_DUPLICATES, &e);
	if (!o) {
		BAD(b, "%s: not JSON (%.100s at %d)", what, e.text, e.position);
		return NULL;
	}
	if (!json_is_object(o)) {
		json_decref(o);
		BAD(b, "%s: not a JSON object", what);
		return NULL;
	}
	return o;
}

/* Every key of o is in allowed[] (NULL-terminated). */
static int only_fields(json_t *o, const char *const *allowed, const char *what,
		       struct moat_e2b_bad *b)
{
	const char *key;
	json_t *v;
	json_object_foreach(o, key, v)
	{
		bool ok = false;
		for (const char *const *a = allowed; *a && !ok; a++)
			ok = streq(*a, key);
		if (!ok)
			return BAD(b, "%s: unknown field '%.64s'", what, key);
	}
	(void)v;
	return 0;
}

/* A field that moat does not provide: absent or null only. */
static int refuse_field(json_t *o, const char *key, const char *what, const char *why,
			struct moat_e2b_bad *b)
{
	json_t *v = json_object_get(o, key);
	if (!v || json_is_null(v))
		return 0;
	return UNSUPPORTED(b, "%s: '%s' is not supported by moat (%s)", what, key, why);
}

/* A string: 0 and *ret (NULL if absent or null), or -EINVAL. No NUL
 * inside (jansson allows \u0000): argv and paths are C strings. */
static int get_str(json_t *o, const char *key, size_t max, const char *what, const char **ret,
		   struct moat_e2b_bad *b)
{
	json_t *v = json_object_get(o, key);
	*ret = NULL;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return BAD(b, "%s: '%s' must be a string", what, key);
	size_t n = json_string_length(v);
	if (n > max)
		return BAD(b, "%s: '%s' is longer than %zu bytes", what, key, max);
	if (memchr(json_string_value(v), 0, n))
		return BAD(b, "%s: '%s' holds a NUL byte", what, key);
	*ret = json_string_value(v);
	return 0;
}

static int get_bool(json_t *o, const char *key, const char *what, int *ret, struct moat_e2b_bad *b)
{
	json_t *v = json_object_get(o, key);
	*ret = -1;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return BAD(b, "%s: '%s' must be true or false", what, key);
	*ret = json_is_true(v);
	return 0;
}

/* A non-negative integer (a JSON number, or for the 64-bit proto3 fields a
 * string of digits) at most max. */
static int get_uint(json_t *o, const char *key, uint64_t max, const char *what, uint64_t *ret,
		    bool *ret_present, struct moat_e2b_bad *b)
{
	json_t *v = json_object_get(o, key);
	*ret = 0;
	*ret_present = false;
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) > max)
		return BAD(b, "%s: '%s' must be an integer from 0 to %llu", what, key,
			   (unsigned long long)max);
	*ret = (uint64_t)json_integer_value(v);
	*ret_present = true;
	return 0;
}

static void free_strv(char **v)
{
	for (; v && *v; v++) {
		free(*v);
		*v = NULL;
	}
}

/* An object of string values into "NAME=VALUE" strings (env[0..max)):
 * names as a shell takes them ([A-Za-z_][A-Za-z0-9_]*). */
static int get_env(json_t *o, const char *key, const char *what, char **env, size_t max,
		   size_t *ret_n, struct moat_e2b_bad *b)
{
	json_t *m = json_object_get(o, key), *v;
	const char *name;
	size_t n = 0;
	*ret_n = 0;
	if (!m || json_is_null(m))
		return 0;
	if (!json_is_object(m))
		return BAD(b, "%s: '%s' must be an object of strings", what, key);
	if (json_object_size(m) > max)
		return BAD(b, "%s: '%s' has more than %zu entries", what, key, max);
	json_object_foreach(m, name, v)
	{
		size_t nl = strlen(name);
		bool ok = nl > 0 && nl <= 256 && !(name[0] >= '0' && name[0] <= '9');
		for (size_t i = 0; ok && i < nl; i++)
			ok = (name[i] >= 'a' && name[i] <= 'z') ||
				(name[i] >= 'A' && name[i] <= 'Z') ||
				(name[i] >= '0' && name[i] <= '9') || name[i] == '_';
		if (!ok)
			return BAD(b, "%s: '%s': '%.64s' is not a variable name", what, key, name);
		if (!json_is_string(v))
			return BAD(b, "%s: '%s.%.64s' must be a string", what, key, name);
		size_t vl = json_string_length(v);
		if (vl > MOAT_E2B_MAX_STR || memchr(json_string_value(v), 0, vl))
			return BAD(b, "%s: '%s.%.64s': too long or holds a NUL byte", what, key,
				   name);
		if (asprintf(&env[n], "%s=%s", name, json_string_value(v)) < 0) {
			env[n] = NULL;
			return bad_set(b, -ENOMEM, "out of memory");
		}
		n++;
		*ret_n = n;
	}
	return 0;
}

/* ---- lifecycle ---- */

void moat_e2b_create_done(struct moat_e2b_create *c)
{
	free_strv(c->env);
	c->n_env = 0;
}

int moat_e2b_parse_create(const char *body, size_t len, struct moat_e2b_create *ret,
			  struct moat_e2b_bad *b)
{
	static const char *const fields[] = {
		"templateID", "metadata",     "envVars", "timeout",   "allow_internet_access",
		"mcp",	      "network",      "iam",	 "autoPause", "autoPauseMemory",
		"autoResume", "volumeMounts", "secure",	 NULL};
	static const char what[] = "create";
	memset(ret, 0, sizeof(*ret));
	ret->internet = -1;
	json_t *o = parse_object(body, len, what, b);
	if (!o)
		return -EINVAL;
	const char *tpl;
	uint64_t t;
	bool have_t;
	int k, pause, secure;
	json_t *md;
	if ((k = only_fields(o, fields, what, b)) < 0 ||
	    (k = get_str(o, "templateID", 256, what, &tpl, b)) < 0)
		goto out;
	if (tpl && !streq(tpl, MOAT_E2B_TEMPLATE)) {
		k = UNSUPPORTED(
			b,
			"create: template '%.64s': moat has no templates, only '" MOAT_E2B_TEMPLATE
			"' (the operator's policy)",
			tpl);
		goto out;
	}
	if ((k = refuse_field(o, "mcp", what, "no MCP gateway", b)) < 0 ||
	    (k = refuse_field(o, "network", what,
			      "the network is the operator's policy; allow_internet_access: false "
			      "narrows it",
			      b)) < 0 ||
	    (k = refuse_field(o, "iam", what, "no workload identity tokens", b)) < 0 ||
	    (k = refuse_field(o, "autoResume", what, "no pause/resume", b)) < 0 ||
	    (k = refuse_field(o, "autoPauseMemory", what, "no pause/resume", b)) < 0 ||
	    (k = refuse_field(o, "volumeMounts", what, "no volumes", b)) < 0 ||
	    (k = get_bool(o, "autoPause", what, &pause, b)) < 0 ||
	    (k = get_bool(o, "secure", what, &secure, b)) < 0 ||
	    (k = get_bool(o, "allow_internet_access", what, &ret->internet, b)) < 0 ||
	    (k = get_uint(o, "timeout", MOAT_E2B_MAX_TIMEOUT_S, what, &t, &have_t, b)) < 0)
		goto out;
	if (pause == 1) {
		k = UNSUPPORTED(b,
				"create: 'autoPause' is not supported by moat (no pause/resume)");
		goto out;
	}
	ret->timeout_s = t;
	md = json_object_get(o, "metadata");
	if (md && !json_is_null(md)) {
		/* accepted for the SDK's sake, checked, not kept */
		const char *mk;
		json_t *mv;
		if (!json_is_object(md) || json_object_size(md) > 64) {
			k = BAD(b, "create: 'metadata' must be an object of at most 64 strings");
			goto out;
		}
		json_object_foreach(md, mk, mv)
		{
			if (!json_is_string(mv) || json_string_length(mv) > 1024 ||
			    strlen(mk) > 256) {
				k = BAD(b, "create: 'metadata.%.64s' must be a string", mk);
				goto out;
			}
		}
	}
	k = get_env(o, "envVars", what, ret->env, MOAT_E2B_MAX_ENV, &ret->n_env, b);
out:
	json_decref(o);
	if (k < 0)
		moat_e2b_create_done(ret);
	return k < 0 ? k : 0;
}

/* ---- the process service ---- */

void moat_e2b_start_done(struct moat_e2b_start *s)
{
	free_strv(s->argv);
	free_strv(s->env);
	free(s->cwd);
	free(s->tag);
	s->cwd = s->tag = NULL;
	s->n_args = s->n_env = 0;
}

int moat_e2b_parse_start(const char *msg, size_t len, struct moat_e2b_start *ret,
			 struct moat_e2b_bad *b)
{
	static const char *const fields[] = {"process", "pty", "tag", "stdin", NULL};
	static const char *const pfields[] = {"cmd", "args", "envs", "cwd", NULL};
	static const char what[] = "Process/Start";
	memset(ret, 0, sizeof(*ret));
	json_t *o = parse_object(msg, len, what, b), *p, *args;
	if (!o)
		return -EINVAL;
	const char *cmd, *cwd, *tag;
	int k, in;
	if ((k = only_fields(o, fields, what, b)) < 0 ||
	    (k = refuse_field(o, "pty", what, "no terminals through the E2B API", b)) < 0 ||
	    (k = get_str(o, "tag", MOAT_E2B_MAX_TAG, what, &tag, b)) < 0 ||
	    (k = get_bool(o, "stdin", what, &in, b)) < 0)
		goto out;
	p = json_object_get(o, "process");
	if (!json_is_object(p)) {
		k = BAD(b, "%s: 'process' must be an object", what);
		goto out;
	}
	if ((k = only_fields(p, pfields, "Process/Start: process", b)) < 0 ||
	    (k = get_str(p, "cmd", MOAT_E2B_MAX_STR, what, &cmd, b)) < 0 ||
	    (k = get_str(p, "cwd", MOAT_E2B_MAX_PATH, what, &cwd, b)) < 0)
		goto out;
	if (!cmd || !*cmd) {
		k = BAD(b, "%s: 'process.cmd' is required", what);
		goto out;
	}
	if (cwd && *cwd && !moat_e2b_path_ok(cwd)) {
		k = BAD(b, "%s: 'process.cwd' must be an absolute path without . or ..", what);
		goto out;
	}
	args = json_object_get(p, "args");
	if (args && !json_is_null(args) &&
	    (!json_is_array(args) || json_array_size(args) > MOAT_E2B_MAX_ARGS)) {
		k = BAD(b, "%s: 'process.args' must be an array of at most %u strings", what,
			MOAT_E2B_MAX_ARGS);
		goto out;
	}
	ret->argv[0] = strdup(cmd);
	ret->n_args = 1;
	if (!ret->argv[0]) {
		k = bad_set(b, -ENOMEM, "out of memory");
		goto out;
	}
	size_t total = strlen(cmd), i;
	json_t *a;
	json_array_foreach(args, i, a)
	{
		if (!json_is_string(a) || memchr(json_string_value(a), 0, json_string_length(a))) {
			k = BAD(b, "%s: 'process.args[%zu]' must be a string without NUL", what, i);
			goto out;
		}
		total += json_string_length(a) + 1;
		if (total > MOAT_E2B_MAX_STR) {
			k = BAD(b, "%s: the command line is longer than %u bytes", what,
				MOAT_E2B_MAX_STR);
			goto out;
		}
		ret->argv[ret->n_args] = strdup(json_string_value(a));
		if (!ret->argv[ret->n_args]) {
			k = bad_set(b, -ENOMEM, "out of memory");
			goto out;
		}
		ret->n_args++;
	}
	if ((k = get_env(p, "envs", "Process/Start: process", ret->env, MOAT_E2B_MAX_ENV,
			 &ret->n_env, b)) < 0)
		goto out;
	ret->stdin_open = in == 1;
	if ((cwd && *cwd && !(ret->cwd = strdup(cwd))) || (tag && !(ret->tag = strdup(tag))))
		k = bad_set(b, -ENOMEM, "out of memory");
out:
	json_decref(o);
	if (k < 0)
		moat_e2b_start_done(ret);
	return k < 0 ? k : 0;
}

void moat_e2b_proc_call_done(struct moat_e2b_proc_call *p)
{
	free(p->input);
	p->input = NULL;
	p->input_len = 0;
}

static int get_selector(json_t *o, const char *what, struct moat_e2b_proc_call *ret,
			struct moat_e2b_bad *b)
{
	static const char *const sfields[] = {"pid", "tag", NULL};
	json_t *p = json_object_get(o, "process");
	const char *tag;
	uint64_t pid;
	bool have_pid;
	int k;
	if (!json_is_object(p))
		return BAD(b, "%s: 'process' must be an object (a process selector)", what);
	if ((k = only_fields(p, sfields, what, b)) < 0 ||
	    (k = get_uint(p, "pid", UINT32_MAX, what, &pid, &have_pid, b)) < 0 ||
	    (k = get_str(p, "tag", MOAT_E2B_MAX_TAG, what, &tag, b)) < 0)
		return k;
	if (have_pid == !!tag || (have_pid && pid == 0) || (tag && !*tag))
		return BAD(b, "%s: the selector names one process: a 'pid' or a 'tag'", what);
	ret->pid = (uint32_t)pid;
	if (tag)
		snprintf(ret->tag, sizeof(ret->tag), "%s", tag);
	return 0;
}

int moat_e2b_parse_proc_call(enum moat_e2b_route route, const char *msg, size_t len,
			     struct moat_e2b_proc_call *ret, struct moat_e2b_bad *b)
{
	static const char *const f_sel[] = {"process", NULL};
	static const char *const f_sig[] = {"process", "signal", NULL};
	static const char *const f_in[] = {"process", "input", NULL};
	const char *what = route == MOAT_E2B_PROC_CONNECT ? "Process/Connect"
		: route == MOAT_E2B_PROC_SIGNAL		  ? "Process/SendSignal"
		: route == MOAT_E2B_PROC_INPUT		  ? "Process/SendInput"
							  : "Process/CloseStdin";
	memset(ret, 0, sizeof(*ret));
	json_t *o = parse_object(msg, len, what, b);
	if (!o)
		return -EINVAL;
	int k = only_fields(o,
			    route == MOAT_E2B_PROC_SIGNAL	   ? f_sig
				    : route == MOAT_E2B_PROC_INPUT ? f_in
								   : f_sel,
			    what, b);
	if (k < 0 || (k = get_selector(o, what, ret, b)) < 0)
		goto out;
	if (route == MOAT_E2B_PROC_SIGNAL) {
		/* proto3 JSON: the enum by name or by number */
		json_t *s = json_object_get(o, "signal");
		if (json_is_string(s) && streq(json_string_value(s), "SIGNAL_SIGKILL"))
			ret->signal = SIGKILL;
		else if (json_is_string(s) && streq(json_string_value(s), "SIGNAL_SIGTERM"))
			ret->signal = SIGTERM;
		else if (json_is_integer(s) &&
			 (json_integer_value(s) == SIGKILL || json_integer_value(s) == SIGTERM))
			ret->signal = (int)json_integer_value(s);
		else
			k = BAD(b, "%s: 'signal' must be SIGNAL_SIGKILL or SIGNAL_SIGTERM", what);
	} else if (route == MOAT_E2B_PROC_INPUT) {
		static const char *const ifields[] = {"stdin", "pty", NULL};
		json_t *in = json_object_get(o, "input");
		const char *s;
		if (!json_is_object(in)) {
			k = BAD(b, "%s: 'input' must be an object", what);
			goto out;
		}
		if ((k = only_fields(in, ifields, what, b)) < 0 ||
		    (k = refuse_field(in, "pty", what, "no terminals through the E2B API", b)) <
			    0 ||
		    (k = get_str(in, "stdin", MOAT_E2B_MAX_STR * 4 / 3 + 4, what, &s, b)) < 0)
			goto out;
		if (!s) {
			k = BAD(b, "%s: 'input.stdin' is required", what);
			goto out;
		}
		size_t sl = strlen(s);
		ret->input = malloc(BASE64_DECODE_LENGTH(sl) + 1);
		if (!ret->input) {
			k = bad_set(b, -ENOMEM, "out of memory");
			goto out;
		}
		struct base64_decode_ctx d;
		size_t dl = BASE64_DECODE_LENGTH(sl) + 1;
		base64_decode_init(&d);
		if (!base64_decode_update(&d, &dl, (uint8_t *)ret->input, sl, s) ||
		    !base64_decode_final(&d)) {
			k = BAD(b, "%s: 'input.stdin' is not base64", what);
			goto out;
		}
		ret->input_len = dl;
	}
out:
	json_decref(o);
	if (k < 0)
		moat_e2b_proc_call_done(ret);
	return k < 0 ? k : 0;
}

int moat_e2b_parse_empty(const char *msg, size_t len, struct moat_e2b_bad *b)
{
	static const char *const none[] = {NULL};
	json_t *o = parse_object(msg, len, "Process/List", b);
	if (!o)
		return -EINVAL;
	int k = only_fields(o, none, "Process/List", b);
	json_decref(o);
	return k;
}

/* ---- the filesystem service ---- */

bool moat_e2b_path_ok(const char *p)
{
	size_t n = strlen(p);
	if (n == 0 || n > MOAT_E2B_MAX_PATH || p[0] != '/')
		return false;
	if (n == 1)
		return true;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)p[i] < 0x20 || p[i] == 0x7f)
			return false;
	/* every component: not empty (no "//", no trailing "/"), not . or .. */
	for (const char *c = p + 1;;) {
		const char *e = strchr(c, '/');
		size_t l = e ? (size_t)(e - c) : strlen(c);
		if (l == 0 || (l == 1 && c[0] == '.') || (l == 2 && c[0] == '.' && c[1] == '.'))
			return false;
		if (!e)
			return true;
		c = e + 1;
	}
}

static int get_path(json_t *o, const char *key, const char *what, char *ret, struct moat_e2b_bad *b)
{
	const char *s;
	int k = get_str(o, key, MOAT_E2B_MAX_PATH, what, &s, b);
	if (k < 0)
		return k;
	if (!s || !moat_e2b_path_ok(s))
		return BAD(b, "%s: '%s' must be an absolute path without '.', '..' or '//'", what,
			   key);
	snprintf(ret, MOAT_E2B_MAX_PATH + 1, "%s", s);
	return 0;
}

int moat_e2b_parse_fs_call(enum moat_e2b_route route, const char *msg, size_t len,
			   struct moat_e2b_fs_call *ret, struct moat_e2b_bad *b)
{
	static const char *const f_path[] = {"path", NULL};
	static const char *const f_list[] = {"path", "depth", NULL};
	static const char *const f_move[] = {"source", "destination", NULL};
	const char *what = route == MOAT_E2B_FS_STAT ? "Filesystem/Stat"
		: route == MOAT_E2B_FS_LIST	     ? "Filesystem/ListDir"
		: route == MOAT_E2B_FS_MKDIR	     ? "Filesystem/MakeDir"
		: route == MOAT_E2B_FS_MOVE	     ? "Filesystem/Move"
						     : "Filesystem/Remove";
	memset(ret, 0, sizeof(*ret));
	json_t *o = parse_object(msg, len, what, b);
	if (!o)
		return -EINVAL;
	int k;
	if (route == MOAT_E2B_FS_MOVE) {
		k = only_fields(o, f_move, what, b);
		if (k >= 0)
			k = get_path(o, "source", what, ret->path, b);
		if (k >= 0)
			k = get_path(o, "destination", what, ret->dest, b);
	} else {
		k = only_fields(o, route == MOAT_E2B_FS_LIST ? f_list : f_path, what, b);
		if (k >= 0)
			k = get_path(o, "path", what, ret->path, b);
		ret->depth = 1;
		if (k >= 0 && route == MOAT_E2B_FS_LIST) {
			uint64_t d;
			bool have;
			k = get_uint(o, "depth", 64, what, &d, &have, b);
			if (k >= 0 && have && d > 1)
				k = UNSUPPORTED(b, "%s: 'depth' %llu: only 1 is supported", what,
						(unsigned long long)d);
		}
	}
	json_decref(o);
	return k < 0 ? k : 0;
}

/* ---- /files ---- */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Percent-decodes in[0..n) into out (at most max bytes, then NUL); '+' is
 * a space (form encoding). -EINVAL on a bad escape, a NUL, or too long. */
static int pct_decode(const char *in, size_t n, char *out, size_t max)
{
	size_t o = 0;
	for (size_t i = 0; i < n; i++) {
		int c = (unsigned char)in[i];
		if (c == '%') {
			if (i + 2 >= n)
				return -EINVAL;
			int h = hexval(in[i + 1]), l = hexval(in[i + 2]);
			if (h < 0 || l < 0)
				return -EINVAL;
			c = h * 16 + l;
			i += 2;
		} else if (c == '+') {
			c = ' ';
		}
		if (c == 0 || o >= max)
			return -EINVAL;
		out[o++] = (char)c;
	}
	out[o] = 0;
	return 0;
}

int moat_e2b_parse_files_query(const char *query, char ret_path[MOAT_E2B_MAX_PATH + 1],
			       struct moat_e2b_bad *b)
{
	bool have_path = false, have_user = false;
	ret_path[0] = 0;
	for (const char *q = query ? query : ""; *q;) {
		const char *amp = strchr(q, '&');
		size_t l = amp ? (size_t)(amp - q) : strlen(q);
		const char *eq = memchr(q, '=', l);
		size_t kl = eq ? (size_t)(eq - q) : l;
		const char *v = eq ? eq + 1 : q + l;
		size_t vl = (size_t)(q + l - v);
		char val[MOAT_E2B_MAX_PATH + 1];
		if (pct_decode(v, vl, val, MOAT_E2B_MAX_PATH) < 0)
			return BAD(b, "files: a query value is not valid (escape, NUL or length)");
		if (kl == 4 && memcmp(q, "path", 4) == 0) {
			if (have_path)
				return BAD(b, "files: 'path' given twice");
			have_path = true;
			if (!moat_e2b_path_ok(val))
				return BAD(b,
					   "files: 'path' must be an absolute path without '.', "
					   "'..' or '//' (relative paths are not supported)");
			memcpy(ret_path, val, strlen(val) + 1);
		} else if (kl == 8 && memcmp(q, "username", 8) == 0) {
			if (have_user)
				return BAD(b, "files: 'username' given twice");
			have_user = true;
			if (*val && !streq(val, "user"))
				return bad_set(
					b, -EPERM,
					"files: user '%.64s': moat runs every process and file "
					"operation as the sandbox's one user ('user')",
					val);
		} else if (kl == 9 && memcmp(q, "signature", 9) == 0) {
			return UNSUPPORTED(b, "files: signed URLs are not supported");
		} else if (kl > 0) {
			return BAD(b, "files: unknown query parameter '%.*s'", (int)MIN(kl, 64), q);
		}
		q += l;
		if (*q == '&')
			q++;
	}
	return 0;
}

/* The value of parameter name in a header value's "; name=value" list
 * (value quoted or a token) into out. 0, -ENOENT, or -EINVAL. */
static int header_param(const char *h, size_t hl, const char *name, char *out, size_t max)
{
	size_t nl = strlen(name);
	for (size_t i = 0; i < hl; i++) {
		if (h[i] != ';')
			continue;
		size_t j = i + 1;
		while (j < hl && h[j] == ' ')
			j++;
		if (hl - j <= nl || strncasecmp(h + j, name, nl) != 0 || h[j + nl] != '=')
			continue;
		j += nl + 1;
		size_t o = 0;
		if (j < hl && h[j] == '"') {
			for (j++; j < hl && h[j] != '"'; j++) {
				if (h[j] == '\\' || (unsigned char)h[j] < 0x20 || o >= max)
					return -EINVAL;
				out[o++] = h[j];
			}
			if (j >= hl)
				return -EINVAL;
		} else {
			for (; j < hl && h[j] != ';' && h[j] != ' '; j++) {
				if (h[j] == '"' || (unsigned char)h[j] < 0x20 || o >= max)
					return -EINVAL;
				out[o++] = h[j];
			}
		}
		out[o] = 0;
		return 0;
	}
	return -ENOENT;
}

/* One part's headers (between the boundary line and the blank line):
 * Content-Disposition form-data with name "file" and a filename; an
 * optional Content-Type; nothing else. */
static int part_headers(const char *h, size_t hl, char *ret_filename, struct moat_e2b_bad *b)
{
	bool have_cd = false;
	while (hl > 0) {
		const char *eol = memmem(h, hl, "\r\n", 2);
		size_t l = eol ? (size_t)(eol - h) : hl;
		if (l >= 20 && strncasecmp(h, "content-disposition:", 20) == 0) {
			char name[16];
			const char *v = h + 20;
			size_t vl = l - 20;
			while (vl && *v == ' ')
				v++, vl--;
			if (have_cd || vl < 9 || strncasecmp(v, "form-data", 9) != 0 ||
			    (vl > 9 && v[9] != ';'))
				return BAD(b,
					   "files: a part's Content-Disposition is not form-data");
			have_cd = true;
			if (header_param(v, vl, "name", name, sizeof(name) - 1) < 0 ||
			    !streq(name, "file"))
				return BAD(b, "files: a part is not named 'file'");
			int k = header_param(v, vl, "filename", ret_filename, MOAT_E2B_MAX_PATH);
			if (k == -EINVAL)
				return BAD(b, "files: a part's filename is not valid");
			if (k < 0)
				ret_filename[0] = 0;
		} else if (l >= 13 && strncasecmp(h, "content-type:", 13) == 0) {
			/* any: the bytes are stored as they are */
		} else {
			return BAD(b, "files: a part has an unexpected header '%.*s'",
				   (int)MIN(l, 40), h);
		}
		if (!eol)
			break;
		h += l + 2;
		hl -= l + 2;
	}
	if (!have_cd)
		return BAD(b, "files: a part has no Content-Disposition");
	return 0;
}

int moat_e2b_parse_upload(const char *content_type, const char *body, size_t len,
			  const char *query_path, struct moat_e2b_part *ret, size_t max,
			  size_t *ret_n, struct moat_e2b_bad *b)
{
	bool have_q = query_path && *query_path;
	*ret_n = 0;
	if (!content_type)
		return BAD(b, "files: no Content-Type");
	if (strncasecmp(content_type, "application/octet-stream", 24) == 0 &&
	    (content_type[24] == 0 || content_type[24] == ';')) {
		if (!have_q)
			return BAD(b, "files: an octet-stream upload needs 'path'");
		if (len > MOAT_E2B_MAX_FILE)
			return bad_set(b, -EFBIG, "files: larger than %u bytes", MOAT_E2B_MAX_FILE);
		if (max < 1)
			return BAD(b, "files: too many files");
		snprintf(ret[0].path, sizeof(ret[0].path), "%s", query_path);
		ret[0].data = body;
		ret[0].len = len;
		*ret_n = 1;
		return 0;
	}
	if (strncasecmp(content_type, "multipart/form-data", 19) != 0 ||
	    (content_type[19] != 0 && content_type[19] != ';'))
		return UNSUPPORTED(b,
				   "files: Content-Type must be multipart/form-data or "
				   "application/octet-stream");
	/* RFC 2046: a boundary is 1..70 characters */
	char bnd[80] = "\r\n--";
	if (header_param(content_type, strlen(content_type), "boundary", bnd + 4, 70) < 0 ||
	    !bnd[4])
		return BAD(b, "files: multipart without a valid boundary");
	size_t bl = strlen(bnd);
	/* the body starts with the first delimiter (no preamble: the SDK
	 * sends none); view it as if a CRLF preceded it */
	if (len < bl - 2 || memcmp(body, bnd + 2, bl - 2) != 0)
		return BAD(b, "files: the body does not start with the boundary");
	const char *p = body + bl - 2, *end = body + len;
	size_t n = 0;
	for (;;) {
		/* after a delimiter: "--" ends the body, CRLF starts a part */
		if (end - p >= 2 && p[0] == '-' && p[1] == '-') {
			p += 2;
			/* an epilogue of at most a CRLF */
			if (!(end == p || (end - p == 2 && p[0] == '\r' && p[1] == '\n')))
				return BAD(b, "files: bytes after the closing boundary");
			break;
		}
		if (end - p < 2 || p[0] != '\r' || p[1] != '\n')
			return BAD(b, "files: a boundary is not followed by CRLF");
		p += 2;
		const char *hend = memmem(p, (size_t)(end - p), "\r\n\r\n", 4);
		if (!hend)
			return BAD(b, "files: a part's headers do not end");
		if (n >= max || n >= MOAT_E2B_MAX_PARTS)
			return BAD(b, "files: more than %zu files in one upload",
				   MIN(max, (size_t)MOAT_E2B_MAX_PARTS));
		struct moat_e2b_part *pt = &ret[n];
		int k = part_headers(p, (size_t)(hend - p), pt->path, b);
		if (k < 0)
			return k;
		const char *data = hend + 4;
		const char *next = memmem(data, (size_t)(end - data), bnd, bl);
		if (!next)
			return BAD(b, "files: a part does not end with the boundary");
		pt->data = data;
		pt->len = (size_t)(next - data);
		if (pt->len > MOAT_E2B_MAX_FILE)
			return bad_set(b, -EFBIG, "files: larger than %u bytes", MOAT_E2B_MAX_FILE);
		if (have_q) {
			snprintf(pt->path, sizeof(pt->path), "%s", query_path);
		} else if (!moat_e2b_path_ok(pt->path)) {
			return BAD(b,
				   "files: a part's filename must be an absolute path without "
				   "'.', '..' or '//'");
		}
		n++;
		p = next + bl;
	}
	if (n == 0)
		return BAD(b, "files: no file in the upload");
	if (have_q && n != 1)
		return BAD(b, "files: 'path' names one file, the upload has %zu", n);
	*ret_n = n;
	return 0;
}
