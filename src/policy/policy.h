/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/policy/: the policy (options, JSON file, validation) and its plan, the one
 * pure product of the policy that every layer applies; moat policy show prints it
 */
/*
 * The internal shape of a policy. Pure data: parse (policy_set.c for options,
 * policy_load.c for the file; policy_int.h lists the files) fills it, plan
 * (plan.c) reads it, apply (spawn.c and friends) never changes it.
 * Every list has a hard limit (MOAT_MAX_*), checked by the parser.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "moat/moat.h"

#define MOAT_MAX_MOUNTS 256
#define MOAT_MAX_ENV 256
#define MOAT_MAX_RULES 1024
#define MOAT_MAX_SYSCALL_NAMES 256
#define MOAT_MAX_SECRETS 64
#define MOAT_MAX_PORTS 32
#define MOAT_POLICY_RLIMITS 16 /* RLIM_NLIMITS on Linux */
#define MOAT_MAX_PATH 4096
#define MOAT_MAX_POLICY_BYTES (1u << 20)
#define MOAT_MAX_STRING 4096

enum moat_mount_kind {
	MOAT_MOUNT_RO, /* read-only bind of a host path */
	MOAT_MOUNT_RW, /* read-write bind of a host path */
	MOAT_MOUNT_TMPFS, /* fresh tmpfs of `size` bytes */
	MOAT_MOUNT_HIDE, /* empty, read-only, over a file or directory */
};

struct moat_mount {
	enum moat_mount_kind kind;
	char *src; /* host path (RO, RW); NULL otherwise */
	char *dest; /* absolute, normalised path inside */
	uint64_t size; /* TMPFS size in bytes; 0 = the policy's disk size */
};

enum moat_workspace_mode {
	MOAT_WS_OVERLAY, /* writes go to an upper layer, reviewed and applied at the end */
	MOAT_WS_RW, /* direct writes */
	MOAT_WS_RO, /* read-only */
};

enum moat_net_mode {
	MOAT_NET_NONE, /* loopback only (default) */
	MOAT_NET_ALLOW, /* egress proxy with an allowlist */
	MOAT_NET_HOST, /* no network namespace: weakened, loud */
};

enum moat_tty_mode {
	MOAT_TTY_AUTO, /* a pty when stdin is a terminal */
	MOAT_TTY_ALWAYS,
	MOAT_TTY_NEVER,
};

enum moat_vm_accel {
	MOAT_VM_ACCEL_KVM = 0,
	MOAT_VM_ACCEL_ANY
};

/* The isolation level (docs/ISOLATION.md; the keys each honours: isolation.c). */
enum moat_isolation {
	MOAT_ISO_PROCESS, /* namespaces, seccomp, Landlock (backend_ns.c) */
	MOAT_ISO_GVISOR, /* gVisor's user-space kernel, runsc (backend_gvisor.c) */
	MOAT_ISO_VM, /* a microVM (not in this build: fails closed) */
};

enum moat_apply_mode {
	MOAT_APPLY_SAFE,
	MOAT_APPLY_NEVER,
	MOAT_APPLY_ALL,
};

/* Layers the user explicitly let go (--allow-degraded). */
enum moat_degrade {
	MOAT_DEGRADE_LANDLOCK = 1u << 0,
	MOAT_DEGRADE_CGROUP = 1u << 1,
	MOAT_DEGRADE_SECCOMP_NOTIFY = 1u << 2,
};

enum moat_limit_bit {
	MOAT_LIMIT_CPUS = 1u << 0,
	MOAT_LIMIT_MEMORY = 1u << 1,
	MOAT_LIMIT_PIDS = 1u << 2,
	MOAT_LIMIT_TIMEOUT = 1u << 3,
	MOAT_LIMIT_DISK = 1u << 4,
};

struct moat_env {
	char *name;
	char *value; /* NULL: take it from moat's own environment */
};

struct moat_host_rule {
	char *pattern; /* "api.example.com", "*.example.com", or a CIDR for cidr rules */
	uint16_t ports[MOAT_MAX_PORTS];
	unsigned n_ports; /* 0 = the default 80,443 (hosts) or any (cidr) */
	/* "" or the secret whose --secret NAME@HOST added this rule (HOST:443
	 * only): the plan says so */
	char implied_by[64];
};

struct moat_resolve {
	char *name;
	char *addr; /* numeric IPv4 or IPv6 */
};

enum moat_secret_source {
	MOAT_SECRET_ENV,
	MOAT_SECRET_FILE,
	MOAT_SECRET_COMMAND,
};

