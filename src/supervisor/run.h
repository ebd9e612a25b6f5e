/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/supervisor/: the lifecycle (create/exec/wait/destroy, moat_run), the event loop,
 * the layers' table (supervise.c, layer.h), stdio relays, live-run state, sessions
 */
/*
 * The supervisor's state for one run: everything moat_run() owns between
 * policy and teardown. One struct so that each layer's supervisor-side code
 * (cgroups, proxy, audit, seccomp notifications) has one place for its state.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>
#include <time.h>

#include "sandbox/backend.h"
#include "sandbox/ctl.h"
#include "limits/limits.h"
#include "limits/disk_watch.h"
#include "sandbox/sandbox.h"
#include "supervisor/state.h"
#include "supervisor/stdio_relay.h"
#include "moat/moat.h"

struct moat_observe;
struct moat_gv_run;
struct moat_vm_run;

#include <linux/filter.h>

#include "kernel/seccomp.h"

/* The seccomp program shared with the sandbox's init (MAP_SHARED). */
struct moat_shared_filter {
	struct moat_seccomp_prog prog;
	struct sock_filter insns[BPF_MAXINSNS];
};

/* One process started in a sandbox (proc.c): its exec, terminal, relays,
 * timer and what it ended with. */
struct moat_proc {
	struct moat_run *r;
	unsigned slot;
	uint32_t id; /* 1, 2, ... in the sandbox */
	int32_t pid; /* in the sandbox's pid namespace, 0 until started */
	bool started, exited, drained, finished, released;
	bool main; /* moat_run()'s command: its limits act on the whole sandbox */
	int timerfd;
	bool timed_out, grace_armed;
	bool kill_sent; /* the grace ended: the init was asked to SIGKILL all */
	uint64_t timeout_ms, grace_ms;
	int wait_status; /* from the init's EXITED record */
	int exec_errno; /* it could not be executed: why (0 if it was) */
	char exec_detail[244];
	uint64_t start_us, end_us, utime_us, stime_us, maxrss_kb;
	/* terminal (pty of the sandbox's devpts): which of 0..2 are on it, the
	 * master, and the caller's fds it is relayed from/to */
	unsigned tty_mask;
	int pty_fd, tty_in, tty_out;
	bool pty_done, out_broken;
	/* the other streams (stdio_relay.h) */
	int caller_fd[3];
	int std_fd[3];
	struct moat_stdio io;
	char stdio_error[256];
	/* the start (moat_sandbox_exec_start()): until moat_proc_start_poll()
	 * says it executed its command or failed; the exec's report pipe, the
	 * bound of the present phase (the init's STARTED, then the outcome),
	 * and what the start record names */
	bool starting, start_phase2, start_killed;
	int rep_fd;
	uint64_t start_deadline_us;
	char **argv_copy;
	char *cwd_copy;
};

struct moat_run {
	const struct moat_policy *p;
	struct moat_init sb;
	struct moat_plan *plan;
	char run_id[40];
	char **envp;
	unsigned n_envp;
	/* the start record's command (moat_run's), NULL for a session */
	char **argv_copy;
	struct moat_shared_filter *shared_filter;

	const struct moat_backend_ops *backend; /* backend.h */
	struct moat_gv_run *gv; /* the gVisor backend's state (backend_gvisor.c) */
	struct moat_vm_run *vm; /* the vm backend's state (backend_vm.c) */
	pid_t init_pid;
	/* supervise_limits.c: how the init reaches its cgroups */
	bool self_attached; /* the init writes "0" to the v1 groups' tasks files */
	bool into_cgroup; /* clone3(CLONE_INTO_CGROUP) into the v2 group */
	int pidfd;
	int epfd; /* everything of this sandbox; moat_sandbox_fd() */
	uint32_t tag_base; /* supervise.c: its tags on epfd */
	bool init_exited, ready, killed;
	/* being created (moat_sandbox_create_start()): until
	 * moat_sandbox_create_poll() says it is ready or failed; the bound, and
	 * the backend's progress through the init's set-up report (backend.h) */
	bool creating;
	uint64_t create_deadline_us;
	bool setup_fds_over, setup_done, setup_notify_watched, setup_notify_over;
	int setup_take_err;

	int uid_slot_fd; /* root mode: lock held on the allocated host uid */

	/* fds handed over by the sandbox */
	int output_fd, upper_fd, ptmx_fd, notify_fd;
	int lower_fd; /* the workspace overlay's lower tree (snapshot.c) */
	int userns_fd, mntns_fd; /* the sandbox's namespaces (snapshot.c) */
	struct moat_snap *snap; /* snapshots (snapshot.c), NULL until the first */
	/* exec records (restrict.c): the sandbox root exec paths are checked in
	 * (-1 until the first exec), and the event buffer */
	int notify_root_fd;
	struct moat_seccomp_event *notify_ev;
	struct moat_netrec *netrec; /* --net none: network attempts (netrec.c) */
	unsigned notify_net_mask; /* moat_seccomp_net_record_mask() of the filter */

	/* processes (proc.c) */
	struct moat_proc *procs[MOAT_MAX_PROCS];
	uint32_t next_id;

