/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The table of policy keys x isolation levels (isolation.h). One row per key
 * (or per value of a key whose values differ); every check, message, plan
 * line and document row comes from it, so a level cannot honour a key in one
 * place and ignore it in another.
 */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/errors.h"
#include "sandbox/isolation.h"
#include "shared/macro.h"

#define S MOAT_ISO_SAME
#define E MOAT_ISO_EQUIV
#define R MOAT_ISO_REFUSED

/* Unprivileged, runsc runs --rootless in a user namespace that maps only
 * moat's own uid, to root there: gVisor shows the user's files as owned by
 * its root, and the sandbox user could not write a workspace or --rw bind. */
static bool u_rootless_writable(const struct moat_policy *p)
{
	if (moat_host_root())
		return false;
	if (p->workspace && p->workspace_mode != MOAT_WS_RO)
		return true;
	for (unsigned i = 0; i < p->n_mounts; i++)
		if (p->mounts[i].kind == MOAT_MOUNT_RW)
			return true;
	return false;
}

static bool u_hide(const struct moat_policy *p)
{
	for (unsigned i = 0; i < p->n_mounts; i++)
		if (p->mounts[i].kind == MOAT_MOUNT_HIDE)
			return true;
	return false;
}

static bool u_tty_always(const struct moat_policy *p)
{
	return p->tty == MOAT_TTY_ALWAYS;
}

static bool u_allow_sys(const struct moat_policy *p)
{
	return p->n_allow_syscalls > 0;
}

static bool u_deny_sys(const struct moat_policy *p)
{
	return p->n_deny_syscalls > 0;
}

static bool u_degrade_landlock(const struct moat_policy *p)
{
	return p->allow_degraded & MOAT_DEGRADE_LANDLOCK;
}

static bool u_degrade_notify(const struct moat_policy *p)
{
	return p->allow_degraded & MOAT_DEGRADE_SECCOMP_NOTIFY;
}

static bool u_net_allow(const struct moat_policy *p)
{
	return p->net == MOAT_NET_ALLOW;
}

static bool u_image(const struct moat_policy *p)
{
	return p->image != NULL;
}

static bool u_uid0(const struct moat_policy *p)
{
	return p->uid == 0 || p->gid == 0;
}

static bool u_net_host(const struct moat_policy *p)
{
	return p->net == MOAT_NET_HOST;
}

/* Keys not listed mean the same at every level by construction: they act
 * on the supervisor's side (audit, review, proxy, credentials, timeouts,
 * output) or on the bundle the backend is given (mounts, identity). */
