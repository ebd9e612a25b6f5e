/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The audit stream writer and reader (docs/AUDIT.md). */
#include "audit/audit.h"
#include "sandbox/paths.h"

#include <fcntl.h>
#include <inttypes.h>
#include <jansson.h>
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>

#include "shared/io.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define RUN_ID_MAX 64
#define KEY_MAX 64

struct moat_audit {
	int fd;
	char run_id[RUN_ID_MAX * 6 + 1]; /* escaped */
	struct moat_audit_limits lim;
	uint64_t count[MOAT_EV_MAX_], denied[MOAT_EV_MAX_];
	uint64_t dropped, written_events, written_bytes, seq;
	bool capped;
	bool sync; /* fdatasync at close instead of only starting the write-back */
	moat_audit_alert_fn hook;
	void *hook_data;
	uint64_t hooks_called;
	struct moat_jbuf buf;
};

static const char *const type_names[MOAT_EV_MAX_] = {
	[MOAT_EV_START] = "start",   [MOAT_EV_EXEC] = "exec",	    [MOAT_EV_NET] = "net",
	[MOAT_EV_DNS] = "dns",	     [MOAT_EV_SYSCALL] = "syscall", [MOAT_EV_LIMIT] = "limit",
	[MOAT_EV_FILE] = "file",     [MOAT_EV_ALERT] = "alert",	    [MOAT_EV_EXIT] = "exit",
	[MOAT_EV_HELPER] = "helper", [MOAT_EV_PROCESS] = "process", [MOAT_EV_SNAPSHOT] = "snapshot",
	[MOAT_EV_CONFIG] = "config",
};

const char *moat_audit_type_name(enum moat_audit_type t)
{
	return (unsigned)t < MOAT_EV_MAX_ ? type_names[t] : NULL;
}

int moat_audit_type_from_name(const char *name, size_t len)
{
	for (unsigned i = 0; i < MOAT_EV_MAX_; i++)
		if (strlen(type_names[i]) == len && memcmp(type_names[i], name, len) == 0)
			return (int)i;
	return -EINVAL;
}

int moat_audit_parse_types(const char *csv, unsigned *ret_mask)
{
	unsigned mask = 0;
	const char *p = csv;

	if (!csv || !*csv)
		return -EINVAL;
	for (;;) {
		size_t n = strcspn(p, ",");
		int t = moat_audit_type_from_name(p, n);
		if (t < 0)
			return t;
		mask |= 1u << t;
		if (!p[n])
			break;
		p += n + 1;
	}
	*ret_mask = mask;
	return 0;
}

void moat_audit_timestamp(char buf[32])
{
	struct timespec ts;
	struct tm tm;

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	size_t n = strftime(buf, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + n, 32 - n, ".%06ldZ", ts.tv_nsec / 1000 % 1000000);
}

bool moat_run_id_valid(const char *id)
{
	size_t n = id ? strlen(id) : 0;
	if (n == 0 || n > RUN_ID_MAX || id[0] == '.' || id[0] == '-')
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = id[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '_' || c == '.' || c == '-'))
			return false;
	}
	return true;
}

