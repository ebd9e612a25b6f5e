/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The JSON of `moat serve --e2b`'s answers (serve_e2b.h): REST objects in
 * the shapes of E2B's OpenAPI document, envd messages in proto3's JSON
 * mapping (lowerCamelCase fields, bytes as base64, enums by name, 64-bit
 * integers as strings). Strings that came from a sandbox (file names) are
 * put through jansson, which escapes them; a name that is not UTF-8 is
 * replaced by its escaped form (moat_escape), never passed raw.
 */
#include <errno.h>
#include <jansson.h>
#include <nettle/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/serve_e2b.h"
#include "shared/macro.h"

static char *dump(json_t *o)
{
	if (!o)
		return NULL;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

/* A JSON string of bytes that may not be UTF-8. */
static json_t *str_any(const char *s)
{
	json_t *v = json_string(s);
	if (v)
		return v;
	size_t need = moat_escape(s, strlen(s), NULL, 0) + 1;
	_cleanup_free_ char *e = malloc(need);
	if (!e)
		return NULL;
	moat_escape(s, strlen(s), e, need);
	return json_string(e);
}

static void rfc3339(uint64_t us, char out[32])
{
	time_t t = (time_t)(us / 1000000);
	struct tm tm;
	if (!gmtime_r(&t, &tm) || strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, 32, "1970-01-01T00:00:00Z");
}

static uint64_t now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

char *moat_e2b_rest_error(unsigned http, const char *msg)
{
	return dump(json_pack("{s:i,s:o}", "code", (int)http, "message", str_any(msg ? msg : "")));
}

char *moat_e2b_sandbox_json(const char *id, const char *access_token, uint64_t started_us,
			    uint64_t end_us, bool detail)
{
	json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "templateID", MOAT_E2B_TEMPLATE, "sandboxID", id,
			      "clientID", "moat", "envdVersion", MOAT_E2B_ENVD_VERSION);
	if (!o)
		return NULL;
	if (access_token &&
	    json_object_set_new(o, "envdAccessToken", json_string(access_token)) < 0)
		goto fail;
	if (detail) {
		char s[32], e[32];
		rfc3339(started_us ? started_us : now_us(), s);
		/* no end: E2B always names one; the far future says "none" */
		rfc3339(end_us ? end_us : 253402300799ull * 1000000, e);
		if (json_object_set_new(o, "startedAt", json_string(s)) < 0 ||
		    json_object_set_new(o, "endAt", json_string(e)) < 0 ||
		    json_object_set_new(o, "state", json_string("running")) < 0 ||
		    json_object_set_new(o, "cpuCount", json_integer(0)) < 0 ||
		    json_object_set_new(o, "memoryMB", json_integer(0)) < 0 ||
		    json_object_set_new(o, "diskSizeMB", json_integer(0)) < 0 ||
		    json_object_set_new(o, "metadata", json_object()) < 0)
			goto fail;
	}
	return dump(o);
fail:
	json_decref(o);
	return NULL;
}

static char *event(json_t *ev)
{
	return dump(json_pack("{s:o}", "event", ev));
}

char *moat_e2b_event_start(uint32_t pid)
{
	return event(json_pack("{s:{s:I}}", "start", "pid", (json_int_t)pid));
}

char *moat_e2b_event_keepalive(void)
{
	return event(json_pack("{s:{}}", "keepalive"));
}

char *moat_e2b_event_data(bool is_stderr, const void *data, size_t len)
{
	if (len > (64u << 20))
		return NULL;
	_cleanup_free_ char *b64 = malloc(BASE64_ENCODE_RAW_LENGTH(len) + 1);
	if (!b64)
		return NULL;
	base64_encode_raw(b64, len, data);
	b64[BASE64_ENCODE_RAW_LENGTH(len)] = 0;
	return event(json_pack("{s:{s:s}}", "data", is_stderr ? "stderr" : "stdout", b64));
}

char *moat_e2b_event_end(const struct moat_proc_status *st)
{
	char status[64];
	bool exited = st->reason == MOAT_REASON_EXITED;
	int code = st->exit_code;
	if (exited)
		snprintf(status, sizeof(status), "exit status %d", st->status);
	else if (st->reason == MOAT_REASON_SIGNALED)
		snprintf(status, sizeof(status), "signal: %d", st->signal);
	else
		snprintf(status, sizeof(status), "%s", moat_reason_name(st->reason));
	json_t *end =
		json_pack("{s:i,s:b,s:s}", "exitCode", code, "exited", exited, "status", status);
	if (end && st->stdio_error[0])
		json_object_set_new(end, "error", str_any(st->stdio_error));
	else if (end && st->reason == MOAT_REASON_TIMEOUT)
		json_object_set_new(end, "error",
				    json_string("the process reached its time limit"));
	return event(json_pack("{s:o}", "end", end));
}

