/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Layer-specific doctor probes; each layer adds its own lines here. */
#include "doctor/doctor.h"
#include "kernel/restrict.h"

void moat_doctor_extra(json_t *o)
{
	moat_restrict_doctor(o);
	moat_doctor_cgroup(o);
}

void moat_doctor_extra_text(FILE *t, json_t *o)
{
	moat_restrict_doctor_text(t, o);
	moat_doctor_cgroup_text(t, o);
}
