/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Audit stream, alerts, /output collection and workspace review for one run. */
#include "audit/observe.h"

#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <grp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "audit/audit.h"
#include "workspace/copytree.h"
#include "policy/errors.h"
#include "workspace/fsdiff.h"
#include "sandbox/isolation.h"
#include "sandbox/paths.h"
#include "policy/policy.h"
#include "kernel/seccomp.h"
#include "workspace/wscheck.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define MAX_ALERT_PROCS 16
#define ALERT_WAIT_MS 3000

struct moat_observe {
	struct moat_audit *audit;
	char *run_dir, *log_path;
	int run_dirfd, ws_fd, out_fd;
	bool exit_written;
	bool start_written;
	int alert_pidfds[MAX_ALERT_PROCS];
	unsigned n_alert_procs;
	uint64_t alerts_suppressed;
	const char *on_alert;
	const char *run_id;
	struct moat_workspace_check wsc; /* rw/ro start checks (wscheck.c) */
	unsigned long long rw_hardlinks; /* of the --rw binds */
	int64_t ws_since_ns; /* CLOCK_REALTIME as the run began: a ctime after it is later */
};

struct moat_audit *moat_run_audit(struct moat_run *r)
{
	return r && r->obs ? r->obs->audit : NULL;
}

/* ---- --on-alert ------------------------------------------------------------ */

/* The alert command runs on the host with the caller's identity: when moat
 * runs as root for a sudo user, it drops to that user. Its stdin is a socket
 * carrying the alert line (a socket so that a command that does not read
 * cannot SIGPIPE the supervisor), its stdout goes to moat's stderr. It never
 * blocks the supervisor: started here, reaped at the end. */
static void alert_hook(const char *line, size_t len, void *userdata)
{
	struct moat_observe *o = userdata;
	int sv[2];
	pid_t pid;

	if (o->n_alert_procs >= MAX_ALERT_PROCS) {
		o->alerts_suppressed++;
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return;
	}
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(sv[1], STDIN_FILENO) < 0 || dup2(STDERR_FILENO, STDOUT_FILENO) < 0)
			_exit(127);
		shutdown(STDIN_FILENO, SHUT_WR);
		/* Exactly its alert line (0) and the caller's stderr (1, 2):
		 * none of the supervisor's descriptors (the audit log, the
		 * epoll instance, timers, pidfds, the seccomp listener) and
		 * nothing the caller leaked to moat. */
		if (syscall(SYS_close_range, 3u, ~0u, 0u) < 0)
			_exit(127);
		if (geteuid() == 0) {
			const char *su = getenv("SUDO_UID"), *sg = getenv("SUDO_GID");
			if (su && sg) {
				uid_t u = (uid_t)strtoul(su, NULL, 10);
				gid_t g = (gid_t)strtoul(sg, NULL, 10);
				if (u != 0 &&
				    (setgroups(0, NULL) < 0 || setresgid(g, g, g) < 0 ||
				     setresuid(u, u, u) < 0))
					_exit(126);
			}
		} else if (getuid() != geteuid() && setresuid(getuid(), getuid(), getuid()) < 0) {
			_exit(126);
		}
		setenv("MOAT_RUN_ID", o->run_id, 1);
		if (o->log_path)
			setenv("MOAT_LOG", o->log_path, 1);
		execl("/bin/sh", "sh", "-c", o->on_alert, (char *)NULL);
		_exit(127);
	}
	close(sv[1]);
	/* one line; MSG_DONTWAIT: never block on a command that does not read */
	(void)!send(sv[0], line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
	(void)!send(sv[0], "\n", 1, MSG_NOSIGNAL | MSG_DONTWAIT);
	close(sv[0]);
	int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (pfd >= 0)
		o->alert_pidfds[o->n_alert_procs++] = pfd;
}

/* Wait (bounded) for the alert commands; kill what is left. */
static void reap_alerts(struct moat_observe *o)
{
	uint64_t deadline = moat_now_us() + ALERT_WAIT_MS * 1000ull;
	for (unsigned i = 0; i < o->n_alert_procs; i++) {
		int fd = o->alert_pidfds[i];
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		uint64_t now = moat_now_us();
		int ms = now < deadline ? (int)((deadline - now) / 1000) : 0;
		if (poll(&pf, 1, ms) <= 0)
			syscall(SYS_pidfd_send_signal, fd, SIGKILL, NULL, 0);
		(void)waitid(P_PIDFD, (id_t)fd, NULL, WEXITED);
		close(fd);
	}
	o->n_alert_procs = 0;
}

int moat_observe_start(struct moat_run *r);

/* ---- start ------------------------------------------------------------------ */

