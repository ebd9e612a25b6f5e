/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The mount/root layer: the plan's filesystem steps (plan.c). The supervisor
 * side is the backend's (the user's paths resolved once, paths.c; root
 * mode's idmapped mounts, backend_ns.c); the init applies the steps, pivots
 * into the new root and makes it read-only (sandbox.c, steps "mount").
 */
#include "supervisor/layer.h"
#include "policy/plan.h"

static const char *flag_names(unsigned f, char *buf, size_t len)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{MOAT_STEPF_RO, "ro"},
		{MOAT_STEPF_OPTIONAL, "optional"},
		{MOAT_STEPF_MIRROR_LINK, "mirror-link"},
		{MOAT_STEPF_DEV, "dev"},
		{MOAT_STEPF_NOEXEC, "noexec"},
		{MOAT_STEPF_USER, "user"},
		{MOAT_STEPF_WORKSPACE, "workspace"},
		{MOAT_STEPF_OUTPUT, "output"},
		{MOAT_STEPF_WRITABLE, "writable"},
		{MOAT_STEPF_COPY_SMALL, "copy-small"},
		{MOAT_STEPF_SYSROOT, "sysroot"},
		{MOAT_STEPF_RUNTIME, "runtime"},
	};
	size_t used = 0;
	buf[0] = 0;
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if ((f & names[i].bit) && used + strlen(names[i].name) + 2 < len)
			used += (size_t)snprintf(buf + used, len - used, "%s%s", used ? "," : "",
						 names[i].name);
	return used ? buf : "-";
}

static int mount_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	char fl[160];
	int k = 0;
	for (unsigned i = 0; i < pl->n_steps && k >= 0; i++) {
		const struct moat_step *s = &pl->steps[i];
		k = moat_layer_view_add(v, "step %s %s %s %s", moat_step_op_name(s->op), s->dest,
					s->src ? s->src : "-",
					flag_names(s->flags, fl, sizeof(fl)));
	}
	if (k >= 0)
		k = moat_layer_view_add(v, "cwd %s", pl->cwd);
	if (k >= 0)
		k = moat_layer_view_add(v, "root %s",
					pl->sysroot && *pl->sysroot ? pl->sysroot : "host");
	return k;
}

const struct moat_layer_ops moat_layer_mount = {
	.name = "mount",
	.derive = mount_derive,
};
