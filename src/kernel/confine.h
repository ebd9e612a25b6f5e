/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Confinement of moat's own helper processes that parse hostile bytes (the
 * egress proxy worker, the fronts of `moat mcp` and `moat serve`): one place
 * for the identity drop and the seccomp allowlist they share, so that a
 * fix to one is a fix to all.
 */
#pragma once

#include <seccomp.h>
#include <stddef.h>

/* As root: become nobody (65534), no groups, no capability in any set
 * (bounding, ambient, permitted, effective: checked after), parent-death
 * SIGKILL and not dumpable again (a change of credentials clears both).
 * Not root: nothing. 0 or -errno. */
int moat_confine_drop_root(void);

/* Extra rules a caller adds to the base filter (ctx is the filter being
 * built); 0 or -errno. */
typedef int (*moat_confine_rules_fn)(scmp_filter_ctx ctx, void *userdata);

/* Loads a seccomp filter (no_new_privs set) whose default is EPERM and that
 * allows: the base set every helper needs (read, write, close, memory that
 * never becomes executable, signals' return, exit, futex, getrandom,
 * clock_gettime, getpid, gettid, restart_syscall, sigaltstack for the
 * sanitizer build), the system calls of extra[0..n_extra) without argument
 * checks, and what rules() adds (may be NULL). 0 or -errno. */
int moat_confine_seccomp(const int *extra, size_t n_extra, moat_confine_rules_fn rules,
			 void *userdata);
