/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor: policy -> plan -> clone -> wait -> teardown. It is the only
 * privileged part, never parses network bytes, and owns every resource of
 * the run until it is gone. The loop is a small epoll over the init's pidfd,
 * a signalfd, a timerfd, (when a pty is used) the terminal relay and the
 * relay of the other standard streams (stdio_relay.c).
 */
#include <fcntl.h>
#include <grp.h>
#include <linux/sched.h>
#include <poll.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <linux/openat2.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/pidfd.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>

#include "audit/audit.h"
#include "sandbox/backend.h"
#include "sandbox/isolation.h"
#include "policy/errors.h"
#include "sandbox/paths.h"
#include "kernel/restrict.h"
#include "supervisor/run.h"
#include "supervisor/state.h"
#include "supervisor/stdio_relay.h"
#include "supervisor/supervise.h"
#include "shared/macro.h"

/* root mode: sandbox uids on the host, as the plan states them (plan.h) */
#define ROOT_UID_BASE MOAT_PLAN_ROOT_UID_BASE
#define ROOT_UID_SLOTS MOAT_PLAN_ROOT_UID_SLOTS
#define MOAT_MAX_ARGS 65536

static int random_hex(char *out, size_t nbytes)
{
	unsigned char b[32];
	if (nbytes > sizeof(b))
		return -EINVAL;
	if (getrandom(b, nbytes, 0) != (ssize_t)nbytes)
		return negerrno();
	for (size_t i = 0; i < nbytes; i++)
		sprintf(out + 2 * i, "%02x", b[i]);
	return 0;
}

/* ---- environment ---------------------------------------------------------- */

static int env_push(struct moat_run *r, const char *name, const char *value)
{
	char *s;
	for (unsigned i = 0; i < r->n_envp; i++) {
		size_t n = strlen(name);
		if (strncmp(r->envp[i], name, n) == 0 && r->envp[i][n] == '=') {
			if (asprintf(&s, "%s=%s", name, value) < 0)
				return -ENOMEM;
			free(r->envp[i]);
			r->envp[i] = s;
			return 0;
		}
	}
	char **nv = realloc(r->envp, sizeof(char *) * (r->n_envp + 2));
	if (!nv)
		return -ENOMEM;
	r->envp = nv;
	if (asprintf(&s, "%s=%s", name, value) < 0)
		return -ENOMEM;
	nv[r->n_envp++] = s;
	nv[r->n_envp] = NULL;
	return 0;
}

/* A clean environment: nothing of moat's own is inherited except what the
 * policy names. */
static int build_env(struct moat_run *r)
{
	const struct moat_policy *p = r->p;
	char home[128];
	int k;
	const char *user = moat_policy_user_name(p);
	moat_policy_home(p, home, sizeof(home));
	const char *term = getenv("TERM");
	const char *lang = getenv("LANG");
	if ((k = env_push(r, "PATH",
			  "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin")) < 0 ||
	    (k = env_push(r, "HOME", home)) < 0 || (k = env_push(r, "USER", user)) < 0 ||
	    (k = env_push(r, "LOGNAME", user)) < 0 ||
	    (k = env_push(r, "TERM", term && *term && strlen(term) < 64 ? term : "dumb")) < 0 ||
	    (k = env_push(r, "LANG", lang && *lang && strlen(lang) < 64 ? lang : "C.UTF-8")) < 0 ||
	    (k = env_push(r, "MOAT_SANDBOX", "1")) < 0)
		return k;
	/* --net none: no destination can ever answer, so package managers fail
	 * at the first refusal instead of retrying for a minute (npm: 2 retries,
	 * 10-60 s apart; pip: 5). Before the policy's --env, which overrides. */
	if (p->net == MOAT_NET_NONE &&
	    ((k = env_push(r, "npm_config_fetch_retries", "0")) < 0 ||
	     (k = env_push(r, "PIP_RETRIES", "0")) < 0))
		return k;
	for (unsigned i = 0; i < p->n_env; i++) {
		const char *v = p->env[i].value;
		if (!v) {
			v = getenv(p->env[i].name);
			if (!v)
				return moat_error_set(r->err, "environment", ENOENT,
						      "--env %s: not set in moat's environment",
						      p->env[i].name);
		}
		if ((k = env_push(r, p->env[i].name, v)) < 0)
			return k;
	}
	return moat_supervise_env(r, env_push);
}