struct moat_secret {
	char *name; /* the environment variable inside */
	enum moat_secret_source source;
	char *from; /* variable name, file path or shell command */
	char **hosts;
	unsigned n_hosts;
	char **methods; /* NULL/0 = any */
	unsigned n_methods;
	char **paths; /* path prefixes, NULL/0 = any */
	unsigned n_paths;
	char *header; /* NULL: replace the placeholder where it appears; else add this header */
	char *format; /* with header: value format, "%s" replaced by the secret ("Bearer %s") */
};

struct moat_http_rule {
	char *host; /* exact host or pattern */
	char **methods;
	unsigned n_methods;
	char **paths;
	unsigned n_paths;
};

struct moat_policy {
	int version;

	enum moat_isolation isolation;
	/* --isolation vm: KVM required (default) or any accelerator (TCG when
	 * KVM does not work); docs/ISOLATION.md */
	enum moat_vm_accel vm_accel;

	/* filesystem */
	char *rootfs; /* NULL: the host's system directories */
	/* the OCI runtime (docs/OCI.md "root.path"): the names at the top of
	 * --rootfs beyond moat's own, each bound read-only (a symlink made
	 * again); listed by moat_oci_config_load(), never by a key or flag */
	char **rootfs_top;
	unsigned n_rootfs_top;
	/* the OCI runtime's root.readonly false (docs/OCI.md "root.readonly"):
	 * each of those trees (and moat's system directories from --rootfs) is
	 * an overlay whose upper layers share one tmpfs of rootfs_rw_size
	 * bytes (0: --disk); set by moat_oci_config_load() only */
	bool rootfs_rw;
	uint64_t rootfs_rw_size;
	/* --image (docs/IMAGES.md): the image's path; its unpacked root,
	 * digest and top directories are set by moat_policy_image_defaults()
	 * from the opened image, never by a key or flag */
	char *image;
	/* --isolation vm: the guest kernel (an absolute /.../vmlinuz-VERSION with
	 * /lib/modules/VERSION), or NULL: the newest of /boot; checked at the
	 * run (backend_vm.c) */
	char *vm_kernel;
	bool image_allow_setid;
	char *image_root;
	char *image_digest;
	char **image_dirs;
	unsigned n_image_dirs;
	char *workspace;
	enum moat_workspace_mode workspace_mode;
	char *input;
	char *output;
	bool output_overwrite;
	struct moat_mount *mounts;
	unsigned n_mounts;
	/* rw/ro workspace start checks (wscheck.c) */
	bool allow_rw_git; /* rw over a workspace that holds (or is inside) a repository */
	bool allow_hardlinks; /* rw over a workspace with files of more than one link */

	/* identity and process */
	uid_t uid;
	gid_t gid;
	char *user;
	char *hostname;
	char *cwd; /* NULL: the workspace, else the home (moat_policy_home) */
	struct moat_env *env;
	unsigned n_env;
	enum moat_tty_mode tty;

	/* limits (0 = no limit unless a default applies) */
	uint64_t cpus_milli; /* 1500 = 1.5 CPUs */
	uint64_t memory;
	uint64_t pids;
	uint64_t timeout_ms;
	uint64_t kill_grace_ms;
	uint64_t disk;
	char *cgroup_path; /* OCI linux.cgroupsPath (no option: set by moat oci) */
	/* OCI process.rlimits (no option: set by moat oci, oci_load.c), indexed
	 * by RLIMIT_*: the sandbox's init sets soft and hard after nofile/fsize;
	 * every process of the container inherits them. */
	struct moat_policy_rlimit {
		bool set;
		uint64_t soft, hard;
	} rlimits[MOAT_POLICY_RLIMITS];
	/* OCI linux.resources.memory.disableOOMKiller (no option: set by moat
	 * oci): the run's memory cgroup waits at its limit, never kills; a
	 * run that cannot have it fails (cgroup v1 only) */
	bool oom_kill_disable;
	/* an OCI container (no option: set by moat oci): its cgroups are made
	 * even with only the default limits, so that `pause` has a freezer */
	bool cgroup_freezer;
	uint64_t max_output;
	uint64_t nofile;
	uint64_t fsize;
	unsigned allow_degraded; /* enum moat_degrade bits */
	/* Which limits the user asked for explicitly (enum moat_limit_bit). A limit
	 * that was asked for and cannot be enforced fails the run closed; a default
	 * that cannot be enforced by cgroups falls back to rlimits, said in the status. */
	unsigned limits_set;

