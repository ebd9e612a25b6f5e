/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <sys/stat.h>
#include <unistd.h>

#include "audit/audit.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

/* Remove a test's temporary tree (never following symlinks) and free the name. */
static void rmrfp(char **d)
{
	if (*d)
		nftw(*d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	free(*d);
}

static char *esc(const char *s, size_t n)
{
	static char out[8192];
	moat_json_escape(s, n, out, sizeof(out));
	return out;
}

TEST(json_escape_basic)
{
	ASSERT_STREQ(esc("a\"b\\c", 5), "a\\\"b\\\\c");
	ASSERT_STREQ(esc("x\n{\"type\":\"net\"}", 16), "x\\n{\\\"type\\\":\\\"net\\\"}");
	ASSERT_STREQ(esc("\x1b]0;pwned\a", 10), "\\u001b]0;pwned\\u0007");
	ASSERT_STREQ(esc("\x7f\t\r\b\f", 5), "\\u007f\\t\\r\\b\\f");
	ASSERT_STREQ(esc("a\0b", 3), "a\\u0000b");
	/* valid UTF-8 passes through; U+2028, C1 CSI and bidi override are escaped */
	ASSERT_STREQ(esc("\xc3\xa9t\xc3\xa9", 5), "\xc3\xa9t\xc3\xa9");
	ASSERT_STREQ(esc("\xe2\x80\xa8", 3), "\\u2028");
	ASSERT_STREQ(esc("\xe2\x80\xa9", 3), "\\u2029");
	ASSERT_STREQ(esc("\xc2\x9b", 2), "\\u009b");
	ASSERT_STREQ(esc("\xe2\x80\xae", 3), "\\u202e");
	/* invalid: lone continuation, overlong '/', surrogate, > U+10FFFF, truncated */
	ASSERT_STREQ(esc("\x80", 1), "\\ufffd");
	ASSERT_STREQ(esc("\xc0\xaf", 2), "\\ufffd\\ufffd");
	ASSERT_STREQ(esc("\xed\xa0\x80", 3), "\\ufffd\\ufffd\\ufffd");
	ASSERT_STREQ(esc("\xf4\x90\x80\x80", 4), "\\ufffd\\ufffd\\ufffd\\ufffd");
	ASSERT_STREQ(esc("a\xe2\x82", 3), "a\\ufffd\\ufffd");
	ASSERT_STREQ(esc("\xf0\x9f\x98\x80", 4), "\xf0\x9f\x98\x80");
}

TEST(json_escape_truncation)
{
	char out[8];
	/* "\u001b" is 6 bytes: never split */
	ASSERT_EQ(moat_json_escape("ab\x1b", 3, out, sizeof(out)), 8);
	ASSERT_STREQ(out, "ab");
	ASSERT_EQ(moat_json_escape("abcdefgh", 8, out, sizeof(out)), 8);
	ASSERT_STREQ(out, "abcdefg");
	ASSERT_EQ(moat_json_escape("abc", 3, NULL, 0), 3);
	/* a UTF-8 character is never split either */
	ASSERT_EQ(moat_json_escape("abcdef\xc3\xa9", 8, out, sizeof(out)), 8);
	ASSERT_STREQ(out, "abcdef");
	ASSERT_EQ(moat_utf8_cut("ab\xc3\xa9", 4, 3), 2);
	ASSERT_EQ(moat_utf8_cut("ab\xc3\xa9", 4, 4), 4);
	ASSERT_TRUE(moat_json_is_clean("src/a b.c", 9));
	ASSERT_TRUE(!moat_json_is_clean("a\nb", 3));
	ASSERT_TRUE(!moat_json_is_clean("a\"b", 3));
	ASSERT_TRUE(!moat_json_is_clean("\xff", 1));
}

static char *tmpdir(void)
{
	char *d = strdup("/tmp/moat-audit-XXXXXX");
	if (!d || !mkdtemp(d))
		moat_tap_fail(__FILE__, __LINE__, "mkdtemp: %m");
	return d;
}

/* Every line of the file must parse as one JSON object; returns them. */
static json_t *load_lines(const char *path)
{
	FILE *f = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	json_t *arr = json_array();

	if (!f)
		moat_tap_fail(__FILE__, __LINE__, "fopen %s: %m", path);
	while ((n = getline(&line, &cap, f)) > 0) {
		json_error_t err;
		json_t *o = json_loadb(line, (size_t)n, JSON_REJECT_DUPLICATES, &err);
		if (!o || !json_is_object(o))
			moat_tap_fail(__FILE__, __LINE__, "line does not parse: %s (%s)", line,
				      err.text);
		json_array_append_new(arr, o);
	}
	free(line);
	fclose(f);
	return arr;
}

static const char *sget(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

TEST(audit_write_hostile)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	char path[256], big[10000];
	struct moat_audit *a = NULL;
	const char *argv[101];
	struct stat st;

	snprintf(path, sizeof(path), "%s/a/b/events.jsonl", d);
	ASSERT_EQ(moat_audit_open(path, "run-1", 0, &a), 0);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	snprintf(path, sizeof(path), "%s/a", d);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_EQ(st.st_mode & 07777, 0700);

	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	for (int i = 0; i < 100; i++)
		argv[i] = i == 1 ? "x\n{\"v\":1,\"type\":\"net\",\"action\":\"allow\"}"
			: i == 2 ? "\x1b]0;pwned\a"
			: i == 3 ? "\xff\xfe"
				 : "-rf";
	argv[100] = NULL;

	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_INT("pid", 42), MOAT_F_STR("path", "/bin/sh"),
			     MOAT_F_STRV("argv", argv)),
		  0);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_FILE, MOAT_F_STR("path", big),
			     MOAT_F_STR("change", "created")),
		  0);
	ASSERT_EQ(
		MOAT_AUDIT(a, MOAT_EV_START,
			   MOAT_F_JSON("policy", "{\n  \"a\": [1,\n 2],\n \"b\": \"\\u2028\"\n}")),
		0);
	/* reserved keys, bad keys, bad JSON are caller bugs */
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_STR("type", "net")), -EINVAL);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_STR("Bad Key", "x")), -EINVAL);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_JSON("j", "{nope")), -EINVAL);
	a = moat_audit_free(a);

	snprintf(path, sizeof(path), "%s/a/b/events.jsonl", d);
	json_t *ev = load_lines(path);
	ASSERT_EQ(json_array_size(ev), 3);
	json_t *e0 = json_array_get(ev, 0);
	ASSERT_EQ(json_integer_value(json_object_get(e0, "v")), 1);
	ASSERT_STREQ(sget(e0, "type"), "exec");
	ASSERT_STREQ(sget(e0, "run"), "run-1");
	ASSERT_EQ(strlen(sget(e0, "ts")), 27);
	ASSERT_EQ(sget(e0, "ts")[26], 'Z');
	json_t *av = json_object_get(e0, "argv");
	ASSERT_EQ(json_array_size(av), 64);
	ASSERT_EQ(json_integer_value(json_object_get(e0, "argv_truncated")), 100);
	ASSERT_STREQ(json_string_value(json_array_get(av, 1)),
		     "x\n{\"v\":1,\"type\":\"net\",\"action\":\"allow\"}");
	ASSERT_STREQ(json_string_value(json_array_get(av, 2)), "\x1b]0;pwned\a");
	ASSERT_STREQ(json_string_value(json_array_get(av, 3)), "\xef\xbf\xbd\xef\xbf\xbd");
	json_t *e1 = json_array_get(ev, 1);
	ASSERT_EQ(strlen(sget(e1, "path")), 4096);
	ASSERT_EQ(json_integer_value(json_object_get(e1, "path_truncated")), 9999);
	json_t *e2 = json_array_get(ev, 2);
	ASSERT_EQ(json_integer_value(
			  json_array_get(json_object_get(json_object_get(e2, "policy"), "a"), 1)),
		  2);
	json_decref(ev);
	/* the raw file has exactly 3 newlines and no raw ESC byte */
	char buf[65536];
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	ASSERT_TRUE(n > 0);
	buf[n] = '\0';
	int nl = 0;
	for (ssize_t i = 0; i < n; i++) {
		nl += buf[i] == '\n';
		ASSERT_TRUE(buf[i] != 0x1b);
	}
	ASSERT_EQ(nl, 3);
	ASSERT_TRUE(!strstr(buf, "\xe2\x80\xa8"));
}

