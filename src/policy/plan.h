/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The plan: everything the policy decides about a sandbox, computed before
 * the sandbox is cloned (pure code, no syscalls, no file touched): the ordered
 * filesystem steps (applied in the sandbox's init by sandbox.c with nothing
 * allocated), the identity, the network, the credentials (where the per-run CA
 * bundle is mounted and which variables get placeholders, never a value), the
 * Landlock rules, the seccomp rule set, the limits and the audit sinks. The
 * layers apply what it says; `moat policy show` prints all of it
 * (moat_plan_format). What only the running host can tell (the kernel's
 * features, whether moat runs as root, the per-run CA and placeholders) is
 * decided at run time from the plan's rules, which say how.
 *
 * Lifetime: a plan borrows strings and lists from the policy it was built
 * from; the policy must outlive it. A plan holds no heap memory of its own
 * (plain free()).
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "limits/cgroup.h"
#include "policy/policy.h"
#include "kernel/seccomp.h"

enum moat_step_op {
	MOAT_STEP_BIND, /* bind host `src` at `dest` */
	MOAT_STEP_TMPFS, /* fresh tmpfs at `dest` (size, mode) */
	MOAT_STEP_PROC, /* fresh procfs at `dest`, dangerous files masked */
	MOAT_STEP_DEVPTS, /* new devpts instance at `dest` */
	MOAT_STEP_MQUEUE, /* not used by default */
	MOAT_STEP_SYMLINK, /* symlink `dest` -> `src` */
	MOAT_STEP_MKDIR, /* directory `dest` (mode) */
	MOAT_STEP_FILE, /* regular file `dest` with `data` (mode) */
	MOAT_STEP_HIDE, /* empty read-only file or directory over `dest` */
	MOAT_STEP_READONLY, /* make the mount at `dest` read-only (not recursive) */
	MOAT_STEP_OVERLAY, /* overlay: lower = host `src`, upper on tmpfs, at `dest` */
	/* the writable root's tmpfs (`size`) at `dest`, which holds the upper
	 * layers of the MOAT_STEPF_ROOT_LAYER overlays after it; detached from
	 * the root once the plan is applied (the overlays keep it) */
	MOAT_STEP_UPPER,
};

enum moat_step_flag {
	MOAT_STEPF_RO = 1u << 0, /* read-only, recursively */
	MOAT_STEPF_OPTIONAL = 1u << 1, /* a missing source is skipped, not an error */
	MOAT_STEPF_MIRROR_LINK = 1u << 2, /* if src is a symlink, recreate it instead of binding */
	MOAT_STEPF_DEV = 1u << 3, /* device nodes allowed (no nodev) */
	MOAT_STEPF_NOEXEC = 1u << 4,
	MOAT_STEPF_USER = 1u << 5, /* comes from the user (src resolved strictly) */
	MOAT_STEPF_WORKSPACE = 1u << 6, /* the workspace (kept as an fd for Landlock) */
	MOAT_STEPF_OUTPUT = 1u << 7, /* /output: the supervisor keeps an fd to collect it */
	MOAT_STEPF_WRITABLE = 1u << 8, /* a writable area (Landlock write rights) */
	MOAT_STEPF_COPY_SMALL = 1u
		<< 9, /* a small world-readable regular file is copied, not bound */
	MOAT_STEPF_SYSROOT = 1u << 10, /* src is below --rootfs: resolved beneath it, no symlink */
	/* src is made at run time (the per-run CA bundle): NULL in the plan until
	 * the supervisor fills it; moat_plan_check_runtime() refuses a run where
	 * it is still missing */
	MOAT_STEPF_RUNTIME = 1u << 11,
	/* an overlay of the writable root (OCI root.readonly false): its upper
	 * layer in the MOAT_STEP_UPPER tmpfs, no fd handed to the supervisor;
	 * a source that is not a directory is bound read-only instead */
	MOAT_STEPF_ROOT_LAYER = 1u << 12,
};

struct moat_step {
	enum moat_step_op op;
	unsigned flags;
	const char *src; /* host path, symlink target, or NULL */
	const char *dest; /* absolute path inside the new root */
	uint64_t size; /* tmpfs size */
	unsigned mode; /* tmpfs root / mkdir / file mode */
	const char *data; /* FILE contents */
	size_t data_len;
};

#define MOAT_PLAN_MAX_STEPS (MOAT_MAX_MOUNTS + 128)
/* Landlock path rules: "/" plus every writable step. */
#define MOAT_PLAN_MAX_LANDLOCK (MOAT_PLAN_MAX_STEPS + 1)

