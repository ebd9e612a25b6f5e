/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor's state for one run: everything moat_run() owns between
 * policy and teardown. One struct so that each layer's supervisor-side code
 * (cgroups, proxy, audit, seccomp notifications) has one place for its state.
 */
#pragma once

#include <stdint.h>
#include <sys/types.h>

#include "lib/limits.h"
#include "lib/sandbox.h"
#include "lib/state.h"
#include "lib/stdio_relay.h"
#include "moat/moat.h"

struct moat_observe;

#include <linux/filter.h>

#include "lib/seccomp.h"

/* The seccomp program shared with the sandbox's init (MAP_SHARED). */
struct moat_shared_filter {
	struct moat_seccomp_prog prog;
	struct sock_filter insns[BPF_MAXINSNS];
};

struct moat_run {
	const struct moat_policy *p;
	struct moat_sandbox sb;
	struct moat_plan *plan;
	char run_id[40];
	char **envp;
	unsigned n_envp;
	char **argv_copy;
	struct moat_shared_filter *shared_filter;

	pid_t init_pid;
	/* supervise_limits.c: how the init reaches its cgroups */
	bool self_attached; /* the init writes "0" to the v1 groups' tasks files */
	bool into_cgroup; /* clone3(CLONE_INTO_CGROUP) into the v2 group */
	int pidfd;
	int epfd, sigfd, timerfd;
	bool timed_out, grace_armed, init_exited, interrupted;
	bool pty_done; /* the pty reached EOF or failed: no more relaying */
	bool out_broken; /* moat's output reader went away: pty output is dropped */
	int status_record; /* the command's wait status from init, or -1 */
	int exec_errno; /* the command could not be executed: why */

	int uid_slot_fd; /* root mode: lock held on the allocated host uid */

	/* fds handed over by the sandbox */
	int output_fd, upper_fd, pty_fd, notify_fd;
	/* exec records (restrict.c): the sandbox root exec paths are checked in
	 * (-1 until the first exec), and the event buffer */
	int notify_root_fd;
	struct moat_seccomp_event *notify_ev;
	struct moat_netrec *netrec; /* --net none: network attempts (netrec.c) */
	unsigned notify_net_mask; /* moat_seccomp_net_record_mask() of the filter */

	/* pty relay (host side) */
	int tty_in, tty_out; /* host fds relayed to/from the pty master, -1 if none */
	bool tty_raw;
	struct termios *saved_tty;
	/* the other standard streams: relayed through pipes (stdio_relay.c) */
	struct moat_stdio io;

	uint64_t start_us;
	/* limits layer and the state-directory record (supervise_limits.c) */
	struct moat_limits limits;
	struct moat_state_entry *state;
	struct moat_state_record *state_rec;

	struct moat_status *st;
	struct moat_error *err;

	struct moat_observe *obs; /* audit stream, /output, workspace review (observe.c) */
	struct moat_net_run *net; /* --net allow: proxy worker state (supervise_net.c) */
};

uint64_t moat_now_us(void);
