/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * `moat oci COMMAND` and `moat-oci COMMAND` (moat run under another name):
 * the OCI runtime command line as podman (conmon) and containerd's runc
 * shim call it (docs/OCI.md). A container is a session (moat.h, docs/
 * SESSIONS.md) whose supervisor lives in the container's state directory
 * ROOT/ID and holds the container's process from create to start; the
 * supervisor's pid is the --pid-file's: it is reparented to the engine's
 * subreaper (conmon, the shim) and exits as the container's process did.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "cli/cli.h"
#include "cli/oci.h"

#define OCI_SPEC_VERSION "1.3.0"

struct moat_oci_globals moat_oci_g;

/* ---- errors ------------------------------------------------------------------ */

static void log_line(const char *level, const char *msg)
{
	if (!moat_oci_g.log)
		return;
	int fd = open(moat_oci_g.log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return;
	char esc[2048], line[2300], ts[40];
	time_t now = time(NULL);
	struct tm tm;
	gmtime_r(&now, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	moat_escape(msg, strlen(msg), esc, sizeof(esc));
	int n = moat_oci_g.log_json
		? snprintf(line, sizeof(line),
			   "{\"level\":\"%s\",\"msg\":\"%s\",\"time\":\"%s\"}\n", level, esc, ts)
		: snprintf(line, sizeof(line), "%s %s moat-oci: %s\n", ts, level, esc);
	if (n > 0)
		(void)!write(fd, line, (size_t)n < sizeof(line) ? (size_t)n : sizeof(line) - 1);
	close(fd);
}

void moat_oci_err(const char *fmt, ...)
{
	char msg[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	fputs("moat-oci: ", stderr);
	moat_cli_put_safe(stderr, msg);
	fputc('\n', stderr);
	log_line("error", msg);
}

void moat_oci_moat_err(const char *what, const struct moat_error *e)
{
	moat_oci_err("%s: %s%s%s", what, e->stage[0] ? e->stage : "", e->stage[0] ? ": " : "",
		     e->message[0] ? e->message : strerror(e->err ? e->err : EINVAL));
}

/* ---- state --------------------------------------------------------------------- */

static bool id_ok(const char *id)
{
	size_t n = strlen(id);
	if (!n || n > MOAT_OCI_ID_MAX || id[0] == '.' || id[0] == '-')
		return false;
	for (const char *c = id; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '_' || *c == '-' || *c == '.' || *c == '+'))
			return false;
	return true;
}

static int state_dir(const char *id, char *buf, size_t len)
{
	if (!id_ok(id)) {
		moat_oci_err("container id '%s': 1-%d of [A-Za-z0-9_.+-], not starting with . or -",
			     id, MOAT_OCI_ID_MAX);
		return -EINVAL;
	}
	if (snprintf(buf, len, "%s/%s", moat_oci_g.root, id) >= (int)len) {
		moat_oci_err("--root is too long");
		return -ENAMETOOLONG;
	}
	return 0;
}

void moat_oci_state_done(struct moat_oci_state *st)
{
	free(st->annotations);
	st->annotations = NULL;
}

int moat_oci_state_load(const char *id, struct moat_oci_state *st)
{
	memset(st, 0, sizeof(*st));
	if (state_dir(id, st->dir, sizeof(st->dir)) < 0)
		return -EINVAL;
	snprintf(st->id, sizeof(st->id), "%s", id);
	char path[1300];
	snprintf(path, sizeof(path), "%s/state", st->dir);
	FILE *f = fopen(path, "re");
	if (!f) {
		moat_oci_err("container '%s' does not exist", id);
		return -ENOENT;
	}
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	while ((n = getline(&line, &cap, f)) > 0) {
		if (line[n - 1] == '\n')
			line[--n] = 0;
		char *eq = strchr(line, '=');
		if (!eq)
			continue;
		*eq++ = 0;
		if (!strcmp(line, "session"))
			snprintf(st->session, sizeof(st->session), "%s", eq);
		else if (!strcmp(line, "bundle"))
			snprintf(st->bundle, sizeof(st->bundle), "%s", eq);
		else if (!strcmp(line, "pid"))
			st->pid = atoi(eq);
		else if (!strcmp(line, "user"))
			sscanf(eq, "%u:%u", &st->uid, &st->gid);
		else if (!strcmp(line, "created"))
			st->created = atoll(eq);
		else if (!strcmp(line, "oom"))
			st->oom_score_adj = atoi(eq);
		else if (!strcmp(line, "rlimits"))
			snprintf(st->rlimits, sizeof(st->rlimits), "%s", eq);
		else if (!strcmp(line, "annotations")) {
			free(st->annotations);
			st->annotations = strdup(eq);
		}
	}
	free(line);
	fclose(f);
	struct moat_error e = {0};
	if (!st->session[0] || moat_session_set_dir(st->dir, &e) < 0) {
		moat_oci_err("container '%s': its state is damaged", id);
		return -EBADMSG;
	}
	return 0;
}

const char *moat_oci_status(const struct moat_oci_state *st)
{
	struct moat_session_info in;
	struct moat_error e = {0};
	if (moat_session_info(st->session, &in, &e) < 0)
		return "stopped"; /* its supervisor is gone: the process ended */
	if (!strcmp(in.state, "created") || !strcmp(in.state, "running"))
		return !strcmp(in.state, "created") ? "created" : "running";
	if (!strcmp(in.state, "paused"))
		return "paused";
	return "stopped";
}

static int write_file_atomic(const char *path, const char *data)
{
	char tmp[PATH_MAX];
	if (snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid()) >= (int)sizeof(tmp))
		return -ENAMETOOLONG;
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -errno;
	size_t len = strlen(data);
	ssize_t n = write(fd, data, len);
	int k = n == (ssize_t)len ? 0 : -EIO;
	if (close(fd) < 0 && !k)
		k = -errno;
	if (!k && rename(tmp, path) < 0)
		k = -errno;
	if (k)
		unlink(tmp);
	return k;
}

int moat_oci_write_pid(const char *file, int pid)
{
	char buf[32];
	snprintf(buf, sizeof(buf), "%d", pid);
	int k = write_file_atomic(file, buf);
	if (k < 0)
		moat_oci_err("--pid-file %s: %s", file, strerror(-k));
	return k;
}

static int mkdir_p(const char *path, mode_t mode)
{
	char buf[PATH_MAX];
	snprintf(buf, sizeof(buf), "%s", path);
	for (char *p = buf + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			if (mkdir(buf, 0755) < 0 && errno != EEXIST)
				return -errno;
			*p = '/';
		}
	if (mkdir(buf, mode) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* ROOT/ID gone: what the supervisor left and the record. */
static void state_remove(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

/* The container's directory, locked against a concurrent create/delete. */
static int lock_dir(const char *dir)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return -errno;
	if (flock(fd, LOCK_EX) < 0) {
		close(fd);
		return -errno;
	}
	return fd;
}

int moat_oci_oom_apply(const struct moat_oci_process *pr, int *ret)
{
	char buf[32] = "";
	int fd = open("/proc/self/oom_score_adj", O_RDWR | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	if (n <= 0) {
		moat_oci_err("process.oomScoreAdj: cannot read /proc/self/oom_score_adj: %s",
			     strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	buf[n] = 0;
	int cur = atoi(buf), k = 0;
	*ret = cur;
	/* a negative value below the runtime's own shields the container from
	 * the OOM killer more than its engine: refused. 0 or more below it (the
	 * containerd shim runs at containerd's + 1 and restrict_oom_score_adj
	 * clamps the spec's to containerd's) is written: the kernel refuses it
	 * where this process may not lower its value (no CAP_SYS_RESOURCE) */
	if (pr->has_oom && pr->oom_score_adj < cur && pr->oom_score_adj < 0) {
		moat_oci_err("process.oomScoreAdj: %d is below the runtime's own (%d): a "
			     "negative value makes the container less killable than its engine; "
			     "refused (a value >= %d is set)",
			     pr->oom_score_adj, cur, cur < 0 ? cur : 0);
		k = -EPERM;
	} else if (pr->has_oom && pr->oom_score_adj != cur) {
		n = snprintf(buf, sizeof(buf), "%d", pr->oom_score_adj);
		if (pwrite(fd, buf, (size_t)n, 0) != n) {
			moat_oci_err("process.oomScoreAdj: cannot set %d: %s", pr->oom_score_adj,
				     strerror(errno));
			k = -EIO;
		} else
			*ret = pr->oom_score_adj;
	}
	close(fd);
	return k;
}

void moat_oci_rlimits_line(const struct moat_oci_process *pr, char *buf, size_t len)
{
	size_t n = 0;
	buf[0] = 0;
	for (unsigned i = 0; i < pr->n_rlimits && n < len; i++) {
		const struct moat_oci_rlimit *r = &pr->rlimits[i];
		int k = snprintf(buf + n, len - n, "%s%s:%llu:%llu", i ? "," : "",
				 moat_oci_rlimit_name(r->resource), r->soft, r->hard);
		if (k < 0)
			break;
		n += (size_t)k;
	}
}

/* ---- commands ------------------------------------------------------------------ */

static int opt_value(int argc, char **argv, int *i, const char *name, const char **ret)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (strncmp(a, name, n) != 0)
		return 0;
	if (a[n] == '=') {
		*ret = a + n + 1;
		return 1;
	}
	if (a[n] != 0)
		return 0;
	if (*i + 1 >= argc) {
		moat_oci_err("%s needs a value", name);
		return -1;
	}
	*ret = argv[++*i];
	return 1;
}

#define OPT(name, var) ((k = opt_value(argc, argv, &i, (name), &(var))) != 0)

static int cmd_create(int argc, char **argv)
{
	const char *bundle = ".", *pid_file = NULL, *console = NULL, *id = NULL, *pfds = NULL;
	int i, k;
	for (i = 1; i < argc; i++) {
		if (OPT("--bundle", bundle) || OPT("-b", bundle) || OPT("--pid-file", pid_file) ||
		    OPT("--console-socket", console) || OPT("--preserve-fds", pfds)) {
			if (k < 0)
				return MOAT_EXIT_USAGE;
		} else if (!strcmp(argv[i], "--no-pivot") || !strcmp(argv[i], "--no-new-keyring"))
			; /* moat always pivots; no keyring is made */
		else if (argv[i][0] == '-') {
			moat_oci_err("create: unknown option %s", argv[i]);
			return MOAT_EXIT_USAGE;
		} else if (!id)
			id = argv[i];
		else {
			moat_oci_err("create: one container id");
			return MOAT_EXIT_USAGE;
		}
	}
	if (!id) {
		moat_oci_err("create: no container id");
		return MOAT_EXIT_USAGE;
	}
	if (pfds && strcmp(pfds, "0") != 0) {
		moat_oci_err("--preserve-fds: not supported (only 0): the sandbox gets no host fd");
		return MOAT_EXIT_USAGE;
	}
	char dir[1200], path[1300];
	if (state_dir(id, dir, sizeof(dir)) < 0)
		return MOAT_EXIT_USAGE;
	if ((k = mkdir_p(moat_oci_g.root, 0700)) < 0) {
		moat_oci_err("--root %s: %s", moat_oci_g.root, strerror(-k));
		return MOAT_EXIT_SETUP;
	}
	if (mkdir(dir, 0700) < 0) {
		moat_oci_err(errno == EEXIST ? "container '%s' exists already" : "%s: %s", id,
			     strerror(errno));
		return 1;
	}
	int lk = lock_dir(dir);
	struct moat_error e = {0};
	struct moat_oci_process pr = {0};
	struct moat_policy *p = moat_policy_new();
	int ret = MOAT_EXIT_SETUP, tty_fd = -1, pid = 0;
	char sid[40] = "";
	char logs[1300];
	snprintf(logs, sizeof(logs), "%s/.logs", moat_oci_g.root);
	if (!p || moat_oci_config_load(p, bundle, logs, &pr, &e) < 0) {
		moat_oci_moat_err("create", &e);
		goto fail;
	}
	for (size_t n = 0; pr.notes && pr.notes[n]; n++)
		if (moat_oci_g.log) {
			char msg[1200];
			snprintf(msg, sizeof(msg), "config.json: %s", pr.notes[n]);
			log_line("info", msg);
		}
	if (pr.terminal != (console != NULL)) {
		moat_oci_err(pr.terminal ? "process.terminal: true needs --console-socket"
					 : "--console-socket: process.terminal is false");
		goto fail;
	}
	/* linux.cgroupsPath: the container's cgroup where the engine asks
	 * (src/limits/cgroup.c says where moat may create one); podman's
	 * --cgroup-manager disabled: moat's own, as without the field */
	if (pr.cgroups_path && !moat_oci_g.no_cgroup &&
	    moat_oci_cgroup_place(p, pr.cgroups_path) < 0) {
		moat_oci_err("out of memory");
		goto fail;
	}
	if (pr.cgroups_path && moat_oci_g.no_cgroup && moat_oci_g.log)
		log_line("info",
			 "config.json: linux.cgroupsPath: --cgroup-manager disabled: "
			 "moat's own cgroup");
	moat_oci_freezer_place(p);
	/* the spec's values, before moat lowers any: `exec --process` compares */
	char rl[MOAT_OCI_RLIMITS_MAX * 64];
	moat_oci_rlimits_line(&pr, rl, sizeof(rl));
	if (moat_oci_rlimits_place(p, &pr, &e) < 0 ||
	    moat_oci_oom_killer_place(p, &pr, moat_oci_g.no_cgroup, &e) < 0) {
		moat_oci_moat_err("create", &e);
		goto fail;
	}
	if (moat_policy_validate(p, &e) < 0) {
		moat_oci_moat_err("create", &e);
		goto fail;
	}
	/* before the supervisor is forked: it and the container inherit it */
	int oom = 0;
	if (moat_oci_oom_apply(&pr, &oom) < 0)
		goto fail;
	if (moat_session_set_dir(dir, &e) < 0 || moat_session_create(p, NULL, sid, &e) < 0) {
		moat_oci_moat_err("create", &e);
		sid[0] = 0;
		goto fail;
	}
	struct moat_exec x = {.argv = pr.argv, .env = pr.env, .cwd = pr.cwd, .fd = {0, 1, 2}};
	if (console) {
		if (moat_oci_console(console, &tty_fd) < 0)
			goto fail;
		x.fd[0] = x.fd[1] = x.fd[2] = tty_fd;
		x.tty_mask = 7;
	}
	if (moat_session_prepare(sid, &x, &pid, &e) < 0) {
		moat_oci_moat_err("create", &e);
		goto fail;
	}
	char real[PATH_MAX];
	if (!realpath(bundle, real))
		snprintf(real, sizeof(real), "%s", bundle);
	if (strchr(real, '\n')) {
		moat_oci_err("--bundle: a path with a newline");
		goto fail;
	}
	size_t cap = strlen(real) + (pr.annotations_json ? strlen(pr.annotations_json) : 2) + 256;
	char *rec = malloc(cap);
	if (!rec)
		goto fail;
	snprintf(rec, cap,
		 "session=%s\npid=%d\nuser=%u:%u\ncreated=%lld\noom=%d\nrlimits=%s\nbundle=%s\n"
		 "annotations=%s\n",
		 sid, pid, pr.uid, pr.gid, (long long)time(NULL), oom, rl, real,
		 pr.annotations_json ? pr.annotations_json : "{}");
	snprintf(path, sizeof(path), "%s/state", dir);
	k = write_file_atomic(path, rec);
	free(rec);
	if (k < 0) {
		moat_oci_err("cannot write %s: %s", path, strerror(-k));
		goto fail;
	}
	if (pid_file && moat_oci_write_pid(pid_file, pid) < 0)
		goto fail;
	ret = 0;
	goto out;
fail:
	if (sid[0])
		moat_session_remove(sid, true, NULL, NULL);
	state_remove(dir);
out:
	if (tty_fd >= 0)
		close(tty_fd);
	if (lk >= 0)
		close(lk);
	moat_oci_process_done(&pr);
	moat_policy_free(p);
	return ret;
}

static const char *one_id(int argc, char **argv, const char *cmd)
{
	if (argc != 2 || argv[1][0] == '-') {
		moat_oci_err("%s: usage: %s ID", cmd, cmd);
		return NULL;
	}
	return argv[1];
}

static int cmd_start(int argc, char **argv)
{
	const char *id = one_id(argc, argv, "start");
	struct moat_oci_state st;
	struct moat_error e = {0};
	if (!id)
		return MOAT_EXIT_USAGE;
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	int k = moat_session_start(st.session, &e);
	if (k < 0)
		moat_oci_moat_err("start", &e);
	moat_oci_state_done(&st);
	return k < 0 ? 1 : 0;
}

static void put_json_str(const char *s)
{
	char esc[8192];
	moat_escape(s, strlen(s), esc, sizeof(esc));
	printf("\"%s\"", esc);
}

static int cmd_state(int argc, char **argv)
{
	const char *id = one_id(argc, argv, "state");
	struct moat_oci_state st;
	if (!id)
		return MOAT_EXIT_USAGE;
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	const char *status = moat_oci_status(&st);
	char ts[40];
	struct tm tm;
	time_t t = (time_t)st.created;
	gmtime_r(&t, &tm);
	strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
	printf("{\n  \"ociVersion\": \"%s\",\n  \"id\": ", OCI_SPEC_VERSION);
	put_json_str(st.id);
	printf(",\n  \"status\": \"%s\",\n  \"pid\": %d,\n  \"bundle\": ", status,
	       strcmp(status, "stopped") ? st.pid : 0);
	put_json_str(st.bundle);
	/* the annotations as the parser wrote them (jansson's compact JSON) */
	printf(",\n  \"annotations\": %s,\n  \"created\": \"%s\"\n}\n",
	       st.annotations && st.annotations[0] == '{' ? st.annotations : "{}", ts);
	moat_oci_state_done(&st);
	return 0;
}

static int cmd_pause(int argc, char **argv, bool on)
{
	const char *id = one_id(argc, argv, on ? "pause" : "resume");
	struct moat_oci_state st;
	struct moat_error e = {0};
	if (!id)
		return MOAT_EXIT_USAGE;
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	int k = moat_session_pause(st.session, on, &e);
	if (k < 0)
		moat_oci_moat_err(on ? "pause" : "resume", &e);
	moat_oci_state_done(&st);
	return k < 0 ? 1 : 0;
}

static int parse_signal(const char *s)
{
	static const struct {
		const char *name;
		int sig;
	} names[] = {{"HUP", SIGHUP},	{"INT", SIGINT},     {"QUIT", SIGQUIT}, {"KILL", SIGKILL},
		     {"USR1", SIGUSR1}, {"USR2", SIGUSR2},   {"TERM", SIGTERM}, {"CONT", SIGCONT},
		     {"STOP", SIGSTOP}, {"WINCH", SIGWINCH}, {"ALRM", SIGALRM}, {"PIPE", SIGPIPE}};
	char *end;
	long n = strtol(s, &end, 10);
	if (*s && !*end)
		return n > 0 && n < NSIG ? (int)n : -1;
	if (!strncmp(s, "SIG", 3))
		s += 3;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(s, names[i].name))
			return names[i].sig;
	return -1;
}

static int cmd_kill(int argc, char **argv)
{
	bool all = false;
	const char *id = NULL, *sigs = "TERM";
	int n = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--all") || !strcmp(argv[i], "-a"))
			all = true;
		else if (argv[i][0] == '-' && argv[i][1]) {
			moat_oci_err("kill: unknown option %s", argv[i]);
			return MOAT_EXIT_USAGE;
		} else if (n == 0 && ++n)
			id = argv[i];
		else if (n == 1 && ++n)
			sigs = argv[i];
		else {
			moat_oci_err("kill: usage: kill [--all] ID [SIGNAL]");
			return MOAT_EXIT_USAGE;
		}
	}
	int sig = parse_signal(sigs);
	if (!id || sig < 0) {
		moat_oci_err("kill: usage: kill [--all] ID [SIGNAL]");
		return MOAT_EXIT_USAGE;
	}
	struct moat_oci_state st;
	struct moat_error e = {0};
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	int k = moat_session_kill(st.session, sig, all, &e);
	/* "container not running": the words containerd's shim (and so the
	 * CRI's StopPodSandbox) takes as "already stopped", as runc says them */
	if (k < 0)
		moat_oci_err("kill: '%s': container not running", id);
	moat_oci_state_done(&st);
	return k < 0 ? 1 : 0;
}

static int cmd_delete(int argc, char **argv)
{
	bool force = false;
	const char *id = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--force") || !strcmp(argv[i], "-f"))
			force = true;
		else if (argv[i][0] == '-' || id) {
			moat_oci_err("delete: usage: delete [--force] ID");
			return MOAT_EXIT_USAGE;
		} else
			id = argv[i];
	}
	if (!id) {
		moat_oci_err("delete: usage: delete [--force] ID");
		return MOAT_EXIT_USAGE;
	}
	struct moat_oci_state st;
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	int lk = lock_dir(st.dir);
	const char *status = moat_oci_status(&st);
	int ret = 0;
	if ((!strcmp(status, "running") || !strcmp(status, "paused")) && !force) {
		moat_oci_err("delete: container '%s' is running (stop it, or --force)", id);
		ret = 1;
	} else {
		if (strcmp(status, "stopped") != 0) {
			struct moat_error e = {0};
			if (moat_session_remove(st.session, true, NULL, &e) < 0 &&
			    strcmp(moat_oci_status(&st), "stopped") != 0) {
				moat_oci_moat_err("delete", &e);
				ret = 1;
			}
		}
		if (!ret)
			state_remove(st.dir);
	}
	if (lk >= 0)
		close(lk);
	moat_oci_state_done(&st);
	return ret;
}

/* The supervisor and every process below it (host pids). */
static int cmd_ps(int argc, char **argv)
{
	const char *id = NULL, *fmt = "table";
	int i, k;
	for (i = 1; i < argc; i++) {
		if (OPT("--format", fmt) || OPT("-f", fmt)) {
			if (k < 0)
				return MOAT_EXIT_USAGE;
		} else if (argv[i][0] == '-' || id) {
			moat_oci_err("ps: usage: ps [--format json|table] ID");
			return MOAT_EXIT_USAGE;
		} else
			id = argv[i];
	}
	struct moat_oci_state st;
	if (!id)
		return MOAT_EXIT_USAGE;
	if (moat_oci_state_load(id, &st) < 0)
		return 1;
	bool live = strcmp(moat_oci_status(&st), "stopped") != 0;
	enum {
		MAXP = 32768
	};
	static int pids[MAXP], ppids[MAXP];
	int n = 0;
	DIR *d = live ? opendir("/proc") : NULL;
	struct dirent *de;
	while (d && (de = readdir(d)) && n < MAXP) {
		char path[64], buf[512];
		int pid = atoi(de->d_name);
		if (pid <= 0)
			continue;
		snprintf(path, sizeof(path), "/proc/%d/stat", pid);
		FILE *f = fopen(path, "re");
		if (!f)
			continue;
		size_t m = fread(buf, 1, sizeof(buf) - 1, f);
		fclose(f);
		buf[m] = 0;
		char *rp = strrchr(buf, ')');
		int pp = 0;
		if (rp && sscanf(rp + 1, " %*c %d", &pp) == 1) {
			pids[n] = pid;
			ppids[n++] = pp;
		}
	}
	if (d)
		closedir(d);
	/* the descendants of the supervisor, breadth first */
	static int out[MAXP];
	int no = 0;
	if (live)
		out[no++] = st.pid;
	for (int q = 0; q < no; q++)
		for (int j = 0; j < n && no < MAXP; j++)
			if (ppids[j] == out[q])
				out[no++] = pids[j];
	bool json = !strcmp(fmt, "json");
	if (json)
		putchar('[');
	else
		puts("PID");
	for (int j = 0; j < no; j++)
		printf(json ? "%s%d" : "%s%d\n", json && j ? "," : "", out[j]);
	if (json)
		puts("]");
	moat_oci_state_done(&st);
	return 0;
}

static int cmd_features(void)
{
	static const char *const ns[] = {"cgroup", "ipc", "mount", "network", "pid", "user", "uts"};
	printf("{\n  \"ociVersionMin\": \"1.0.0\",\n  \"ociVersionMax\": \"%s\",\n"
	       "  \"hooks\": [],\n  \"mountOptions\": [\"bind\", \"rbind\", \"ro\", \"rw\", "
	       "\"nosuid\", \"nodev\", \"size\"],\n  \"linux\": {\n    \"namespaces\": [",
	       OCI_SPEC_VERSION);
	for (size_t i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		printf("%s\"%s\"", i ? ", " : "", ns[i]);
	printf("],\n    \"capabilities\": [],\n"
	       "    \"cgroup\": {\"v1\": true, \"v2\": true, \"systemd\": false, "
	       "\"systemdUser\": false},\n"
	       "    \"seccomp\": {\"enabled\": true, \"actions\": [\"SCMP_ACT_ALLOW\", "
	       "\"SCMP_ACT_ERRNO\", \"SCMP_ACT_KILL\", \"SCMP_ACT_KILL_PROCESS\", "
	       "\"SCMP_ACT_KILL_THREAD\", \"SCMP_ACT_TRAP\", \"SCMP_ACT_LOG\"]},\n"
	       "    \"apparmor\": {\"enabled\": false},\n    \"selinux\": {\"enabled\": false}\n"
	       "  },\n  \"annotations\": {\"run.moat.version\": \"%s\"}\n}\n",
	       MOAT_VERSION);
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: moat-oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND\n"
		"  (or: moat oci ...)  docs/OCI.md\n"
		"commands: create --bundle DIR [--pid-file F] [--console-socket S] ID | start ID |\n"
		"  state ID | kill [--all] ID [SIG] | delete [--force] ID |\n"
		"  exec --process FILE [--detach] [--pid-file F] [--tty --console-socket S] ID |\n"
		"  ps [--format json] ID | features | --version\n");
}

static void default_root(void)
{
	static char buf[PATH_MAX];
	const char *x = getenv("XDG_RUNTIME_DIR");
	/* rootless podman runs the runtime as uid 0 of its user namespace
	 * with XDG_RUNTIME_DIR set: that is the user's, not /run */
	if (x && x[0] == '/' && !moat_host_root())
		snprintf(buf, sizeof(buf), "%s/moat-oci", x);
	else
		snprintf(buf, sizeof(buf), "/run/moat-oci");
	moat_oci_g.root = buf;
}

int moat_cli_oci(int argc, char **argv)
{
	int i, k;
	const char *fmt = NULL, *cgm = NULL, *ign;
	signal(SIGPIPE, SIG_IGN);
	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--version") || !strcmp(argv[i], "-v")) {
			printf("moat-oci version %s\nspec: %s\n", MOAT_VERSION, OCI_SPEC_VERSION);
			return 0;
		}
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		}
		if (OPT("--root", moat_oci_g.root) || OPT("--log", moat_oci_g.log) ||
		    OPT("--log-format", fmt) || OPT("--cgroup-manager", cgm) ||
		    OPT("--rootless", ign) || OPT("--criu", ign)) {
			if (k < 0)
				return MOAT_EXIT_USAGE;
		} else if (!strcmp(argv[i], "--systemd-cgroup") || !strcmp(argv[i], "--debug"))
			; /* moat places containers in its own cgroups (docs/OCI.md) */
		else {
			moat_oci_err("unknown global option %s", argv[i]);
			return MOAT_EXIT_USAGE;
		}
	}
	moat_oci_g.log_json = fmt && !strcmp(fmt, "json");
	moat_oci_g.no_cgroup = cgm && !strcmp(cgm, "disabled");
	if (!moat_oci_g.root)
		default_root();
	if (moat_oci_g.root[0] != '/') {
		moat_oci_err("--root must be an absolute path");
		return MOAT_EXIT_USAGE;
	}
	if (i >= argc) {
		usage(stderr);
		return MOAT_EXIT_USAGE;
	}
	const char *cmd = argv[i];
	int sub_argc = argc - i;
	char **sub = argv + i;
	/* before --help: podman probes `checkpoint --help`, whose success
	 * would say checkpointing works */
	if (!strcmp(cmd, "checkpoint") || !strcmp(cmd, "restore")) {
		moat_oci_err("%s: not supported (moat does not checkpoint processes)", cmd);
		return 1;
	}
	for (int j = 1; j < sub_argc; j++)
		if (!strcmp(sub[j], "--help") || !strcmp(sub[j], "-h")) {
			usage(stdout);
			return 0;
		}
	if (!strcmp(cmd, "create"))
		return cmd_create(sub_argc, sub);
	if (!strcmp(cmd, "start"))
		return cmd_start(sub_argc, sub);
	if (!strcmp(cmd, "state"))
		return cmd_state(sub_argc, sub);
	if (!strcmp(cmd, "kill"))
		return cmd_kill(sub_argc, sub);
	if (!strcmp(cmd, "delete"))
		return cmd_delete(sub_argc, sub);
	if (!strcmp(cmd, "exec"))
		return moat_oci_cmd_exec(sub_argc, sub);
	if (!strcmp(cmd, "ps"))
		return cmd_ps(sub_argc, sub);
	if (!strcmp(cmd, "features"))
		return cmd_features();
	if (!strcmp(cmd, "pause") || !strcmp(cmd, "resume"))
		return cmd_pause(sub_argc, sub, !strcmp(cmd, "pause"));
	if (!strcmp(cmd, "update")) {
		moat_oci_err("update: not supported (a container's limits are fixed at create)");
		return 1;
	}
	moat_oci_err("unknown command %s", cmd);
	usage(stderr);
	return MOAT_EXIT_USAGE;
}