static const char *file_type(enum moat_file_type t)
{
	switch (t) {
	case MOAT_FILE_REG:
		return "FILE_TYPE_FILE";
	case MOAT_FILE_DIR:
		return "FILE_TYPE_DIRECTORY";
	case MOAT_FILE_SYMLINK:
		return "FILE_TYPE_SYMLINK";
	default:
		return "FILE_TYPE_UNSPECIFIED";
	}
}

static void perm_string(enum moat_file_type t, unsigned mode, char out[11])
{
	static const char rwx[] = "rwxrwxrwx";
	out[0] = t == MOAT_FILE_DIR ? 'd' : t == MOAT_FILE_SYMLINK ? 'l' : '-';
	for (int i = 0; i < 9; i++)
		out[1 + i] = (mode & (0400u >> i)) ? rwx[i] : '-';
	out[10] = 0;
}

static json_t *entry(const char *dir, const struct moat_file_info *fi)
{
	_cleanup_free_ char *path = NULL;
	char perm[11], mt[32];
	const char *name = fi->name;
	if (!*name) {
		/* the entry is dir itself */
		const char *slash = strrchr(dir, '/');
		name = slash && slash[1] ? slash + 1 : "/";
		path = strdup(dir);
	} else if (asprintf(&path, "%s%s%s", dir, streq(dir, "/") ? "" : "/", fi->name) < 0) {
		path = NULL;
	}
	if (!path)
		return NULL;
	char size[24];
	snprintf(size, sizeof(size), "%llu", (unsigned long long)fi->size);
	perm_string(fi->type, fi->mode, perm);
	rfc3339(fi->mtime_s * 1000000, mt);
	return json_pack("{s:o,s:s,s:o,s:s,s:i,s:s,s:s,s:s,s:s}", "name", str_any(name), "type",
			 file_type(fi->type), "path", str_any(path), "size", size, "mode",
			 (int)(fi->mode & 07777), "permissions", perm, "owner", "user", "group",
			 "user", "modifiedTime", mt);
}

char *moat_e2b_entry_json(const char *dir, const struct moat_file_info *fi, const char *wrap)
{
	json_t *e = entry(dir, fi);
	if (!e)
		return NULL;
	if (!wrap)
		return dump(e);
	return dump(json_pack("{s:o}", wrap, e));
}

char *moat_e2b_list_json(const char *dir, const struct moat_file_info *fi, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *e = entry(dir, &fi[i]);
		if (!e || json_array_append_new(a, e) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return dump(json_pack("{s:o}", "entries", a));
}

char *moat_e2b_upload_json(const struct moat_e2b_part *parts, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		const char *slash = strrchr(parts[i].path, '/');
		json_t *e = json_pack("{s:o,s:s,s:o}", "name",
				      str_any(slash && slash[1] ? slash + 1 : parts[i].path),
				      "type", "file", "path", str_any(parts[i].path));
		if (!e || json_array_append_new(a, e) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return dump(a);
}

char *moat_e2b_proc_list_json(const struct moat_e2b_proc_info *p, size_t n)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		json_t *args = json_array();
		for (char *const *v = p[i].argv && p[i].argv[0] ? p[i].argv + 1 : NULL;
		     args && v && *v; v++)
			json_array_append_new(args, str_any(*v));
		json_t *cfg = json_pack("{s:o,s:o,s:{}}", "cmd",
					str_any(p[i].argv && p[i].argv[0] ? p[i].argv[0] : ""),
					"args", args, "envs");
		if (cfg && p[i].cwd)
			json_object_set_new(cfg, "cwd", str_any(p[i].cwd));
		json_t *e = json_pack("{s:o,s:I}", "config", cfg, "pid", (json_int_t)p[i].pid);
		if (e && p[i].tag)
			json_object_set_new(e, "tag", str_any(p[i].tag));
		if (!e || json_array_append_new(a, e) < 0) {
			json_decref(a);
			return NULL;
		}
	}
	return dump(json_pack("{s:o}", "processes", a));
}