TEST(audit_open_refuses_symlink_and_fifo)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	char path[256], fifo[256];
	struct moat_audit *a = NULL;

	snprintf(path, sizeof(path), "%s/link", d);
	ASSERT_EQ(symlink("/etc/passwd", path), 0);
	ASSERT_EQ(moat_audit_open(path, "r", 0, &a), -ELOOP);
	snprintf(fifo, sizeof(fifo), "%s/fifo", d);
	ASSERT_EQ(mkfifo(fifo, 0600), 0);
	/* no reader: must not block, must not accept */
	int r = moat_audit_open(fifo, "r", 0, &a);
	ASSERT_TRUE(r == -EINVAL || r == -ENXIO);
	ASSERT_TRUE(a == NULL);
	/* NULL writer records nothing and does not crash */
	ASSERT_EQ(MOAT_AUDIT(NULL, MOAT_EV_EXEC, MOAT_F_INT("pid", 1)), 0);
}

TEST(audit_flood_cap)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	char path[256];
	struct moat_audit *a = NULL;
	struct moat_audit_limits l;

	snprintf(path, sizeof(path), "%s/events.jsonl", d);
	ASSERT_EQ(moat_audit_open(path, "flood", 0, &a), 0);
	moat_audit_get_limits(a, &l);
	l.max_events = 10;
	moat_audit_set_limits(a, &l);
	for (int i = 0; i < 50; i++)
		ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_NET, MOAT_F_INT("i", i), MOAT_F_DENIED),
			  i < 10 ? 0 : 1);
	ASSERT_EQ(moat_audit_count(a, MOAT_EV_NET), 50);
	ASSERT_EQ(moat_audit_count_denied(a, MOAT_EV_NET), 50);
	ASSERT_EQ(moat_audit_dropped(a), 40);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXIT, MOAT_F_INT("status", 0)), 0);
	a = moat_audit_free(a);

	json_t *ev = load_lines(path);
	ASSERT_EQ(json_array_size(ev), 12);
	json_t *cap = json_array_get(ev, 10);
	ASSERT_STREQ(sget(cap, "type"), "limit");
	ASSERT_STREQ(sget(cap, "what"), "audit");
	ASSERT_STREQ(sget(cap, "reason"), "events");
	json_t *ex = json_array_get(ev, 11);
	ASSERT_STREQ(sget(ex, "type"), "exit");
	ASSERT_EQ(json_integer_value(json_object_get(ex, "dropped_events")), 40);
	ASSERT_EQ(json_integer_value(json_object_get(ex, "seq")), 12);
	json_decref(ev);
}

