/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Fields that the parser's records cannot set as options, checked and put
 * into a policy (docs/OCI.md): linux.resources.memory.disableOOMKiller, and
 * process.rlimits: the parser's "rlim" records
 * (oci_config.c) checked against what moat itself may set, then kept in
 * the policy for the sandbox's init (sandbox.c, set_rlimits) to apply.
 * moat never raises a limit: a hard value above the runtime's own hard
 * limit (which the container inherits) or above moat's --nofile/--fsize
 * fails create naming the field; RLIMIT_NPROC is lowered to moat's pids
 * limit instead (moat's rule: the lower of the two).
 */
#include <errno.h>
#include <string.h>
#include <sys/resource.h>

#include "moat/moat.h"
#include "policy/errors.h"
#include "policy/policy.h"
#include "shared/macro.h"

static const struct {
	const char *name;
	int resource;
} names[] = {
	{"RLIMIT_AS", RLIMIT_AS},
	{"RLIMIT_CORE", RLIMIT_CORE},
	{"RLIMIT_CPU", RLIMIT_CPU},
	{"RLIMIT_DATA", RLIMIT_DATA},
	{"RLIMIT_FSIZE", RLIMIT_FSIZE},
	{"RLIMIT_LOCKS", RLIMIT_LOCKS},
	{"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK},
	{"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
	{"RLIMIT_NICE", RLIMIT_NICE},
	{"RLIMIT_NOFILE", RLIMIT_NOFILE},
	{"RLIMIT_NPROC", RLIMIT_NPROC},
	{"RLIMIT_RSS", RLIMIT_RSS},
	{"RLIMIT_RTPRIO", RLIMIT_RTPRIO},
	{"RLIMIT_RTTIME", RLIMIT_RTTIME},
	{"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING},
	{"RLIMIT_STACK", RLIMIT_STACK},
};

const char *moat_oci_rlimit_name(int resource)
{
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (names[i].resource == resource)
			return names[i].name;
	return NULL;
}

int moat_oci_rlimit_resource(const char *name)
{
	for (size_t i = 0; i < ELEMENTSOF(names); i++)
		if (streq(name, names[i].name))
			return names[i].resource;
	return -1;
}

static unsigned long long lower(unsigned long long a, unsigned long long b)
{
	return a < b ? a : b;
}

int moat_oci_rlimits_place(struct moat_policy *p, struct moat_oci_process *pr,
			   struct moat_error *err)
{
	if (pr->n_rlimits && p->isolation != MOAT_ISO_PROCESS)
		return moat_error_set(err, "oci", EINVAL,
				      "config.json: process.rlimits: applied by the namespace "
				      "backend only (the policy's isolation is another)");
	for (unsigned i = 0; i < pr->n_rlimits; i++) {
		struct moat_oci_rlimit *r = &pr->rlimits[i];
		const char *name = moat_oci_rlimit_name(r->resource);
		struct rlimit own;
		if (!name || r->resource < 0 || r->resource >= MOAT_POLICY_RLIMITS ||
		    r->resource == RLIMIT_CORE || r->soft > r->hard)
			return moat_error_set(err, "oci", EPROTO,
					      "config.json: process.rlimits[%u]: a bad record",
					      r->index);
		if (getrlimit(r->resource, &own) < 0)
			return moat_error_set(err, "oci", errno,
					      "config.json: process.rlimits[%u]: %s: getrlimit: %s",
					      r->index, name, strerror(errno));
		unsigned long long cap =
			own.rlim_max == RLIM_INFINITY ? ~0ULL : (unsigned long long)own.rlim_max;
		const char *whose = "the runtime's own hard limit, which moat never raises";
		if (r->resource == RLIMIT_NOFILE && p->nofile && p->nofile < cap) {
			cap = p->nofile;
			whose = "moat's --nofile";
		}
		if (r->resource == RLIMIT_FSIZE && p->fsize && p->fsize < cap) {
			cap = p->fsize;
			whose = "moat's --fsize";
		}
		if ((r->resource == RLIMIT_AS || r->resource == RLIMIT_DATA) && r->hard == 0)
			return moat_error_set(err, "oci", EINVAL,
					      "config.json: process.rlimits[%u]: %s hard 0: no "
					      "process could run",
					      r->index, name);
		if (r->resource == RLIMIT_NPROC) {
			/* moat's rule: the lower of the spec's and moat's pids limit */
			if (p->pids && p->pids < cap)
				cap = p->pids;
			r->hard = lower(r->hard, cap);
			r->soft = lower(r->soft, r->hard);
		} else if (r->hard > cap)
			return moat_error_set(err, "oci", EPERM,
					      "config.json: process.rlimits[%u]: %s hard %llu is "
					      "above what moat may set (%llu, %s)",
					      r->index, name, r->hard, cap, whose);
		p->rlimits[r->resource].set = true;
		p->rlimits[r->resource].soft = r->soft;
		p->rlimits[r->resource].hard = r->hard;
	}
	return 0;
}

void moat_oci_freezer_place(struct moat_policy *p)
{
	p->cgroup_freezer = true;
}

int moat_oci_oom_killer_place(struct moat_policy *p, const struct moat_oci_process *pr,
			      bool no_cgroup, struct moat_error *err)
{
	if (!pr->disable_oom_killer)
		return 0;
	/* the switch is the memory cgroup's: without moat's cgroup layer it
	 * would be dropped in silence */
	if (no_cgroup)
		return moat_error_set(err, "oci", EOPNOTSUPP,
				      "config.json: linux.resources.memory.disableOOMKiller: needs "
				      "moat's cgroup layer (--cgroup-manager disabled)");
	if (p->isolation != MOAT_ISO_PROCESS)
		return moat_error_set(err, "oci", EOPNOTSUPP,
				      "config.json: linux.resources.memory.disableOOMKiller: the "
				      "namespace backend only");
	p->oom_kill_disable = true;
	return 0;
}
