/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy -> ordered setup steps. Pure code: unit-tested without privileges. */
#include <stdio.h>

#include "network/netns.h"
#include "policy/plan.h"
#include "shared/macro.h"
#include "shared/parse.h"

/* System directories bound read-only from the host (or --rootfs). Where the
 * host has merged-usr symlinks (/bin -> usr/bin) the same symlink is made. */
static const char *const system_dirs[] = {"/usr",   "/bin",   "/sbin",	"/lib",
					  "/lib32", "/lib64", "/libx32"};
static const char *const rootfs_extra_dirs[] = {"/opt"};

/* What of the host's /etc a normal program needs. Never: shadow, gshadow,
 * sudoers, ssh/, machine-id, environment (may hold proxy credentials),
 * the real passwd/group/hosts/resolv.conf (generated instead). */
static const char *const etc_allow[] = {
	"alternatives",
	"ld.so.cache",
	"ld.so.conf",
	"ld.so.conf.d",
	"localtime",
	"timezone",
	"ssl",
	"ca-certificates",
	"ca-certificates.conf",
	"protocols",
	"services",
	"host.conf",
	"gai.conf",
	"os-release",
	"debian_version",
	"lsb-release",
	"mime.types",
	"magic",
	"magic.mime",
	"inputrc",
	"bash.bashrc",
	"profile",
	"profile.d",
	"python3",
	"python3.11",
	"perl",
	"locale.alias",
	"mtab",
	"fonts",
	"mailcap",
	"xattr.conf",
	"login.defs",
	"manpath.config",
	"papersize",
};

static int add(struct moat_plan *pl, struct moat_step s)
{
	if (pl->n_steps >= MOAT_PLAN_MAX_STEPS)
		return -E2BIG;
	pl->steps[pl->n_steps++] = s;
	return 0;
}

/* Bind steps whose source is under --rootfs carry the rootfs in `src`, and
 * the /etc names their full path: joined into the plan's own arena (no static
 * storage: two plans can coexist). */
static const char *arena_join(struct moat_plan *pl, const char *x, const char *y)
{
	size_t room = sizeof(pl->arena.buf) - pl->arena.used;
	int n = snprintf(pl->arena.buf + pl->arena.used, room, "%s%s", x, y);
	if (n < 0 || (size_t)n >= room)
		return NULL;
	const char *r = pl->arena.buf + pl->arena.used;
	pl->arena.used += (size_t)n + 1;
	return r;
}

/* One tree of the root (a system directory, or a name at the top of
 * --rootfs): bound read-only, or with a writable root (OCI root.readonly
 * false) an overlay over the same source whose upper layer is in the
 * MOAT_STEP_UPPER tmpfs. Either way a symlink is made again, a missing
 * source skipped; nothing of the source is ever written. */
static int root_tree(struct moat_plan *pl, const char *src, const char *dest, unsigned sysf,
		     uint64_t upper)
{
	const unsigned f = MOAT_STEPF_OPTIONAL | MOAT_STEPF_MIRROR_LINK | sysf;
	if (!src)
		return -E2BIG;
	if (!upper)
		return add(pl,
			   (struct moat_step){.op = MOAT_STEP_BIND,
					      .src = src,
					      .dest = dest,
					      .flags = f | MOAT_STEPF_RO});
	return add(pl,
		   (struct moat_step){.op = MOAT_STEP_OVERLAY,
				      .src = src,
				      .dest = dest,
				      .size = upper,
				      .flags = f | MOAT_STEPF_WRITABLE | MOAT_STEPF_ROOT_LAYER});
}

