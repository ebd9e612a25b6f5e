/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/sandbox/: the isolation backends (backend.h; today namespaces) and the
 * sandbox's init: its ordered set-up steps, control channel, fd hand-over, the user's paths
 */
/*
 * The isolation backend under the lifecycle (spawn.c): what a sandbox is
 * made of below the shared parts (policy, plan, audit, egress proxy,
 * credentials, limits' accounting, workspace review). A backend brings up an
 * isolated environment whose PID 1 is moat's init serving the control
 * channel (ctl.h): processes are started, signalled and reaped through it
 * the same way at every level, so exec, stdio relays, time limits and exec
 * records above are shared too. Today: "process" (namespaces, backend_ns.c);
 * a gVisor or microVM backend implements the same four operations.
 */
#pragma once

struct moat_run;

struct moat_backend_ops {
	const char *name; /* the isolation level it provides */
	/* Before the layers prepare (cgroups, audit log, proxy config): what
	 * the backend must know first (the user's paths, resolved once). */
	int (*prepare)(struct moat_run *r);
	/* After they did: up to a ready init. Sets r->pidfd (readable when the
	 * sandbox is gone) and r->sb.sock_sup (the control channel), and calls
	 * moat_supervise_child() and moat_supervise_started() at the points
	 * where the layers' supervisor steps overlap the sandbox's own set-up.
	 * < 0 with r->err filled: nothing of the user's ever ran. */
	int (*start)(struct moat_run *r);
	/* Optional: when start returns with the init still assembling the
	 * sandbox (its set-up channels on r->epfd, tag MOAT_TAG_CREATE), one
	 * step of the wait without blocking: 1 ready, 0 not yet, < 0 with
	 * r->err filled (a step failed). NULL: start returns ready. */
	int (*poll)(struct moat_run *r);
	/* With poll: how long start-to-ready may take before the sandbox is
	 * ended as stalled; 0: the default (spawn.c, CREATE_READY_MS). */
	unsigned ready_ms;
	/* Kills everything of the sandbox and waits until it is gone. */
	void (*kill)(struct moat_run *r);
	/* Closes what prepare/start kept. */
	void (*release)(struct moat_run *r);
	/* Optional: its own descriptor on r->epfd (tag MOAT_TAG_BACKEND) is
	 * readable (gVisor: the exec records' receiver). */
	void (*dispatch)(struct moat_run *r);
};

const struct moat_backend_ops *moat_backend_ns(void);
/* Root mode: the user's directories as detached idmapped mounts in
 * r->sb.premounted[] (their owner shown as r->sb.host_uid); backend_ns.c. */
int moat_backend_ns_idmapped(struct moat_run *r);
/* gVisor (backend_gvisor.c): moat's init inside runsc's sandbox. */
const struct moat_backend_ops *moat_backend_gvisor(void);
/* A QEMU microVM (backend_vm.c): moat's init as the guest's PID 1. */
const struct moat_backend_ops *moat_backend_vm(void);
