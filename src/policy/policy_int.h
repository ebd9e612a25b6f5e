/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Private to the policy files (policy*.c): the helpers and setters they share.
 * The interface of the policy to the rest of libmoat is policy.h. */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#include "policy/policy.h"

/*
 * Policy: JSON file + command-line options -> one validated struct moat_policy.
 * Pure code: no syscalls except reading the policy file and moat's own
 * environment. Every value goes through the same setter whether it came from
 * a flag or a key (a setter of the option table, policy_set.c), so flags and
 * keys cannot drift apart.
 *
 *   policy.c           the object: defaults, free, enum words, accessors
 *   policy_value.c     validated building blocks (paths, mounts, env, rules)
 *   policy_set.c       the option setters and the option table
 *   policy_load.c      the policy file: the JSON walk over the same setters
 *   policy_validate.c  checks across keys (moat_policy_validate)
 *   policy_json.c      the effective policy as JSON, the plan as text
 */

/* A setter: parses v into p; on failure returns -errno and says why. */
typedef int (*moat_policy_setter)(struct moat_policy *p, const char *v, char *why, size_t whylen);

/* ---- policy.c */
void moat_policy_strv_free(char **v, unsigned n);
/* Frees what s owns and zeroes it (s itself is not freed). */
void moat_policy_secret_clear(struct moat_secret *s);

/* ---- policy_value.c */
/* Control characters (< 0x20, 0x7f) anywhere in s. */
bool moat_policy_has_ctl(const char *s);
/* *dst = a copy of v (the old value freed). */
int moat_policy_str_set(char **dst, const char *v);
/* Appends a copy of s to (*v, *n); -E2BIG at max entries. */
int moat_policy_strv_add(char ***v, unsigned *n, unsigned max, const char *s);
/* A host path the user named (relative, "..", "~" made absolute; p->base_dir
 * while a policy file loads) into a fresh string *ret. */
int moat_policy_host_path_dup(const struct moat_policy *p, const char *v, char **ret, char *why,
			      size_t whylen);
/* "PATH[:DEST]" -> src, dest (dest = PATH without ':'). */
int moat_policy_split_src_dest(const char *v, char **ret_src, char **ret_dest);
/* One mount; src (RO, RW) is a host path, dest is checked against moat's own
 * directories. */
int moat_policy_mount_add(struct moat_policy *p, enum moat_mount_kind kind, const char *src,
			  const char *dest, uint64_t size, char *why, size_t whylen);
/* [A-Za-z_][A-Za-z0-9_]*, at most 255 bytes. */
int moat_policy_env_name_check(const char *n);
/* Sets (or replaces) one variable; value NULL: moat's own. */
int moat_policy_env_add(struct moat_policy *p, const char *name, const char *value);
/* "host[:ports]" (or a CIDR when cidr) checked by the proxy's parsers, appended. */
int moat_policy_rule_add(struct moat_host_rule **v, unsigned *n, const char *s, bool cidr,
			 char *why, size_t whylen);
bool moat_policy_syscall_name_ok(const char *s);
/* Moves *s into p (s is zeroed); -E2BIG past MOAT_MAX_SECRETS. */
int moat_policy_secret_add(struct moat_policy *p, struct moat_secret *s);
/* One of names[0..n) -> its index, or a message listing the choices. */
int moat_policy_keyword(const char *v, const char *const *names, unsigned n, unsigned *ret,
			char *why, size_t whylen);

/* ---- policy_set.c: the setters the JSON walk shares with the options */
int moat_pset_workspace_mode(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_workspace(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_input(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_output(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_rootfs(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_image(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_cwd(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_uid(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_gid(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_user(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_hostname(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_isolation(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_vm_accel(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_vm_kernel(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_tty_mode(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_cpus(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_memory(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_pids(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_timeout(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_kill_grace(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_disk(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_max_output(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_fsize(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_nofile(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_allow_degraded(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_allow_syscall(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_deny_syscall(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_net(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_allow_host(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_deny_host(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_allow_cidr(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_resolve(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_upstream_ca(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_inspect_tls(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_no_inspect(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_log(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_on_alert(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_apply(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_flag_pattern(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_review_accept(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_review_hold(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_held_max(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_held_exit(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_runs_max(struct moat_policy *p, const char *v, char *why, size_t whylen);
int moat_pset_retention(struct moat_policy *p, const char *v, char *why, size_t whylen);
