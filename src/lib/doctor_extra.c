/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Layer-specific doctor probes; each layer adds its own lines here. */
#include "lib/doctor.h"

void moat_doctor_extra(json_t *o)
{
	(void)o;
}

void moat_doctor_extra_text(FILE *t, json_t *o)
{
	(void)t;
	(void)o;
}