int moat_runs_dir(char **ret)
{
	const char *base = NULL, *suffix = "/moat/runs";
	char *s = NULL;

	if (moat_host_root()) {
		base = "/var/lib";
	} else {
		const char *x = getenv("XDG_STATE_HOME");
		if (x && x[0] == '/') {
			base = x;
		} else {
			const char *h = getenv("HOME");
			if (!h || h[0] != '/') {
				struct passwd *pw = getpwuid(getuid());
				h = pw ? pw->pw_dir : NULL;
			}
			if (!h || h[0] != '/')
				return -ENOENT;
			suffix = "/.local/state/moat/runs";
			base = h;
		}
	}
	if (asprintf(&s, "%s%s", base, suffix) < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}

static void default_limits(struct moat_audit_limits *l, uint64_t max_bytes)
{
	*l = (struct moat_audit_limits){
		.max_field = 4096,
		.max_strv = 64,
		.max_strv_bytes = 16384,
		.max_json = 256u << 10,
		.max_line = 1u << 20,
		.max_events = 100000,
		.max_bytes = max_bytes ? max_bytes : MOAT_AUDIT_DEFAULT_MAX_BYTES,
		.max_alert_hooks = 100,
	};
}

int moat_audit_open_fd(int fd, const char *run_id, uint64_t max_bytes, struct moat_audit **ret)
{
	_cleanup_close_ int owned = fd;
	struct moat_audit *a;

	if (fd < 0 || !run_id || strlen(run_id) > RUN_ID_MAX)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	moat_json_escape(run_id, strlen(run_id), a->run_id, sizeof(a->run_id));
	default_limits(&a->lim, max_bytes);
	moat_jbuf_init(&a->buf, a->lim.max_line);
	a->fd = TAKE_FD(owned);
	*ret = a;
	return 0;
}

int moat_audit_open(const char *path, const char *run_id, uint64_t max_bytes,
		    struct moat_audit **ret)
{
	if (!path || !*path || !run_id)
		return -EINVAL;
	/* Never through a symlink a sandbox could have planted, never anything
	 * but a regular file with one link, parents created 0700 (paths.h). */
	int fd = moat_path_write_file(path, O_APPEND, 0600, MOAT_PATH_MKDIR, NULL);
	if (fd < 0)
		return fd;
	return moat_audit_open_fd(fd, run_id, max_bytes, ret);
}

struct moat_audit *moat_audit_free(struct moat_audit *a)
{
	if (!a)
		return NULL;
	if (a->fd >= 0) {
		/* The events are in the page cache since their write(). Waiting for
		 * the disk (a flush, ~0.3-1.5 ms) would delay moat's exit on every
		 * run, so by default the write-back only starts here. */
		if (a->sync || sync_file_range(a->fd, 0, 0, SYNC_FILE_RANGE_WRITE) < 0)
			(void)fdatasync(a->fd);
		close(a->fd);
	}
	moat_jbuf_done(&a->buf);
	free(a);
	return NULL;
}

void moat_audit_set_limits(struct moat_audit *a, const struct moat_audit_limits *l)
{
	if (!a || !l)
		return;
	a->lim = *l;
	a->buf.max = l->max_line;
}

void moat_audit_set_sync(struct moat_audit *a, bool sync)
{
	if (a)
		a->sync = sync;
}

void moat_audit_get_limits(const struct moat_audit *a, struct moat_audit_limits *ret)
{
	if (a)
		*ret = a->lim;
	else
		default_limits(ret, 0);
}

void moat_audit_set_alert_hook(struct moat_audit *a, moat_audit_alert_fn fn, void *userdata)
{
	if (!a)
		return;
	a->hook = fn;
	a->hook_data = userdata;
}

uint64_t moat_audit_count(const struct moat_audit *a, enum moat_audit_type type)
{
	return a && (unsigned)type < MOAT_EV_MAX_ ? a->count[type] : 0;
}

uint64_t moat_audit_count_denied(const struct moat_audit *a, enum moat_audit_type type)
{
	return a && (unsigned)type < MOAT_EV_MAX_ ? a->denied[type] : 0;
}

uint64_t moat_audit_dropped(const struct moat_audit *a)
{
	return a ? a->dropped : 0;
}

uint64_t moat_audit_bytes(const struct moat_audit *a)
{
	return a ? a->written_bytes : 0;
}

static bool key_valid(const char *k)
{
	static const char *const reserved[] = {"v", "seq", "ts", "run", "type"};
	size_t n = k ? strlen(k) : 0;

	if (n == 0 || n > KEY_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!((k[i] >= 'a' && k[i] <= 'z') || (k[i] >= '0' && k[i] <= '9') || k[i] == '_'))
			return false;
	for (size_t i = 0; i < ELEMENTSOF(reserved); i++)
		if (streq(k, reserved[i]))
			return false;
	return true;
}

static int put_header(struct moat_audit *a, struct moat_jbuf *b, enum moat_audit_type type)
{
	char ts[32];
	moat_audit_timestamp(ts);
	return moat_jbuf_printf(
		b, "{\"v\":%d,\"seq\":%" PRIu64 ",\"ts\":\"%s\",\"run\":\"%s\",\"type\":\"%s\"",
		MOAT_AUDIT_SCHEMA, a->seq + 1, ts, a->run_id, type_names[type]);
}

/* A capped string; *ret_cut tells whether it was shortened. */
static int put_capped(struct moat_jbuf *b, const char *s, size_t n, size_t max, bool *ret_cut)
{
	size_t k = moat_utf8_cut(s, n, max);
	*ret_cut = k < n;
	return moat_jbuf_put_jstr(b, s, k);
}

static int put_field(struct moat_audit *a, struct moat_jbuf *b, const struct moat_audit_field *f)
{
	int r = moat_jbuf_printf(b, ",\"%s\":", f->key);
	if (r < 0)
		return r;

	switch (f->kind) {
	case MOAT_AK_STR: {
		bool cut = false;
		if (!f->str)
			return moat_jbuf_puts(b, "null");
		size_t n = f->len == SIZE_MAX ? strlen(f->str) : f->len;
		r = put_capped(b, f->str, n, a->lim.max_field, &cut);
		if (r >= 0 && cut)
			r = moat_jbuf_printf(b, ",\"%s_truncated\":%zu", f->key, n);
		return r;
	}
	case MOAT_AK_INT:
		return moat_jbuf_printf(b, "%" PRId64, f->i);
	case MOAT_AK_UINT:
		return moat_jbuf_printf(b, "%" PRIu64, f->u);
	case MOAT_AK_BOOL:
		return moat_jbuf_puts(b, f->b ? "true" : "false");
	case MOAT_AK_JSON: {
		json_error_t err;
		if (!f->json)
			return moat_jbuf_puts(b, "null");
		size_t n = strlen(f->json);
		if (n > a->lim.max_json)
			return moat_jbuf_printf(b, "null,\"%s_truncated\":%zu", f->key, n);
		json_t *j = json_loadb(f->json, n, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &err);
		if (!j)
			return -EINVAL;
		/* Compact and ASCII-only: one line, no raw U+2028 or control bytes. */
		char *s = json_dumps(j, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY);
		json_decref(j);
		if (!s)
			return -ENOMEM;
		r = moat_jbuf_puts(b, s);
		free(s);
		return r;
	}
	case MOAT_AK_STRV: {
		size_t total = 0, budget = a->lim.max_strv_bytes, shown = 0;
		bool cut = false;
		if (!f->strv)
			return moat_jbuf_puts(b, "null");
		if (f->len == SIZE_MAX)
			while (f->strv[total])
				total++;
		else
			total = f->len;
		r = moat_jbuf_putn(b, "[", 1);
		for (size_t i = 0; r >= 0 && i < total; i++) {
			const char *s = f->strv[i] ? f->strv[i] : "";
			size_t n = strlen(s), max = MIN(a->lim.max_field, budget);
			bool c = false;
			if (i >= a->lim.max_strv || budget == 0) {
				cut = true;
				break;
			}
			if (i > 0)
				r = moat_jbuf_putn(b, ",", 1);
			if (r >= 0)
				r = put_capped(b, s, n, max, &c);
			budget -= MIN(n, max);
			cut |= c;
			shown++;
		}
		if (r >= 0)
			r = moat_jbuf_putn(b, "]", 1);
		if (r >= 0 && (cut || shown < total))
			r = moat_jbuf_printf(b, ",\"%s_truncated\":%zu", f->key, total);
		return r;
	}
	}
	return -EINVAL;
}

static int emit(struct moat_audit *a, struct moat_jbuf *b)
{
	int r = moat_write_all(a->fd, b->data, b->len);
	if (r < 0)
		return r;
	a->seq++;
	a->written_events++;
	a->written_bytes += b->len;
	return 0;
}

/* The one record that the stream is capped from here on. */
static int write_cap_record(struct moat_audit *a, const char *reason, uint64_t limit)
{
	struct moat_jbuf b;
	int r;

	moat_jbuf_init(&b, 4096);
	r = put_header(a, &b, MOAT_EV_LIMIT);
	if (r >= 0)
		r = moat_jbuf_printf(&b,
				     ",\"what\":\"audit\",\"reason\":\"%s\",\"limit\":%" PRIu64
				     ",\"note\":\"later events are dropped and counted\"}\n",
				     reason, limit);
	if (r >= 0)
		r = emit(a, &b);
	moat_jbuf_done(&b);
	return r;
}

int moat_audit_event(struct moat_audit *a, enum moat_audit_type type,
		     const struct moat_audit_field *fields, size_t n_fields)
{
	struct moat_jbuf *b;
	bool denied = false;
	int r;

	if (!a)
		return 0;
	if ((unsigned)type >= MOAT_EV_MAX_ || (n_fields > 0 && !fields))
		return -EINVAL;
	for (size_t i = 0; i < n_fields; i++) {
		if (!key_valid(fields[i].key))
			return -EINVAL;
		if (fields[i].kind == MOAT_AK_BOOL && streq(fields[i].key, "denied") && fields[i].b)
			denied = true;
	}
	a->count[type]++;
	if (denied)
		a->denied[type]++;

	if (type != MOAT_EV_EXIT && a->capped) {
		a->dropped++;
		return 1;
	}

	b = &a->buf;
	moat_jbuf_reset(b);
	r = put_header(a, b, type);
	for (size_t i = 0; r >= 0 && i < n_fields; i++)
		r = put_field(a, b, &fields[i]);
	if (r >= 0 && type == MOAT_EV_EXIT && a->dropped > 0)
		r = moat_jbuf_printf(b, ",\"dropped_events\":%" PRIu64, a->dropped);
	if (r >= 0)
		r = moat_jbuf_puts(b, "}\n");
	if (r == -ENOBUFS) {
		/* Over max_line: keep the fact, not the content. */
		moat_jbuf_reset(b);
		b->max = SIZE_MAX;
		r = put_header(a, b, type);
		if (r >= 0)
			r = moat_jbuf_puts(b, ",\"event_truncated\":true}\n");
		b->max = a->lim.max_line;
	}
	if (r < 0)
		return r;

	if (type == MOAT_EV_EXIT) {
		if (a->written_bytes + b->len > a->lim.max_bytes) {
			a->dropped++;
			return 1;
		}
	} else {
		uint64_t budget = a->lim.max_bytes > MOAT_AUDIT_RESERVE
			? a->lim.max_bytes - MOAT_AUDIT_RESERVE
			: 0;
		const char *why = NULL;
		uint64_t limit = 0;
		if (a->written_events >= a->lim.max_events) {
			why = "events";
			limit = a->lim.max_events;
		} else if (a->written_bytes + b->len > budget) {
			why = "bytes";
			limit = a->lim.max_bytes;
		}
		if (why) {
			a->capped = true;
			a->dropped++;
			r = write_cap_record(a, why, limit);
			return r < 0 ? r : 1;
		}
	}

	r = emit(a, b);
	if (r < 0)
		return r;
	if (type == MOAT_EV_ALERT && a->hook && a->hooks_called < a->lim.max_alert_hooks) {
		a->hooks_called++;
		/* Without the newline. */
		b->data[b->len - 1] = '\0';
		a->hook(b->data, b->len - 1, a->hook_data);
	}
	return 0;
}

/* ---- reader ------------------------------------------------------------- */

struct moat_audit_reader {
	FILE *f;
	uint64_t bad;
	struct moat_jbuf line;
};

int moat_audit_reader_open(const char *path, struct moat_audit_reader **ret)
{
	_cleanup_close_ int fd = -1;
	struct moat_audit_reader *r;

	/* a regular file, never through a symlink a sandbox could have planted */
	fd = moat_path_read_file(path, NULL);
	if (fd < 0)
		return fd;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->f = fdopen(fd, "re");
	if (!r->f) {
		free(r);
		return -ENOMEM;
	}
	TAKE_FD(fd);
	moat_jbuf_init(&r->line, MOAT_AUDIT_MAX_READ_LINE);
	*ret = r;
	return 0;
}

struct moat_audit_reader *moat_audit_reader_free(struct moat_audit_reader *r)
{
	if (!r)
		return NULL;
	fclose(r->f);
	moat_jbuf_done(&r->line);
	free(r);
	return NULL;
}

uint64_t moat_audit_reader_bad_lines(const struct moat_audit_reader *r)
{
	return r ? r->bad : 0;
}

/* One line into r->line (without '\n'). 1 = got one, 0 = EOF. Overlong lines
 * are consumed and leave r->line overflowed. */
static int read_line(struct moat_audit_reader *r)
{
	char chunk[4096];
	bool any = false;

	moat_jbuf_reset(&r->line);
	for (;;) {
		if (!fgets(chunk, sizeof(chunk), r->f)) {
			if (ferror(r->f))
				return -EIO;
			return any ? 1 : 0;
		}
		any = true;
		size_t n = strlen(chunk);
		bool nl = n > 0 && chunk[n - 1] == '\n';
		(void)moat_jbuf_putn(&r->line, chunk, nl ? n - 1 : n);
		if (nl)
			return 1;
	}
}

static bool bare_ok(const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      strchr("._/:@+-,%", c)))
			return false;
	}
	return true;
}

