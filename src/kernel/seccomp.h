/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp layer: the default deny-list filter (libseccomp), the table it is
 * built from (which also documents it: docs/SECCOMP.md), and the supervisor
 * side of seccomp user notification (denial records and exec records).
 * Self-contained: takes its own option struct, knows nothing about the policy.
 *
 * Use:
 *   supervisor, before clone:  moat_seccomp_build(&opts, &ctx)
 *   sandbox init, last before exec:  moat_seccomp_load(ctx, opts.notify, &fd),
 *       send fd to the supervisor (SCM_RIGHTS), close it, exec
 *   supervisor, when fd is readable:  moat_seccomp_notify_handle(fd, &ev)
 */
#pragma once

#include <seccomp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MOAT_SECCOMP_MAX_NAMES 256 /* per allow / deny list */

struct moat_seccomp_opts {
	const char *const *allow; /* syscall names the user re-allows (e.g. "ptrace") */
	unsigned n_allow;
	const char *const *deny; /* extra syscall names to deny with EPERM */
	unsigned n_deny;
	bool notify; /* dangerous denials go to the listener (recorded, then EPERM) */
	bool record_exec; /* execve/execveat go to the listener (recorded, then continue) */
	/* With notify: connect, sendto with an address, sendmsg and sendmmsg go to
	 * the listener (read, then continue: the kernel decides). For --net none,
	 * where every destination but loopback is refused, so that attempts are
	 * recorded. Calls without a destination never leave the kernel. */
	bool record_net;
};

/* How a rule matches its syscall's arguments. */
enum moat_seccomp_match {
	MOAT_SECCOMP_MATCH_ALL, /* every call */
	MOAT_SECCOMP_MATCH_CLONE_NS, /* clone() with any namespace flag */
	MOAT_SECCOMP_MATCH_PERSONALITY, /* personality() other than the harmless values */
	MOAT_SECCOMP_MATCH_IOCTL_REQ, /* ioctl() whose request's low 32 bits == value */
	MOAT_SECCOMP_MATCH_SOCKET_FAMILY, /* socket() outside AF_UNIX/INET/INET6/NETLINK */
	MOAT_SECCOMP_MATCH_NETLINK_PROTO, /* socket(AF_NETLINK) other than NETLINK_ROUTE */
	MOAT_SECCOMP_MATCH_INET_PROTO, /* socket(AF_INET/AF_INET6, *, value) */
	MOAT_SECCOMP_MATCH_INET_TYPE, /* socket(AF_INET/AF_INET6, type & 0xf == value) */
	MOAT_SECCOMP_MATCH_SOCKETPAIR, /* socketpair() of a family other than AF_UNIX */
	MOAT_SECCOMP_MATCH_SETID_MODE, /* a mode argument (index `value`) with S_ISUID or S_ISGID */
	MOAT_SECCOMP_MATCH_CREATE_SETID, /* open/openat creating (O_CREAT or O_TMPFILE in the
					  * flags, index `value` - 1) with S_ISUID or S_ISGID
					  * in the mode (index `value`) */
};

struct moat_seccomp_rule {
	const char *name; /* syscall name, libseccomp spelling */
	const char *label; /* unique key in docs/SECCOMP.md, e.g. "ioctl(TIOCSTI)" */
	enum moat_seccomp_match match;
	uint64_t value; /* for IOCTL_REQ, INET_PROTO, INET_TYPE */
	int err; /* errno the caller sees: EPERM, or ENOSYS for feature probes */
	bool notify; /* recorded through the listener when opts.notify */
	bool optional; /* may not exist on every architecture: skipped if unknown */
	int fallback_nr; /* number to use when libseccomp does not know the name (0: none) */
	const char *ref; /* red-team catalogue entry */
	const char *attack; /* what the rule stops */
};

/* The default rule table (static storage), *ret_n entries. */
const struct moat_seccomp_rule *moat_seccomp_rules(size_t *ret_n);

/* 0 if `name` is a syscall of the native architecture, -EINVAL if not. */
int moat_seccomp_validate_name(const char *name);

/* Build the filter: default allow, native arch only (other ABIs kill the
 * process), no_new_privs, TSYNC, the table minus opts->allow plus opts->deny,
 * exec recording. Caller owns *ret (seccomp_release()). -EINVAL for an unknown
 * name or a name both allowed and denied. */
int moat_seccomp_build(const struct moat_seccomp_opts *o, scmp_filter_ctx *ret);

/* Load ctx into the calling process (all threads). With notify, *ret_notify_fd
 * receives the listener fd (O_CLOEXEC), owned by the caller; else -1. */
int moat_seccomp_load(scmp_filter_ctx ctx, bool notify, int *ret_notify_fd);

/*
 * The filter compiled by the supervisor before clone, so that the sandbox's
 * init can install it with no allocation (libseccomp's seccomp_load() builds
 * the BPF program at load time, with malloc). The program is libseccomp's own
 * output, exported with seccomp_export_bpf().
 */
