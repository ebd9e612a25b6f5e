/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The vm level's control stream (backend_vm.c, vm_guest.c, docs/ISOLATION.md):
 * between the host side (the holder, which speaks ctl.h to the supervisor)
 * and moat's init inside the guest, over one virtio-serial port. No
 * descriptor crosses a VM boundary, so what ctl.h passes as fds travels as
 * frames: the request's blob, the command's stdin, stdout and stderr, its
 * exec report. Each frame is a fixed header and at most MOAT_VM_PAYLOAD
 * bytes; a frame that breaks these rules ends the stream (both sides).
 */
#pragma once

#include <stdint.h>

#include "limits/cgroup.h"

enum moat_vm_type {
	/* host -> guest */
	MOAT_VM_CONFIG = 1, /* struct moat_vm_config, then the seccomp program */
	MOAT_VM_EXEC, /* id; u32 ctl flags, then the blob (ctl.h), in one frame */
	MOAT_VM_STDIN, /* id; bytes of fd 0 (empty: end of input) */
	MOAT_VM_SIGNAL, /* id; i32 sig, u32 flags (ctl.h MOAT_CTL_GROUP) */
	MOAT_VM_SIGNAL_ALL, /* i32 sig */
	/* guest -> host */
	MOAT_VM_READY = 16, /* the guest serves the stream */
	MOAT_VM_EVENT, /* id; a struct moat_ctl_ev (STARTED, EXITED, REFUSED) */
	MOAT_VM_REPORT, /* id; a struct moat_setup_error, or empty: the exec happened */
	MOAT_VM_OUT, /* id, chan 1|2; bytes (empty: that stream ended) */
	MOAT_VM_FAIL, /* the guest's set-up failed: a struct moat_setup_error */
	MOAT_VM_EXECREC, /* an exec record: one struct moat_gvt_frame (gvisor_trace.h) */
};

struct moat_vm_hdr {
	uint32_t len; /* payload bytes after this header */
	uint16_t type;
	uint16_t chan;
	uint32_t id;
};

#define MOAT_VM_PAYLOAD (256u << 10)
/* A guest-side mount of the plan (the host exports everything else). */
enum moat_vm_mount_op {
	MOAT_VM_M_TMPFS = 1,
	MOAT_VM_M_PROC,
	MOAT_VM_M_DEV,
	MOAT_VM_M_BIND, /* a host mount an earlier guest mount covers: shown again */
};
#define MOAT_VM_MAX_MOUNTS 16
#define MOAT_VM_DEST 120

struct moat_vm_mount {
	uint32_t op;
	uint32_t mode;
	uint64_t size;
	char dest[MOAT_VM_DEST];
};

/* What the guest applies before it serves: the sandbox user, the
 * in-guest layers (defence in depth: the VM is the boundary), its mounts. */
struct moat_vm_config {
	uint32_t magic;
	uint32_t uid, gid;
	uint32_t n_mounts;
	uint32_t seccomp_len; /* struct sock_filter instructions after the config */
	uint32_t landlock; /* 1: a ruleset: write only below the rw paths */
	uint32_t net; /* 1: --net allow: configure the virtio-net link (vm_net.c) */
	uint32_t record_exec; /* 1: the filter notifies execs: the guest records them */
	uint64_t nofile, fsize, nproc, as;
	char hostname[64];
	struct moat_vm_mount mounts[MOAT_VM_MAX_MOUNTS];
	/* writable in the guest (workspace, rw binds, tmpfs, /output) */
	uint32_t n_rw;
	char rw[MOAT_VM_MAX_MOUNTS][MOAT_VM_DEST];
};
#define MOAT_VM_CONFIG_MAGIC 0x6d766d31u

/* The guest init: `moat __vm-init` as PID 1 of the initramfs. */
/* (moat_vm_init_main() of moat.h) */
