/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel restriction layers applied last in the sandbox: Landlock, then
 * seccomp. Runs in the init after pivot_root and the capability drop: no
 * allocation (the seccomp program was compiled by the supervisor, see
 * restrict.c), errno set on failure.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/hooks.h"
#include "kernel/landlock.h"
#include "sandbox/sandbox.h"
#include "kernel/seccomp.h"

/*
 * The Landlock rules are the plan's (plan_parts.c, build_landlock), with paths
 * as seen after pivot_root. What only the assembled root can tell is decided
 * here: whether an optional path exists, and whether a rule is for a
 * directory or a file (what its step mounted there; a later mount at the same
 * place is of the same kind: the kernel refuses a file over a directory).
 */
static int prepare_landlock(struct moat_init *sb)
{
	static struct moat_landlock_path paths[MOAT_PLAN_MAX_LANDLOCK];
	const struct moat_plan_landlock *l = &sb->plan->landlock;
	unsigned n = 0;
	int k;

	for (unsigned i = 0; i < l->n_rules && n < MOAT_LANDLOCK_MAX_PATHS; i++) {
		const struct moat_plan_landlock_rule *r = &l->rules[i];
		if (r->optional && access(r->path, F_OK) < 0)
			continue;
		/* a tree of the writable root that is a symlink or a file is no
		 * writable area (a link made again, a read-only bind) */
		if (r->writable && r->step >= 0 &&
		    (sb->plan->steps[r->step].flags & MOAT_STEPF_ROOT_LAYER) &&
		    sb->step_type[r->step] != S_IFDIR)
			continue;
		enum moat_landlock_kind kind = MOAT_LANDLOCK_KIND_DIR;
		if (r->step >= 0) {
			unsigned t = sb->step_type[r->step];
			kind = t == S_IFDIR ? MOAT_LANDLOCK_KIND_DIR
				: t	    ? MOAT_LANDLOCK_KIND_FILE
					    : MOAT_LANDLOCK_KIND_UNKNOWN;
		}
		paths[n++] = (struct moat_landlock_path){
			.path = r->path, .fd = -1, .writable = r->writable, .kind = kind};
	}
	struct moat_landlock_opts o = {
		.paths = paths,
		.n_paths = n,
		.net_none = l->net_none,
		.scope = l->scope,
		/* Checked by the supervisor already; this keeps the init honest. */
		.min_abi = l->min_abi,
	};
	k = moat_landlock_prepare(&o, &sb->landlock_ruleset, NULL);
	if (k < 0) {
		errno = -k;
		return -1;
	}
	return 0;
}

int moat_hook_restrict_prepare(struct moat_init *sb)
{
	sb->landlock_ruleset = -1;
	sb->landlock_ready = false;
	if (!moat_plan_landlock_on(sb->plan))
		return 0;
	if (prepare_landlock(sb) < 0)
		return -1;
	sb->landlock_ready = true;
	return 0;
}

int moat_hook_landlock(struct moat_init *sb)
{
	if (moat_plan_landlock_on(sb->plan)) {
		if (!sb->landlock_ready) {
			errno = EPROTO; /* never run without the rules that were asked for */
			return -1;
		}
		/* the init's drop_privileges() set no_new_privs */
		int k = moat_landlock_enforce(sb->landlock_ruleset, true);
		if (sb->landlock_ruleset >= 0)
			close(sb->landlock_ruleset);
		sb->landlock_ruleset = -1;
		if (k < 0) {
			errno = -k;
			return -1;
		}
	}
	return 0;
}

int moat_hook_seccomp(struct moat_init *sb, int *ret_notify_fd)
{
	*ret_notify_fd = -1;
	if (!moat_plan_seccomp_on(sb->plan))
		return 0;
	if (!sb->seccomp_prog) {
		errno = EPROTO; /* never run without the filter that was asked for */
		return -1;
	}
	int k = moat_seccomp_install(sb->seccomp_prog, ret_notify_fd);
	if (k < 0) {
		errno = -k;
		return -1;
	}
	return 0;
}
