/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* `moat doctor`: what the limits layer can enforce for this user. */
#include <string.h>

#include "limits/cgroup.h"
#include "doctor/doctor.h"
#include "supervisor/state.h"

#define NEEDED (MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU)

void moat_doctor_cgroup(json_t *o)
{
	struct moat_cgroup_info info;
	char buf[64], dir[MOAT_STATE_PATH];
	json_t *c = json_object();
	if (!c)
		return;
	if (moat_cgroup_detect(&info) < 0)
		memset(&info, 0, sizeof(info));
	json_object_set_new(c, "mode",
			    json_string(info.mode == 2		 ? "v2"
						: info.mode == 1 ? "v1"
								 : "none"));
	json_object_set_new(c, "available",
			    json_string(moat_cgroup_ctrl_names(info.available, buf, sizeof(buf))));
	json_object_set_new(c, "usable",
			    json_string(moat_cgroup_ctrl_names(info.usable, buf, sizeof(buf))));
	json_object_set_new(c, "v2_tracking", json_boolean(info.v2_tracking));
	json_object_set_new(c, "enforced", json_boolean((info.usable & NEEDED) == NEEDED));
	json_object_set_new(c, "fallback",
			    json_string((info.usable & NEEDED) == NEEDED
						? "none"
						: "rlimits with --allow-degraded cgroup"));
	if (moat_state_default_dir(dir, sizeof(dir)) >= 0)
		json_object_set_new(c, "state_dir", json_string(dir));
	json_object_set_new(o, "limits", c);
}

void moat_doctor_cgroup_text(FILE *t, json_t *o)
{
	json_t *c = json_object_get(o, "limits");
	if (!c)
		return;
	bool ok = json_is_true(json_object_get(c, "enforced"));
	const char *usable = json_string_value(json_object_get(c, "usable"));
	fprintf(t, "  [%s] %-26s %s\n", ok ? " ok " : "warn", "cgroup limits",
		ok ? "cpu, memory, pids enforced with cgroups"
		   : "--cpus/--memory/--pids refused (exit 125) unless --allow-degraded cgroup");
	fprintf(t, "  %34s usable controllers: %s%s\n", "", usable && *usable ? usable : "none",
		ok ? "" : "; degraded: RLIMIT_AS and RLIMIT_NPROC instead");
	const char *dir = json_string_value(json_object_get(c, "state_dir"));
	if (dir)
		fprintf(t, "  [info] %-26s %s (moat gc cleans crashed runs)\n", "run state", dir);
}
