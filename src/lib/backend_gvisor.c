/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The gVisor backend (backend.h, docs/ISOLATION.md).
 */
#include <errno.h>

#include "lib/backend.h"
#include "lib/errors.h"
#include "lib/run.h"

static int gv_prepare(struct moat_run *r)
{
	return moat_error_set(r->err, "isolation", EOPNOTSUPP, "isolation gvisor: not yet");
}

static int gv_start(struct moat_run *r)
{
	return -EOPNOTSUPP;
}

static void gv_kill(struct moat_run *r)
{
}

static void gv_release(struct moat_run *r)
{
}

static const struct moat_backend_ops gv_ops = {
	.name = "gvisor",
	.prepare = gv_prepare,
	.start = gv_start,
	.kill = gv_kill,
	.release = gv_release,
};

const struct moat_backend_ops *moat_backend_gvisor(void)
{
	return &gv_ops;
}