/* Root mode: every concurrent sandbox gets its own unprivileged host uid,
 * held by a lock for the run's lifetime. */
static int alloc_uid_slot(struct moat_run *r)
{
	if (mkdir("/run/moat", 0700) < 0 && errno != EEXIST)
		return moat_error_set(r->err, "identity", errno, "cannot create /run/moat: %s",
				      strerror(errno));
	if (mkdir("/run/moat/uids", 0700) < 0 && errno != EEXIST)
		return moat_error_set(r->err, "identity", errno, "cannot create /run/moat/uids: %s",
				      strerror(errno));
	uint32_t start;
	if (getrandom(&start, sizeof(start), 0) != sizeof(start))
		start = (uint32_t)getpid();
	for (uint32_t i = 0; i < ROOT_UID_SLOTS; i++) {
		uint32_t slot = (start + i) % ROOT_UID_SLOTS;
		char path[64];
		snprintf(path, sizeof(path), "/run/moat/uids/%u", slot);
		int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
		if (fd < 0)
			return moat_error_set(r->err, "identity", errno, "cannot open %s: %s", path,
					      strerror(errno));
		if (flock(fd, LOCK_EX | LOCK_NB) == 0) {
			r->uid_slot_fd = fd;
			r->sb.host_uid = ROOT_UID_BASE + slot;
			r->sb.host_gid = ROOT_UID_BASE + slot;
			return 0;
		}
		close(fd);
	}
	return moat_error_set(r->err, "identity", EAGAIN, "no free sandbox uid (all %u in use)",
			      ROOT_UID_SLOTS);
}

/* ---- a sandbox ------------------------------------------------------------- */

static void run_free(struct moat_run *r)
{
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
		moat_proc_free(r->procs[i]);
	for (unsigned i = 0; i < r->n_envp; i++)
		free(r->envp[i]);
	free(r->envp);
	for (unsigned i = 0; r->argv_copy && r->argv_copy[i]; i++)
		free(r->argv_copy[i]);
	free(r->argv_copy);
	free(r->plan);
	safe_close(r->pidfd);
	safe_close(r->epfd);
	safe_close(r->output_fd);
	safe_close(r->upper_fd);
	safe_close(r->lower_fd);
	safe_close(r->userns_fd);
	safe_close(r->mntns_fd);
	moat_snap_free(r);
	safe_close(r->ptmx_fd);
	safe_close(r->notify_fd);
	if (r->backend)
		r->backend->release(r);
	moat_supervise_released(r);
	safe_close(r->sb.sock_sup);
	safe_close(r->uid_slot_fd);
}

#ifdef MOAT_TESTING
/* Test build only: see sandbox.h. A copy, since the init wipes its environment. */
static char test_stall_at[32];

void moat_test_stall_arm(void)
{
	const char *gate = getenv("MOAT_TEST_LAYERS"), *at = getenv("MOAT_TEST_STALL_AT");
	const char *only_if = getenv("MOAT_TEST_STALL_FILE");
	test_stall_at[0] = '\0';
	/* with MOAT_TEST_STALL_FILE, only the creates made while that file
	 * exists stall (serve.sh: one tenant's create, not the other's) */
	if (only_if && access(only_if, F_OK) < 0)
		return;
	if (gate && streq(gate, "1") && at && strlen(at) < sizeof(test_stall_at))
		snprintf(test_stall_at, sizeof(test_stall_at), "%s", at);
}

void moat_test_stall(const char *stage)
{
	char msg[80];
	if (!test_stall_at[0] || !streq(test_stall_at, stage))
		return;
	int n = snprintf(msg, sizeof(msg), "moat: test stall at %s\n", stage);
	(void)!write(STDERR_FILENO, msg, (size_t)n);
	for (;;)
		pause();
}
#endif

static struct moat_sandbox *sandbox_new(const struct moat_policy *p, struct moat_error *err)
{
	struct moat_sandbox *sbx = calloc(1, sizeof(*sbx));
	if (!sbx)
		return NULL;
	struct moat_run *r = &sbx->r;
	r->p = p;
	r->st = &r->status;
	r->err = err ? err : &r->errbuf;
	r->pidfd = r->epfd = r->output_fd = r->upper_fd = r->ptmx_fd = r->notify_fd = -1;
	r->notify_root_fd = r->uid_slot_fd = r->lower_fd = r->userns_fd = r->mntns_fd = -1;
	for (unsigned i = 0; i < MOAT_PLAN_MAX_STEPS; i++)
		r->sb.premounted[i] = r->sb.user_fd[i] = -1;
	r->sb.rootfs_fd = -1;
	r->disk.timerfd = -1;
	r->sb.setup_r = r->sb.setup_w = r->sb.go_r = r->sb.go_w = -1;
	r->sb.sock_sup = r->sb.sock_child = -1;
	r->st->reason = MOAT_REASON_SETUP_FAILED;
	r->st->exit_code = MOAT_EXIT_SETUP;
	return sbx;
}