static void sha256_hex(const char *s, char out[65])
{
	uint8_t md[SHA256_DIGEST_SIZE];
	static const char h[] = "0123456789abcdef";
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, strlen(s), (const uint8_t *)s);
	sha256_digest(&ctx, sizeof(md), md);
	for (int i = 0; i < 32; i++) {
		out[2 * i] = h[md[i] >> 4];
		out[2 * i + 1] = h[md[i] & 15];
	}
	out[64] = '\0';
}

static int write_start(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	_cleanup_free_ char *pj = NULL, *records = NULL;
	char digest[65] = "";

	/* which records this level produces: no silent gap (isolation.h) */
	if (moat_isolation_records_json(p, &records) < 0)
		return -ENOMEM;

	if (moat_policy_to_json(p, &pj) >= 0)
		sha256_hex(pj, digest);
	return MOAT_AUDIT(
		r->obs->audit, MOAT_EV_START, MOAT_F_STR("version", MOAT_VERSION),
		MOAT_F_STR("policy_sha256", digest), MOAT_F_JSON("policy", pj),
		MOAT_F_STR("isolation", moat_isolation_names[p->isolation]),
		MOAT_F_STR("image", p->image), MOAT_F_STR("image_digest", p->image_digest),
		MOAT_F_JSON("records", records), MOAT_F_STRV("argv", r->argv_copy),
		MOAT_F_UINT("uid", p->uid), MOAT_F_UINT("gid", p->gid),
		MOAT_F_UINT("host_uid", r->sb.host_uid), MOAT_F_UINT("host_gid", r->sb.host_gid),
		MOAT_F_BOOL("root_mode", r->sb.root_mode), MOAT_F_STR("workspace", p->workspace),
		MOAT_F_STR("workspace_mode",
			   p->workspace ? moat_ws_mode_names[p->workspace_mode] : NULL),
		MOAT_F_BOOL("review", p->workspace && p->workspace_mode == MOAT_WS_OVERLAY),
		MOAT_F_STR("review_note", moat_workspace_note(p)),
		MOAT_F_UINT("workspace_hardlinks", r->obs->wsc.hardlinks),
		MOAT_F_UINT("rw_mount_hardlinks", r->obs->rw_hardlinks),
		MOAT_F_STR("workspace_repo", r->obs->wsc.repo[0] ? r->obs->wsc.repo : NULL),
		MOAT_F_BOOL("workspace_check_truncated", r->obs->wsc.truncated),
		MOAT_F_STR("log", r->obs->log_path));
}

static int open_output(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	struct moat_observe *o = r->obs;

	/* created if missing, never through a symlink a sandbox could have
	 * planted (paths.h); the copy goes only through this fd (copytree.c) */
	struct moat_path_info why;
	_cleanup_close_ int dir = moat_path_open(
		p->output, MOAT_PATH_DIR | MOAT_PATH_MKDIR | MOAT_PATH_AS_INVOKER, 0755, &why);
	if (dir < 0)
		return moat_path_error(r->err, "output", "--output", p->output, dir, &why);
	o->out_fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (o->out_fd < 0)
		return moat_error_set(r->err, "output", errno, "cannot open --output %s: %s",
				      p->output, strerror(errno));
	if (!p->output_overwrite) {
		int fd = dup(o->out_fd);
		DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
		struct dirent *e;
		bool empty = true;
		if (!d) {
			safe_close(fd);
			return moat_error_set(r->err, "output", errno, "cannot read --output %s",
					      p->output);
		}
		while ((e = readdir(d)))
			if (!streq(e->d_name, ".") && !streq(e->d_name, ".."))
				empty = false;
		closedir(d);
		if (!empty)
			return moat_error_set(r->err, "output", ENOTEMPTY,
					      "--output %s is not empty (use --output-overwrite)",
					      p->output);
	}
	return 0;
}