static int render(struct moat_jbuf *b, json_t *v, bool nested)
{
	int r = 0;
	switch (json_typeof(v)) {
	case JSON_STRING: {
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);
		if (!nested && bare_ok(s, n))
			return moat_jbuf_putn(b, s, n);
		return moat_jbuf_put_jstr(b, s, n);
	}
	case JSON_INTEGER:
		return moat_jbuf_printf(b, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	case JSON_REAL:
		return moat_jbuf_printf(b, "%.17g", json_real_value(v));
	case JSON_TRUE:
		return moat_jbuf_puts(b, "true");
	case JSON_FALSE:
		return moat_jbuf_puts(b, "false");
	case JSON_NULL:
		return moat_jbuf_puts(b, "null");
	case JSON_ARRAY: {
		size_t i;
		json_t *e;
		r = moat_jbuf_putn(b, "[", 1);
		json_array_foreach(v, i, e)
		{
			if (r >= 0 && i > 0)
				r = moat_jbuf_putn(b, ",", 1);
			if (r >= 0)
				r = render(b, e, true);
		}
		return r < 0 ? r : moat_jbuf_putn(b, "]", 1);
	}
	case JSON_OBJECT: {
		const char *k;
		json_t *e;
		bool first = true;
		r = moat_jbuf_putn(b, "{", 1);
		json_object_foreach(v, k, e)
		{
			if (r >= 0 && !first)
				r = moat_jbuf_putn(b, ",", 1);
			first = false;
			if (r >= 0)
				r = moat_jbuf_put_jstr(b, k, strlen(k));
			if (r >= 0)
				r = moat_jbuf_putn(b, ":", 1);
			if (r >= 0)
				r = render(b, e, true);
		}
		return r < 0 ? r : moat_jbuf_putn(b, "}", 1);
	}
	}
	return -EINVAL;
}

