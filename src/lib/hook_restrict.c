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

#include "lib/hooks.h"
#include "lib/landlock.h"
#include "lib/sandbox.h"
#include "lib/seccomp.h"

/*
 * Landlock rules from the plan, with paths as seen after pivot_root:
 *   "/" read-only (read + execute on everything the mount plan made visible);
 *   every writable area of the plan (workspace, /tmp, home, /output, extra
 *   --rw/--tmpfs, /dev/shm), the device nodes and /dev/pts: every right.
 * Anything written elsewhere is denied by Landlock even if a mount went wrong.
 */
static int prepare_landlock(struct moat_init *sb)
{
	static struct moat_landlock_path paths[MOAT_PLAN_MAX_STEPS + 1];
	const struct moat_policy *p = sb->p;
	unsigned n = 0;
	int k;

	paths[n++] = (struct moat_landlock_path){
		.path = "/", .fd = -1, .writable = false, .kind = MOAT_LANDLOCK_KIND_DIR};
	for (unsigned i = 0; i < sb->plan->n_steps && n < MOAT_LANDLOCK_MAX_PATHS; i++) {
		const struct moat_step *s = &sb->plan->steps[i];
		bool rw = (s->flags & (MOAT_STEPF_WRITABLE | MOAT_STEPF_DEV)) ||
			s->op == MOAT_STEP_DEVPTS;
		if (!rw || s->op == MOAT_STEP_SYMLINK || s->op == MOAT_STEP_HIDE)
			continue;
		if ((s->flags & MOAT_STEPF_OPTIONAL) && access(s->dest, F_OK) < 0)
			continue;
		/* what the step mounted there; a later mount at the same place is
		 * of the same kind (the kernel refuses a file over a directory) */
		enum moat_landlock_kind kind = sb->step_type[i] == S_IFDIR ? MOAT_LANDLOCK_KIND_DIR
			: sb->step_type[i]				   ? MOAT_LANDLOCK_KIND_FILE
					   : MOAT_LANDLOCK_KIND_UNKNOWN;
		paths[n++] = (struct moat_landlock_path){
			.path = s->dest, .fd = -1, .writable = true, .kind = kind};
	}
	struct moat_landlock_opts o = {
		.paths = paths,
		.n_paths = n,
		/* ABI >= 4: no TCP at all with the network off (loopback included). */
		.net_none = p->net == MOAT_NET_NONE,
		/* ABI >= 6: abstract unix sockets and signals stay inside. */
		.scope = true,
		/* Checked by the supervisor already; this keeps the init honest. */
		.min_abi = (p->allow_degraded & MOAT_DEGRADE_LANDLOCK) ? 0 : 1,
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
	if (moat_policy_test_no_landlock(sb->p))
		return 0;
	if (prepare_landlock(sb) < 0)
		return -1;
	sb->landlock_ready = true;
	return 0;
}

int moat_hook_restrict(struct moat_init *sb, int *ret_notify_fd)
{
	*ret_notify_fd = -1;
	if (!moat_policy_test_no_landlock(sb->p)) {
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
	if (moat_policy_test_no_seccomp(sb->p))
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