/* Root mode: the sandbox's host uids are [BASE, BASE + SLOTS), one per run. */
#define MOAT_PLAN_ROOT_UID_BASE 1000000000u
#define MOAT_PLAN_ROOT_UID_SLOTS 65536u

/* Bytes of the nftables capture rules. */
#define MOAT_PLAN_NFT_MAX 3072

/* Where the sandbox's CA bundle (system roots + the per-run CA) is bound. */
#define MOAT_PLAN_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

/* The writable root's staging tmpfs (MOAT_STEP_UPPER) in the new root while
 * it is assembled; gone from it before the command starts. */
#define MOAT_PLAN_ROOT_UPPER "/.moat-root"

/* Identity: who the command is inside, and in which namespaces. */
struct moat_plan_identity {
	uid_t uid;
	gid_t gid;
	const char *user;
	const char *hostname;
	char home[80];
	uint64_t clone_flags; /* CLONE_NEW* of the sandbox (no CLONE_NEWNET for --net host) */
	/* Host uid: the invoker's own when unprivileged; as root, one free uid of
	 * [root_uid_base, root_uid_base + root_uid_slots) per sandbox, held by a
	 * lock for the run, the user's directories bound through idmapped mounts. */
	uint32_t root_uid_base;
	uint32_t root_uid_slots;
};

/* One listener of the egress proxy inside the sandbox's network namespace. */
struct moat_plan_listener {
	const char *what; /* "http", "socks5", "transparent", "dns" */
	const char *addr;
	uint16_t port;
	const char *proto; /* "tcp", "udp+tcp" */
};

struct moat_plan_net {
	enum moat_net_mode mode;
	/* the proxy's variables in the command's environment (allow only) */
	const char *const (*env)[2];
	unsigned n_env;
	const struct moat_plan_listener *listeners;
	unsigned n_listeners;
	/* the nftables capture rules loaded into the namespace (allow only):
	 * the exact text netns.c loads */
	char nft[MOAT_PLAN_NFT_MAX];
	const struct moat_host_rule *allow, *deny, *cidrs;
	unsigned n_allow, n_deny, n_cidrs;
	const struct moat_resolve *resolve; /* the DNS stub's fixed answers */
	unsigned n_resolve;
	bool inspect_all;
	const char *const *no_inspect;
	unsigned n_no_inspect;
	const char *upstream_ca;
	/* 0, or the -errno of the rules' conversion by the proxy's own parser
	 * (moat_proxy_config_from_policy): checked once here, reported before
	 * clone (moat_net_check_rules); the exec'd proxy helper converts the
	 * serialized rules for itself */
	int rules_error;
	/* --net none: the kernel refuses all but the sandbox's own loopback,
	 * seccomp records the attempts (with notification); Landlock handles
	 * no TCP right (loopback servers work; plan_parts.c) */
	bool record_attempts;
	bool landlock_no_tcp;
};

struct moat_plan_creds {
	/* TLS to some host is terminated (a secret's or an http rule's host, or
	 * --inspect-tls all): a per-run CA, its bundle bound at ca_dest */
	bool intercept;
	int ca_step; /* index of the CA bundle's bind in steps[], -1 without */
	const char *ca_dest;
	const char *const *ca_env; /* variables pointing at ca_dest, NULL-terminated */
	unsigned n_ca_env;
	/* each secret's name gets a random per-run placeholder; the value stays
	 * in the proxy's worker */
	const struct moat_secret *secrets;
	unsigned n_secrets;
	const struct moat_http_rule *http_rules;
	unsigned n_http_rules;
};

struct moat_plan_landlock_rule {
	const char *path; /* as seen after pivot_root */
	int step; /* the plan step that made it (its file type is known at apply), -1 for "/" */
	bool writable; /* every right; else read + execute */
	bool optional; /* skipped when the path does not exist */
};

struct moat_plan_landlock {
	bool enabled; /* false only in the test build's --test-disable-layer */
	struct moat_plan_landlock_rule rules[MOAT_PLAN_MAX_LANDLOCK];
	unsigned n_rules;
	bool net_none; /* ABI >= 4: no TCP bind or connect at all */
	bool scope; /* ABI >= 6: abstract unix sockets and signals stay inside */
	int min_abi; /* 0 = --allow-degraded landlock */
};

struct moat_plan_seccomp {
	bool enabled; /* false only in the test build's --test-disable-layer */
	const char *arch; /* the only architecture allowed; others kill the process */
	const char *const *allow; /* table rules the user re-allowed */
	unsigned n_allow;
	const char *const *deny; /* extra names denied with EPERM */
	unsigned n_deny;
	bool record_exec; /* with notification: execve/execveat recorded */
	bool record_net; /* with notification: --net none's network attempts recorded */
	bool notify_optional; /* --allow-degraded seccomp-notify */
};

