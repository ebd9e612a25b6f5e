/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The setup plan: policy -> an ordered list of filesystem steps, computed
 * before the sandbox is cloned (pure code, no syscalls), then applied in the
 * sandbox's init by sandbox.c with nothing allocated. `moat policy show`
 * prints it.
 */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "lib/policy.h"

enum moat_step_op {
	MOAT_STEP_BIND, /* bind host `src` at `dest` */
	MOAT_STEP_TMPFS, /* fresh tmpfs at `dest` (size, mode) */
	MOAT_STEP_PROC, /* fresh procfs at `dest`, dangerous files masked */
	MOAT_STEP_DEVPTS, /* new devpts instance at `dest` */
	MOAT_STEP_MQUEUE, /* not used by default */
	MOAT_STEP_SYMLINK, /* symlink `dest` -> `src` */
	MOAT_STEP_MKDIR, /* directory `dest` (mode) */
	MOAT_STEP_FILE, /* regular file `dest` with `data` (mode) */
	MOAT_STEP_HIDE, /* empty read-only file or directory over `dest` */
	MOAT_STEP_READONLY, /* make the mount at `dest` read-only (not recursive) */
	MOAT_STEP_OVERLAY, /* overlay: lower = host `src`, upper on tmpfs, at `dest` */
};

enum moat_step_flag {
	MOAT_STEPF_RO = 1u << 0, /* read-only, recursively */
	MOAT_STEPF_OPTIONAL = 1u << 1, /* a missing source is skipped, not an error */
	MOAT_STEPF_MIRROR_LINK = 1u << 2, /* if src is a symlink, recreate it instead of binding */
	MOAT_STEPF_DEV = 1u << 3, /* device nodes allowed (no nodev) */
	MOAT_STEPF_NOEXEC = 1u << 4,
	MOAT_STEPF_USER = 1u << 5, /* comes from the user (src resolved strictly) */
	MOAT_STEPF_WORKSPACE = 1u << 6, /* the workspace (kept as an fd for Landlock) */
	MOAT_STEPF_OUTPUT = 1u << 7, /* /output: the supervisor keeps an fd to collect it */
	MOAT_STEPF_WRITABLE = 1u << 8, /* a writable area (Landlock write rights) */
	MOAT_STEPF_COPY_SMALL = 1u
		<< 9, /* a small world-readable regular file is copied, not bound */
	MOAT_STEPF_SYSROOT = 1u << 10, /* src is below --rootfs: resolved beneath it, no symlink */
};

struct moat_step {
	enum moat_step_op op;
	unsigned flags;
	const char *src; /* host path, symlink target, or NULL */
	const char *dest; /* absolute path inside the new root */
	uint64_t size; /* tmpfs size */
	unsigned mode; /* tmpfs root / mkdir / file mode */
	const char *data; /* FILE contents */
	size_t data_len;
};

#define MOAT_PLAN_MAX_STEPS (MOAT_MAX_MOUNTS + 128)

struct moat_plan {
	struct moat_step steps[MOAT_PLAN_MAX_STEPS];
	unsigned n_steps;
	/* generated /etc contents, owned by the plan */
	char passwd[512], group[256], hosts[256], hostname[80], resolv[128], nsswitch[256];
	const char *sysroot; /* "" for the host, else the --rootfs path */
	char cwd[MOAT_MAX_PATH];
	/* strings the steps point to (sources joined below --rootfs) */
	char arena[16384];
	size_t arena_used;
};

/* Build the plan for p. Pure: touches no file. Returns -E2BIG if the policy
 * needs more steps than the plan holds. */
int moat_plan_build(const struct moat_policy *p, struct moat_plan *ret_plan);

/* One line per step, for `moat policy show`. Caller frees. */
int moat_plan_format(const struct moat_plan *plan, char **ret_text);

const char *moat_step_op_name(enum moat_step_op op);
