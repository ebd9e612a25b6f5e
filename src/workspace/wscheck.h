/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Start checks for --workspace DIR:rw|ro (wscheck.c). */
#pragma once

#include "moat/moat.h"

/* The refusal for an rw run that the check result does not allow (exit 125
 * via the caller), 0 when it may start. */
int moat_wscheck_enforce(const struct moat_policy *p, const struct moat_workspace_check *c,
			 struct moat_error *ret_err);

/* The same checks for every --rw bind (no review either): refusal as above;
 * *ret_hardlinks gets their hard links. */
int moat_wscheck_mounts(const struct moat_policy *p, unsigned long long *ret_hardlinks,
			struct moat_error *ret_err);
