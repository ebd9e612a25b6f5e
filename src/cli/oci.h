/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat oci` / `moat-oci`: the OCI runtime command line (docs/OCI.md). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "moat/moat.h"

#define MOAT_OCI_ID_MAX 128

/* The global options every engine passes before the command. */
struct moat_oci_globals {
	const char *root; /* --root, or the default */
	const char *log; /* --log FILE */
	bool log_json; /* --log-format json */
	bool no_cgroup; /* --cgroup-manager disabled: linux.cgroupsPath not honoured */
};

/* A container's record in its state directory (ROOT/ID/state). */
struct moat_oci_state {
	char id[MOAT_OCI_ID_MAX + 1];
	char dir[1200]; /* ROOT/ID */
	char session[40];
	char bundle[4096];
	int pid; /* the supervisor's: what --pid-file holds */
	unsigned uid, gid; /* the container's user */
	long long created; /* seconds since the epoch */
	int oom_score_adj; /* the container's (process.oomScoreAdj, else the runtime's) */
	char *annotations; /* a JSON object (owned) */
	/* process.rlimits as the spec gave them: "RLIMIT_X:SOFT:HARD,..." */
	char rlimits[MOAT_OCI_RLIMITS_MAX * 64];
};

extern struct moat_oci_globals moat_oci_g;

/* An error: to stderr and, with --log, a line of the log (JSON or text). */
void moat_oci_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void moat_oci_moat_err(const char *what, const struct moat_error *e);
/* ROOT/ID into st->dir (id checked); then the record read. */
int moat_oci_state_load(const char *id, struct moat_oci_state *st);
void moat_oci_state_done(struct moat_oci_state *st);
/* "created", "running", "stopped" */
const char *moat_oci_status(const struct moat_oci_state *st);
/* Writes pid to FILE (replaced atomically). */
int moat_oci_write_pid(const char *file, int pid);
/* A terminal for the console socket: its main side sent to sock, the other
 * side (raw: the sandbox has its own terminal) in *ret_fd. */
int moat_oci_console(const char *sock, int *ret_fd);
/* Exits as a process that ended so (128+N: killed by N). */
_Noreturn void moat_oci_exit_as(const struct moat_proc_status *ps);

/* process.oomScoreAdj: the calling process's oom_score_adj raised to
 * pr's (inherited by everything it starts), and its value in *ret; a
 * negative value below the current one is refused, and one the kernel does
 * not let this process set (0, -EPERM or -EIO, message printed). */
int moat_oci_oom_apply(const struct moat_oci_process *pr, int *ret);

int moat_oci_cmd_exec(int argc, char **argv);
/* pr's process.rlimits as the state file's line (RLIMIT_X:SOFT:HARD,...). */
void moat_oci_rlimits_line(const struct moat_oci_process *pr, char *buf, size_t len);