struct sock_filter;
struct moat_seccomp_prog {
	struct sock_filter *insns;
	unsigned short len;
	bool notify; /* the program has NOTIFY rules: install with a listener */
};

/* Compile ctx into *ret (owned by the caller: moat_seccomp_prog_done()). notify
 * must match the opts the ctx was built with. */
int moat_seccomp_export(scmp_filter_ctx ctx, bool notify, struct moat_seccomp_prog *ret);
void moat_seccomp_prog_done(struct moat_seccomp_prog *p);

/*
 * The programs of the default filter (no allow or deny list), for each
 * notify / record_exec combination, compiled by libseccomp at build time
 * (scripts/gen-seccomp.c, into the generated seccomp_baked.c): a run copies
 * one instead of compiling (~1 ms of CPU). The unit tests check each against
 * a fresh compilation.
 */
struct moat_seccomp_baked {
	bool notify, record_exec, record_net;
	const struct sock_filter *insns;
	unsigned short len;
};
extern const struct moat_seccomp_baked moat_seccomp_baked[];
extern const unsigned moat_seccomp_n_baked;
/* The baked program for o, or NULL when o has lists (compile it then). */
const struct moat_seccomp_baked *moat_seccomp_baked_find(const struct moat_seccomp_opts *o);

/* Install a compiled filter on the calling process, all threads, with
 * no_new_privs. Async-signal-safe: no allocation, no stdio. *ret_notify_fd
 * receives the listener (O_CLOEXEC) when p->notify, else -1. */
int moat_seccomp_install(const struct moat_seccomp_prog *p, int *ret_notify_fd);

/* ---- supervisor side ------------------------------------------------------ */

#define MOAT_SECCOMP_EV_PATH 4096
#define MOAT_SECCOMP_EV_ARGC 256 /* argv entries recorded */
#define MOAT_SECCOMP_EV_ARGV_BYTES 32768 /* bytes of argv recorded, NULs included */

enum moat_seccomp_event_type {
	MOAT_SECCOMP_EVENT_DENIED, /* a dangerous syscall, answered with -err */
	MOAT_SECCOMP_EVENT_EXEC, /* execve/execveat, recorded then continued */
	MOAT_SECCOMP_EVENT_NET, /* connect/sendto/sendmsg/sendmmsg, read then continued */
};

#define MOAT_SECCOMP_EV_NET_DESTS 4 /* messages of one sendmmsg looked at */
#define MOAT_SECCOMP_EV_PAYLOAD 512 /* bytes of a message kept (a DNS query fits) */

/* One destination of a network call, as the caller gave it (raw bytes read
 * from the sandbox: decode with care). */
struct moat_seccomp_net_dest {
	bool has_addr; /* an address was passed (else the socket's own peer is used) */
	bool peer; /* no address passed: family/addr/port are the connected peer's */
	bool ignored; /* the kernel does not use this address (stream socket, no MSG_FASTOPEN) */
	bool local; /* loopback or unspecified: stays inside the sandbox's network */
	uint16_t family; /* sa_family as passed: AF_INET, AF_INET6, AF_UNIX…; 0 unknown */
	uint16_t port; /* host order */
	uint8_t addr[16]; /* AF_INET: 4 bytes; AF_INET6: 16 (v4-mapped kept as is) */
	uint16_t payload_len;
	uint8_t payload[MOAT_SECCOMP_EV_PAYLOAD]; /* the first bytes of the message */
};

/* One decoded notification. Plain data, safe to copy (argv is offsets). Large
 * (~45 KiB): keep it off small stacks. Strings read from the sandbox are raw
 * bytes (NUL-terminated, length-capped): escape them before printing. */
struct moat_seccomp_event {
	enum moat_seccomp_event_type type;
	pid_t pid; /* in the listener's pid namespace */
	pid_t ppid; /* 0 if unknown */
	int nr;
	char syscall[32];
	int err; /* DENIED: the positive errno the caller got */
	uint64_t args[6];
	/* NET only: the socket and what was sent where. n_dests is 0 when
	 * nothing can leave the sandbox (AF_UNIX, loopback, a stream socket's
	 * ignored address): such calls are answered at once and not recorded. */
	int sock_fd;
	int send_flags;
	char sock_proto[16]; /* the socket's protocol name ("TCP", "UDPv6", …), "" if unknown */
	unsigned n_dests;
	struct moat_seccomp_net_dest dests[MOAT_SECCOMP_EV_NET_DESTS];
	/* DENIED only: /proc/pid/exe (the image that made the call) */
	char exe[MOAT_SECCOMP_EV_PATH];
	char cwd[MOAT_SECCOMP_EV_PATH]; /* /proc/pid/cwd ("" for a missing exec) */
	/* EXEC only */
	char path[MOAT_SECCOMP_EV_PATH]; /* the path argument as given */
	int dirfd; /* execveat's dirfd; AT_FDCWD for execve */
	int exec_flags; /* execveat's flags */
	unsigned argc; /* entries recorded */
	bool truncated; /* argv or path cut at a cap, or unreadable */
	/* The path did not resolve (ENOENT/ENOTDIR) inside the sandbox when the call
	 * was made: the exec is bound to fail, e.g. one step of a PATH search. A
	 * hint, checked before the kernel runs the exec. Such an event carries no
	 * ppid or cwd (it is not recorded). */
	bool missing;
	uint32_t argv_off[MOAT_SECCOMP_EV_ARGC];
	char argv_buf[MOAT_SECCOMP_EV_ARGV_BYTES];
};

