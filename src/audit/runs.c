/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The history of runs (`moat runs`, `moat log --last`) and the automatic
 * pruning of the runs directory when a run starts.
 *
 * A run is a directory under moat_runs_dir() named by its id, holding
 * events.jsonl (first line: the start event with argv; the exit event near
 * the end). Listing reads the directory (at most RUNS_SCAN entries), sorts by
 * the directory's mtime, and reads only the runs it shows: the first line of
 * each log (at most LINE_MAX_READ bytes) and its last TAIL_READ bytes.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "policy/errors.h"
#include "moat/moat.h"
#include "shared/macro.h"

#define RUNS_SCAN 1000000u
#define LINE_MAX_READ (256u * 1024u)
#define TAIL_READ (16u * 1024u)
#define PRUNE_STAMP ".pruned"
#define PRUNE_EVERY_S 3600u

struct entry {
	char id[65];
	struct timespec mtime;
};

static int newest_first(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;
	if (x->mtime.tv_sec != y->mtime.tv_sec)
		return x->mtime.tv_sec < y->mtime.tv_sec ? 1 : -1;
	if (x->mtime.tv_nsec != y->mtime.tv_nsec)
		return x->mtime.tv_nsec < y->mtime.tv_nsec ? 1 : -1;
	return strcmp(x->id, y->id);
}

/* The run directories of @dfd, newest first. */
static int scan(int dfd, struct entry **ret, size_t *ret_n)
{
	struct entry *v = NULL;
	size_t n = 0, cap = 0;
	int fd2 = fcntl(dfd, F_DUPFD_CLOEXEC, 3);
	DIR *d = fd2 >= 0 ? fdopendir(fd2) : NULL;
	struct dirent *e;

	if (!d) {
		safe_close(fd2);
		return -ENOMEM;
	}
	while ((e = readdir(d)) && n < RUNS_SCAN) {
		struct stat st;
		if (!moat_run_id_valid(e->d_name) || strlen(e->d_name) >= sizeof(v->id) ||
		    fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 64;
			struct entry *nv = reallocarray(v, cap, sizeof(*v));
			if (!nv) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		memcpy(v[n].id, e->d_name, strlen(e->d_name) + 1);
		v[n++].mtime = st.st_mtim;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), newest_first);
	*ret = v;
	*ret_n = n;
	return 0;
}