/* How long a sandbox may take from its clone to ready (its init assembling
 * the root, the layers' steps meanwhile) before it is ended: a set-up that
 * stalls (a hung network filesystem under a bind, a stopped init) must not
 * hold a slot of moat serve's, or a create's answer, forever. Generous: a
 * loaded machine or a sanitizer build is far below it. */
#define CREATE_READY_MS 30000

static unsigned create_ready_ms(const struct moat_backend_ops *b)
{
	if (b && b->ready_ms)
		return b->ready_ms; /* a guest that boots (the vm level) */
#ifdef MOAT_TESTING
	/* test build only: a shorter bound for serve.sh's stalled create */
	const char *gate = getenv("MOAT_TEST_LAYERS"), *v = getenv("MOAT_TEST_CREATE_READY_MS");
	if (gate && streq(gate, "1") && v && atoi(v) >= 1000 && atoi(v) <= CREATE_READY_MS)
		return (unsigned)atoi(v);
#endif
	return CREATE_READY_MS;
}

/* Everything up to the init's release: the policy's checks, the plan, the
 * layers' preparation, the clone, the maps; the init then assembles the
 * sandbox while moat_sandbox_create_poll_for() waits for its report.
 * argv: the start record's command (moat_run()), or NULL. SIGPIPE must be
 * blocked or ignored by the caller. */
static int create_start_for(const struct moat_policy *p, char *const *argv,
			    struct moat_sandbox **ret, struct moat_status *ret_status,
			    struct moat_error *ret_err)
{
	int k;
	*ret = NULL;
	struct moat_sandbox *sbx = sandbox_new(p, ret_err);
	if (!sbx)
		return moat_error_set(ret_err, "setup", ENOMEM, "out of memory");
	struct moat_run *r = &sbx->r;
	r->start_us = moat_now_us();
	moat_test_stall_arm();
	if ((k = moat_policy_validate(p, ret_err)) < 0)
		goto fail;
	/* every key in use means the same at this level, or nothing starts */
	if ((k = moat_isolation_check(p, ret_err)) < 0)
		goto fail;
	/* an image is opened (verified, unpacked, locked) by the caller: a
	 * path alone is not a root (docs/IMAGES.md) */
	if (p->image && !p->image_root) {
		k = moat_error_set(ret_err, "image", EINVAL,
				   "--image %s: the image was not opened (this command does not "
				   "take --image: use moat run)",
				   p->image);
		goto fail;
	}
	if ((k = random_hex(r->run_id, 8)) < 0) {
		k = moat_error_set(ret_err, "setup", -k, "no randomness for the run id");
		goto fail;
	}
	memcpy(r->st->run_id, r->run_id, sizeof(r->st->run_id));

	r->plan = malloc(sizeof(*r->plan));
	if (!r->plan) {
		k = -ENOMEM;
		goto fail;
	}
	if ((k = moat_plan_build(p, r->plan)) < 0) {
		k = moat_error_set(ret_err, "plan", -k,
				   "the policy needs more setup steps than allowed");
		goto fail;
	}
	if ((k = build_env(r)) < 0)
		goto fail;
	if (argv) {
		unsigned n = 0;
		while (argv[n])
			n++;
		if (n > MOAT_MAX_ARGS) {
			k = moat_error_set(ret_err, "usage", E2BIG, "more than %d arguments",
					   MOAT_MAX_ARGS);
			goto fail;
		}
		if (!(r->argv_copy = calloc(n + 1, sizeof(char *)))) {
			k = -ENOMEM;
			goto fail;
		}
		for (unsigned i = 0; i < n; i++)
			if (!(r->argv_copy[i] = strdup(argv[i]))) {
				k = -ENOMEM;
				goto fail;
			}
	}

