/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Snapshots of a sandbox's writable state (moat.h, docs/SESSIONS.md).
 *
 * The writable trees are the workspace overlay (its upper layer holds every
 * change; its lower layer is the host's workspace, never written), /tmp and
 * the home directory (tmpfs). A snapshot copies what the sandbox wrote (the
 * upper layer, and the two tmpfs trees) into a store the sandbox cannot see:
 * a tmpfs of the sandbox's user namespace that is mounted nowhere (moat holds
 * it by a descriptor), sized by the policy's disk limit. A restore brings the
 * live trees to the snapshot by changing only what differs, through the
 * sandbox's own mounts: the workspace's target is a read-only overlay of the
 * snapshot's upper copy over the same lower tree, and only the names either
 * upper layer holds are compared. Nothing of the unchanged workspace is ever
 * copied, and the workspace's overlay stays the one the sandbox started
 * with, so the end-of-run review sees one upper layer as always.
 *
 * Why not new overlay layers (a frozen upper as a lower, a fresh upper):
 * Landlock rules are bound to inodes, and the sandbox's init restricted
 * itself (and everything it forks) with a rule on the workspace overlay's
 * root; a new overlay superblock has a new root that no rule covers, and
 * a Landlock domain can never be widened again. Keeping the mount keeps the
 * rule.
 *
 * The work is done by a short-lived child of the supervisor that joins the
 * sandbox's user and mount namespaces (setns on the init's pidfd) as the
 * sandbox's user: what it writes is the sandbox user's, and it reaches
 * only what the sandbox's mounts show. It never follows a symlink and never
 * crosses into another mount (snapshot_tree.c). No process of the sandbox
 * runs meanwhile (refused with -EBUSY unless force, which kills them first).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit.h"
#include "policy/errors.h"
#include "audit/observe.h"
#include "policy/plan.h"
#include "policy/policy.h"
#include "supervisor/run.h"
#include "workspace/snapshot.h"
#include "shared/macro.h"

#define STAGE "snapshot"

enum {
	TREE_WS,
	TREE_TMP,
	TREE_HOME,
	N_TREES
};
static const char *const tree_dir[N_TREES] = {"ws", "tmp", "home"};

struct snap_entry {
	char name[MOAT_SNAPSHOT_NAME_MAX + 1];
	uint64_t created_us, bytes;
};

struct moat_snap {
	int store_fd; /* the store tmpfs's root (a detached mount), -1 until made */
	struct snap_entry v[MOAT_SNAPSHOTS_MAX];
	unsigned n;
	unsigned next_auto; /* snap-N */
	int current; /* index in v of what the files stack on, -1: the start */
};

/* What the helper reports. */
struct helper_result {
	int32_t err; /* positive errno, 0 */
	uint32_t pad;
	uint64_t bytes;
	char msg[240];
};

void moat_snap_free(struct moat_run *r)
{
	if (!r->snap)
		return;
	safe_close(r->snap->store_fd);
	free(r->snap);
	r->snap = NULL;
}