int moat_observe_prepare(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	/* the sinks are the plan's (audit part) */
	const struct moat_plan_audit *a = &r->plan->audit;
	_cleanup_free_ char *runs = NULL;
	struct moat_observe *o;
	int k;

	o = calloc(1, sizeof(*o));
	if (!o)
		return -ENOMEM;
	o->run_dirfd = o->ws_fd = o->out_fd = -1;
	o->run_id = r->run_id;
	{
		struct timespec now;
		if (clock_gettime(CLOCK_REALTIME, &now) == 0)
			o->ws_since_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec;
	}
	o->on_alert = a->on_alert;
	r->obs = o;

	k = moat_runs_dir(&runs);
	if (k < 0)
		return moat_error_set(r->err, "audit", -k,
				      "no directory for run state (set XDG_STATE_HOME or HOME)");
	/* the runs past the policy's retention age and total cap go (at most
	 * once an hour, before this run's own directory exists; runs.c) */
	bool pruned;
	(void)moat_runs_autoprune(runs, p->retention_ms, p->runs_max, &pruned);
	if (asprintf(&o->run_dir, "%s/%s", runs, r->run_id) < 0)
		return -ENOMEM;
	struct moat_path_info *why = malloc(sizeof(*why));
	if (!why)
		return -ENOMEM;
	/* the run state directory: created 0700, never through a planted link */
	k = moat_path_open(o->run_dir, MOAT_PATH_DIR | MOAT_PATH_MKDIR, 0700, why);
	if (k >= 0) {
		o->run_dirfd = openat(k, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(k);
		k = o->run_dirfd < 0 ? negerrno() : 0;
	}
	if (k < 0) {
		k = moat_path_error(r->err, "audit", "the run directory", o->run_dir, k, why);
		free(why);
		return k;
	}
	if (a->log_path) {
		o->log_path = strdup(a->log_path);
		/* `moat log RUN-ID` finds it through this file */
		int fd = openat(o->run_dirfd, "log-path",
				O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0) {
			(void)!write(fd, a->log_path, strlen(a->log_path));
			close(fd);
		}
	} else if (asprintf(&o->log_path, "%s/events.jsonl", o->run_dir) < 0) {
		o->log_path = NULL;
	}
	if (!o->log_path)
		return -ENOMEM;
	/* --log: a regular file, never through a planted symlink (paths.h); the
	 * default log is opened below the run directory just made and held, not
	 * through a second walk of its path */
	if (a->log_path)
		k = moat_path_write_file(o->log_path, O_APPEND, 0600,
					 MOAT_PATH_MKDIR | MOAT_PATH_AS_INVOKER, why);
	else
		k = moat_path_write_file_at(o->run_dirfd, o->run_dir, "events.jsonl", O_APPEND,
					    0600, why);
	if (k >= 0)
		k = moat_audit_open_fd(k, r->run_id, 0, &o->audit);
	if (k < 0) {
		k = moat_path_error(r->err, "audit", a->log_path ? "--log" : "the audit log",
				    o->log_path, k, why);
		free(why);
		return k;
	}
	free(why);
	moat_audit_set_sync(o->audit, a->log_sync);
	if (a->on_alert)
		moat_audit_set_alert_hook(o->audit, alert_hook, o);
	snprintf(r->st->log_path, sizeof(r->st->log_path), "%s", o->log_path);

	if (p->workspace && p->workspace_mode == MOAT_WS_OVERLAY) {
		/* the workspace the sandbox mounts (resolved once: spawn.c) */
		for (unsigned i = 0; i < r->plan->n_steps && o->ws_fd < 0; i++)
			if ((r->plan->steps[i].flags & MOAT_STEPF_WORKSPACE) &&
			    r->sb.user_fd[i] >= 0)
				o->ws_fd = fcntl(r->sb.user_fd[i], F_DUPFD_CLOEXEC, 3);
		if (o->ws_fd < 0)
			return moat_error_set(r->err, "workspace", errno,
					      "cannot open --workspace %s: %s", p->workspace,
					      strerror(errno));
	}
	if (p->workspace && p->workspace_mode != MOAT_WS_OVERLAY) {
		k = moat_workspace_check(p, &o->wsc, r->err);
		if (k >= 0)
			k = moat_wscheck_enforce(p, &o->wsc, r->err);
		if (k < 0) {
			MOAT_AUDIT(o->audit, MOAT_EV_ALERT, MOAT_F_STR("cause", "workspace"),
				   MOAT_F_STR("reason", r->err ? r->err->message : "refused"));
			return k;
		}
	}
	/* --rw binds are not reviewed either */
	k = moat_wscheck_mounts(p, &o->rw_hardlinks, r->err);
	if (k < 0) {
		MOAT_AUDIT(o->audit, MOAT_EV_ALERT, MOAT_F_STR("cause", "workspace"),
			   MOAT_F_STR("reason", r->err ? r->err->message : "refused"));
		return k;
	}
	if (p->output && (k = open_output(r)) < 0)
		return k;
	return 0;
}

/* The start record: written once the sandbox is released (its policy digest
 * costs OpenSSL's initialisation, which then overlaps the sandbox's setup), or
 * at teardown if the run never got that far. */
int moat_observe_start(struct moat_run *r)
{
	struct moat_observe *o = r->obs;
	if (!o || !o->audit || o->start_written)
		return 0;
	o->start_written = true;
	int k = write_start(r);
	/* the OCI runtime's notes: one `config` event per field ("FIELD: text") */
	for (unsigned i = 0; k >= 0 && i < r->p->n_config_notes; i++) {
		const char *nt = r->p->config_notes[i], *sep = strstr(nt, ": ");
		char field[160];
		snprintf(field, sizeof(field), "%.*s", sep ? (int)(sep - nt) : 0, nt);
		k = MOAT_AUDIT(o->audit, MOAT_EV_CONFIG, MOAT_F_STR("source", "config.json"),
			       MOAT_F_STR("field", field[0] ? field : NULL),
			       MOAT_F_STR("note", sep ? sep + 2 : nt));
	}
	if (k < 0)
		return moat_error_set(r->err, "audit", -k, "cannot write the audit log %s: %s",
				      o->log_path, strerror(-k));
	return 0;
}

void moat_observe_limit(struct moat_run *r, const char *what, const char *path, uint64_t limit,
			const char *reason)
{
	struct moat_audit *a = moat_run_audit(r);
	struct moat_audit_field f[4];
	size_t n = 0;
	if (!a)
		return;
	f[n++] = (struct moat_audit_field)MOAT_F_STR("what", what);
	if (path)
		f[n++] = (struct moat_audit_field)MOAT_F_STR("path", path);
	if (limit)
		f[n++] = (struct moat_audit_field)MOAT_F_UINT("limit", limit);
	if (reason)
		f[n++] = (struct moat_audit_field)MOAT_F_STR("reason", reason);
	moat_audit_event(a, MOAT_EV_LIMIT, f, n);
	f[0] = (struct moat_audit_field)MOAT_F_STR("cause", "limit");
	f[1] = (struct moat_audit_field)MOAT_F_STR("what", what);
	n = 2;
	if (path)
		f[n++] = (struct moat_audit_field)MOAT_F_STR("path", path);
	moat_audit_event(a, MOAT_EV_ALERT, f, n);
}

/* A denied call: its raw arguments, the ones that say what it tried decoded
 * (request, family, flags…: moat_seccomp_describe_args), who made it. */
static void write_denied(struct moat_audit *a, const struct moat_seccomp_event *ev)
{
	struct moat_seccomp_arg d[MOAT_SECCOMP_MAX_DESCRIBED];
	char names[MOAT_SECCOMP_DESCRIBE_BUF], hex[6][24];
	const char *args[7];
	/* decoded value + symbolic name per argument, e.g. "request" and "request_name" */
	struct moat_audit_field f[12 + 2 * MOAT_SECCOMP_MAX_DESCRIBED];
	char name_keys[MOAT_SECCOMP_MAX_DESCRIBED][40];
	size_t n = 0;

	for (int i = 0; i < 6; i++) {
		snprintf(hex[i], sizeof(hex[i]), "0x%llx", (unsigned long long)ev->args[i]);
		args[i] = hex[i];
	}
	args[6] = NULL;
	unsigned nd = moat_seccomp_describe_args(ev->syscall, ev->args, d, names);
	f[n++] = (struct moat_audit_field)MOAT_F_STR("name", ev->syscall);
	f[n++] = (struct moat_audit_field)MOAT_F_INT("nr", ev->nr);
	f[n++] = (struct moat_audit_field)MOAT_F_STRVN("args", args, 6);
	for (unsigned i = 0; i < nd; i++) {
		f[n++] = (struct moat_audit_field)MOAT_F_UINT(d[i].key, d[i].value);
		if (d[i].name) {
			snprintf(name_keys[i], sizeof(name_keys[i]), "%s_name", d[i].key);
			f[n++] = (struct moat_audit_field)MOAT_F_STR(name_keys[i], d[i].name);
		}
	}
	f[n++] = (struct moat_audit_field)MOAT_F_INT("pid", ev->pid);
	f[n++] = (struct moat_audit_field)MOAT_F_INT("ppid", ev->ppid);
	f[n++] = (struct moat_audit_field)MOAT_F_STR("errno", strerrorname_np(ev->err));
	f[n++] = (struct moat_audit_field)MOAT_F_STR("exe", ev->exe);
	f[n++] = (struct moat_audit_field)MOAT_F_STR("cwd", ev->cwd);
	f[n++] = (struct moat_audit_field)MOAT_F_STR("layer", "seccomp");
	f[n++] = (struct moat_audit_field)MOAT_F_DENIED;
	moat_audit_event(a, MOAT_EV_SYSCALL, f, n);
	MOAT_AUDIT(a, MOAT_EV_ALERT, MOAT_F_STR("cause", "syscall_denied"),
		   MOAT_F_STR("name", ev->syscall), MOAT_F_INT("pid", ev->pid),
		   MOAT_F_STR("exe", ev->exe));
}

void moat_observe_seccomp(struct moat_run *r, const struct moat_seccomp_event *ev)
{
	struct moat_audit *a = moat_run_audit(r);
	const char *argv[MOAT_SECCOMP_EV_ARGC + 1];
	unsigned n = 0;

	if (!a)
		return;
	if (ev->type == MOAT_SECCOMP_EVENT_DENIED) {
		write_denied(a, ev);
		return;
	}
	if (ev->missing)
		return;
	for (const char *s; n < MOAT_SECCOMP_EV_ARGC && (s = moat_seccomp_event_arg(ev, n)); n++)
		argv[n] = s;
	argv[n] = NULL;
	MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_INT("pid", ev->pid), MOAT_F_INT("ppid", ev->ppid),
		   MOAT_F_STR("path", ev->path), MOAT_F_STRVN("argv", argv, n),
		   MOAT_F_STR("cwd", ev->cwd), MOAT_F_STR("syscall", ev->syscall),
		   MOAT_F_BOOL("truncated", ev->truncated));
}