	uint64_t start_us;
	/* limits layer and the state-directory record (supervise_limits.c) */
	struct moat_limits limits;
	struct moat_state_entry *state;
	struct moat_state_record *state_rec;
	bool state_keep; /* a cgroup was left: the record stays for gc */
	struct moat_disk_watch disk; /* the writable tmpfs areas (disk_watch.c) */

	struct moat_status *st; /* &status, or moat_run()'s */
	struct moat_status status;
	struct moat_error *err;
	struct moat_error errbuf;

	struct moat_observe *obs; /* audit stream, /output, workspace review (observe.c) */
	struct moat_net_run *net; /* --net allow: proxy worker state (supervise_net.c) */
};

/* The public handle (moat.h) is the supervisor's state. */
struct moat_sandbox {
	struct moat_run r;
};

/* Tags on r->epfd: the sandbox's own, the layers' (supervise.c, from
 * MOAT_TAG_EXTRA), each process's (MOAT_TAG_PROC(slot) + MOAT_PT_*). */
enum {
	MOAT_TAG_PIDFD = 1,
	MOAT_TAG_CTL,
	MOAT_TAG_BACKEND, /* the backend's own (backend.h dispatch) */
	MOAT_TAG_CREATE, /* being created: the init's set-up channels (backend.h poll) */
	MOAT_TAG_EXTRA = 8,
	MOAT_TAG_PROC_BASE = 64,
};
enum {
	MOAT_PT_TIMER,
	MOAT_PT_PTY,
	MOAT_PT_TTY_IN,
	MOAT_PT_TTY_OUT,
	MOAT_PT_STDIO,
	MOAT_PT_N = 8
};
/* The caller's terminal `in` into raw mode; what is complete in its canonical
 * buffer (typed-ahead lines, a pending end-of-file marker as ^D) is first
 * written to pty_fd, so that no marker turns into a NUL (run.c). Used by
 * moat_run() and by the session supervisor for `moat exec --tty`, which holds
 * the client's terminal. True when the terminal is raw. */
struct termios;
bool moat_tty_enter_raw(int in, int pty_fd, const struct termios *saved);

/* after the grace the init kills and reaps every process; past this the
 * supervisor kills the init (a process in uninterruptible sleep) */
#define MOAT_INIT_KILL_MS 500
#define MOAT_TAG_PROC(slot) (MOAT_TAG_PROC_BASE + (uint32_t)(slot)*MOAT_PT_N)

/* proc.c */
void moat_proc_dispatch(struct moat_run *r, uint32_t tag);
void moat_proc_on_ctl(struct moat_run *r);
void moat_proc_init_died(struct moat_run *r);
/* after a pass of the loop: processes whose output ended are done */
void moat_proc_settle(struct moat_run *r);
/* Drains a process's output after it exited (and, for moat_run(), after the
 * sandbox was killed); stop_fd readable (or -1) ends the wait early. */
void moat_proc_drain(struct moat_proc *pr, int stop_fd);
void moat_proc_free(struct moat_proc *pr);
int moat_ctl_send(struct moat_run *r, const struct moat_ctl_req *rq, const int *fds, unsigned nfds);
/* moat_run()'s SIGTERM: every process, SIGKILL after the grace. */
void moat_proc_terminate(struct moat_proc *pr);
/* moat_sandbox_exec(); main_proc: moat_run()'s command (its limits act on
 * the whole sandbox, moat_run() drains it); when the new process could not exec its command,
 * *ret_stage and *ret_errno (may be NULL) say at which step and why. */
int moat_sandbox_exec_for(struct moat_sandbox *sbx, const struct moat_exec *x, bool main_proc,
			  struct moat_proc **ret, struct moat_error *err, int *ret_stage,
			  int *ret_errno);
/* The start of moat_sandbox_exec_for() without its wait: returns with *ret
 * starting; moat_proc_start_poll() completes it. */
int moat_sandbox_exec_start(struct moat_sandbox *sbx, const struct moat_exec *x, bool main_proc,
			    struct moat_proc **ret, struct moat_error *err);
/* spawn.c: create with the start record's command (moat_run()) */
int moat_sandbox_create_for(const struct moat_policy *p, char *const *argv,
			    struct moat_sandbox **ret, struct moat_status *ret_status,
			    struct moat_error *ret_err);
/* kills every process and drains the processes' output */
void moat_sandbox_kill(struct moat_sandbox *sbx, int stop_fd);
/* the end of a run (output, manifest, exit record), then freed */
int moat_sandbox_finish(struct moat_sandbox *sbx, int k, struct moat_status *ret_status);
/* gone without the end of a run (the first command could not run) */
void moat_sandbox_abort(struct moat_sandbox *sbx);
/* proc.c: one pass over the sandbox's epoll set, what is ready dispatched to
 * the processes or the layers (timeout_ms -1: wait) */
int moat_sandbox_poll(struct moat_run *r, int timeout_ms);

/* snapshot.c: frees the snapshots' store (at the sandbox's end) */
void moat_snap_free(struct moat_run *r);
/* CLOCK_MONOTONIC in microseconds (inline: every part of the run uses it,
 * none of them needs another's object for it) */
static inline uint64_t moat_now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}