static int open_runs(const char *runs_dir, char **def, int *ret_fd, struct moat_error *err)
{
	int k;

	if (!runs_dir) {
		k = moat_runs_dir(def);
		if (k < 0)
			return moat_error_set(err, "runs", -k, "no runs directory");
		runs_dir = *def;
	}
	*ret_fd = open(runs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (*ret_fd < 0 && errno != ENOENT)
		return moat_error_set(err, "runs", errno, "cannot open %s: %s", runs_dir,
				      strerror(errno));
	return 0;
}

/* The start and exit events of run @id (either may stay NULL). */
static void read_events(int dfd, const char *id, json_t **ret_start, json_t **ret_exit)
{
	char path[128];
	_cleanup_free_ char *buf = malloc(LINE_MAX_READ + 1);
	struct stat st;

	*ret_start = *ret_exit = NULL;
	if (!buf)
		return;
	snprintf(path, sizeof(path), "%s/events.jsonl", id);
	_cleanup_close_ int fd = openat(dfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		/* --log FILE: the run names its log in log-path */
		snprintf(path, sizeof(path), "%s/log-path", id);
		_cleanup_close_ int lp = openat(dfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
		ssize_t l = lp >= 0 ? read(lp, buf, PATH_MAX - 1) : -1;
		if (l <= 0)
			return;
		buf[l] = '\0';
		if (buf[0] == '/' && !memchr(buf, '\n', (size_t)l))
			fd = open(buf, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	}
	if (fd < 0 || !buf || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return;
	ssize_t n = pread(fd, buf, LINE_MAX_READ, 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	char *nl = strchr(buf, '\n');
	if (nl)
		*nl = '\0';
	json_t *s = json_loads(buf, 0, NULL);
	if (s && json_is_object(s) && json_is_string(json_object_get(s, "type")) &&
	    streq(json_string_value(json_object_get(s, "type")), "start"))
		*ret_start = s;
	else
		json_decref(s);
	off_t off = st.st_size > (off_t)TAIL_READ ? st.st_size - (off_t)TAIL_READ : 0;
	n = pread(fd, buf, TAIL_READ, off);
	if (n <= 0)
		return;
	buf[n] = '\0';
	/* the last complete line whose type is "exit" */
	for (char *line = strtok(buf, "\n"); line; line = strtok(NULL, "\n")) {
		json_t *x = json_loads(line, 0, NULL);
		if (x && json_is_string(json_object_get(x, "type")) &&
		    streq(json_string_value(json_object_get(x, "type")), "exit")) {
			json_decref(*ret_exit);
			*ret_exit = x;
		} else
			json_decref(x);
	}
}

/* argv joined by spaces, control bytes as '?', at most @len-1 bytes. */
static void command_of(json_t *argv, char *out, size_t len)
{
	size_t i, o = 0;
	json_t *a;

	out[0] = '\0';
	json_array_foreach(argv, i, a)
	{
		const char *s = json_string_value(a);
		if (!s)
			continue;
		if (i && o + 1 < len)
			out[o++] = ' ';
		for (; *s && o + 1 < len; s++)
			out[o++] = (unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s;
	}
	out[o] = '\0';
}

int moat_runs_list(const char *runs_dir, size_t max, bool json, char **ret_text,
		   struct moat_error *ret_err)
{
	_cleanup_free_ char *def = NULL;
	_cleanup_free_ struct entry *v = NULL;
	_cleanup_close_ int dfd = -1;
	size_t n = 0;
	int k;

	k = open_runs(runs_dir, &def, &dfd, ret_err);
	if (k < 0)
		return k;
	if (dfd >= 0 && (k = scan(dfd, &v, &n)) < 0)
		return moat_error_set(ret_err, "runs", -k, "cannot list the runs");
	json_t *arr = json_array();
	char *text = NULL;
	size_t tlen = 0;
	FILE *t = json ? NULL : open_memstream(&text, &tlen);
	if (!arr || (!json && !t)) {
		json_decref(arr);
		return -ENOMEM;
	}
	if (t)
		fprintf(t, "%-16s  %-19s  %6s  %4s  %s\n", "RUN", "STARTED", "EXIT", "HELD",
			"COMMAND");
	for (size_t i = 0; i < n && (!max || i < max); i++) {
		json_t *s, *x;
		char cmd[256], when[32] = "?", exitbuf[16] = "-";
		read_events(dfd, v[i].id, &s, &x);
		command_of(s ? json_object_get(s, "argv") : NULL, cmd, sizeof(cmd));
		const char *ts = s ? json_string_value(json_object_get(s, "ts")) : NULL;
		if (ts)
			snprintf(when, sizeof(when), "%.10s %.8s", ts,
				 strlen(ts) > 11 ? ts + 11 : "");
		json_t *code = x ? json_object_get(x, "exit_code") : NULL;
		json_t *held = x ? json_object_get(x, "files_held") : NULL;
		const char *reason = x ? json_string_value(json_object_get(x, "reason")) : NULL;
		if (json_is_integer(code))
			snprintf(exitbuf, sizeof(exitbuf), "%lld",
				 (long long)json_integer_value(code));
		if (t) {
			fprintf(t, "%-16s  %-19s  %6s  %4lld  %s\n", v[i].id, when,
				x ? exitbuf : "-",
				json_is_integer(held) ? (long long)json_integer_value(held) : 0LL,
				cmd);
		} else {
			json_t *o = json_pack(
				"{s:s, s:s?, s:O?, s:s, s:O?, s:s?, s:O?, s:O?}", "id", v[i].id,
				"started", ts, "argv", s ? json_object_get(s, "argv") : NULL,
				"command", cmd, "exit_code", code, "reason", reason, "files_held",
				held, "wall_us", x ? json_object_get(x, "wall_us") : NULL);
			if (o)
				json_array_append_new(arr, o);
		}
		json_decref(s);
		json_decref(x);
	}
	if (t) {
		json_decref(arr);
		if (fclose(t) != 0 || !text) {
			free(text);
			return -ENOMEM;
		}
		*ret_text = text;
		return 0;
	}
	*ret_text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(arr);
	return *ret_text ? 0 : -ENOMEM;
}

int moat_runs_latest(const char *runs_dir, char *ret_id, size_t len, struct moat_error *ret_err)
{
	_cleanup_free_ char *def = NULL;
	_cleanup_free_ struct entry *v = NULL;
	_cleanup_close_ int dfd = -1;
	size_t n = 0;
	int k;

	k = open_runs(runs_dir, &def, &dfd, ret_err);
	if (k < 0)
		return k;
	if (dfd >= 0 && (k = scan(dfd, &v, &n)) < 0)
		return moat_error_set(ret_err, "runs", -k, "cannot list the runs");
	if (!n)
		return moat_error_set(ret_err, "runs", ENOENT, "no run has been recorded yet");
	if (strlen(v[0].id) >= len)
		return -ENAMETOOLONG;
	memcpy(ret_id, v[0].id, strlen(v[0].id) + 1);
	return 0;
}

int moat_runs_autoprune(const char *runs_dir, unsigned long long retention_ms,
			unsigned long long max_total, bool *ret_pruned)
{
	struct moat_runs_gc_result rg;
	struct moat_run_info *live = NULL;
	struct stat st;
	size_t n_live = 0;
	time_t now = time(NULL);

	*ret_pruned = false;
	_cleanup_close_ int dfd = open(runs_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return errno == ENOENT ? 0 : negerrno();
	/* at most once an hour (once per tenth of a short retention) */
	unsigned long long every = retention_ms / 10000u;
	if (!retention_ms || every > PRUNE_EVERY_S)
		every = PRUNE_EVERY_S;
	if (every && fstatat(dfd, PRUNE_STAMP, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
	    st.st_mtime + (time_t)every > now && st.st_mtime <= now)
		return 0;
	/* claim this round first: concurrent runs do not all prune */
	_cleanup_close_ int sfd =
		openat(dfd, PRUNE_STAMP, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (sfd < 0 || futimens(sfd, NULL) < 0)
		return negerrno();
	if (moat_ps(NULL, &live, &n_live, NULL) < 0)
		n_live = 0;
	const char **ids = calloc(n_live + 1, sizeof(char *));
	if (!ids) {
		free(live);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n_live; i++)
		ids[i] = live[i].id;
	int k = moat_runs_gc(runs_dir, retention_ms, max_total, ids, &rg, NULL);
	free(ids);
	free(live);
	*ret_pruned = true;
	return k;
}

int moat_ps_json(const char *state_dir, char **ret_text, struct moat_error *ret_err)
{
	_cleanup_free_ char *def = NULL;
	_cleanup_free_ struct moat_run_info *live = NULL;
	_cleanup_close_ int dfd = -1;
	size_t n = 0;
	int k;

	k = moat_ps(state_dir, &live, &n, ret_err);
	if (k < 0)
		return k;
	k = open_runs(NULL, &def, &dfd, ret_err);
	if (k < 0)
		return k;
	json_t *arr = json_array();
	if (!arr)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		json_t *s = NULL, *x = NULL;
		char cmd[256] = "";
		if (dfd >= 0)
			read_events(dfd, live[i].id, &s, &x);
		command_of(s ? json_object_get(s, "argv") : NULL, cmd, sizeof(cmd));
		json_t *pol = s ? json_object_get(s, "policy") : NULL;
		json_t *o = json_pack("{s:s, s:i, s:I, s:O?, s:s, s:O?, s:O?}", "id", live[i].id,
				      "pid", live[i].pid, "start_us", (json_int_t)live[i].start_us,
				      "argv", s ? json_object_get(s, "argv") : NULL, "command", cmd,
				      "workspace", s ? json_object_get(s, "workspace") : NULL,
				      "limits", pol ? json_object_get(pol, "limits") : NULL);
		if (o)
			json_array_append_new(arr, o);
		json_decref(s);
		json_decref(x);
	}
	*ret_text = json_dumps(arr, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(arr);
	return *ret_text ? 0 : -ENOMEM;
}
