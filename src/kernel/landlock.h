/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Landlock: the second, independent filesystem and IPC wall. Self-contained:
 * takes its own option struct, knows nothing about the policy parser.
 *
 * moat_landlock_apply() restricts the CALLING process (and its future
 * children) for good; the sandbox init calls it just before seccomp and exec.
 * It uses every access right the running kernel's ABI knows:
 *   - read-only paths: execute, read_file, read_dir;
 *   - writable paths: every filesystem right (incl. refer, truncate, ioctl_dev);
 *   - everything else: nothing;
 *   - ABI >= 4 with net_none: TCP bind and connect denied except the listed ports;
 *   - ABI >= 6 with scope: abstract unix sockets and signals scoped to the domain.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#define MOAT_LANDLOCK_MAX_PATHS 1024
#define MOAT_LANDLOCK_MAX_PORTS 64
#define MOAT_LANDLOCK_ABI_KNOWN 7 /* highest ABI whose rights this file knows */

/* What a rule's path is, when the caller knows it already (saves an fstat).
 * A wrong kind fails safe: a directory given as a file gets file rights only,
 * and the kernel refuses a file given as a directory (-EINVAL). */
enum moat_landlock_kind {
	MOAT_LANDLOCK_KIND_UNKNOWN = 0, /* fstat decides */
	MOAT_LANDLOCK_KIND_DIR,
	MOAT_LANDLOCK_KIND_FILE, /* anything but a directory */
};

struct moat_landlock_path {
	const char *path; /* used only when fd < 0 */
	int fd; /* an O_PATH (or any) fd of the path, e.g. opened before pivot_root */
	bool writable;
	enum moat_landlock_kind kind;
};

struct moat_landlock_opts {
	const struct moat_landlock_path *paths;
	unsigned n_paths;
	/* ABI >= 4: handle TCP bind and connect; only the ports below are allowed. */
	bool net_none;
	const uint16_t *connect_ports;
	unsigned n_connect_ports;
	const uint16_t *bind_ports;
	unsigned n_bind_ports;
	/* ABI >= 6: scope abstract unix sockets and signals to the domain. */
	bool scope;
	/* Fail with -EOPNOTSUPP when the running ABI is below this (0 = best effort,
	 * which also accepts "no Landlock at all": report.enforced says so). */
	int min_abi;
	/* The caller has set no_new_privs already: not set again. (If it has not,
	 * landlock_restrict_self() fails with EPERM unless it has CAP_SYS_ADMIN.) */
	bool no_new_privs_set;
};

/* What was (or, for the probe, would be) enforced. */
struct moat_landlock_report {
	int abi; /* running kernel's ABI; 0 when Landlock is absent or disabled */
	int errata; /* errata bitmask (ABI >= 7), 0 otherwise */
	bool enforced; /* a ruleset was applied to the caller */
	uint64_t handled_fs;
	uint64_t handled_net;
	uint64_t scoped;
	uint32_t restrict_flags;
	unsigned n_rules;
};

/* The running kernel's Landlock ABI (>= 1), or -EOPNOTSUPP when Landlock is not
 * built in or disabled at boot. */
int moat_landlock_abi(void);

/* Every filesystem / net / scope right a given ABI knows (0 for unknown parts). */
uint64_t moat_landlock_fs_rights(int abi);
uint64_t moat_landlock_net_rights(int abi);
uint64_t moat_landlock_scope_rights(int abi);

/* Fill *ret with what moat_landlock_apply() would enforce for `o` (o may be
 * NULL: the full default set) on this kernel, without enforcing anything.
 * For `moat doctor`. Returns 0, even when Landlock is absent (abi = 0). */
int moat_landlock_probe(const struct moat_landlock_opts *o, struct moat_landlock_report *ret);

/* Build the ruleset and restrict the calling process. Sets no_new_privs
 * (unless o->no_new_privs_set).
 * Does not take ownership of the fds in o->paths. Returns 0, -EOPNOTSUPP when
 * the ABI is below o->min_abi, -EINVAL for bad options, or the -errno of the
 * failing step (a missing path gives -ENOENT). ret (optional) is filled on
 * success and on -EOPNOTSUPP (with the ABI found). */
int moat_landlock_apply(const struct moat_landlock_opts *o, struct moat_landlock_report *ret);

/* moat_landlock_apply() in two steps, for a caller that builds the ruleset
 * while it may still wait for something else and restricts itself later.
 * prepare: *ret_ruleset gets the ruleset fd with every rule added (the caller
 * owns and closes it), or -1 when best effort found no Landlock; returns and
 * reports like moat_landlock_apply() (report.enforced stays false).
 * enforce: restricts the calling process with it (nothing for -1), setting
 * no_new_privs first unless no_new_privs_set. */
int moat_landlock_prepare(const struct moat_landlock_opts *o, int *ret_ruleset,
			  struct moat_landlock_report *ret);
int moat_landlock_enforce(int ruleset, bool no_new_privs_set);

/* "execute,read_file,…" for a right mask of the given kind into buf (always
 * NUL-terminated, truncated to len). kind: 'f' filesystem, 'n' net, 's' scope. */
const char *moat_landlock_rights_str(char kind, uint64_t mask, char *buf, unsigned len);