static int render_event(json_t *o, char **ret)
{
	struct moat_jbuf b;
	const char *k;
	json_t *e;
	int r;

	moat_jbuf_init(&b, 2 * MOAT_AUDIT_MAX_READ_LINE);
	r = render(&b, json_object_get(o, "ts"), false);
	if (r >= 0)
		r = moat_jbuf_putn(&b, " ", 1);
	if (r >= 0)
		r = render(&b, json_object_get(o, "type"), false);
	json_object_foreach(o, k, e)
	{
		if (r < 0)
			break;
		if (streq(k, "v") || streq(k, "seq") || streq(k, "ts") || streq(k, "run") ||
		    streq(k, "type"))
			continue;
		r = moat_jbuf_putn(&b, " ", 1);
		if (r >= 0)
			r = moat_jbuf_put_escaped(&b, k, strlen(k));
		if (r >= 0)
			r = moat_jbuf_putn(&b, "=", 1);
		if (r >= 0)
			r = render(&b, e, false);
	}
	if (r < 0) {
		moat_jbuf_done(&b);
		return r;
	}
	*ret = moat_jbuf_steal(&b);
	return *ret ? 0 : -ENOMEM;
}

int moat_audit_reader_next(struct moat_audit_reader *r, const struct moat_audit_filter *f,
			   char **ret_line, char **ret_text)
{
	for (;;) {
		json_error_t err;
		json_t *o, *t, *v;
		int type, k = read_line(r);

		if (k <= 0)
			return k;
		if (r->line.overflow) {
			r->bad++;
			continue;
		}
		if (r->line.len == 0)
			continue;
		o = json_loadb(r->line.data, r->line.len, JSON_REJECT_DUPLICATES | JSON_ALLOW_NUL,
			       &err);
		if (!o)
			goto bad;
		v = json_object_get(o, "v");
		t = json_object_get(o, "type");
		if (!json_is_object(o) || !json_is_integer(v) ||
		    json_integer_value(v) != MOAT_AUDIT_SCHEMA || !json_is_string(t) ||
		    !json_is_string(json_object_get(o, "ts")))
			goto bad_json;
		type = moat_audit_type_from_name(json_string_value(t), json_string_length(t));
		if (type < 0)
			goto bad_json;
		if (f && f->types && !(f->types & (1u << type))) {
			json_decref(o);
			continue;
		}
		if (f && f->denied_only && !json_is_true(json_object_get(o, "denied"))) {
			json_decref(o);
			continue;
		}
		if (ret_text) {
			k = render_event(o, ret_text);
			if (k < 0) {
				json_decref(o);
				return k;
			}
		}
		json_decref(o);
		if (ret_line) {
			*ret_line = strndup(r->line.data, r->line.len);
			if (!*ret_line) {
				if (ret_text) {
					free(*ret_text);
					*ret_text = NULL;
				}
				return -ENOMEM;
			}
		}
		return 1;
	bad_json:
		json_decref(o);
	bad:
		r->bad++;
	}
}
