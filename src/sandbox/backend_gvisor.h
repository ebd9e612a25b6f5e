/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gVisor backend's parts (backend_gvisor.c): the OCI bundle runsc is
 * given (backend_gvisor_bundle.c). Kept apart from any OCI-spec parser: this
 * only writes the subset of config.json that runsc 0.0~20221219 reads.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy/plan.h"

/* In the bundle directory. */
#define MOAT_GV_ROOT "root" /* the container's root: mount points, generated files */
#define MOAT_GV_MNT "m" /* m/<step>: each bind source, mounted there by the holder */
#define MOAT_GV_OVL "ovl" /* the overlay workspace's upper/work tmpfs */
#define MOAT_GV_STATE "state" /* runsc --root */
#define MOAT_GV_LOG "runsc.log" /* runsc's own stderr */
#define MOAT_GV_EXE_STEP MOAT_PLAN_MAX_STEPS /* m/<this>: moat's executable */
#define MOAT_GV_INIT "/.moat/init" /* where it is inside */
/* With --rootfs or --image the container's /usr is not the host's, and
 * moat's init needs the host's loader and libc: the directory of the
 * host's loader (PT_INTERP), read-only at /.moat/lib, and the init run
 * through that loader (--library-path /.moat/lib). */
#define MOAT_GV_LIB_STEP (MOAT_PLAN_MAX_STEPS + 1) /* m/<this>: the loader's directory */
#define MOAT_GV_LIB "/.moat/lib"

/* What the holder mounts at m/<i> (per plan step). */
enum moat_gv_src {
	MOAT_GV_NONE = 0, /* nothing (not a bind, or optional and missing) */
	MOAT_GV_BIND, /* a bind of the step's opened source */
	MOAT_GV_OVERLAY, /* the workspace overlay */
	MOAT_GV_OUTPUT, /* a host tmpfs, handed to the supervisor for /output */
	MOAT_GV_ROOTBIND, /* a read-only system bind mounted straight onto root/<dest> */
};

struct moat_gv_bundle {
	enum moat_gv_src src[MOAT_PLAN_MAX_STEPS];
	/* Which bind steps may be MOAT_GV_ROOTBIND (set by the caller before
	 * moat_gv_bundle_write): read-only system sources, not a user's path.
	 * runsc's gofer binds the root recursively (MS_BIND|MS_REC, then a
	 * recursive read-only remount), so such a bind is served through the
	 * root's own connection instead of a mount of its own in gVisor. */
	bool rootbind_ok[MOAT_PLAN_MAX_STEPS];
	bool exe_rootbind; /* moat's executable onto root/.moat/init likewise */
	/* the host loader's file name in its directory (bound at
	 * MOAT_GV_LIB): set by the caller when the plan has a sysroot, "" else */
	char loader[64];
	mode_t type[MOAT_PLAN_MAX_STEPS]; /* S_IFDIR / S_IFREG of what m/<i> holds */
};

/* Writes root/ (mount points, /etc files, symlinks, directories) and
 * config.json into the bundle directory dirfd, for plan pl; srcfd[i] is the
 * opened source (O_PATH) of bind step i, -1 for none. Fills b with what the
 * holder must mount (b->rootbind_ok is kept). rl: the process's rlimits (0 = not set).
 * -errno with *ret_step (plan step or -1) and why filled. */
int moat_gv_bundle_write(int dirfd, const char *dir, const struct moat_plan *pl, const int *srcfd,
			 const struct moat_rlimit_opts *rl, struct moat_gv_bundle *b, int *ret_step,
			 char *why, size_t whylen);

/* Exec records from gVisor's trace session (backend_gvisor_trace.c). */
struct moat_run;
struct moat_gvt_sup;
/* Writes the pod-init config (its path into conf) and listens on the
 * bundle's trace socket; starts the confined receiver. -errno with why. */
int moat_gvt_start(int dirfd, const char *dir, struct moat_gvt_sup **ret, char *conf,
		   size_t conflen, char *why, size_t whylen);
/* The same from a pipe of frames someone else writes (the vm level's
 * holder, of the guest's records: backend_vm.c); fd is the trace's, also
 * on failure. */
int moat_gvt_attach(int fd, struct moat_gvt_sup **ret);
/* The receiver's pipe (to watch), -1 when there is none any more. */
int moat_gvt_fd(const struct moat_gvt_sup *t);
/* Its frames now: exec events in r's audit stream. */
void moat_gvt_dispatch(struct moat_run *r, struct moat_gvt_sup *t);
/* runsc is gone: the rest of the frames (until EOF, at most timeout_ms),
 * the receiver reaped, an `alert` when points were dropped or refused. */
void moat_gvt_finish(struct moat_run *r, struct moat_gvt_sup *t, int timeout_ms);
struct moat_gvt_sup *moat_gvt_free(struct moat_gvt_sup *t);