/* The arguments of a denied call that say what it tried (docs/AUDIT.md):
 * the ioctl request, socket family/type/protocol, clone/unshare flags, setns
 * nstype, prctl option, ptrace request, personality, mount flags, chmod
 * mode… `key` is an audit field name; `name` a symbolic rendering of value
 * (static storage or buf), NULL when there is none. */
struct moat_seccomp_arg {
	const char *key;
	uint64_t value;
	const char *name;
};
#define MOAT_SECCOMP_MAX_DESCRIBED 4
#define MOAT_SECCOMP_DESCRIBE_BUF 192
/* Fills out[] (at most MOAT_SECCOMP_MAX_DESCRIBED), returns the count. buf
 * holds the names that are built (flag lists) and must outlive out[]. Pure. */
unsigned moat_seccomp_describe_args(const char *syscall, const uint64_t args[6],
				    struct moat_seccomp_arg out[MOAT_SECCOMP_MAX_DESCRIBED],
				    char buf[MOAT_SECCOMP_DESCRIBE_BUF]);

/* Whether an AF_INET/AF_INET6 address stays on the sandbox's loopback
 * (127/8, 0.0.0.0, ::1, ::, and their v4-mapped forms). Pure. */
bool moat_seccomp_addr_local(int family, const uint8_t *addr); /* 4 or 16 bytes */

/* argv[i] of an exec event, NULL past argc. */
const char *moat_seccomp_event_arg(const struct moat_seccomp_event *ev, unsigned i);

/* Receive, decode and answer ONE notification; call it when notify_fd is
 * readable. DENIED calls are answered with -err; network records (NET, only
 * through moat_seccomp_notify_handle_net) with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE, after their destination was read; exec
 * calls with
 * SECCOMP_USER_NOTIF_FLAG_CONTINUE after their path/argv/cwd were read and the
 * notification id was checked still valid (records, does not enforce: the
 * target could change the memory after the read). Returns 0 with *ret_ev
 * filled, -EAGAIN when nothing is pending, -ENOENT when the caller died before
 * it could be answered (no event), -ENOTCONN when no process uses the filter
 * any more (POLLHUP), or another -errno. */
int moat_seccomp_notify_handle(int notify_fd, struct moat_seccomp_event *ret_ev);
/* Same, for a listener whose processes all share one root directory (in the
 * sandbox: none can chroot, pivot_root or enter another mount namespace).
 * *root_fd (-1 at first) is an O_PATH fd of that root, below which absolute
 * exec paths are checked without opening /proc/PID/root each time; the first
 * exec event fills it (owned by the caller, who closes it). */
int moat_seccomp_notify_handle_root(int notify_fd, int *root_fd, struct moat_seccomp_event *ret_ev);

/* Which network calls the filter of o sends to the listener as records
 * (read, then continued): bits 1 << MOAT_SECCOMP_NET_*. A network call that
 * reaches the listener without its bit (a --deny-syscall connect) is a
 * denial and answered EPERM, never continued. */
enum {
	MOAT_SECCOMP_NET_CONNECT,
	MOAT_SECCOMP_NET_SENDTO,
	MOAT_SECCOMP_NET_SENDMSG,
	MOAT_SECCOMP_NET_SENDMMSG
};
unsigned moat_seccomp_net_record_mask(const struct moat_seccomp_opts *o);
/* Same as moat_seccomp_notify_handle_root, with the network records of
 * net_mask (moat_seccomp_net_record_mask of the filter's options; the
 * functions above pass 0: every notification that is not an exec is a
 * denial). */
int moat_seccomp_notify_handle_net(int notify_fd, int *root_fd, unsigned net_mask,
				   struct moat_seccomp_event *ret_ev);

/* ---- doctor ---------------------------------------------------------------- */

struct moat_seccomp_probe {
	bool filter; /* SECCOMP_MODE_FILTER available */
	bool kill_process; /* SECCOMP_RET_KILL_PROCESS */
	bool notify; /* SECCOMP_RET_USER_NOTIF */
	bool notif_sizes_ok; /* the kernel's notification structs match ours */
	unsigned api_level; /* libseccomp's API level on this kernel */
	unsigned lib_major, lib_minor, lib_micro;
	unsigned n_rules; /* table rules that resolve on this architecture */
	unsigned n_rules_total;
};

int moat_seccomp_probe(struct moat_seccomp_probe *ret);