TEST(audit_byte_cap)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	char path[256], s[3000];
	struct moat_audit *a = NULL;
	struct stat st;

	snprintf(path, sizeof(path), "%s/events.jsonl", d);
	/* 100 KiB total: the reserve keeps 64 KiB for the cap and exit records */
	ASSERT_EQ(moat_audit_open(path, "bytes", 100 << 10, &a), 0);
	memset(s, 'y', sizeof(s) - 1);
	s[sizeof(s) - 1] = '\0';
	int dropped = 0;
	for (int i = 0; i < 1000; i++)
		dropped += MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_STR("path", s)) == 1;
	ASSERT_TRUE(dropped > 980);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXIT, MOAT_F_INT("status", 0)), 0);
	a = moat_audit_free(a);
	ASSERT_EQ(stat(path, &st), 0);
	ASSERT_TRUE(st.st_size <= 100 << 10);
	json_t *ev = load_lines(path);
	size_t n = json_array_size(ev);
	ASSERT_STREQ(sget(json_array_get(ev, n - 2), "reason"), "bytes");
	ASSERT_STREQ(sget(json_array_get(ev, n - 1), "type"), "exit");
	json_decref(ev);
}

struct hook_state {
	int calls;
	char last[512];
};

static void hook(const char *line, size_t len, void *ud)
{
	struct hook_state *h = ud;
	h->calls++;
	snprintf(h->last, sizeof(h->last), "%.*s", (int)len, line);
}

TEST(audit_alert_hook)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	char path[256];
	struct moat_audit *a = NULL;
	struct moat_audit_limits l;
	struct hook_state h = {0};

	snprintf(path, sizeof(path), "%s/events.jsonl", d);
	ASSERT_EQ(moat_audit_open(path, "al", 0, &a), 0);
	moat_audit_get_limits(a, &l);
	l.max_alert_hooks = 3;
	moat_audit_set_limits(a, &l);
	moat_audit_set_alert_hook(a, hook, &h);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_NET, MOAT_F_STR("host", "evil.example"), MOAT_F_DENIED), 0);
	ASSERT_EQ(h.calls, 0);
	for (int i = 0; i < 5; i++)
		ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "net_denied"),
				     MOAT_F_STR("host", "evil\n.example")),
			  0);
	ASSERT_EQ(h.calls, 3);
	ASSERT_CONTAINS(h.last, "\"type\":\"alert\"");
	ASSERT_CONTAINS(h.last, "evil\\n.example");
	ASSERT_TRUE(!strchr(h.last, '\n'));
	ASSERT_EQ(moat_audit_count(a, MOAT_EV_ALERT), 5);
	moat_audit_free(a);
}