static const struct moat_iso_key keys[] = {
	{"filesystem (workspace, input, output, rootfs, ro, rw, tmpfs)",
	 NULL,
	 {S, E, E},
	 {"mounts in the sandbox's mount namespace",
	  "the same mounts in the OCI bundle, served by gVisor's gofer; overlay "
	  "workspace on the host side, reviewed as at process level",
	  "the same tree assembled on the host side, served to the guest over virtio-9p "
	  "(tmpfs, proc and /dev the guest's own); overlay workspace on the host side, "
	  "reviewed as at process level"}},
	{"image",
	 u_image,
	 {S, S, S},
	 {"the image's unpacked root (the cache, read-only) as the system directories",
	  "the same binds in the bundle; moat's init runs through the host's loader, bound "
	  "read-only at /.moat/lib (as for --rootfs)",
	  "the same tree assembled on the host side from the image's root and served over "
	  "virtio-9p; the guest init is moat's own, from its initramfs"}},
	{"filesystem.mounts hide",
	 u_hide,
	 {S, R, R},
	 {"an empty read-only mount", "not in the bundle yet", "not in the VM's tree yet"}},
	{"process (uid, gid, user, hostname, cwd, env)",
	 NULL,
	 {S, E, E},
	 {"the init's identity", "the OCI process of each runsc exec",
	  "the guest init's, for each command"}},
	{"process uid or gid 0",
	 u_uid0,
	 {S, R, R},
	 {"the sandbox's own root: mapped to its unprivileged host uid, no capability, "
	  "securebits locked (no capability regained at exec)",
	  "root mode gives runsc's sandbox the policy's uid as its host uid, which would be "
	  "host root; not shown to hold no capability inside gVisor",
	  "the guest kernel's uid 0 is the guest's real root (every capability in the guest); "
	  "not shown to be dropped as at process level"}},
	{"filesystem writable workspace or rw (unprivileged)",
	 u_rootless_writable,
	 {S, R, E},
	 {"the sandbox's user namespace maps the owner",
	  "unprivileged, runsc --rootless shows your files as owned by gVisor's root, so the "
	  "sandbox user could not write them: use --workspace DIR:ro, or run moat as root",
	  "the holder's user namespace maps the sandbox user to you, so QEMU writes as you"}},
	{"process.tty always",
	 u_tty_always,
	 {S, R, R},
	 {"a pty of the sandbox's devpts",
	  "gVisor's devpts is not reachable from the host supervisor",
	  "the guest's terminals are not reachable from the host supervisor"}},
	{"limits (cpus, memory, pids)",
	 NULL,
	 {S, E, E},
	 {"the run's cgroup",
	  "the run's cgroup holds runsc's sandbox and gofer (gVisor's own memory counts)",
	  "the run's cgroup holds QEMU; guest RAM is --memory less 128 MiB for QEMU, vCPUs "
	  "--cpus rounded up, --pids RLIMIT_NPROC of the sandbox user in the guest"}},
	{"limits (timeout, kill_grace, max_output, nofile, fsize, disk)",
	 NULL,
	 {S, E, E},
	 {"the supervisor, rlimits and tmpfs sizes",
	  "the supervisor, the OCI process's rlimits (RLIMIT_AS/NPROC too without a cgroup) and "
	  "gVisor's tmpfs size=",
	  "the supervisor, rlimits set by the guest init, tmpfs size= in the guest and on "
	  "the host"}},
	{"syscalls.allow",
	 u_allow_sys,
	 {S, R, E},
	 {"lifts a rule of moat's seccomp filter",
	  "moat's filter does not apply: gVisor's kernel implements its own set",
	  "lifts the rule in the guest's copy of the filter"}},
	{"syscalls.deny",
	 u_deny_sys,
	 {S, R, E},
	 {"EPERM from moat's seccomp filter", "not translated to gVisor (runsc --oci-seccomp)",
	  "EPERM from the guest's copy of the filter"}},
	{"allow_degraded landlock",
	 u_degrade_landlock,
	 {S, R, R},
	 {"runs without Landlock", "no Landlock layer to degrade: refused as meaningless",
	  "the guest kernel has Landlock: nothing to degrade, refused as meaningless"}},
	{"allow_degraded seccomp-notify",
	 u_degrade_notify,
	 {S, R, R},
	 {"runs without seccomp notification",
	  "no seccomp layer to degrade: refused as meaningless",
	  "the guest's filter has no listener: refused as meaningless"}},
	{"network.mode none",
	 NULL,
	 {S, E, E},
	 {"a network namespace with loopback only",
	  "runsc --network=none (gVisor's own loopback) in moat's empty network namespace",
	  "QEMU has no network device (-nic none) and runs in an empty network namespace"}},
	{"network.mode allow (allow_hosts, deny_hosts, allow_cidrs, resolve, http, secrets)",
	 u_net_allow,
	 {S, E, E},
	 {"capture rules and proxy listeners in the sandbox's namespace",
	  "runsc --network=host inside moat's namespace with the same capture rules, "
	  "listeners and DNS stub: every connection of gVisor passes moat's proxy",
	  "one virtio-net device whose other end is a tap in the holder's otherwise empty "
	  "namespace, with the same listeners and DNS stub and the capture rules on the tap: "
	  "every packet of the guest reaches moat's proxy or is dropped and recorded"}},
	{"network.mode host",
	 u_net_host,
	 {S, R, R},
	 {"no network namespace", "gVisor would share the host's network",
	  "the guest never shares the host's network"}},
	{"audit, apply, review, credentials",
	 NULL,
	 {S, S, S},
	 {"the supervisor", "the supervisor", "the supervisor"}},
	{"landlock, seccomp (built-in layers)",
	 NULL,
	 {S, E, E},
	 {"applied to every process",
	  "replaced by gVisor's kernel: the command's syscalls never reach the host kernel",
	  "the guest kernel is the boundary; the guest init applies the plan's filter and a "
	  "Landlock ruleset (write only below the writable paths) to every command too"}},
};

#undef S
#undef E
#undef R

const struct moat_iso_key *moat_isolation_keys(unsigned *ret_n)
{
	*ret_n = ELEMENTSOF(keys);
	return keys;
}

