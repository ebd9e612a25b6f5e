/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control channel between the supervisor and a ready sandbox's init
 * (a SOCK_SEQPACKET pair, one message per record). The supervisor asks the
 * init to start a process, signal one, or signal every process; the init
 * answers each start and reports each exit. Fixed-size records only: the
 * init allocates nothing. What a process runs (argv, environment, working
 * directory) travels in a sealed memfd that only the new process reads.
 */
#pragma once

#include <stdint.h>

enum moat_ctl_type {
	MOAT_CTL_EXEC = 1, /* sup -> init: start process `id`; fds: blob, report, std */
	MOAT_CTL_SIGNAL, /* sup -> init: send `sig` to process `id` (its group if flags) */
	MOAT_CTL_SIGNAL_ALL, /* sup -> init: send `sig` to every process of the sandbox */
	MOAT_CTL_STARTED = 16, /* init -> sup: process `id` forked as `pid` */
	MOAT_CTL_EXITED, /* init -> sup: process `id` ended with wait `status` */
	MOAT_CTL_REFUSED, /* init -> sup: process `id` not started: `err` */
};

/* flags of MOAT_CTL_EXEC: which of the command's fds 0..2 came with the
 * request (in that order, after the blob and the report fd), which of them
 * is the process's controlling terminal, and whether fd 2 is the same as 1. */
#define MOAT_CTL_HAS_FD(i) (1u << (i))
#define MOAT_CTL_TTY(i) (1u << (4 + (i)))
#define MOAT_CTL_ERR_IS_OUT (1u << 8)
/* ... and whether the sandbox ends with this process (moat run's command):
 * the init exits right after its EXITED record, so the kernel tears the
 * namespaces down while the supervisor handles that record, instead of
 * after the supervisor's kill. Every other process dies with the init, as
 * the supervisor's kill would have made it. */
#define MOAT_CTL_LAST (1u << 9)
/* ... and whether the supervisor may read a process of the init's memory
 * that is not dumpable (it has CAP_SYS_PTRACE where the init's memory
 * belongs: root mode). Then the init starts the process with vfork
 * (CLONE_VM | CLONE_VFORK: no copy of the init's page tables, no
 * copy-on-write faults, no teardown of that copy at execve) and the process
 * leaves the shared memory non-dumpable. Without it the process is a fork
 * that makes its own copy dumpable for the exec recorder: a vforked one
 * would make the init's memory dumpable, which any process of the sandbox
 * could then open through /proc/1/mem and keep. */
#define MOAT_CTL_SHARED_MM (1u << 10)
/* flags of MOAT_CTL_SIGNAL: the process group, not only the process */
#define MOAT_CTL_GROUP 1u

struct moat_ctl_req {
	uint32_t type;
	uint32_t id;
	int32_t sig;
	uint32_t flags;
};

struct moat_ctl_ev {
	uint32_t type;
	uint32_t id;
	int32_t pid; /* in the sandbox's pid namespace */
	int32_t status; /* wait status (EXITED) */
	int32_t err; /* positive errno (REFUSED) */
	uint32_t pad;
	uint64_t utime_us, stime_us, maxrss_kb; /* of the process and what it waited for */
};

/* The blob: header, then NUL-terminated strings: cwd, argv[0..argc),
 * env[0..envc). */
struct moat_ctl_blob {
	uint32_t magic;
	uint32_t argc, envc;
	uint32_t len; /* bytes of strings after the header */
};
#define MOAT_CTL_BLOB_MAGIC 0x6d6f6178u
/* Processes one sandbox runs at once (and the init's table of them). */
#define MOAT_MAX_PROCS 64