static int check_name(const char *name, struct moat_error *err)
{
	size_t n = name ? strlen(name) : 0;
	bool ok = n > 0 && n <= MOAT_SNAPSHOT_NAME_MAX;
	for (size_t i = 0; ok && i < n; i++) {
		char c = name[i];
		bool alnum =
			(c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
		ok = alnum || (i > 0 && (c == '_' || c == '.' || c == '-'));
	}
	if (!ok)
		return moat_error_set(
			err, STAGE, EINVAL,
			"a snapshot name is 1 to %d bytes of [A-Za-z0-9_.-], starting "
			"with a letter or digit",
			MOAT_SNAPSHOT_NAME_MAX);
	return 0;
}

static int find(const struct moat_snap *s, const char *name)
{
	for (unsigned i = 0; i < s->n; i++)
		if (streq(s->v[i].name, name))
			return (int)i;
	return -1;
}

/* The sandbox's path of a tree, or NULL if it has none moat may snapshot:
 * the workspace only as an overlay (rw and ro workspaces are the host's
 * files), /tmp and home only when the last mount there is the plan's tmpfs
 * (a --rw or --ro bind over them is the host's). */
static const char *tree_path(const struct moat_run *r, int t, mode_t *ret_mode)
{
	const struct moat_plan *pl = r->plan;
	const char *dest = t == TREE_WS ? r->p->workspace : t == TREE_TMP ? "/tmp" : pl->id.home;
	if (!dest)
		return NULL;
	if (t == TREE_WS &&
	    (r->p->workspace_mode != MOAT_WS_OVERLAY || r->upper_fd < 0 || r->lower_fd < 0))
		return NULL;
	int last = -1;
	for (unsigned i = 0; i < pl->n_steps; i++) {
		const struct moat_step *st = &pl->steps[i];
		if (st->dest && streq(st->dest, dest)) {
			last = (int)st->op;
			*ret_mode = st->mode & 07777;
		}
	}
	if (last != (t == TREE_WS ? MOAT_STEP_OVERLAY : MOAT_STEP_TMPFS))
		return NULL;
	return dest;
}

/* Whether pid (the host's view) is a zombie: it runs nothing and holds no
 * file; the init reaps it. */
static bool zombie(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT; /* reaped meanwhile */
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	const char *close_paren = strrchr(buf, ')'); /* the name may hold anything */
	return close_paren && close_paren[1] == ' ' &&
		(close_paren[2] == 'Z' || close_paren[2] == 'X');
}

/* Busy: the init has a child that is not a zombie (every process of the
 * sandbox descends from it: orphans are reparented to it). */
static int busy(const struct moat_run *r)
{
	char path[64], buf[4096];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)r->init_pid,
		 (int)r->init_pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n < 0)
		return negerrno();
	if (n == (ssize_t)sizeof(buf) - 1)
		return 1; /* a long list: certainly something runs */
	buf[n] = '\0';
	char *save = NULL;
	for (char *t = strtok_r(buf, " \n", &save); t; t = strtok_r(NULL, " \n", &save)) {
		long pid = strtol(t, NULL, 10);
		if (pid > 0 && !zombie((pid_t)pid))
			return 1;
	}
	return 0;
}

/* Refused while a process runs, unless force: then every process is killed
 * and reaped first (returns 1). */
static int quiesce(struct moat_run *r, bool force, struct moat_error *err)
{
	if (r->init_exited)
		return moat_error_set(err, STAGE, ESRCH, "the sandbox is gone");
	int k = busy(r);
	/* a process that is ending (e.g. a set-up helper of the init right
	 * after create) is waited for a little */
	for (unsigned i = 0; k > 0 && i < 25; i++) {
		(void)moat_sandbox_poll(r, 10);
		k = busy(r);
	}
	if (k < 0)
		return moat_error_set(err, STAGE, -k, "cannot tell whether processes run: %s",
				      strerror(-k));
	if (!k)
		return 0;
	if (!force)
		return moat_error_set(err, STAGE, EBUSY,
				      "processes run in the sandbox (stop them, or force: they are "
				      "killed)");
	struct moat_ctl_req rq = {.type = MOAT_CTL_SIGNAL_ALL, .sig = SIGKILL};
	if ((k = moat_ctl_send(r, &rq, NULL, 0)) < 0)
		return moat_error_set(err, STAGE, -k, "cannot kill the sandbox's processes");
	for (unsigned i = 0; i < 5000; i++) {
		(void)moat_sandbox_poll(r, 1);
		if (r->init_exited)
			return moat_error_set(err, STAGE, ESRCH, "the sandbox is gone");
		if ((k = busy(r)) <= 0)
			break;
		/* a process forked after the first signal */
		if (i % 100 == 99)
			(void)moat_ctl_send(r, &rq, NULL, 0);
	}
	if (k != 0)
		return moat_error_set(err, STAGE, k < 0 ? -k : EBUSY,
				      "the sandbox's processes did not end");
	return 1; /* killed */
}

enum op {
	OP_SNAPSHOT,
	OP_RESTORE,
	OP_RESET
};

struct job {
	enum op op;
	const char *name; /* the snapshot (OP_SNAPSHOT: the new one) */
	const char *path[N_TREES];
	mode_t mode[N_TREES]; /* of the tree's root at the start */
	int upper_fd, lower_fd, store_fd;
	uint64_t disk;
	const struct moat_plan *plan;
};

