/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a caller needs to show the structured status (moat.h): the names of
 * its enums and the escaper for the raw names and paths in it. */
#include "moat/moat.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

const char *moat_review_state_name(enum moat_review_state s)
{
	static const char *const names[] = {
		[MOAT_REVIEW_HELD] = "held",
		[MOAT_REVIEW_REFUSED] = "refused",
		[MOAT_REVIEW_FAILED] = "failed",
		[MOAT_REVIEW_CONFLICT] = "conflict",
	};
	return (size_t)s < ELEMENTSOF(names) && names[s] ? names[s] : "?";
}

size_t moat_escape(const char *in, size_t len, char *out, size_t outlen)
{
	return moat_json_escape(in, len, out, outlen);
}