/* ---- finish ----------------------------------------------------------------- */

static void collect_output(struct moat_run *r)
{
	struct moat_observe *o = r->obs;
	struct moat_copy_report rep;
	int k;

	if (r->output_fd < 0 || o->out_fd < 0)
		return;
	k = moat_copytree_safe(r->output_fd, o->out_fd, r->plan->limits.max_output,
			       MOAT_COPY_OVERWRITE, &rep);
	r->st->output_files = rep.files;
	r->st->output_skipped = rep.skipped_symlinks + rep.skipped_special;
	for (unsigned i = 0; i < rep.n_notes; i++)
		MOAT_AUDIT(o->audit, MOAT_EV_FILE, MOAT_F_STR("where", "output"),
			   MOAT_F_STR("path", rep.notes[i].path),
			   MOAT_F_STR("skipped", rep.notes[i].reason),
			   MOAT_F_STR("target", rep.notes[i].target), MOAT_F_DENIED);
	MOAT_AUDIT(o->audit, MOAT_EV_FILE, MOAT_F_STR("where", "output"),
		   MOAT_F_STR("change", "collected"), MOAT_F_UINT("files", rep.files),
		   MOAT_F_UINT("dirs", rep.dirs), MOAT_F_UINT("bytes", rep.bytes),
		   MOAT_F_UINT("skipped_symlinks", rep.skipped_symlinks),
		   MOAT_F_UINT("skipped_special", rep.skipped_special),
		   MOAT_F_UINT("stripped_modes", rep.stripped_modes),
		   MOAT_F_STR("error", k < 0 ? strerrorname_np(-k) : NULL));
	if (k == -EFBIG || k == -E2BIG || k == -ELOOP) {
		MOAT_AUDIT(o->audit, MOAT_EV_LIMIT, MOAT_F_STR("what", "output"),
			   MOAT_F_UINT("limit", r->plan->limits.max_output),
			   MOAT_F_STR("reason", strerrorname_np(-k)),
			   MOAT_F_STR("path", rep.stopped_at));
		MOAT_AUDIT(o->audit, MOAT_EV_ALERT, MOAT_F_STR("cause", "limit"),
			   MOAT_F_STR("what", "output"), MOAT_F_STR("path", rep.stopped_at));
		snprintf(r->st->output_error, sizeof(r->st->output_error),
			 "/output collection stopped (%s): only part was copied", strerror(-k));
	} else if (k < 0) {
		snprintf(r->st->output_error, sizeof(r->st->output_error),
			 "/output collection failed: %s", strerror(-k));
	}
	moat_copy_report_done(&rep);
}