int moat_plan_build(const struct moat_policy *p, struct moat_plan *pl)
{
	const char *sys = p->rootfs ? p->rootfs : p->image_root ? p->image_root : "";
	/* sources below --rootfs are resolved beneath it, never through a symlink */
	const unsigned sysf = *sys ? MOAT_STEPF_SYSROOT : 0;
	char home[80]; /* user names are at most 63 bytes */
	int r = 0;

	memset(pl, 0, sizeof(*pl));
	pl->policy = p;
	pl->sysroot = sys;
	moat_policy_home(p, home, sizeof(home));

#define ADD(...) \
	do { \
		if ((r = add(pl, (struct moat_step){__VA_ARGS__})) < 0) \
			return r; \
	} while (0)
#define SYS(path) (*sys ? arena_join(pl, sys, path) : (path))

	/* 0: a read-only root; else the writable root's upper layers' bytes */
	const uint64_t rw = !p->rootfs || !p->rootfs_rw ? 0
		: p->rootfs_rw_size			? p->rootfs_rw_size
							: p->disk;
	if (rw)
		ADD(.op = MOAT_STEP_UPPER, .dest = MOAT_PLAN_ROOT_UPPER, .size = rw, .mode = 0755);
	for (size_t i = 0; i < ELEMENTSOF(system_dirs); i++)
		if ((r = root_tree(pl, SYS(system_dirs[i]), system_dirs[i], sysf, rw)) < 0)
			return r;
	if (*sys)
		for (size_t i = 0; i < ELEMENTSOF(rootfs_extra_dirs); i++)
			if ((r = root_tree(pl, SYS(rootfs_extra_dirs[i]), rootfs_extra_dirs[i],
					   sysf, rw)) < 0)
				return r;
	/* the OCI bundle's other top names (/runtimetest, /srv, ...): read-only,
	 * a symlink made again (its target is read inside the sandbox) */
	for (unsigned i = 0; *sys && i < p->n_rootfs_top; i++) {
		/* uid 0: /root is the home, moat's own tmpfs */
		if (p->uid == 0 && streq(p->rootfs_top[i], "root"))
			continue;
		const char *dest = arena_join(pl, "/", p->rootfs_top[i]);
		const char *src = dest ? arena_join(pl, sys, dest) : NULL;
		if (!src)
			return -E2BIG;
		if ((r = root_tree(pl, src, dest, sysf, rw)) < 0)
			return r;
	}
	/* an image's other top directories (/srv, /app, ...): read-only too */
	for (unsigned i = 0; p->image_root && i < p->n_image_dirs; i++) {
		if (p->uid == 0 && streq(p->image_dirs[i], "root"))
			continue;
		const char *dest = arena_join(pl, "/", p->image_dirs[i]);
		const char *src = dest ? arena_join(pl, sys, dest) : NULL;
		if (!src)
			return -E2BIG;
		ADD(.op = MOAT_STEP_BIND, .src = src, .dest = dest,
		    .flags = MOAT_STEPF_RO | MOAT_STEPF_OPTIONAL | sysf);
	}

	/* /etc: generated identity files plus the allowlist, read-only with the
	 * root. */
	/* uid 0 is the sandbox user itself (named root, home /root); else root
	 * is only the name of an id no file of the sandbox has */
	if (p->uid == 0)
		snprintf(pl->passwd, sizeof(pl->passwd),
			 "root:x:0:%u:root:/root:/bin/sh\n"
			 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			 (unsigned)p->gid);
	else
		snprintf(pl->passwd, sizeof(pl->passwd),
			 "root:x:0:0:root:/root:/usr/sbin/nologin\n"
			 "%s:x:%u:%u:%s:%s:/bin/sh\n"
			 "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			 p->user, (unsigned)p->uid, (unsigned)p->gid, p->user, home);
	if (p->gid == 0)
		snprintf(pl->group, sizeof(pl->group), "root:x:0:\nnogroup:x:65534:\n");
	else
		snprintf(pl->group, sizeof(pl->group), "root:x:0:\n%s:x:%u:\nnogroup:x:65534:\n",
			 p->user, (unsigned)p->gid);
	snprintf(pl->hosts, sizeof(pl->hosts),
		 "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n127.0.1.1\t%s\n",
		 p->hostname);
	snprintf(pl->hostname, sizeof(pl->hostname), "%s\n", p->hostname);
	if (p->net == MOAT_NET_ALLOW && p->isolation == MOAT_ISO_VM)
		/* the guest's gateway, DNATed to the DNS stub (netns.h) */
		snprintf(pl->resolv, sizeof(pl->resolv),
			 "nameserver " MOAT_NETNS_VM_HOST4 "\noptions edns0\n");
	else if (p->net == MOAT_NET_ALLOW)
		snprintf(pl->resolv, sizeof(pl->resolv), "nameserver 127.0.0.53\noptions edns0\n");
	else
		snprintf(pl->resolv, sizeof(pl->resolv), "# moat: no DNS in this sandbox\n");
	snprintf(pl->nsswitch, sizeof(pl->nsswitch),
		 "passwd: files\ngroup: files\nshadow: files\nhosts: files dns\n"
		 "networks: files\nprotocols: files\nservices: files\n");

	/* a directory of the root tmpfs, read-only with it once assembled (one
	 * mount fewer at start and at teardown than a tmpfs of its own; the
	 * same ro, nosuid, nodev) */
	ADD(.op = MOAT_STEP_MKDIR, .dest = "/etc", .mode = 0755);
	ADD(.op = MOAT_STEP_FILE, .dest = "/etc/passwd", .data = pl->passwd,
	    .data_len = strlen(pl->passwd), .mode = 0644);
	ADD(.op = MOAT_STEP_FILE, .dest = "/etc/group", .data = pl->group,
	    .data_len = strlen(pl->group), .mode = 0644);
	ADD(.op = MOAT_STEP_FILE, .dest = "/etc/hosts", .data = pl->hosts,
	    .data_len = strlen(pl->hosts), .mode = 0644);
	ADD(.op = MOAT_STEP_FILE, .dest = "/etc/hostname", .data = pl->hostname,
	    .data_len = strlen(pl->hostname), .mode = 0644);
	ADD(.op = MOAT_STEP_FILE, .dest = "/etc/resolv.conf", .data = pl->resolv,
	    .data_len = strlen(pl->resolv), .mode = 0644);
	ADD(.op = MOAT_STEP_FILE, .dest = "/etc/nsswitch.conf", .data = pl->nsswitch,
	    .data_len = strlen(pl->nsswitch), .mode = 0644);
	for (size_t i = 0; i < ELEMENTSOF(etc_allow); i++) {
		const char *dest = arena_join(pl, "/etc/", etc_allow[i]);
		const char *src = *sys ? arena_join(pl, sys, dest) : dest;
		if (!dest || !src)
			return -E2BIG;
		/* small files are copied into /etc: a mount each would cost
		 * start-up and teardown time */
		ADD(.op = MOAT_STEP_BIND, .src = src, .dest = dest,
		    .flags = MOAT_STEPF_RO | MOAT_STEPF_OPTIONAL | MOAT_STEPF_MIRROR_LINK |
			    MOAT_STEPF_COPY_SMALL | sysf);
	}

	ADD(.op = MOAT_STEP_PROC, .dest = "/proc");

	/* /dev: a few host device nodes, a private devpts, shm, in a directory of
	 * the root tmpfs (read-only with it, like /etc). */
	ADD(.op = MOAT_STEP_MKDIR, .dest = "/dev", .mode = 0755);
	static const char *const devs[] = {"/dev/null",	  "/dev/zero",	  "/dev/full",
					   "/dev/random", "/dev/urandom", "/dev/tty"};
	for (size_t i = 0; i < ELEMENTSOF(devs); i++)
		ADD(.op = MOAT_STEP_BIND, .src = devs[i], .dest = devs[i], .flags = MOAT_STEPF_DEV);
	ADD(.op = MOAT_STEP_MKDIR, .dest = "/dev/pts", .mode = 0755);
	ADD(.op = MOAT_STEP_DEVPTS, .dest = "/dev/pts");
	ADD(.op = MOAT_STEP_SYMLINK, .src = "pts/ptmx", .dest = "/dev/ptmx");
	ADD(.op = MOAT_STEP_SYMLINK, .src = "/proc/self/fd", .dest = "/dev/fd");
	ADD(.op = MOAT_STEP_SYMLINK, .src = "/proc/self/fd/0", .dest = "/dev/stdin");
	ADD(.op = MOAT_STEP_SYMLINK, .src = "/proc/self/fd/1", .dest = "/dev/stdout");
	ADD(.op = MOAT_STEP_SYMLINK, .src = "/proc/self/fd/2", .dest = "/dev/stderr");
	ADD(.op = MOAT_STEP_MKDIR, .dest = "/dev/shm", .mode = 01777);
	ADD(.op = MOAT_STEP_TMPFS, .dest = "/dev/shm", .size = p->disk, .mode = 01777,
	    .flags = MOAT_STEPF_WRITABLE | MOAT_STEPF_NOEXEC);

	ADD(.op = MOAT_STEP_TMPFS, .dest = "/tmp", .size = p->disk, .mode = 01777,
	    .flags = MOAT_STEPF_WRITABLE);
	ADD(.op = MOAT_STEP_MKDIR, .dest = "/var", .mode = 0755);
	ADD(.op = MOAT_STEP_SYMLINK, .src = "/tmp", .dest = "/var/tmp");
	ADD(.op = MOAT_STEP_MKDIR, .dest = "/home", .mode = 0755);
	const char *home_dest = arena_join(pl, home, "");
	if (!home_dest)
		return -E2BIG;
	ADD(.op = MOAT_STEP_TMPFS, .dest = home_dest, .size = p->disk, .mode = 0700,
	    .flags = MOAT_STEPF_WRITABLE);

	if (p->workspace) {
		unsigned f = MOAT_STEPF_USER | MOAT_STEPF_WORKSPACE;
		if (p->workspace_mode == MOAT_WS_OVERLAY)
			ADD(.op = MOAT_STEP_OVERLAY, .src = p->workspace, .dest = p->workspace,
			    .size = p->disk, .flags = f | MOAT_STEPF_WRITABLE);
		else
			ADD(.op = MOAT_STEP_BIND, .src = p->workspace, .dest = p->workspace,
			    .flags = f |
				    (p->workspace_mode == MOAT_WS_RO ? MOAT_STEPF_RO
								     : MOAT_STEPF_WRITABLE));
	}
	if (p->input)
		ADD(.op = MOAT_STEP_BIND, .src = p->input, .dest = "/data",
		    .flags = MOAT_STEPF_RO | MOAT_STEPF_USER);
	if (p->output)
		ADD(.op = MOAT_STEP_TMPFS, .dest = "/output", .size = p->disk, .mode = 0755,
		    .flags = MOAT_STEPF_OUTPUT | MOAT_STEPF_WRITABLE);

	for (unsigned i = 0; i < p->n_mounts; i++) {
		const struct moat_mount *m = &p->mounts[i];
		switch (m->kind) {
		case MOAT_MOUNT_RO:
		case MOAT_MOUNT_RW:
			ADD(.op = MOAT_STEP_BIND, .src = m->src, .dest = m->dest,
			    .flags = MOAT_STEPF_USER |
				    (m->kind == MOAT_MOUNT_RO ? MOAT_STEPF_RO
							      : MOAT_STEPF_WRITABLE));
			break;
		case MOAT_MOUNT_TMPFS:
			ADD(.op = MOAT_STEP_TMPFS, .dest = m->dest,
			    .size = m->size ? m->size : p->disk, .mode = 01777,
			    .flags = MOAT_STEPF_WRITABLE);
			break;
		case MOAT_MOUNT_HIDE:
			ADD(.op = MOAT_STEP_HIDE, .dest = m->dest);
			break;
		}
	}

	/* The credential proxy's CA bundle, bound read-only over the system
	 * bundle after the /etc layout and the user's mounts. Its source is
	 * written at run time (the per-run CA), so the step has none yet. */
	pl->creds.ca_step = -1;
	if (p->net == MOAT_NET_ALLOW && (p->n_secrets || p->n_http_rules || p->inspect_tls_all)) {
		pl->creds.ca_step = (int)pl->n_steps;
		ADD(.op = MOAT_STEP_BIND, .dest = MOAT_PLAN_CA_BUNDLE,
		    .flags = MOAT_STEPF_RO | MOAT_STEPF_RUNTIME);
	}

	snprintf(pl->cwd, sizeof(pl->cwd), "%s",
		 p->cwd			? p->cwd
			 : p->workspace ? p->workspace
					: home);
	return moat_plan_build_parts(p, pl);
#undef ADD
#undef SYS
}

const char *moat_step_op_name(enum moat_step_op op)
{
	static const char *const names[] = {
		[MOAT_STEP_BIND] = "bind",	 [MOAT_STEP_TMPFS] = "tmpfs",
		[MOAT_STEP_PROC] = "proc",	 [MOAT_STEP_DEVPTS] = "devpts",
		[MOAT_STEP_MQUEUE] = "mqueue",	 [MOAT_STEP_SYMLINK] = "symlink",
		[MOAT_STEP_MKDIR] = "mkdir",	 [MOAT_STEP_FILE] = "file",
		[MOAT_STEP_HIDE] = "hide",	 [MOAT_STEP_READONLY] = "readonly",
		[MOAT_STEP_OVERLAY] = "overlay", [MOAT_STEP_UPPER] = "upper",
	};
	return (size_t)op < ELEMENTSOF(names) && names[op] ? names[op] : "?";
}