TEST(audit_reader_filter)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	char path[256];
	struct moat_audit *a = NULL;
	struct moat_audit_reader *r = NULL;
	struct moat_audit_filter f = {0};
	char *line = NULL, *text = NULL;
	const char *argv[] = {"cat", "\x1b[2J", NULL};

	snprintf(path, sizeof(path), "%s/events.jsonl", d);
	ASSERT_EQ(moat_audit_open(path, "rd", 0, &a), 0);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_START, MOAT_F_STR("version", "0.1.0")), 0);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_INT("pid", 7), MOAT_F_STRV("argv", argv)), 0);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_NET, MOAT_F_STR("host", "ok.example"),
			     MOAT_F_BOOL("denied", false)),
		  0);
	ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_NET, MOAT_F_STR("host", "bad.example"), MOAT_F_DENIED), 0);
	a = moat_audit_free(a);
	/* garbage and a forged half line are skipped, not shown */
	int fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	const char junk[] =
		"not json\n{\"v\":2,\"ts\":\"x\",\"type\":\"net\"}\n{\"v\":1,\"ts\":\"x\",\"type\":\"bogus\"}\n";
	ASSERT_EQ(write(fd, junk, sizeof(junk) - 1), (ssize_t)sizeof(junk) - 1);
	close(fd);

	ASSERT_EQ(moat_audit_reader_open(path, &r), 0);
	int n = 0;
	while (moat_audit_reader_next(r, &f, &line, &text) == 1) {
		n++;
		if (n == 2) {
			ASSERT_CONTAINS(text, " exec pid=7 argv=[\"cat\",\"\\u001b[2J\"]");
			ASSERT_TRUE(!strchr(text, 0x1b));
		}
		free(line);
		free(text);
	}
	ASSERT_EQ(n, 4);
	ASSERT_EQ(moat_audit_reader_bad_lines(r), 3);
	r = moat_audit_reader_free(r);

	ASSERT_EQ(moat_audit_parse_types("exec,net", &f.types), 0);
	f.denied_only = true;
	ASSERT_EQ(moat_audit_reader_open(path, &r), 0);
	ASSERT_EQ(moat_audit_reader_next(r, &f, NULL, &text), 1);
	ASSERT_CONTAINS(text, "host=bad.example denied=true");
	free(text);
	ASSERT_EQ(moat_audit_reader_next(r, &f, NULL, &text), 0);
	moat_audit_reader_free(r);
	ASSERT_EQ(moat_audit_parse_types("exec,bogus", &f.types), -EINVAL);
}

TEST(audit_run_id)
{
	ASSERT_TRUE(moat_run_id_valid("20261129-153922-ab12"));
	ASSERT_TRUE(!moat_run_id_valid("../x"));
	ASSERT_TRUE(!moat_run_id_valid(".hidden"));
	ASSERT_TRUE(!moat_run_id_valid(""));
	ASSERT_TRUE(!moat_run_id_valid("a/b"));
	char *dir = NULL;
	ASSERT_EQ(moat_runs_dir(&dir), 0);
	ASSERT_CONTAINS(dir, "/moat/runs");
	free(dir);
}

/* Both ways of closing (write-back started, or fdatasync with log_sync) leave
 * every event in the file. */
TEST(audit_close_sync_modes)
{
	_cleanup_(rmrfp) char *d = tmpdir();
	for (int sync = 0; sync < 2; sync++) {
		char path[256], buf[4096];
		struct moat_audit *a = NULL;
		snprintf(path, sizeof(path), "%s/events-%d.jsonl", d, sync);
		ASSERT_EQ(moat_audit_open(path, "sy", 0, &a), 0);
		moat_audit_set_sync(a, sync);
		for (int i = 0; i < 5; i++)
			ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_INT("pid", i)), 0);
		ASSERT_EQ(MOAT_AUDIT(a, MOAT_EV_EXIT, MOAT_F_INT("exit_code", 0)), 0);
		a = moat_audit_free(a);
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		ASSERT_TRUE(fd >= 0);
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		ASSERT_TRUE(n > 0);
		buf[n] = '\0';
		int lines = 0;
		for (ssize_t i = 0; i < n; i++)
			lines += buf[i] == '\n';
		ASSERT_EQ(lines, 6);
		ASSERT_CONTAINS(buf, "\"type\":\"exit\"");
	}
}