static _Noreturn void helper_fail(int out, int err, const char *fmt, ...) _printf_(3, 4);
static _Noreturn void helper_fail(int out, int err, const char *fmt, ...)
{
	struct helper_result res = {.err = err > 0 ? err : EIO};
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(res.msg, sizeof(res.msg), fmt, ap);
	va_end(ap);
	(void)!write(out, &res, sizeof(res));
	_exit(1);
}

static int sys_fsconfig(int fd, unsigned cmd, const char *key, const char *val, int aux)
{
	return (int)syscall(SYS_fsconfig, fd, cmd, key, val, aux);
}

/* A new detached tmpfs of the sandbox's user namespace: the store. */
static int make_store(uint64_t disk)
{
	char size[32];
	_cleanup_close_ int fs = (int)syscall(SYS_fsopen, "tmpfs", FSOPEN_CLOEXEC);
	if (fs < 0)
		return negerrno();
	snprintf(size, sizeof(size), "%llu", (unsigned long long)disk);
	if ((disk && sys_fsconfig(fs, FSCONFIG_SET_STRING, "size", size, 0) < 0) ||
	    sys_fsconfig(fs, FSCONFIG_SET_STRING, "mode", "0700", 0) < 0 ||
	    sys_fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return negerrno();
	int m = (int)syscall(SYS_fsmount, fs, FSMOUNT_CLOEXEC,
			     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
	return m < 0 ? negerrno() : m;
}

/* A live tree, as the sandbox's mounts show it (the helper's root is the
 * sandbox's): no symlink on the way, and the path was the plan's. */
static int open_live(const char *path)
{
	struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC,
			       .resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS};
	int fd = (int)syscall(SYS_openat2, AT_FDCWD, path, &how, sizeof(how));
	return fd < 0 ? negerrno() : fd;
}

static void helper_snapshot(const struct job *j, int out, struct helper_result *res)
{
	int k = 0;
	if (mkdirat(j->store_fd, j->name, 0700) < 0)
		helper_fail(out, errno, "cannot create the snapshot in the store: %s",
			    strerror(errno));
	_cleanup_close_ int dir = openat(j->store_fd, j->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		helper_fail(out, errno, "cannot open the snapshot: %s", strerror(errno));
	for (int t = 0; t < N_TREES; t++) {
		if (!j->path[t])
			continue;
		_cleanup_close_ int src = t == TREE_WS
			? openat(j->upper_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
			: open_live(j->path[t]);
		if (src < 0)
			helper_fail(out, errno, "cannot open %s: %s", j->path[t], strerror(errno));
		if (mkdirat(dir, tree_dir[t], 0700) < 0)
			helper_fail(out, errno, "cannot create the snapshot of %s: %s", j->path[t],
				    strerror(errno));
		_cleanup_close_ int dst =
			openat(dir, tree_dir[t], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dst < 0 || (k = moat_snap_copy(src, dst, &res->bytes)) < 0)
			helper_fail(out, dst < 0 ? errno : -k, "cannot copy %s: %s%s", j->path[t],
				    strerror(dst < 0 ? errno : -k),
				    (dst >= 0 && k == -ENOSPC) ? " (the disk limit)" : "");
	}
}

static void helper_restore(const struct job *j, int out)
{
	int k = 0;
	_cleanup_close_ int dir = -1, empty = -1;
	if (j->op == OP_RESTORE) {
		dir = openat(j->store_fd, j->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (dir < 0)
			helper_fail(out, errno, "cannot open the snapshot: %s", strerror(errno));
	} else {
		/* the start of /tmp and home: empty */
		(void)mkdirat(j->store_fd, ".empty", 0700);
		empty = openat(j->store_fd, ".empty", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (empty < 0)
			helper_fail(out, errno, "cannot open the store: %s", strerror(errno));
	}
	for (int t = 0; t < N_TREES; t++) {
		if (!j->path[t])
			continue;
		_cleanup_close_ int live = open_live(j->path[t]);
		if (live < 0)
			helper_fail(out, -live, "cannot open %s: %s", j->path[t], strerror(-live));
		_cleanup_close_ int snap = -1;
		if (dir >= 0) {
			snap = openat(dir, tree_dir[t], O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			if (snap < 0)
				helper_fail(out, errno, "the snapshot has no %s: %s", j->path[t],
					    strerror(errno));
		}
		if (t == TREE_WS) {
			k = moat_snap_sync(snap, j->lower_fd, live, j->upper_fd, false, snap >= 0);
			if (k >= 0)
				k = moat_snap_normalize(j->upper_fd, j->lower_fd);
		} else {
			k = moat_snap_sync(snap >= 0 ? snap : empty, -1, live, -1, true, snap >= 0);
			/* the start: empty, with the plan's mode */
			if (k >= 0 && snap < 0 && fchmod(live, j->mode[t]) < 0)
				k = negerrno();
		}
		if (k < 0)
			helper_fail(out, -k, "cannot bring %s back: %s", j->path[t], strerror(-k));
	}
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Closes every descriptor above 2 but keep[0..n) (-1 entries ignored): the
 * helper holds nothing else of the supervisor's (in `moat serve`, other
 * sandboxes' descriptors). */
static int keep_only(int *keep, unsigned n)
{
	qsort(keep, n, sizeof(*keep), cmp_int);
	unsigned from = 3;
	for (unsigned i = 0; i < n; i++) {
		if (keep[i] < (int)from) {
			if (keep[i] >= 0 && keep[i] + 1 > (int)from)
				from = (unsigned)keep[i] + 1;
			continue;
		}
		if ((unsigned)keep[i] > from &&
		    syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0) < 0)
			return negerrno();
		from = (unsigned)keep[i] + 1;
	}
	return syscall(SYS_close_range, from, ~0U, 0) < 0 ? negerrno() : 0;
}

/* In the child: join the sandbox, do the job, report. The namespaces are
 * joined by the descriptors the init sent; the sandbox's user has every
 * capability in its own user namespace there (as the init had while it
 * mounted): uid 0 is not mapped, so the uid change keeps them. */
static _Noreturn void helper_main(const struct job *j, int userns, int mntns, int out, int sock)
{
	struct helper_result res = {0};
	const struct moat_plan_identity *id = &j->plan->id;
	int keep[] = {out, sock, userns, mntns, j->upper_fd, j->lower_fd, j->store_fd};
	if (keep_only(keep, ELEMENTSOF(keep)) < 0)
		helper_fail(out, errno, "close_range: %s", strerror(errno));
	/* the user namespace first: joining the mount namespace needs
	 * CAP_SYS_CHROOT and CAP_SYS_ADMIN in the caller's own one */
	if (setns(userns, CLONE_NEWUSER) < 0 || setns(mntns, CLONE_NEWNS) < 0)
		helper_fail(out, errno, "cannot join the sandbox's namespaces: %s",
			    strerror(errno));
	if (setresgid(id->gid, id->gid, id->gid) < 0 || setresuid(id->uid, id->uid, id->uid) < 0)
		helper_fail(out, errno, "cannot become the sandbox's user: %s", strerror(errno));
	struct job jj = *j;
	if (jj.store_fd < 0) {
		int st = make_store(jj.disk);
		if (st < 0)
			helper_fail(out, -st, "cannot create the snapshots' store: %s",
				    strerror(-st));
		if (moat_sandbox_send_fd(sock, 1, st) < 0)
			helper_fail(out, errno, "cannot hand the store to moat");
		jj.store_fd = st;
	}
	if (jj.op == OP_SNAPSHOT)
		helper_snapshot(&jj, out, &res);
	else
		helper_restore(&jj, out);
	(void)!write(out, &res, sizeof(res));
	_exit(0);
}

static int run_helper(struct moat_run *r, struct job *j, uint64_t *ret_bytes,
		      struct moat_error *err)
{
	int pp[2], sp[2];
	if (pipe2(pp, O_CLOEXEC) < 0)
		return moat_error_set(err, STAGE, errno, "pipe: %s", strerror(errno));
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sp) < 0) {
		int e = errno;
		close(pp[0]);
		close(pp[1]);
		return moat_error_set(err, STAGE, e, "socketpair: %s", strerror(e));
	}
	pid_t pid = fork();
	if (pid == 0) {
		close(pp[0]);
		close(sp[0]);
		helper_main(j, r->userns_fd, r->mntns_fd, pp[1], sp[1]);
	}
	int e = errno;
	close(pp[1]);
	close(sp[1]);
	if (pid < 0) {
		close(pp[0]);
		close(sp[0]);
		return moat_error_set(err, STAGE, e, "fork: %s", strerror(e));
	}
	if (j->store_fd < 0) {
		int kind = 0, fd = -1;
		if (moat_sandbox_recv_fd(sp[0], &kind, &fd) >= 0 && fd >= 0)
			r->snap->store_fd = fd;
	}
	close(sp[0]);
	struct helper_result res = {.err = EIO};
	ssize_t n;
	do
		n = read(pp[0], &res, sizeof(res));
	while (n < 0 && errno == EINTR);
	close(pp[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (n != (ssize_t)sizeof(res))
		return moat_error_set(err, STAGE, EIO, "the snapshot helper died");
	if (res.err) {
		res.msg[sizeof(res.msg) - 1] = '\0';
		return moat_error_set(err, STAGE, res.err, "%s", res.msg);
	}
	if (ret_bytes)
		*ret_bytes = res.bytes;
	return 0;
}

/* One line in the sandbox's audit stream per request, done or not. */
static int record(struct moat_run *r, const char *op, const char *name, bool killed, uint64_t bytes,
		  int k, const struct moat_error *err)
{
	MOAT_AUDIT(moat_run_audit(r), MOAT_EV_SNAPSHOT, MOAT_F_STR("op", op),
		   MOAT_F_STR("name", name), MOAT_F_BOOL("killed", killed),
		   MOAT_F_UINT("bytes", bytes),
		   MOAT_F_STR("error", k < 0 && err && err->message[0] ? err->message : NULL));
	return k;
}

static int prepare(struct moat_sandbox *sbx, bool force, struct job *j, struct moat_error *err)
{
	struct moat_run *r = &sbx->r;
	if (!r->ready)
		return moat_error_set(err, STAGE, EINVAL, "the sandbox is not ready");
	if (r->userns_fd < 0 || r->mntns_fd < 0)
		return moat_error_set(err, STAGE, ENOTSUP,
				      "the sandbox's namespaces are not known");
	if (!r->snap) {
		r->snap = calloc(1, sizeof(*r->snap));
		if (!r->snap)
			return moat_error_set(err, STAGE, ENOMEM, "out of memory");
		r->snap->store_fd = -1;
		r->snap->current = -1;
	}
	*j = (struct job){.upper_fd = r->upper_fd,
			  .lower_fd = r->lower_fd,
			  .store_fd = r->snap->store_fd,
			  .disk = r->p->disk,
			  .plan = r->plan};
	bool any = false;
	for (int t = 0; t < N_TREES; t++)
		any |= (j->path[t] = tree_path(r, t, &j->mode[t])) != NULL;
	if (!any)
		return moat_error_set(err, STAGE, ENOTSUP,
				      "the sandbox has no writable state of its own to snapshot");
	return quiesce(r, force, err);
}

/* Removes a snapshot's directory from the store (the supervisor may: the
 * store is its own descriptor; the files are the sandbox user's, who is
 * moat's own host uid or, as root, one root may remove). */
static void remove_stored(struct moat_snap *s, const char *name)
{
	_cleanup_close_ int dir = openat(s->store_fd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir >= 0 && moat_snap_clear(dir) >= 0)
		(void)unlinkat(s->store_fd, name, AT_REMOVEDIR);
}

int moat_sandbox_snapshot(struct moat_sandbox *sbx, const char *name, bool force,
			  char ret_name[MOAT_SNAPSHOT_NAME_MAX + 1], struct moat_error *ret_err)
{
	struct moat_run *r = &sbx->r;
	char auto_name[MOAT_SNAPSHOT_NAME_MAX + 1];
	struct job j;
	int k;
	if (name && (k = check_name(name, ret_err)) < 0)
		return record(r, "snapshot", NULL, false, 0, k, ret_err);
	if ((k = prepare(sbx, force, &j, ret_err)) < 0)
		return record(r, "snapshot", name, false, 0, k, ret_err);
	bool killed = k > 0;
	struct moat_snap *s = r->snap;
	if (!name) {
		do
			snprintf(auto_name, sizeof(auto_name), "snap-%u", ++s->next_auto);
		while (find(s, auto_name) >= 0);
		name = auto_name;
	}
	if (find(s, name) >= 0)
		return record(
			r, "snapshot", name, killed, 0,
			moat_error_set(ret_err, STAGE, EEXIST, "a snapshot named %s exists", name),
			ret_err);
	if (s->n >= MOAT_SNAPSHOTS_MAX)
		return record(r, "snapshot", name, killed, 0,
			      moat_error_set(ret_err, STAGE, ENOSPC,
					     "at most %d snapshots per sandbox (delete one first)",
					     MOAT_SNAPSHOTS_MAX),
			      ret_err);
	j.op = OP_SNAPSHOT;
	j.name = name;
	uint64_t bytes = 0;
	k = run_helper(r, &j, &bytes, ret_err);
	if (k < 0) {
		if (s->store_fd >= 0)
			remove_stored(s, name); /* what a failed copy left */
		return record(r, "snapshot", name, killed, 0, k, ret_err);
	}
	struct snap_entry *e = &s->v[s->n];
	snprintf(e->name, sizeof(e->name), "%s", name);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	e->created_us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	e->bytes = bytes;
	s->current = (int)s->n++;
	if (ret_name)
		snprintf(ret_name, MOAT_SNAPSHOT_NAME_MAX + 1, "%s", name);
	return record(r, "snapshot", name, killed, bytes, 0, NULL);
}

static int restore(struct moat_sandbox *sbx, const char *name, bool force,
		   struct moat_error *ret_err)
{
	struct moat_run *r = &sbx->r;
	struct job j;
	int k, at = -1;
	const char *op = name ? "restore" : "reset";
	if (name && (k = check_name(name, ret_err)) < 0)
		return record(r, op, NULL, false, 0, k, ret_err);
	if ((k = prepare(sbx, force, &j, ret_err)) < 0)
		return record(r, op, name, false, 0, k, ret_err);
	bool killed = k > 0;
	if (name && (at = find(r->snap, name)) < 0)
		return record(r, op, name, killed, 0,
			      moat_error_set(ret_err, STAGE, ENOENT, "no snapshot named %s", name),
			      ret_err);
	j.op = name ? OP_RESTORE : OP_RESET;
	j.name = name;
	if ((k = run_helper(r, &j, NULL, ret_err)) < 0)
		return record(r, op, name, killed, 0, k, ret_err);
	r->snap->current = at;
	return record(r, op, name, killed, 0, 0, NULL);
}

int moat_sandbox_restore(struct moat_sandbox *sbx, const char *name, bool force,
			 struct moat_error *ret_err)
{
	if (!name)
		return moat_error_set(ret_err, STAGE, EINVAL, "which snapshot?");
	return restore(sbx, name, force, ret_err);
}

int moat_sandbox_reset(struct moat_sandbox *sbx, bool force, struct moat_error *ret_err)
{
	return restore(sbx, NULL, force, ret_err);
}

int moat_sandbox_snapshot_list(struct moat_sandbox *sbx, struct moat_snapshot_info **ret,
			       size_t *ret_n, struct moat_error *ret_err)
{
	const struct moat_snap *s = sbx->r.snap;
	size_t n = s ? s->n : 0;
	struct moat_snapshot_info *v = calloc(n ? n : 1, sizeof(*v));
	if (!v)
		return moat_error_set(ret_err, STAGE, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++) {
		snprintf(v[i].name, sizeof(v[i].name), "%s", s->v[i].name);
		v[i].created_us = s->v[i].created_us;
		v[i].bytes = s->v[i].bytes;
		v[i].current = s->current == (int)i;
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

int moat_sandbox_snapshot_delete(struct moat_sandbox *sbx, const char *name,
				 struct moat_error *ret_err)
{
	struct moat_snap *s = sbx->r.snap;
	int k = check_name(name, ret_err), at;
	if (k < 0)
		return k;
	if (!s || (at = find(s, name)) < 0)
		return moat_error_set(ret_err, STAGE, ENOENT, "no snapshot named %s", name);
	remove_stored(s, name);
	(void)record(&sbx->r, "delete", name, false, s->v[at].bytes, 0, NULL);
	memmove(&s->v[at], &s->v[at + 1], (s->n - (unsigned)at - 1) * sizeof(s->v[0]));
	s->n--;
	if (s->current == at)
		s->current = -1;
	else if (s->current > at)
		s->current--;
	return 0;
}