	r->sb.root_mode = moat_host_root();
	if (r->sb.root_mode) {
		if ((k = alloc_uid_slot(r)) < 0)
			goto fail;
		/* root's supplementary groups must not follow into the sandbox */
		if (setgroups(0, NULL) < 0) {
			k = moat_error_set(ret_err, "identity", errno,
					   "cannot drop supplementary groups: %s", strerror(errno));
			goto fail;
		}
	} else {
		r->sb.host_uid = geteuid();
		r->sb.host_gid = getegid();
	}

	r->backend = p->isolation == MOAT_ISO_GVISOR ? moat_backend_gvisor()
		: p->isolation == MOAT_ISO_VM	     ? moat_backend_vm()
						     : moat_backend_ns();
	if ((k = r->backend->prepare(r)) < 0)
		goto fail;
	if ((k = moat_supervise_prepare(r)) < 0)
		goto fail;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0) {
		k = moat_error_set(ret_err, "setup", errno, "cannot create event fds: %s",
				   strerror(errno));
		goto fail;
	}
	if ((k = r->backend->start(r)) < 0)
		goto fail_kill;
	moat_test_stall("started");
	r->creating = true;
	r->create_deadline_us = moat_now_us() + create_ready_ms(r->backend) * 1000ull;
	/* from here the errors are kept until moat_sandbox_create_poll() */
	r->err = &r->errbuf;
	*ret = sbx;
	return 0;

fail_kill:
	r->backend->kill(r);
fail:
	r->st->wall_us = moat_now_us() - r->start_us;
	moat_supervise_teardown(r);
	if (ret_status)
		*ret_status = *r->st; /* the run id, what the layers recorded */
	run_free(r);
	free(sbx);
	return k < 0 ? k : -EIO;
}

/* The end of a create that failed after its start: the sandbox is killed
 * and gone (no exit record: nothing of the user's ran), *ret_err says
 * why (when given). */
static void create_failed(struct moat_sandbox *sbx, struct moat_status *ret_status,
			  struct moat_error *ret_err)
{
	struct moat_run *r = &sbx->r;
	r->backend->kill(r);
	r->st->wall_us = moat_now_us() - r->start_us;
	moat_supervise_teardown(r);
	if (ret_status)
		*ret_status = *r->st;
	if (ret_err)
		*ret_err = r->errbuf;
	run_free(r);
	free(sbx);
}

/* One step of a create: 1 ready, 0 not yet, < 0 failed (sbx is gone). */
static int create_poll_for(struct moat_sandbox *sbx, struct moat_status *ret_status,
			   struct moat_error *ret_err)
{
	struct moat_run *r = &sbx->r;
	int k;
	if (!r->creating)
		return 1;
	k = r->backend->poll ? r->backend->poll(r) : 1;
	if (k == 0 && moat_now_us() < r->create_deadline_us)
		return 0;
	if (k == 0)
		k = moat_error_set(r->err, "setup", ETIMEDOUT,
				   "setup step failed: the sandbox was not ready within %u s (its "
				   "set-up stalled): it was ended",
				   create_ready_ms(r->backend) / 1000);
	if (k > 0) {
		struct epoll_event ev = {.events = EPOLLIN, .data.u32 = MOAT_TAG_PIDFD};
		if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->pidfd, &ev) < 0 ||
		    (ev.data.u32 = MOAT_TAG_CTL,
		     epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->sb.sock_sup, &ev)) < 0)
			k = moat_error_set(r->err, "setup", errno, "epoll: %s", strerror(errno));
		else
			k = moat_supervise_register(r, r->epfd, MOAT_TAG_EXTRA);
	}
	if (k < 0) {
		create_failed(sbx, ret_status, ret_err);
		return k;
	}
	r->creating = false;
	r->ready = true;
	return 1;
}

/* Everything up to a ready sandbox (the init serves its control channel):
 * the start, then its steps until it is ready or failed. */
int moat_sandbox_create_for(const struct moat_policy *p, char *const *argv,
			    struct moat_sandbox **ret, struct moat_status *ret_status,
			    struct moat_error *ret_err)
{
	struct moat_sandbox *sbx = NULL;
	int k = create_start_for(p, argv, &sbx, ret_status, ret_err);
	*ret = NULL;
	if (k < 0)
		return k;
	while ((k = create_poll_for(sbx, ret_status, ret_err)) == 0) {
		struct pollfd pf = {.fd = sbx->r.epfd, .events = POLLIN};
		(void)poll(&pf, 1, moat_sandbox_create_due_ms(sbx));
	}
	if (k < 0)
		return k;
	*ret = sbx;
	return 0;
}

