/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The library-wide error helper: filling the caller's struct moat_error
 * (errors.h), the one way every libmoat function reports a failure. */
#include <stdarg.h>

#include "policy/errors.h"
#include "shared/macro.h"

int moat_error_set(struct moat_error *e, const char *stage, int err, const char *fmt, ...)
{
	if (e) {
		va_list ap;
		memset(e, 0, sizeof(*e));
		snprintf(e->stage, sizeof(e->stage), "%s", stage);
		e->err = err;
		va_start(ap, fmt);
		vsnprintf(e->message, sizeof(e->message), fmt, ap);
		va_end(ap);
	}
	return err > 0 ? -err : -EINVAL;
}