	/* kernel layers */
	char **allow_syscalls;
	unsigned n_allow_syscalls;
	char **deny_syscalls;
	unsigned n_deny_syscalls;
#ifdef MOAT_TESTING
	/* Test build only (moat-testing, never shipped; MOAT_TEST_LAYERS=1
	 * required): --test-disable-layer switches one layer off. The shipped
	 * build has neither the fields nor the option. */
	bool test_no_seccomp;
	bool test_no_landlock;
#endif

	/* network */
	enum moat_net_mode net;
	struct moat_host_rule *allow_hosts;
	unsigned n_allow_hosts;
	struct moat_host_rule *deny_hosts;
	unsigned n_deny_hosts;
	struct moat_host_rule *allow_cidrs;
	unsigned n_allow_cidrs;
	struct moat_resolve *resolve;
	unsigned n_resolve;
	struct moat_http_rule *http_rules;
	unsigned n_http_rules;
	char *upstream_ca; /* CA file to verify upstreams with (tests); NULL = system store */
	bool inspect_tls_all; /* --inspect-tls all: terminate every allowed TLS host */
	char **no_inspect; /* --no-inspect HOST: host patterns passed through untouched */
	unsigned n_no_inspect;

	/* credentials */
	struct moat_secret *secrets;
	unsigned n_secrets;

	/* audit */
	char *log_path;
	char *on_alert;
	bool record_exec;
	enum moat_apply_mode apply;
	char **flag_patterns; /* extra flagged path patterns */
	unsigned n_flag_patterns;
	/* review decisions (docs/FLAGGED.md): class names or path globs */
	char **review_accept, **review_hold;
	unsigned n_review_accept, n_review_hold;
	bool accept_automatic; /* accept may name classes that run automatically */
	bool log_sync; /* wait until the audit stream is on disk before exiting */
	/* held-back workspace data (docs/FLAGGED.md) */
	uint64_t held_max; /* per run, bytes (default 256 MiB) */
	int held_exit; /* a run that held changes back exits this (1-255); 0: its own status */
	bool apply_on_failure; /* apply (per `apply`) also after a failed command */
	uint64_t runs_max; /* everything under the runs directory, bytes (default 4 GiB) */
	uint64_t retention_ms; /* `moat gc` removes runs older than this (default 14 days) */

	/* The OCI runtime only (oci_load.c; no flag, no policy key, not in the
	 * policy's JSON): an engine's network namespace (a path, e.g.
	 * /run/netns/X or /proc/PID/ns/net) that the egress proxy dials from
	 * under --net allow; the sandbox's processes stay in moat's own
	 * namespace with its capture rules. NULL: the supervisor's. */
	char *upstream_netns;
	/* What the OCI runtime satisfied itself or ignored, per field of the
	 * spec ("FIELD: text"): `config` events after `start` (docs/AUDIT.md) */
	char **config_notes;
	unsigned n_config_notes;

	/* While a policy file loads: its directory, which relative host paths in
	 * it are relative to (not owned; NULL otherwise: the working directory). */
	const char *base_dir;
};

/* The sandbox user's name and home (policy.c, pure): uid 0 is the sandbox's
 * own root, named `root` with home /root whatever p->user says; any other uid
 * is p->user with home /home/USER. ret_home gets at most len bytes. */
const char *moat_policy_user_name(const struct moat_policy *p);
void moat_policy_home(const struct moat_policy *p, char *ret_home, size_t len);

/* The words of the enumerated keys, indexed by their enum (policy.c). */
extern const char *const moat_ws_mode_names[3];
extern const char *const moat_net_mode_names[3];
extern const char *const moat_tty_mode_names[3];
extern const char *const moat_apply_mode_names[3];
extern const char *const moat_isolation_names[3];
extern const char *const moat_vm_accel_names[2];

/* Whether the test build's --test-disable-layer switched a layer off. In the
 * shipped build a constant false (a macro: no trace in the binary), so the
 * branches it guards compile away. */
#ifdef MOAT_TESTING
#define moat_policy_test_no_seccomp(p) ((p)->test_no_seccomp)
#define moat_policy_test_no_landlock(p) ((p)->test_no_landlock)
#else
#define moat_policy_test_no_seccomp(p) ((void)(p), false)
#define moat_policy_test_no_landlock(p) ((void)(p), false)
#endif

/* The full --disk areas of st as "disk_full" and "disk_full_more" of o
 * (policy_json.c: the status JSON and a session's answer to moat rm). */
struct json_t;
void moat_status_disk_full_set(struct json_t *o, const struct moat_status *st);