int moat_sandbox_create(const struct moat_policy *p, struct moat_sandbox **ret,
			struct moat_error *ret_err)
{
	return moat_sandbox_create_for(p, NULL, ret, NULL, ret_err);
}

int moat_sandbox_create_start(const struct moat_policy *p, struct moat_sandbox **ret,
			      struct moat_error *ret_err)
{
	return create_start_for(p, NULL, ret, NULL, ret_err);
}

int moat_sandbox_create_poll(struct moat_sandbox *sbx, struct moat_error *ret_err)
{
	return create_poll_for(sbx, NULL, ret_err);
}

int moat_sandbox_create_due_ms(const struct moat_sandbox *sbx)
{
	const struct moat_run *r = &sbx->r;
	if (!r->creating)
		return -1;
	uint64_t now = moat_now_us();
	return now >= r->create_deadline_us ? 0 : (int)((r->create_deadline_us - now + 999) / 1000);
}

const char *moat_sandbox_id(const struct moat_sandbox *sbx)
{
	return sbx->r.run_id;
}

int moat_sandbox_fd(const struct moat_sandbox *sbx)
{
	return sbx->r.epfd;
}

int moat_sandbox_dispatch(struct moat_sandbox *sbx)
{
	if (sbx->r.creating)
		return 0; /* moat_sandbox_create_poll() drives it until ready */
	int k = moat_sandbox_poll(&sbx->r, 0);
	return k == -EINTR ? 0 : k;
}

int moat_sandbox_signal(struct moat_sandbox *sbx, int sig)
{
	struct moat_ctl_req rq = {.type = MOAT_CTL_SIGNAL_ALL, .sig = sig};
	if (sig <= 0 || sig >= NSIG)
		return -EINVAL;
	return sbx->r.init_exited ? -ESRCH : moat_ctl_send(&sbx->r, &rq, NULL, 0);
}

/* Kills everything; the processes' output is drained. */
void moat_sandbox_kill(struct moat_sandbox *sbx, int stop_fd)
{
	struct moat_run *r = &sbx->r;
	r->backend->kill(r);
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
		if (r->procs[i] && !r->procs[i]->released)
			moat_proc_drain(r->procs[i], stop_fd);
}

/* The end of a run: /output, the manifest, the exit record, then every
 * temporary; *ret_status as `moat run` reports it (r->st filled). */
int moat_sandbox_finish(struct moat_sandbox *sbx, int k, struct moat_status *ret_status)
{
	struct moat_run *r = &sbx->r;
	r->st->wall_us = moat_now_us() - r->start_us;
	k = moat_supervise_finish(r, k);
	moat_supervise_teardown(r);
	if (ret_status)
		*ret_status = *r->st;
	run_free(r);
	free(sbx);
	return k;
}

/* A sandbox whose first command could not run (moat_run()): gone without
 * the end of a run (no exit record), as a failed setup. */
void moat_sandbox_abort(struct moat_sandbox *sbx)
{
	struct moat_run *r = &sbx->r;
	r->backend->kill(r);
	moat_supervise_teardown(r);
	run_free(r);
	free(sbx);
}

int moat_sandbox_destroy(struct moat_sandbox *sbx, struct moat_status *ret_status,
			 struct moat_error *ret_err)
{
	if (!sbx)
		return 0;
	struct moat_run *r = &sbx->r;
	if (r->creating) {
		/* abandoned before it was ready: gone as a failed set-up */
		create_failed(sbx, ret_status, NULL);
		return 0;
	}
	moat_sandbox_kill(sbx, -1);
	r->err = ret_err ? ret_err : &r->errbuf;
	/* a session's status: how its last process ended */
	struct moat_proc *last = NULL;
	for (unsigned i = 0; i < MOAT_MAX_PROCS; i++)
		if (r->procs[i] && (!last || r->procs[i]->id > last->id))
			last = r->procs[i];
	r->st->reason = MOAT_REASON_EXITED;
	r->st->exit_code = r->st->status = 0;
	if (last) {
		struct moat_proc_status ps;
		moat_proc_status(last, &ps);
		r->st->reason = ps.reason;
		r->st->exit_code = ps.exit_code;
		r->st->status = ps.status;
		r->st->signal = ps.signal;
	}
	return moat_sandbox_finish(sbx, 0, ret_status);
}
