/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Resource limits by setrlimit: the ones every run has (nofile, fsize, no
 * core dumps) and the fallback for memory and processes where no cgroup can be had. */
#include <sys/resource.h>

#include "limits/cgroup.h"
#include "shared/macro.h"

/* ---- rlimits ----------------------------------------------------------------- */

void moat_rlimits_plan(const struct moat_cgroup_limits *l, uint64_t nofile, uint64_t fsize,
		       bool degraded, struct moat_rlimit_opts *ret)
{
	memset(ret, 0, sizeof(*ret));
	ret->nofile = nofile;
	ret->fsize = fsize;
	if (degraded) {
		ret->as = l->memory;
		ret->nproc = l->pids;
	}
}

static int lower(int resource, uint64_t want)
{
	struct rlimit rl;
	if (getrlimit(resource, &rl) < 0)
		return negerrno();
	rlim_t v = (rlim_t)want;
	if (rl.rlim_max != RLIM_INFINITY && v > rl.rlim_max)
		v = rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = v;
	if (setrlimit(resource, &rl) < 0)
		return negerrno();
	return 0;
}

int moat_rlimits_apply(const struct moat_rlimit_opts *o)
{
	struct rlimit core = {0, 0};
	int r;
	if (setrlimit(RLIMIT_CORE, &core) < 0)
		return negerrno();
	if (o->nofile && (r = lower(RLIMIT_NOFILE, o->nofile)) < 0)
		return r;
	if (o->fsize && (r = lower(RLIMIT_FSIZE, o->fsize)) < 0)
		return r;
	if (o->as && (r = lower(RLIMIT_AS, o->as)) < 0)
		return r;
	if (o->nproc && (r = lower(RLIMIT_NPROC, o->nproc)) < 0)
		return r;
	return 0;
}
