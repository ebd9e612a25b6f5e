/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Filling struct moat_error, and helpers shared inside libmoat. */
#pragma once

#include <stddef.h>

#include "moat/moat.h"

/* Fills e (if not NULL) and returns -err (or -EINVAL if err is 0). */
int moat_error_set(struct moat_error *e, const char *stage, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* An absolute, normalised path (no //, ., ..; no trailing /; no control chars). */
int moat_path_check(const char *path, char *why, size_t whylen);