int moat_isolation_check(const struct moat_policy *p, struct moat_error *err)
{
	for (unsigned i = 0; i < ELEMENTSOF(keys); i++) {
		const struct moat_iso_key *k = &keys[i];
		if (k->level[p->isolation] != MOAT_ISO_REFUSED || !k->used || !k->used(p))
			continue;
		return moat_error_set(err, "isolation", EOPNOTSUPP,
				      "isolation %s cannot honour policy key %s: %s",
				      moat_isolation_names[p->isolation], k->key,
				      k->how[p->isolation] ? k->how[p->isolation]
							   : "not supported");
	}
	return 0;
}

/* Which records a level produces (AUDIT.md): "recorded", "off" (the policy
 * said so) or "unavailable: why". */
static const char *rec_exec(const struct moat_policy *p)
{
	if (!p->record_exec)
		return "off";
	switch (p->isolation) {
	case MOAT_ISO_PROCESS:
	case MOAT_ISO_GVISOR: /* gVisor's trace session (backend_gvisor_trace.c) */
	case MOAT_ISO_VM: /* the guest init's seccomp listener (vm_guest.c) */
		return "recorded";
	default:
		return "unavailable";
	}
}

static const char *rec_net(const struct moat_policy *p)
{
	if (p->net == MOAT_NET_ALLOW)
		return "recorded"; /* the proxy's decisions, at every level */
	if (p->net == MOAT_NET_HOST)
		return "unavailable: no network namespace";
	if (p->isolation == MOAT_ISO_VM)
		return "unavailable: the guest has no network device, attempts stay inside it";
	return p->isolation == MOAT_ISO_PROCESS
		? "recorded"
		: "unavailable: attempts inside gVisor's own network stack are not seen";
}

/* A --disk area that filled (limits/disk_watch.h): the supervisor sees the
 * tmpfs it holds an fd of. moat's own init hands over every one; under
 * gVisor and in the guest /tmp, /dev/shm, home and --tmpfs are the sandbox
 * kernel's own, only /output and the overlay's upper layer are host tmpfs. */
static const char *rec_disk(const struct moat_policy *p)
{
	if (p->isolation == MOAT_ISO_PROCESS)
		return "recorded";
	return p->isolation == MOAT_ISO_GVISOR
		? "partial: /output and the workspace overlay only; /tmp, /dev/shm, home and "
		  "--tmpfs are gVisor's own tmpfs, not seen from the host"
		: "partial: /output and the workspace overlay only; /tmp, /dev/shm, home and "
		  "--tmpfs are the guest's own tmpfs, not seen from the host";
}

int moat_isolation_records_json(const struct moat_policy *p, char **ret_json)
{
	json_t *o =
		json_pack("{s:s,s:s,s:s,s:s,s:s}", "exec", rec_exec(p), "net", rec_net(p),
			  "process", "recorded", "files",
			  p->workspace && p->workspace_mode == MOAT_WS_OVERLAY ? "recorded" : "off",
			  "disk", rec_disk(p));
	if (!o)
		return -ENOMEM;
	char *s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (!s)
		return -ENOMEM;
	*ret_json = s;
	return 0;
}

void moat_isolation_format(FILE *f, const struct moat_policy *p)
{
	static const char *const engine[] = {
		[MOAT_ISO_PROCESS] = "namespaces, seccomp, Landlock, cgroups (moat's own init)",
		[MOAT_ISO_GVISOR] =
			"gVisor (runsc, platform ptrace) under moat's network namespace "
			"and cgroup",
		[MOAT_ISO_VM] = "QEMU guest (q35; KVM, or TCG with vm_accel any), moat's init as "
				"its PID 1, under moat's cgroup in an empty network namespace",
	};
	enum moat_isolation l = p->isolation;
	fprintf(f, "level        %s\n", moat_isolation_names[l]);
	fprintf(f, "engine       %s\n", engine[l]);
	if (l == MOAT_ISO_PROCESS)
		return;
	for (unsigned i = 0; i < ELEMENTSOF(keys); i++) {
		const struct moat_iso_key *k = &keys[i];
		const char *what = k->level[l] == MOAT_ISO_SAME ? "same"
			: k->level[l] == MOAT_ISO_EQUIV		? "same meaning"
								: "refused";
		bool in_use = !k->used || k->used(p);
		fprintf(f, "key          %s: %s%s%s%s\n", k->key, what,
			k->level[l] == MOAT_ISO_REFUSED && in_use ? " (IN USE: the run fails)" : "",
			k->how[l] ? ", " : "", k->how[l] ? k->how[l] : "");
	}
	_cleanup_free_ char *rec = NULL;
	if (moat_isolation_records_json(p, &rec) >= 0)
		fprintf(f, "records      %s\n", rec);
}
