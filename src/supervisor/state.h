/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The state directory: every live run is recorded as <dir>/<run-id>/ holding
 * `lock` (an OFD write lock held by the supervisor for the run's lifetime) and
 * `run.json` (pid, start time, cgroup directories, temporary directories). A
 * free lock means the supervisor is gone (crash, SIGKILL, power loss), so
 * `moat gc` may kill and remove what the run left; `moat ps` lists the held ones.
 *
 * Default directory: /run/moat/live for root, else $XDG_STATE_HOME/moat/live or
 * ~/.local/state/moat/live. Every function takes the directory so tests can
 * use a temporary one.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "limits/cgroup.h"

#define MOAT_STATE_ID_MAX 64
#define MOAT_STATE_MAX_TMPDIRS 8
#define MOAT_STATE_PATH 1024
#define MOAT_STATE_JSON_MAX (64u << 10)

struct moat_state_record {
	char id[MOAT_STATE_ID_MAX + 1];
	pid_t pid; /* the supervisor */
	uint64_t start_us; /* CLOCK_REALTIME, microseconds */
	char cgroups[MOAT_CGROUP_MAX_HIER][MOAT_STATE_PATH];
	unsigned n_cgroups;
	char tmpdirs[MOAT_STATE_MAX_TMPDIRS][MOAT_STATE_PATH];
	unsigned n_tmpdirs;
};

struct moat_state_entry;

/* The default state directory for this user into buf (not created). */
int moat_state_default_dir(char *buf, size_t len);

/* A fresh random run id (32 hex digits) into buf (>= 33 bytes). */
int moat_state_new_id(char *buf, size_t len);

/* Record a live run: creates dir (0700, parents too) and dir/<rec->id>/ with the
 * lock held and run.json written, atomically visible (built under a dot name,
 * then renamed). The lock fd is O_CLOEXEC; a forked child that does not exec
 * shares the lock, which keeps the run "live" while that child lives. Caller
 * owns *ret: moat_state_unregister() at the end of the run. */
int moat_state_register(const char *dir, const struct moat_state_record *rec,
			struct moat_state_entry **ret);
/* Rewrite run.json (e.g. once the cgroups and temporary directories exist). */
int moat_state_update(struct moat_state_entry *e, const struct moat_state_record *rec);
/* Remove the entry and release the lock; frees e (accepts NULL). */
int moat_state_unregister(struct moat_state_entry *e);
/* Release the lock but keep the entry, for gc to finish; frees e (accepts NULL). */
void moat_state_abandon(struct moat_state_entry *e);

/* run.json <-> record. Parsing is strict and bounded (fuzzed: fuzz_state_record). */
int moat_state_record_to_json(const struct moat_state_record *rec, char **ret_json);
int moat_state_record_parse(const char *json, size_t len, struct moat_state_record *ret);

/* The live runs (lock held). Caller frees *ret with free(). */
int moat_state_list(const char *dir, struct moat_state_record **ret, size_t *ret_n);

struct moat_state_gc_result {
	unsigned live; /* entries left alone: their supervisor is alive */
	unsigned removed; /* dead entries cleaned */
	unsigned failed; /* dead entries that could not be cleaned completely */
	unsigned cgroups; /* cgroup directories removed */
	unsigned tmpdirs; /* temporary directories removed */
};

/* Clean every dead entry: kill and remove its cgroups (only directories on a
 * cgroup filesystem whose name is the run id), remove its temporary
 * directories (moat_state_remove_tmpdir with the caller's euid), then the
 * entry. Returns 0, or the first error with *ret still filled. */
int moat_state_gc(const char *dir, struct moat_state_gc_result *ret);
/* Remove one recorded temporary directory: only an absolute path without
 * "/../" whose last component starts with "moat-", a directory owned by
 * `owner` (else -EPERM, nothing removed), never following symlinks or
 * crossing into another filesystem. 0 also when it is already gone. */
int moat_state_remove_tmpdir(const char *path, uid_t owner);