/* src into dst, cut where a UTF-8 character starts if it does not fit */
static void copy_raw(char *dst, size_t len, const char *src)
{
	size_t n = moat_utf8_cut(src, strlen(src), len - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

static enum moat_review_state review_state(enum moat_fs_state s)
{
	switch (s) {
	case MOAT_FS_REFUSED:
		return MOAT_REVIEW_REFUSED;
	case MOAT_FS_FAILED:
		return MOAT_REVIEW_FAILED;
	case MOAT_FS_CONFLICT:
		return MOAT_REVIEW_CONFLICT;
	default:
		return MOAT_REVIEW_HELD;
	}
}

void moat_observe_review_entries(struct moat_status *st, const struct moat_manifest *m)
{
	st->n_review = 0;
	st->review_more = 0;
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		if (e->state != MOAT_FS_HELD && e->state != MOAT_FS_REFUSED &&
		    e->state != MOAT_FS_FAILED && e->state != MOAT_FS_CONFLICT)
			continue;
		if (st->n_review >= ELEMENTSOF(st->review)) {
			st->review_more++;
			continue;
		}
		struct moat_review_entry *v = &st->review[st->n_review++];
		v->state = review_state(e->state);
		copy_raw(v->path, sizeof(v->path), e->path);
		snprintf(v->reason, sizeof(v->reason), "%s%s%s",
			 !e->refused && e->flagged && e->cls ? moat_risk_class_name(e->cls) : "",
			 !e->refused && e->flagged && e->cls ? ": " : "",
			 e->refused	      ? e->refused
				 : e->flagged ? e->flagged
				 : e->err     ? strerror(e->err)
					      : "target changed during the run");
	}
}

/* "deps: node_modules/ 300; executable: build/app" for the applied entries
 * of the listed classes: the first two components of a dependency path (the
 * tree), whole paths of executables, at most a few of each. */
void moat_observe_listed(struct moat_status *st, const struct moat_manifest *m)
{
	static const enum moat_risk_class cl[] = {MOAT_RISK_DEPS, MOAT_RISK_EXECUTABLE,
						  MOAT_RISK_NONE};
	size_t len = 0;

	st->listed[0] = '\0';
	st->files_listed = st->files_accepted_automatic = 0;
	for (size_t c = 0; c < ELEMENTSOF(cl); c++) {
		char groups[4][128];
		uint64_t counts[4] = {0}, more = 0, total = 0;
		size_t ng = 0;
		for (size_t i = 0; i < m->n; i++) {
			const struct moat_fs_entry *e = &m->entries[i];
			if (!e->flagged || !e->accepted || e->state != MOAT_FS_APPLIED)
				continue;
			if (cl[c] == MOAT_RISK_NONE
				    ? (e->cls == MOAT_RISK_DEPS || e->cls == MOAT_RISK_EXECUTABLE)
				    : e->cls != cl[c])
				continue;
			char g[128];
			size_t n = strlen(e->path);
			if (cl[c] == MOAT_RISK_DEPS) {
				/* up to and including the dependency directory */
				size_t k = moat_risk_deps_prefix(e->path);
				if (k)
					n = k;
			}
			moat_escape(e->path, n, g, sizeof(g));
			if (cl[c] == MOAT_RISK_DEPS)
				strncat(g, "/", sizeof(g) - strlen(g) - 1);
			total++;
			size_t j = 0;
			while (j < ng && !streq(groups[j], g))
				j++;
			if (j == ng && ng < ELEMENTSOF(groups))
				snprintf(groups[ng++], sizeof(groups[0]), "%s", g);
			if (j < ng)
				counts[j]++;
			else
				more++;
		}
		if (!total)
			continue;
		st->files_listed += total;
		if (cl[c] == MOAT_RISK_NONE)
			st->files_accepted_automatic = total;
		int w = snprintf(
			st->listed + len, sizeof(st->listed) - len, "%s%s:", len ? "; " : "",
			cl[c] == MOAT_RISK_DEPS			? "dependency trees"
				: cl[c] == MOAT_RISK_EXECUTABLE ? "new executables"
								: "ACCEPTED (run automatically)");
		for (size_t j = 0; w > 0 && j < ng; j++) {
			len += (size_t)w < sizeof(st->listed) - len ? (size_t)w : 0;
			w = snprintf(st->listed + len, sizeof(st->listed) - len, " %s%s", groups[j],
				     j + 1 < ng ? "" : "");
			if (w > 0 && counts[j] > 1 && (size_t)w < sizeof(st->listed) - len) {
				len += (size_t)w;
				w = snprintf(st->listed + len, sizeof(st->listed) - len, " %llu",
					     (unsigned long long)counts[j]);
			}
		}
		if (w > 0)
			len += (size_t)w < sizeof(st->listed) - len ? (size_t)w : 0;
		if (more && len < sizeof(st->listed))
			len += (size_t)snprintf(st->listed + len, sizeof(st->listed) - len,
						" and %llu more", (unsigned long long)more);
		if (len >= sizeof(st->listed))
			len = sizeof(st->listed) - 1;
	}
}

static void review_workspace(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	struct moat_observe *o = r->obs;
	struct moat_flag_rules *rules = NULL;
	struct moat_manifest *m = NULL;
	struct moat_fsapply_report rep = {0};
	int k;

	if (r->upper_fd < 0 || o->ws_fd < 0)
		return;
	k = moat_flag_rules_new((const char *const *)p->flag_patterns, p->n_flag_patterns, &rules);
	if (k >= 0)
		k = moat_fsdiff_compute_ex(r->upper_fd, o->ws_fd, rules,
					   &(struct moat_fsdiff_limits){.max_file_bytes = p->disk,
									.workspace = p->workspace,
									.since_ns = o->ws_since_ns},
					   &m);
	moat_flag_rules_free(rules);
	if (k < 0) {
		MOAT_AUDIT(o->audit, MOAT_EV_FILE, MOAT_F_STR("where", "workspace"),
			   MOAT_F_STR("error", strerrorname_np(-k)), MOAT_F_DENIED);
		MOAT_AUDIT(
			o->audit, MOAT_EV_ALERT, MOAT_F_STR("cause", "workspace"),
			MOAT_F_STR("reason",
				   "the change manifest could not be computed: nothing applied"));
		r->st->review_errno = -k;
		return;
	}
	m->workspace = strdup(p->workspace);
	/* the classes and the user's accept/hold items decide what safe holds */
	const struct moat_review_rules rr = {
		.accept = (const char *const *)p->review_accept,
		.n_accept = p->n_review_accept,
		.hold = (const char *const *)p->review_hold,
		.n_hold = p->n_review_hold,
		.accept_automatic = p->accept_automatic,
	};
	moat_review_decide(&rr, m);
	/* a one-shot run whose command failed, timed out or was interrupted
	 * applies nothing unless --apply-on-failure: a half-done change set is
	 * kept for `moat apply`, never half applied */
	const struct moat_status *cst = r->st;
	bool failed = cst->reason != MOAT_REASON_EXITED || cst->status != 0;
	r->st->held_failed = r->argv_copy && failed && !p->apply_on_failure &&
		p->apply != MOAT_APPLY_NEVER && m->n;
	if (p->apply != MOAT_APPLY_NEVER && !r->st->held_failed)
		(void)moat_fsdiff_apply(m, r->upper_fd, o->ws_fd,
					p->apply == MOAT_APPLY_ALL ? MOAT_FSAPPLY_ALL
								   : MOAT_FSAPPLY_SAFE,
					NULL, &rep);
	else
		for (size_t i = 0; i < m->n; i++)
			if (m->entries[i].refused)
				m->entries[i].state = MOAT_FS_REFUSED;
			else if (m->entries[i].flagged)
				m->entries[i].state = MOAT_FS_HELD;
	/* keep what was not applied, for `moat apply`: all or nothing, within the
	 * per-run cap and what is left of the runs directory's total cap */
	uint64_t cap = p->held_max, used = 0, need = 0, dropped = 0;
	_cleanup_free_ char *runs = NULL;
	/* (the usage walk of every run's directory only when there is
	 * something to hold) */
	if (m->n && p->runs_max && moat_runs_dir(&runs) >= 0 && moat_runs_usage(runs, &used) >= 0) {
		uint64_t avail = used >= p->runs_max ? 1 : p->runs_max - used;
		if (!cap || avail < cap)
			cap = avail;
	}
	k = moat_fsdiff_save_ex(m, r->upper_fd, o->run_dirfd, cap, &need);
	for (size_t i = 0; i < m->n; i++)
		dropped += m->entries[i].state == MOAT_FS_DROPPED;
	if (k == -EFBIG) {
		MOAT_AUDIT(o->audit, MOAT_EV_LIMIT, MOAT_F_STR("what", "held"),
			   MOAT_F_UINT("limit", cap), MOAT_F_UINT("needed", need),
			   MOAT_F_UINT("held_max", p->held_max),
			   MOAT_F_UINT("runs_max", p->runs_max), MOAT_F_UINT("runs_used", used),
			   MOAT_F_UINT("dropped", dropped));
		MOAT_AUDIT(o->audit, MOAT_EV_ALERT, MOAT_F_STR("cause", "limit"),
			   MOAT_F_STR("what", "held"),
			   MOAT_F_STR("reason", "held-back changes over the cap were not kept"));
	} else if (k < 0) {
		MOAT_AUDIT(o->audit, MOAT_EV_FILE, MOAT_F_STR("where", "workspace"),
			   MOAT_F_STR("error", "could not save held changes"),
			   MOAT_F_STR("errno", strerrorname_np(-k)));
	}
	(void)moat_manifest_audit(m, o->audit);
	for (size_t i = 0; i < m->n; i++) {
		const struct moat_fs_entry *e = &m->entries[i];
		r->st->files_changed++;
		r->st->files_flagged += !!e->flagged;
		r->st->files_refused += !!e->refused;
		r->st->files_held += e->state == MOAT_FS_HELD || e->state == MOAT_FS_PENDING ||
			e->state == MOAT_FS_CONFLICT;
		r->st->files_applied += e->state == MOAT_FS_APPLIED;
	}
	moat_observe_review_entries(r->st, m);
	moat_observe_listed(r->st, m);
	if (p->accept_automatic)
		MOAT_AUDIT(o->audit, MOAT_EV_CONFIG, MOAT_F_STR("source", "policy"),
			   MOAT_F_STR("key", "audit.accept_automatic"),
			   MOAT_F_UINT("accepted_automatic", r->st->files_accepted_automatic),
			   MOAT_F_STR("reason",
				      "accept may apply changes that run code "
				      "automatically on the host"));
	if (k == -EFBIG) {
		r->st->held_not_kept = true;
		r->st->held_dropped = dropped;
		r->st->held_needed = need;
		r->st->held_cap = cap;
	}
	moat_manifest_free(m);
}

static void write_exit(struct moat_run *r)
{
	moat_observe_start(r); /* a run that failed before its start still has one */
	struct moat_observe *o = r->obs;
	const struct moat_status *st = r->st;

	if (!o || !o->audit || o->exit_written)
		return;
	o->exit_written = true;
	MOAT_AUDIT(
		o->audit, MOAT_EV_EXIT, MOAT_F_STR("reason", moat_reason_name(st->reason)),
		MOAT_F_INT("exit_code", st->exit_code), MOAT_F_INT("status", st->status),
		MOAT_F_INT("signal", st->signal), MOAT_F_UINT("wall_us", st->wall_us),
		MOAT_F_UINT("cpu_user_us", st->cpu_user_us),
		MOAT_F_UINT("cpu_sys_us", st->cpu_sys_us), MOAT_F_UINT("mem_peak", st->mem_peak),
		MOAT_F_UINT("pids_peak", st->pids_peak),
		MOAT_F_UINT("execs", moat_audit_count(o->audit, MOAT_EV_EXEC)),
		MOAT_F_UINT("net_denied", moat_audit_count_denied(o->audit, MOAT_EV_NET)),
		MOAT_F_UINT("denied_syscalls", moat_audit_count_denied(o->audit, MOAT_EV_SYSCALL)),
		MOAT_F_UINT("files_changed", st->files_changed),
		MOAT_F_UINT("files_flagged", st->files_flagged),
		MOAT_F_UINT("files_held", st->files_held),
		MOAT_F_UINT("output_files", st->output_files),
		MOAT_F_STR("error",
			   r->err && r->err->message[0] && st->reason == MOAT_REASON_SETUP_FAILED
				   ? r->err->message
				   : NULL));
}

/* rw: a repository that appeared during the run was written unreviewed; the
 * user must know before running git there. */
static void recheck_rw_workspace(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	struct moat_observe *o = r->obs;
	struct moat_workspace_check c;

	if (!p->workspace || p->workspace_mode != MOAT_WS_RW || o->wsc.repo[0])
		return;
	if (moat_workspace_check(p, &c, NULL) < 0 || !c.repo[0])
		return;
	MOAT_AUDIT(o->audit, MOAT_EV_ALERT, MOAT_F_STR("cause", "workspace"),
		   MOAT_F_STR("reason",
			      "a git repository appeared in the rw workspace during the "
			      "run: its config and hooks were not reviewed"),
		   MOAT_F_STR("path", c.repo));
	copy_raw(r->st->rw_new_repo, sizeof(r->st->rw_new_repo), c.repo);
}

int moat_observe_finish_workspace(struct moat_run *r, int k)
{
	if (!r->obs)
		return k;
	collect_output(r);
	review_workspace(r);
	recheck_rw_workspace(r);
	/* --held-exit N: a run that left any change unapplied (held, pending,
	 * not kept, or no manifest at all) exits N, whatever the command's
	 * status (which stays in "status" and the exit event) */
	const struct moat_status *st = r->st;
	if (r->p->held_exit && (st->files_held || st->held_dropped || st->review_errno))
		r->st->exit_code = r->p->held_exit;
	return k;
}

int moat_observe_finish(struct moat_run *r, int k)
{
	if (!r->obs)
		return k;
	if (!r->st->execs)
		r->st->execs = moat_audit_count(r->obs->audit, MOAT_EV_EXEC);
	write_exit(r);
	return k;
}

void moat_observe_teardown(struct moat_run *r)
{
	struct moat_observe *o = r->obs;
	if (!o)
		return;
	write_exit(r);
	reap_alerts(o);
	moat_audit_free(o->audit);
	safe_close(o->run_dirfd);
	safe_close(o->ws_fd);
	safe_close(o->out_fd);
	free(o->run_dir);
	free(o->log_path);
	free(o);
	r->obs = NULL;
}