struct moat_plan_limits {
	struct moat_cgroup_limits cg;
	unsigned asked; /* enum moat_limit_bit the user set explicitly */
	bool may_degrade; /* --allow-degraded cgroup: rlimits when no cgroup works */
	struct moat_rlimit_opts rl; /* with the cgroup */
	struct moat_rlimit_opts rl_degraded; /* without it */
	uint64_t timeout_ms;
	uint64_t kill_grace_ms;
	uint64_t disk;
	uint64_t max_output;
};

struct moat_plan_audit {
	const char *log_path; /* NULL: no audit log */
	const char *on_alert;
	bool record_exec;
	bool log_sync;
	enum moat_apply_mode apply;
	const char *const *flag_patterns;
	unsigned n_flag_patterns;
	const char *const *review_accept, *const *review_hold;
	unsigned n_review_accept, n_review_hold;
	bool accept_automatic;
	uint64_t held_max;
	int held_exit;
	bool apply_on_failure;
};

struct moat_plan {
	struct moat_step steps[MOAT_PLAN_MAX_STEPS];
	unsigned n_steps;
	/* generated /etc contents, owned by the plan */
	char passwd[512], group[256], hosts[256], hostname[80], resolv[128], nsswitch[256];
	const char *sysroot; /* "" for the host, else the --rootfs path */
	char cwd[MOAT_MAX_PATH];
	struct moat_plan_identity id;
	struct moat_plan_net net;
	struct moat_plan_creds creds;
	struct moat_plan_landlock landlock;
	struct moat_plan_seccomp seccomp;
	struct moat_plan_limits limits;
	struct moat_plan_audit audit;
	/* the policy the plan was built from (its isolation level and the keys
	 * the level honours: isolation.h); not owned */
	const struct moat_policy *policy;
	/* paths the steps point at (--rootfs sources, /etc names, home) */
	struct {
		char buf[16384];
		size_t used;
	} arena;
};

/* Whether the plan keeps a kernel layer on. Only the test build's
 * --test-disable-layer switches one off: in the shipped build these are
 * constant true (macros, as moat_policy_test_no_*), so the branches they
 * guard and their strings compile away. */
#ifdef MOAT_TESTING
#define moat_plan_landlock_on(pl) ((pl)->landlock.enabled)
#define moat_plan_seccomp_on(pl) ((pl)->seccomp.enabled)
#else
#define moat_plan_landlock_on(pl) ((void)(pl), true)
#define moat_plan_seccomp_on(pl) ((void)(pl), true)
#endif

/* Build the plan for p. Pure: touches no file. Returns -E2BIG if the policy
 * needs more steps than the plan holds. */
int moat_plan_build(const struct moat_policy *p, struct moat_plan *ret_plan);

/* The parts other than the mounts (plan_parts.c), called by moat_plan_build
 * once the steps are there. */
int moat_plan_build_parts(const struct moat_policy *p, struct moat_plan *pl);

/* The limits part alone (moat_plan_build fills pl->limits with it). */
void moat_plan_build_limits(const struct moat_policy *p, struct moat_plan_limits *ret);

/* The seccomp options the filter is compiled from: the plan's rule set, with
 * notification as the kernel allows (notify). */
void moat_plan_seccomp_opts(const struct moat_plan *pl, bool notify, struct moat_seccomp_opts *ret);

/* The nftables capture rules of --net allow: TCP to anything but loopback
 * redirected to the transparent listener on tport, the rest logged and
 * dropped. -ENOBUFS if len is too small. */
int moat_plan_nft_ruleset(uint16_t tport, char *buf, size_t len);
/* The same rules for the vm level's holder namespace, plus the guest's tap
 * (MOAT_NETNS_VM_TAP): the guest's TCP to the gateway's http/socks/dns ports
 * and its DNS over UDP go to those listeners, every other TCP connection to
 * the transparent listener, everything else from the tap is logged and
 * dropped, nothing is forwarded, and the namespace itself sends on the tap
 * only replies. -ENOBUFS if len is too small. */
int moat_plan_nft_ruleset_vm(uint16_t http, uint16_t socks, uint16_t tport, uint16_t dns, char *buf,
			     size_t len);

/* The variables pointed at the CA bundle (NULL-terminated, static). */
const char *const *moat_plan_ca_env(void);

/* -EPROTO when a step whose source is made at run time has none yet. */
int moat_plan_check_runtime(const struct moat_plan *pl);

/* Every part in sections (mounts, identity, network, credentials, landlock,
 * seccomp, limits, audit), for `moat policy show`. Caller frees. */
int moat_plan_format(const struct moat_plan *plan, char **ret_text);

const char *moat_step_op_name(enum moat_step_op op);
