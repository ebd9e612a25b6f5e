/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The identity layer: who the command is inside and in which namespaces
 * (plan.h, identity). The host uid (root mode: one of the plan's range) is
 * allocated as the sandbox is created (spawn.c), the namespaces made by the
 * backend's clone3 (backend_ns.c); the init sets the hostname, the uid/gid,
 * drops every capability and makes its cgroup namespace (sandbox.c, steps
 * "identity").
 */
#include <sched.h>

#include "supervisor/layer.h"
#include "policy/plan.h"

static int identity_derive(const struct moat_plan *pl, struct moat_layer_view *v)
{
	static const struct {
		uint64_t flag;
		const char *name;
	} ns[] = {
		{CLONE_NEWUSER, "user"}, {CLONE_NEWNS, "mount"}, {CLONE_NEWPID, "pid"},
		{CLONE_NEWIPC, "ipc"},	 {CLONE_NEWUTS, "uts"},	 {CLONE_NEWNET, "net"},
	};
	const struct moat_plan_identity *id = &pl->id;
	int k = moat_layer_view_add(v, "uid %u", (unsigned)id->uid);
	if (k >= 0)
		k = moat_layer_view_add(v, "gid %u", (unsigned)id->gid);
	if (k >= 0)
		k = moat_layer_view_add(v, "user %s", id->user ? id->user : "-");
	if (k >= 0)
		k = moat_layer_view_add(v, "home %s", id->home);
	if (k >= 0)
		k = moat_layer_view_add(v, "hostname %s", id->hostname ? id->hostname : "-");
	for (size_t i = 0; i < ELEMENTSOF(ns) && k >= 0; i++)
		if (id->clone_flags & ns[i].flag)
			k = moat_layer_view_add(v, "namespace %s", ns[i].name);
	/* made by the init itself, after it joined its cgroup */
	if (k >= 0)
		k = moat_layer_view_add(v, "namespace cgroup");
	if (k >= 0)
		k = moat_layer_view_add(v, "root-uids %u+%u", id->root_uid_base,
					id->root_uid_slots);
	if (k >= 0)
		k = moat_layer_view_add(v, "capabilities none");
	return k;
}

const struct moat_layer_ops moat_layer_identity = {
	.name = "identity",
	.derive = identity_derive,
};
