/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The seccomp layer (see seccomp.h): rule table, filter build/load, notifications. */
#include "kernel/seccomp.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "shared/macro.h"

#ifndef TIOCSTI
#define TIOCSTI 0x5412
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef TIOCCONS
#define TIOCCONS 0x541D
#endif
#ifndef TIOCSETD
#define TIOCSETD 0x5423
#endif
#ifndef IPPROTO_L2TP
#define IPPROTO_L2TP 115
#endif

/* Every CLONE_NEW* flag clone() accepts (the mask Docker and flatpak use):
 * NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET. CLONE_NEWTIME only works
 * through unshare()/clone3(), which are denied outright. */
#define CLONE_NS_MASK 0x7E020000ULL
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1 /* s390 swaps clone's first two arguments */
#else
#define CLONE_FLAGS_ARG 0
#endif

/* personality() values that stay allowed: PER_LINUX (0), PER_LINUX32 (8, only
 * changes the machine name uname() reports; `linux32`), UNAME26 (0x20000,
 * old-version uname for legacy software) and their combination, and the query
 * 0xffffffff. Everything else is denied, notably ADDR_NO_RANDOMIZE (0x40000:
 * switches ASLR off for children, `setarch -R`, gdb), READ_IMPLIES_EXEC and the
 * foreign personalities. Bits 3 and 17 are the only ones an allowed value other
 * than the query may carry. */
#define PERSONALITY_OK_BITS 0x20008ULL

#define R(n, l, m, v, e, notif, opt, fb, rf, at) \
	{ \
		.name = n, .label = l, .match = m, .value = v, .err = e, .notify = notif, \
		.optional = opt, .fallback_nr = fb, .ref = rf, .attack = at \
	}
/* An unconditional EPERM denial, recorded when notification is on. */
#define DENY(n, rf, at) R(n, n, MOAT_SECCOMP_MATCH_ALL, 0, EPERM, true, false, 0, rf, at)
/* Same, for syscalls some architectures lack. */
#define DENY_OPT(n, rf, at) R(n, n, MOAT_SECCOMP_MATCH_ALL, 0, EPERM, true, true, 0, rf, at)
/* ENOSYS for feature probes libraries make routinely: they fall back, and the
 * denial is not recorded (it would flood the log with false alarms). */
#define NOSYS(n, fb, rf, at) R(n, n, MOAT_SECCOMP_MATCH_ALL, 0, ENOSYS, false, false, fb, rf, at)

static const struct moat_seccomp_rule rules[] = {
	/* namespaces */
	DENY("unshare", "RT-005, RT-007",
	     "creating namespaces: a nested user namespace gives CAP_SYS_ADMIN/CAP_NET_ADMIN over new namespaces, the entry point of most kernel LPEs (nf_tables CVE-2024-1086, fsconfig CVE-2022-0185)"),
	DENY("setns", "RT-007",
	     "joining another namespace through an inherited or /proc namespace fd"),
	R("clone", "clone(CLONE_NEW*)", MOAT_SECCOMP_MATCH_CLONE_NS, 0, EPERM, true, false, 0,
	  "RT-005",
	  "clone() with namespace flags (mask 0x7E020000): the same nested-namespace attack as unshare; plain fork/thread clone stays allowed"),
	NOSYS("clone3", 0, "RT-005",
	      "clone3() passes its flags in memory seccomp cannot inspect; ENOSYS makes glibc fall back to clone(), which is filtered"),
	/* mounts */
	DENY("mount", "RT-008",
	     "mounting, bind-mounting or remounting read-only binds writable; revealing masked paths"),
	DENY("umount2", "RT-008",
	     "unmounting masks (e.g. over /proc/kcore) to reveal what they hide"),
	NOSYS("open_tree", 0, "RT-008",
	      "new mount API: cloning mount trees (CVE-2021-41133 swapped /.flatpak-info through it)"),
	NOSYS("move_mount", 0, "RT-008",
	      "new mount API: attaching detached mounts over sandbox paths"),
	NOSYS("fsopen", 0, "RT-008",
	      "new mount API: creating filesystem contexts (fsconfig heap overflow CVE-2022-0185)"),
	NOSYS("fsconfig", 0, "RT-008",
	      "new mount API: configuring filesystem contexts (CVE-2022-0185)"),
	NOSYS("fsmount", 0, "RT-008", "new mount API: turning a filesystem context into a mount"),
	NOSYS("fspick", 0, "RT-008", "new mount API: reconfiguring existing mounts"),
	NOSYS("mount_setattr", 0, "RT-008",
	      "new mount API: clearing MOUNT_ATTR_RDONLY/NOSUID on mounts"),
	NOSYS("open_tree_attr", 467, "RT-008",
	      "new mount API (6.15): open_tree with mount attributes changed"),
	DENY("pivot_root", "RT-009", "changing the root to escape or hide the sandbox root"),
	DENY("chroot", "RT-009",
	     "the chroot + fchdir(\"..\") escape and confusing host-path checks"),
	/* kernel attack surface */
	DENY("bpf", "RT-014",
	     "loading eBPF programs and maps: verifier bugs are a recurring kernel LPE"),
	DENY("perf_event_open", "RT-014",
	     "perf events: a long history of kernel CVEs and side channels"),
	DENY("userfaultfd", "RT-014", "userfaultfd widens kernel race windows for exploits"),
	NOSYS("io_uring_setup", 0, "RT-015",
	      "io_uring runs file and network operations that never pass through seccomp; ENOSYS so libuv/tokio fall back"),
	NOSYS("io_uring_enter", 0, "RT-015", "io_uring submission (see io_uring_setup)"),
	NOSYS("io_uring_register", 0, "RT-015", "io_uring registration (see io_uring_setup)"),
	DENY("keyctl", "RT-013",
	     "the kernel keyring is not namespaced: reading or planting host keys (Kerberos, cifs, ecryptfs)"),
	DENY("add_key", "RT-013", "adding keys to the non-namespaced kernel keyring"),
	DENY("request_key", "RT-013",
	     "requesting keys (and upcalls to host helpers) from the kernel keyring"),
	/* processes */
	DENY("ptrace", "RT-020",
	     "tracing the sandbox init or other processes: stealing fds and memory, rewriting syscalls (opt-in for debuggers: --allow-syscall ptrace)"),
	DENY("process_vm_readv", "RT-020", "reading another process's memory (opt-in with ptrace)"),
	DENY("process_vm_writev", "RT-020", "writing another process's memory"),
	DENY("process_madvise", "RT-020", "acting on another process's memory"),
	DENY("kcmp", "RT-020",
	     "comparing kernel objects of other processes (fd/mm probing, kernel pointer ordering)"),
	DENY("pidfd_getfd", "RT-020", "stealing file descriptors from another process"),
	/* kernel control */
	DENY("kexec_load", "RT-016", "replacing the running kernel"),
	DENY("kexec_file_load", "RT-016", "replacing the running kernel"),
	DENY("init_module", "RT-016", "loading kernel modules"),
	DENY("finit_module", "RT-016", "loading kernel modules"),
	DENY("delete_module", "RT-016", "unloading kernel modules"),
	DENY("reboot", "RT-016", "rebooting or changing Ctrl-Alt-Del behaviour"),
	DENY("swapon", "RT-016", "enabling swap on sandbox files"),
	DENY("swapoff", "RT-016", "disabling host swap"),
	DENY("acct", "RT-016", "process accounting to a file"),
	DENY("settimeofday", "RT-016", "setting the host clock (time is not namespaced)"),
	DENY("clock_settime", "RT-016", "setting the host clock"),
	DENY("clock_adjtime", "RT-016",
	     "adjusting the host clock (also blocks read-only use; --allow-syscall clock_adjtime)"),
	DENY("adjtimex", "RT-016",
	     "adjusting the host clock (also blocks ntp_gettime(); --allow-syscall adjtimex)"),
	DENY("syslog", "RT-016",
	     "reading or clearing the kernel log (kernel addresses, host events)"),
	DENY("quotactl", "RT-016", "disk quota control of host filesystems"),
	DENY("quotactl_fd", "RT-016", "disk quota control of host filesystems"),
	DENY_OPT("uselib", "RT-016", "loading a.out libraries: obsolete kernel surface"),
	DENY_OPT("modify_ldt", "RT-016",
		 "changing the x86 LDT: historic kernel bugs, only needed by 16-bit emulation"),
	DENY_OPT("iopl", "RT-016", "raising the x86 I/O privilege level"),
	DENY_OPT("ioperm", "RT-016", "x86 I/O port access"),
	DENY_OPT("lookup_dcookie", "RT-016", "profiling cookies: obsolete kernel surface"),
	DENY("vhangup", "RT-001", "hanging up the controlling terminal"),
	DENY_OPT("nfsservctl", "RT-016", "obsolete NFS server control"),
	/* filesystem */
	DENY("open_by_handle_at", "RT-017",
	     "opening files by handle bypasses the mount tree: the 2014 \"shocker\" container breakout"),
	DENY("name_to_handle_at", "RT-017", "producing file handles for open_by_handle_at"),
	DENY("fanotify_init", "RT-017", "filesystem-wide event monitoring"),
	R("personality", "personality(flags)", MOAT_SECCOMP_MATCH_PERSONALITY, 0, EPERM, true,
	  false, 0, "RT-019",
	  "personality flags other than 0, PER_LINUX32, UNAME26 and the 0xffffffff query: ADDR_NO_RANDOMIZE turns ASLR off, READ_IMPLIES_EXEC makes data executable"),
	/* terminals */
	R("ioctl", "ioctl(TIOCSTI)", MOAT_SECCOMP_MATCH_IOCTL_REQ, TIOCSTI, EPERM, true, false, 0,
	  "RT-001",
	  "pushing keystrokes into the user's terminal (CVE-2017-5226), matched on the low 32 bits whatever the upper bits"),
	R("ioctl", "ioctl(TIOCLINUX)", MOAT_SECCOMP_MATCH_IOCTL_REQ, TIOCLINUX, EPERM, true, false,
	  0, "RT-003", "virtual console copy/paste injection (CVE-2023-28100)"),
	R("ioctl", "ioctl(TIOCSETD)", MOAT_SECCOMP_MATCH_IOCTL_REQ, TIOCSETD, EPERM, true, false, 0,
	  "RT-004",
	  "setting a tty line discipline autoloads n_gsm/n_hdlc (CVE-2023-6546, CVE-2017-2636)"),
	R("ioctl", "ioctl(TIOCCONS)", MOAT_SECCOMP_MATCH_IOCTL_REQ, TIOCCONS, EPERM, true, false, 0,
	  "RT-004", "redirecting the console to a sandbox tty"),
	/* sockets */
	R("socket", "socket(family)", MOAT_SECCOMP_MATCH_SOCKET_FAMILY, 0, EPERM, true, false, 0,
	  "RT-012",
	  "socket families other than AF_UNIX, AF_INET, AF_INET6, AF_NETLINK: AF_PACKET, AF_VSOCK (bypasses the proxy), AF_ALG, AF_TIPC, AF_RDS… and their module autoload"),
	R("socket", "socket(AF_NETLINK, protocol)", MOAT_SECCOMP_MATCH_NETLINK_PROTO, 0, EPERM,
	  true, false, 0, "RT-011",
	  "netlink other than NETLINK_ROUTE: nf_tables (CVE-2024-1086), audit, uevents, xfrm; NETLINK_ROUTE stays for getaddrinfo/getifaddrs and `ip addr`, read-only because no capability is left"),
	R("socket", "socket(INET, SOCK_DCCP)", MOAT_SECCOMP_MATCH_INET_TYPE, SOCK_DCCP, EPERM, true,
	  false, 0, "RT-012", "DCCP sockets (CVE-2017-6074) and their module autoload"),
	R("socket", "socket(INET, IPPROTO_DCCP)", MOAT_SECCOMP_MATCH_INET_PROTO, IPPROTO_DCCP,
	  EPERM, true, false, 0, "RT-012",
	  "DCCP sockets (CVE-2017-6074) and their module autoload"),
	R("socket", "socket(INET, IPPROTO_SCTP)", MOAT_SECCOMP_MATCH_INET_PROTO, IPPROTO_SCTP,
	  EPERM, true, false, 0, "RT-012",
	  "SCTP sockets: rarely needed kernel surface, module autoload"),
	R("socket", "socket(INET, IPPROTO_L2TP)", MOAT_SECCOMP_MATCH_INET_PROTO, IPPROTO_L2TP,
	  EPERM, true, false, 0, "RT-012",
	  "L2TP sockets: rarely needed kernel surface, module autoload"),
	/* set-id files: in root mode the workspace is an idmapped mount whose
	 * owner may be host root, so a set-uid file made inside would be a
	 * set-uid-root program on the host. No agent needs to create one. */
	R("chmod", "chmod(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 1, EPERM, true, false,
	  0, "RT-022",
	  "making a set-uid/set-gid file that would run with its owner's rights on the host"),
	R("fchmod", "fchmod(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 1, EPERM, true, false,
	  0, "RT-022",
	  "making a set-uid/set-gid file that would run with its owner's rights on the host"),
	R("fchmodat", "fchmodat(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 2, EPERM, true,
	  false, 0, "RT-022",
	  "making a set-uid/set-gid file that would run with its owner's rights on the host"),
	R("fchmodat2", "fchmodat2(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 2, EPERM, true,
	  true, 452, "RT-022",
	  "making a set-uid/set-gid file that would run with its owner's rights on the host"),
	R("open", "open(O_CREAT, S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_CREATE_SETID, 2, EPERM, true,
	  false, 0, "RT-022", "creating a set-uid/set-gid file directly"),
	R("openat", "openat(O_CREAT, S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_CREATE_SETID, 3, EPERM,
	  true, false, 0, "RT-022", "creating a set-uid/set-gid file directly"),
	R("creat", "creat(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 1, EPERM, true, false,
	  0, "RT-022", "creating a set-uid/set-gid file directly"),
	R("mknod", "mknod(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 1, EPERM, true, false,
	  0, "RT-022", "creating a set-uid/set-gid file directly"),
	R("mknodat", "mknodat(S_ISUID|S_ISGID)", MOAT_SECCOMP_MATCH_SETID_MODE, 2, EPERM, true,
	  false, 0, "RT-022", "creating a set-uid/set-gid file directly"),
	NOSYS("openat2", 437, "RT-022",
	      "openat2 carries its mode in a struct seccomp cannot inspect; ENOSYS makes callers fall back to openat"),
	R("socketpair", "socketpair(family)", MOAT_SECCOMP_MATCH_SOCKETPAIR, 0, EPERM, true, false,
	  0, "RT-012", "socket pairs of families other than AF_UNIX"),
};

const struct moat_seccomp_rule *moat_seccomp_rules(size_t *ret_n)
{
	if (ret_n)
		*ret_n = ELEMENTSOF(rules);
	return rules;
}

/* Native syscall number of a table rule, or -1 when this architecture lacks it. */
static int rule_nr(const struct moat_seccomp_rule *r)
{
	int nr = seccomp_syscall_resolve_name(r->name);
	if (nr < 0 && r->fallback_nr > 0)
		nr = r->fallback_nr;
	return nr < 0 ? -1 : nr;
}

int moat_seccomp_validate_name(const char *name)
{
	if (!name || !*name || strlen(name) > 64)
		return -EINVAL;
	for (size_t i = 0; i < ELEMENTSOF(rules); i++)
		if (streq(rules[i].name, name) && rule_nr(&rules[i]) >= 0)
			return 0;
	/* < 0 also covers pseudo-syscalls of other architectures (socketcall…). */
	return seccomp_syscall_resolve_name(name) >= 0 ? 0 : -EINVAL;
}

static bool in_list(const char *const *list, unsigned n, const char *name)
{
	for (unsigned i = 0; i < n; i++)
		if (streq(list[i], name))
			return true;
	return false;
}

static int add(scmp_filter_ctx ctx, uint32_t act, int nr, unsigned n,
	       const struct scmp_arg_cmp *cmp)
{
	int r = seccomp_rule_add_exact_array(ctx, act, nr, n, cmp);
	/* -EEXIST: an identical rule is already there (a user deny of a table name). */
	return r == -EEXIST ? 0 : r;
}

static int add1(scmp_filter_ctx ctx, uint32_t act, int nr, struct scmp_arg_cmp c)
{
	return add(ctx, act, nr, 1, &c);
}

static int add2(scmp_filter_ctx ctx, uint32_t act, int nr, struct scmp_arg_cmp a,
		struct scmp_arg_cmp b)
{
	struct scmp_arg_cmp c[2] = {a, b};
	return add(ctx, act, nr, 2, c);
}

/*
 * libseccomp allows one comparison per argument in a rule and ORs rules, so an
 * allowlist of argument values is written as a union of rules each matching
 * only denied values.
 */
static int add_rule(scmp_filter_ctx ctx, const struct moat_seccomp_rule *rule, int nr, uint32_t act)
{
	int r = 0;

	switch (rule->match) {
	case MOAT_SECCOMP_MATCH_ALL:
		return add(ctx, act, nr, 0, NULL);
	case MOAT_SECCOMP_MATCH_CLONE_NS:
		/* "any namespace bit set" = one rule per bit. */
		for (unsigned b = 0; b < 64 && r >= 0; b++)
			if (CLONE_NS_MASK & (1ULL << b))
				r = add1(ctx, act, nr,
					 SCMP_CMP(CLONE_FLAGS_ARG, SCMP_CMP_MASKED_EQ, 1ULL << b,
						  1ULL << b));
		return r;
	case MOAT_SECCOMP_MATCH_PERSONALITY:
		/* The kernel reads a 32-bit value: any upper bit is denied outright.
		 * Below that, deny "a bit outside PERSONALITY_OK_BITS is set" except for
		 * 0xffffffff (all bits): bit 0 set and some bit c clear, or some
		 * forbidden bit b set and bit 0 clear. */
		r = add1(ctx, act, nr, SCMP_A0(SCMP_CMP_GT, 0xffffffffULL));
		for (unsigned c = 1; c < 32 && r >= 0; c++)
			r = add1(ctx, act, nr,
				 SCMP_A0(SCMP_CMP_MASKED_EQ, 1ULL | (1ULL << c), 1ULL));
		for (unsigned b = 1; b < 32 && r >= 0; b++)
			if (!(PERSONALITY_OK_BITS & (1ULL << b)))
				r = add1(
					ctx, act, nr,
					SCMP_A0(SCMP_CMP_MASKED_EQ, 1ULL | (1ULL << b), 1ULL << b));
		return r;
	case MOAT_SECCOMP_MATCH_IOCTL_REQ:
		/* The request is an unsigned int in the kernel: compare the low 32 bits
		 * only, so TIOCSTI | (1 << 32) is still denied. */
		return add1(ctx, act, nr, SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffULL, rule->value));
	case MOAT_SECCOMP_MATCH_SOCKET_FAMILY:
		/* Allowed: exactly 1, 2, 10, 16. Anything above 16 (also any value with
		 * upper bits set, which the kernel would truncate) is denied. */
		for (uint64_t f = 0; f <= AF_NETLINK && r >= 0; f++)
			if (f != AF_UNIX && f != AF_INET && f != AF_INET6 && f != AF_NETLINK)
				r = add1(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, f));
		if (r >= 0)
			r = add1(ctx, act, nr, SCMP_A0(SCMP_CMP_GT, AF_NETLINK));
		return r;
	case MOAT_SECCOMP_MATCH_NETLINK_PROTO:
		/* NETLINK_ROUTE is 0; a protocol with upper bits is denied too. */
		return add2(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, AF_NETLINK),
			    SCMP_A2(SCMP_CMP_NE, 0));
	case MOAT_SECCOMP_MATCH_INET_PROTO:
		r = add2(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, AF_INET),
			 SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffULL, rule->value));
		if (r >= 0)
			r = add2(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, AF_INET6),
				 SCMP_A2(SCMP_CMP_MASKED_EQ, 0xffffffffULL, rule->value));
		return r;
	case MOAT_SECCOMP_MATCH_INET_TYPE:
		/* type carries SOCK_NONBLOCK/SOCK_CLOEXEC; the kernel masks with 0xf. */
		r = add2(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, AF_INET),
			 SCMP_A1(SCMP_CMP_MASKED_EQ, 0xfULL, rule->value));
		if (r >= 0)
			r = add2(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, AF_INET6),
				 SCMP_A1(SCMP_CMP_MASKED_EQ, 0xfULL, rule->value));
		return r;
	case MOAT_SECCOMP_MATCH_SETID_MODE: {
		/* "S_ISUID or S_ISGID set in argument `value`": one rule per bit */
		unsigned a = (unsigned)rule->value;
		r = add1(ctx, act, nr, SCMP_CMP(a, SCMP_CMP_MASKED_EQ, S_ISUID, S_ISUID));
		if (r >= 0)
			r = add1(ctx, act, nr, SCMP_CMP(a, SCMP_CMP_MASKED_EQ, S_ISGID, S_ISGID));
		return r;
	}
	case MOAT_SECCOMP_MATCH_CREATE_SETID: {
		/* The kernel reads an open's mode only when it creates (O_CREAT,
		 * or O_TMPFILE, which includes O_DIRECTORY's bit): a plain open
		 * whose mode register holds garbage (busybox sh's redirects) must
		 * not be denied. One rule per (creating flag, set-id bit). */
		const unsigned m = (unsigned)rule->value, f = m - 1;
		const uint64_t creating[] = {O_CREAT, O_TMPFILE}, bits[] = {S_ISUID, S_ISGID};
		for (size_t i = 0; i < ELEMENTSOF(creating) && r >= 0; i++)
			for (size_t j = 0; j < ELEMENTSOF(bits) && r >= 0; j++)
				r = add2(ctx, act, nr,
					 SCMP_CMP(f, SCMP_CMP_MASKED_EQ, creating[i], creating[i]),
					 SCMP_CMP(m, SCMP_CMP_MASKED_EQ, bits[j], bits[j]));
		return r;
	}
	case MOAT_SECCOMP_MATCH_SOCKETPAIR:
		r = add1(ctx, act, nr, SCMP_A0(SCMP_CMP_EQ, 0));
		if (r >= 0)
			r = add1(ctx, act, nr, SCMP_A0(SCMP_CMP_GT, AF_UNIX));
		return r;
	}
	return -EINVAL;
}

static bool table_denies_all(const char *name, const char *const *allow, unsigned n_allow)
{
	if (in_list(allow, n_allow, name))
		return false;
	for (size_t i = 0; i < ELEMENTSOF(rules); i++)
		if (streq(rules[i].name, name) && rules[i].match == MOAT_SECCOMP_MATCH_ALL &&
		    rule_nr(&rules[i]) >= 0)
			return true;
	return false;
}

/* In MOAT_SECCOMP_NET_* order. */
static const char *const net_names[] = {"connect", "sendto", "sendmsg", "sendmmsg"};

unsigned moat_seccomp_net_record_mask(const struct moat_seccomp_opts *o)
{
	unsigned mask = 0;
	if (!o || !o->notify || !o->record_net)
		return 0;
	for (size_t i = 0; i < ELEMENTSOF(net_names); i++)
		if (!in_list(o->deny, o->n_deny, net_names[i]))
			mask |= 1u << i;
	return mask;
}

static void ctx_releasep(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}

int moat_seccomp_build(const struct moat_seccomp_opts *o, scmp_filter_ctx *ret)
{
	_cleanup_(ctx_releasep) scmp_filter_ctx ctx = NULL;
	int r;

	if (!o || !ret || o->n_allow > MOAT_SECCOMP_MAX_NAMES ||
	    o->n_deny > MOAT_SECCOMP_MAX_NAMES || (o->n_allow && !o->allow) ||
	    (o->n_deny && !o->deny))
		return -EINVAL;
	for (unsigned i = 0; i < o->n_allow; i++)
		if (moat_seccomp_validate_name(o->allow[i]) < 0)
			return -EINVAL;
	for (unsigned i = 0; i < o->n_deny; i++)
		if (moat_seccomp_validate_name(o->deny[i]) < 0 ||
		    in_list(o->allow, o->n_allow, o->deny[i]))
			return -EINVAL;

	ctx = seccomp_init(SCMP_ACT_ALLOW);
	if (!ctx)
		return -ENOMEM;
	/* The context holds only the native architecture (seccomp_init's default):
	 * i386 (int 0x80) and other ABIs hit BADARCH and kill the whole process;
	 * libseccomp also sends x32 numbers (>= 0x40000000) on x86_64 there. */
	if ((r = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS)) < 0 ||
	    (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 1)) < 0 ||
	    (r = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_TSYNC, 1)) < 0 ||
	    (r = seccomp_attr_set(ctx, SCMP_FLTATR_API_SYSRAWRC, 1)) < 0)
		return r;
	/* A binary tree of syscall numbers keeps allowed calls cheap. Optional. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2);

	for (size_t i = 0; i < ELEMENTSOF(rules); i++) {
		const struct moat_seccomp_rule *rule = &rules[i];
		if (in_list(o->allow, o->n_allow, rule->name))
			continue;
		int nr = rule_nr(rule);
		if (nr < 0) {
			if (rule->optional)
				continue;
			return -EOPNOTSUPP; /* a rule we cannot express: fail closed */
		}
		uint32_t act = (o->notify && rule->notify) ? SCMP_ACT_NOTIFY
							   : SCMP_ACT_ERRNO((uint32_t)rule->err);
		r = add_rule(ctx, rule, nr, act);
		if (r < 0)
			return r;
	}
	for (unsigned i = 0; i < o->n_deny; i++) {
		if (table_denies_all(o->deny[i], o->allow, o->n_allow))
			continue;
		int nr = seccomp_syscall_resolve_name(o->deny[i]);
		if (nr < 0) /* a fallback-number name: table_denies_all covered it */
			return -EINVAL;
		r = add(ctx, o->notify ? SCMP_ACT_NOTIFY : SCMP_ACT_ERRNO(EPERM), nr, 0, NULL);
		if (r < 0)
			return r;
	}
	if (o->record_exec) {
		static const char *const exec_names[] = {"execve", "execveat"};
		for (size_t i = 0; i < ELEMENTSOF(exec_names); i++) {
			if (in_list(o->deny, o->n_deny, exec_names[i]))
				continue; /* denied: the denial is recorded instead */
			r = add(ctx, SCMP_ACT_NOTIFY, seccomp_syscall_resolve_name(exec_names[i]),
				0, NULL);
			if (r < 0)
				return r;
		}
	}
	if (o->notify && o->record_net) {
		/* Network calls that may name a destination: read, then continued
		 * (the kernel decides; --net none refuses all but loopback). sendto
		 * without an address (send() on a connected socket) stays in the
		 * kernel; sendmsg/sendmmsg keep theirs in memory the filter cannot
		 * read. A name the policy denies is answered by its denial. */
		unsigned mask = moat_seccomp_net_record_mask(o);
		for (size_t i = 0; i < ELEMENTSOF(net_names); i++) {
			if (!(mask & (1u << i)))
				continue;
			int nr = seccomp_syscall_resolve_name(net_names[i]);
			if (nr < 0)
				return -EOPNOTSUPP;
			if (streq(net_names[i], "sendto"))
				r = add1(ctx, SCMP_ACT_NOTIFY, nr, SCMP_A4(SCMP_CMP_NE, 0));
			else
				r = add(ctx, SCMP_ACT_NOTIFY, nr, 0, NULL);
			if (r < 0)
				return r;
		}
	}
	*ret = TAKE_PTR(ctx);
	return 0;
}

int moat_seccomp_load(scmp_filter_ctx ctx, bool notify, int *ret_notify_fd)
{
	if (!ctx)
		return -EINVAL;
	if (ret_notify_fd)
		*ret_notify_fd = -1;
	int r = seccomp_load(ctx);
	if (r < 0)
		return r;
	if (!notify)
		return 0;
	if (!ret_notify_fd)
		return -EINVAL;
	/* The listener fd exists only if the filter has a NOTIFY rule. */
	int fd = seccomp_notify_fd(ctx);
	if (fd < 0)
		return fd == -1 ? -ENODATA : fd;
	*ret_notify_fd = fd;
	return 0;
}

int moat_seccomp_export(scmp_filter_ctx ctx, bool notify, struct moat_seccomp_prog *ret)
{
	struct stat st;

	if (!ctx || !ret)
		return -EINVAL;
	_cleanup_close_ int fd = memfd_create("moat-seccomp", MFD_CLOEXEC);
	if (fd < 0)
		return negerrno();
	int r = seccomp_export_bpf(ctx, fd);
	if (r < 0)
		return r;
	if (fstat(fd, &st) < 0)
		return negerrno();
	/* The kernel takes at most BPF_MAXINSNS instructions. */
	if (st.st_size <= 0 || st.st_size % sizeof(struct sock_filter) != 0 ||
	    st.st_size / sizeof(struct sock_filter) > BPF_MAXINSNS)
		return -E2BIG;
	_cleanup_free_ struct sock_filter *insns = malloc((size_t)st.st_size);
	if (!insns)
		return -ENOMEM;
	if (pread(fd, insns, (size_t)st.st_size, 0) != st.st_size)
		return -EIO;
	*ret = (struct moat_seccomp_prog){
		.insns = TAKE_PTR(insns),
		.len = (unsigned short)(st.st_size / sizeof(struct sock_filter)),
		.notify = notify,
	};
	return 0;
}

const struct moat_seccomp_baked *moat_seccomp_baked_find(const struct moat_seccomp_opts *o)
{
	if (!o || o->n_allow || o->n_deny)
		return NULL;
	for (unsigned i = 0; i < moat_seccomp_n_baked; i++)
		if (moat_seccomp_baked[i].notify == o->notify &&
		    moat_seccomp_baked[i].record_exec == o->record_exec &&
		    moat_seccomp_baked[i].record_net == (o->notify && o->record_net) &&
		    moat_seccomp_baked[i].len)
			return &moat_seccomp_baked[i];
	return NULL;
}

void moat_seccomp_prog_done(struct moat_seccomp_prog *p)
{
	if (!p)
		return;
	free(p->insns);
	*p = (struct moat_seccomp_prog){0};
}

int moat_seccomp_install(const struct moat_seccomp_prog *p, int *ret_notify_fd)
{
	if (!p || !p->insns || !p->len || (p->notify && !ret_notify_fd))
		return -EINVAL;
	if (ret_notify_fd)
		*ret_notify_fd = -1;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return negerrno();
	struct sock_fprog prog = {.len = p->len, .filter = p->insns};
	/* TSYNC reports an unsyncable thread by returning its tid, which a listener
	 * fd would be confused with: TSYNC_ESRCH makes that an error instead. */
	unsigned long flags = SECCOMP_FILTER_FLAG_TSYNC;
	if (p->notify)
		flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER | SECCOMP_FILTER_FLAG_TSYNC_ESRCH;
	long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &prog);
	if (r < 0)
		return negerrno();
	if (!p->notify)
		return r == 0 ? 0 : -EAGAIN; /* r = a thread that could not be synchronised */
	*ret_notify_fd = (int)r;
	return 0;
}

/* ---- supervisor side ------------------------------------------------------ */

const char *moat_seccomp_event_arg(const struct moat_seccomp_event *ev, unsigned i)
{
	if (!ev || i >= ev->argc || i >= MOAT_SECCOMP_EV_ARGC ||
	    ev->argv_off[i] >= MOAT_SECCOMP_EV_ARGV_BYTES)
		return NULL;
	return ev->argv_buf + ev->argv_off[i];
}

static size_t page_room(uint64_t addr)
{
	static size_t page;
	if (!page)
		page = (size_t)sysconf(_SC_PAGESIZE);
	return page - (size_t)(addr % page);
}

/* Read up to len bytes of the target's memory at addr without crossing a page
 * boundary (process_vm_readv fails on the first unmapped page). */
static ssize_t read_mem(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = {.iov_base = buf, .iov_len = MIN(len, page_room(addr))};
	struct iovec remote = {.iov_base = (void *)(uintptr_t)addr, .iov_len = local.iov_len};
	ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
	return n < 0 ? negerrno() : n;
}

/* A NUL-terminated string of at most cap-1 bytes, of which the first off
 * (no NUL among them) are already in buf. Returns its length, sets *trunc
 * when it was cut or could not be read to its end. */
static size_t read_str_from(pid_t pid, uint64_t addr, char *buf, size_t cap, size_t off,
			    bool *trunc)
{
	while (off + 1 < cap) {
		ssize_t n = read_mem(pid, addr + off, buf + off, cap - 1 - off);
		if (n <= 0) {
			buf[off] = 0;
			*trunc = true;
			return off;
		}
		char *nul = memchr(buf + off, 0, (size_t)n);
		if (nul)
			return (size_t)(nul - buf);
		off += (size_t)n;
	}
	buf[cap - 1] = 0;
	*trunc = true;
	return cap - 1;
}

static size_t read_str(pid_t pid, uint64_t addr, char *buf, size_t cap, bool *trunc)
{
	buf[0] = 0;
	return read_str_from(pid, addr, buf, cap, 0, trunc);
}

/*
 * The exec's path and argv, in as few process_vm_readv calls as the common case
 * allows: one for the path and the argv array together, one for all argument
 * strings. Every element is capped at its page, so it is read whole or not at
 * all (a failure ends the transfer at that element); whatever the batch did
 * not complete (a string running past its page, an unreadable element and
 * those after it, a longer argv array) is read on one page at a time exactly
 * as a reader without the batch would, so the result is the same.
 */
static void read_exec_args(pid_t pid, uint64_t path, uint64_t argv, struct moat_seccomp_event *ev)
{
	uint64_t ptrs[MOAT_SECCOMP_EV_ARGC + 1];
	struct iovec lv[MOAT_SECCOMP_EV_ARGC], rv[MOAT_SECCOMP_EV_ARGC];
	size_t plen = MIN(sizeof(ev->path) - 1, page_room(path));
	size_t alen = MIN(sizeof(ptrs), page_room(argv) / sizeof(uint64_t) * sizeof(uint64_t));
	bool ptr_trunc = false;

	/* path and argv array */
	lv[0] = (struct iovec){ev->path, plen};
	rv[0] = (struct iovec){(void *)(uintptr_t)path, plen};
	lv[1] = (struct iovec){ptrs, alen};
	rv[1] = (struct iovec){(void *)(uintptr_t)argv, alen};
	ssize_t n = process_vm_readv(pid, lv, alen ? 2 : 1, rv, alen ? 2 : 1, 0);
	size_t got_path = n > 0 ? MIN((size_t)n, plen) : 0;
	unsigned have = n > (ssize_t)plen ? (unsigned)(((size_t)n - plen) / sizeof(uint64_t)) : 0;
	if (!got_path || !memchr(ev->path, 0, got_path))
		read_str_from(pid, path, ev->path, sizeof(ev->path), got_path, &ev->truncated);

	/* the pointers up to the NULL, one past the cap to see whether argv was cut */
	unsigned cnt = 0;
	for (; cnt <= MOAT_SECCOMP_EV_ARGC; cnt++) {
		if (cnt >= have &&
		    read_mem(pid, argv + (uint64_t)cnt * sizeof(uint64_t), &ptrs[cnt],
			     sizeof(uint64_t)) != sizeof(uint64_t)) {
			ptr_trunc = true;
			break;
		}
		if (!ptrs[cnt])
			break;
	}
	if (cnt > MOAT_SECCOMP_EV_ARGC) {
		cnt = MOAT_SECCOMP_EV_ARGC;
		ptr_trunc = true;
	}

	/* the strings: each element gets its page's rest of the buffer's room */
	size_t pos = 0;
	unsigned k = 0;
	for (; k < cnt && pos + 1 < sizeof(ev->argv_buf); k++) {
		size_t len = MIN(page_room(ptrs[k]), sizeof(ev->argv_buf) - 1 - pos);
		lv[k] = (struct iovec){ev->argv_buf + pos, len};
		rv[k] = (struct iovec){(void *)(uintptr_t)ptrs[k], len};
		pos += len;
	}
	ssize_t got = k ? process_vm_readv(pid, lv, k, rv, k, 0) : 0;
	/* Keep the strings read whole, packed in order (each only moves left). */
	size_t used = 0;
	unsigned i = 0;
	pos = 0;
	for (; i < k && got > 0; i++) {
		size_t len = lv[i].iov_len;
		char *nul = pos + len <= (size_t)got ? memchr(ev->argv_buf + pos, 0, len) : NULL;
		if (!nul)
			break;
		size_t sl = (size_t)(nul - (ev->argv_buf + pos)) + 1;
		memmove(ev->argv_buf + used, ev->argv_buf + pos, sl);
		ev->argv_off[i] = (uint32_t)used;
		used += sl;
		ev->argc = i + 1;
		pos += len;
	}
	/* the rest one at a time */
	for (; i < cnt; i++) {
		if (used + 1 >= sizeof(ev->argv_buf)) {
			ev->truncated = true;
			return;
		}
		ev->argv_off[i] = (uint32_t)used;
		used += read_str(pid, ptrs[i], ev->argv_buf + used, sizeof(ev->argv_buf) - used,
				 &ev->truncated) +
			1;
		ev->argc = i + 1;
	}
	if (ptr_trunc)
		ev->truncated = true;
}

static void read_link(pid_t pid, const char *what, char *buf, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/%s", (int)pid, what);
	ssize_t n = readlink(p, buf, cap - 1);
	buf[n > 0 ? (size_t)n : 0] = 0;
}

static pid_t read_ppid(pid_t pid)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	/* "pid (comm) S ppid …": comm may hold spaces and ')'. */
	char *e = strrchr(buf, ')');
	int ppid = 0;
	if (!e || sscanf(e + 1, " %*c %d", &ppid) != 1)
		return 0;
	return ppid;
}

/* Does the exec path resolve in the caller's view of the filesystem? Resolved
 * below the caller's root (/proc/PID/root, or *root_fd when the caller passed
 * the root all its processes share) with RESOLVE_IN_ROOT, never following
 * magic links, so a sandbox path cannot point the supervisor at its own files.
 * Only ENOENT/ENOTDIR count as missing. An absolute path checked without a
 * shared root leaves the root it opened in *ret_root (the caller keeps it
 * once the notification proved still valid, see below). */
static bool exec_path_missing(pid_t pid, const int *root_fd, int dirfd, const char *path,
			      int *ret_root)
{
	char p[64];
	_cleanup_close_ int opened = -1, fd = -1;
	int base;

	if (!path[0])
		return false; /* AT_EMPTY_PATH: the fd is the program */
	if (path[0] == '/' && root_fd && *root_fd >= 0)
		base = *root_fd;
	else {
		if (path[0] == '/')
			snprintf(p, sizeof(p), "/proc/%d/root", (int)pid);
		else if (dirfd == AT_FDCWD)
			snprintf(p, sizeof(p), "/proc/%d/cwd", (int)pid);
		else
			snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, dirfd);
		base = opened = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (base < 0)
			return false;
	}
	struct open_how how = {.flags = O_PATH | O_CLOEXEC,
			       .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
	fd = (int)syscall(SYS_openat2, base, path[0] == '/' ? path + 1 : path, &how, sizeof(how));
	bool missing = fd < 0 && (errno == ENOENT || errno == ENOTDIR);
	if (path[0] == '/' && root_fd && opened >= 0)
		*ret_root = TAKE_FD(opened);
	return missing;
}

/* ---- network calls (record_net) --------------------------------------------- */

bool moat_seccomp_addr_local(int family, const uint8_t *addr)
{
	static const uint8_t zero[16], mapped[12] = {[10] = 0xff, [11] = 0xff};
	if (family == AF_INET)
		return addr[0] == 127 || memcmp(addr, zero, 4) == 0;
	if (family != AF_INET6)
		return false;
	if (memcmp(addr, zero, 15) == 0 && (addr[15] == 0 || addr[15] == 1))
		return true; /* :: and ::1 */
	if (memcmp(addr, mapped, 12) == 0) /* ::ffff:a.b.c.d */
		return addr[12] == 127 || memcmp(addr + 12, zero, 4) == 0;
	return false;
}

/* Up to len bytes at addr, page by page (a small struct may cross into the
 * next page: two reads at most for what is read here). Returns the bytes read. */
static size_t read_span(pid_t pid, uint64_t addr, void *buf, size_t len)
{
	size_t got = 0;
	while (got < len) {
		ssize_t n = read_mem(pid, addr + got, (uint8_t *)buf + got, len - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

/* The kernel reads at most this much of a socket address. */
#define SOCKADDR_MAX 128

/* Decode a socket address of `len` bytes at addr in the caller's memory. */
static void read_sockaddr(pid_t pid, uint64_t addr, uint64_t len, struct moat_seccomp_net_dest *d)
{
	union {
		struct sockaddr sa;
		struct sockaddr_in in;
		struct sockaddr_in6 in6;
		uint8_t raw[sizeof(struct sockaddr_in6)];
	} u;
	memset(&u, 0, sizeof(u));
	d->has_addr = true;
	if (!addr || len < sizeof(sa_family_t) || len > SOCKADDR_MAX)
		return; /* the kernel refuses it (EFAULT/EINVAL): family stays 0 */
	size_t want = MIN((size_t)len, sizeof(u));
	if (read_span(pid, addr, u.raw, want) != want)
		return;
	d->family = u.sa.sa_family;
	if (d->family == AF_INET && len >= sizeof(u.in)) {
		memcpy(d->addr, &u.in.sin_addr, 4);
		d->port = ntohs(u.in.sin_port);
	} else if (d->family == AF_INET6 && len >= 24) { /* SIN6_LEN_RFC2133 */
		memcpy(d->addr, &u.in6.sin6_addr, 16);
		d->port = ntohs(u.in6.sin6_port);
	} else if (d->family == AF_INET || d->family == AF_INET6) {
		d->family = 0; /* too short: EINVAL, nothing is sent */
		return;
	}
	if (d->family == AF_INET || d->family == AF_INET6)
		d->local = moat_seccomp_addr_local(d->family, d->addr);
}

static void read_payload(pid_t pid, uint64_t buf, uint64_t len, struct moat_seccomp_net_dest *d)
{
	size_t want = (size_t)MIN(len, (uint64_t)sizeof(d->payload));
	d->payload_len = buf ? (uint16_t)read_span(pid, buf, d->payload, want) : 0;
}

/* One struct msghdr of the caller: its address and first buffer. */
static void read_msghdr(pid_t pid, const struct msghdr *m, struct moat_seccomp_net_dest *d)
{
	if (m->msg_name)
		read_sockaddr(pid, (uintptr_t)m->msg_name, m->msg_namelen, d);
	if (m->msg_iov && m->msg_iovlen > 0) {
		struct iovec iov;
		if (read_span(pid, (uintptr_t)m->msg_iov, &iov, sizeof(iov)) == sizeof(iov))
			read_payload(pid, (uintptr_t)iov.iov_base, iov.iov_len, d);
	}
}

/* Could this be a DNS query? A header-only gate (12 bytes: QR clear,
 * QDCOUNT 1, no answers) that keeps AF_UNIX traffic from costing more
 * look-ups; the full parse happens when the event is recorded. */
static bool dns_like(const struct moat_seccomp_net_dest *d)
{
	const uint8_t *p = d->payload;
	return d->payload_len >= 17 && !(p[2] & 0x80) && p[4] == 0 && p[5] == 1 && p[6] == 0 &&
		p[7] == 0 && p[8] == 0 && p[9] == 0;
}

/* Worth recording: an address outside the sandbox, or a DNS query (to a
 * resolver on loopback as well: in --net none no resolver answers). */
static bool dest_interesting(const struct moat_seccomp_net_dest *d)
{
	if (d->has_addr && d->family != AF_INET && d->family != AF_INET6)
		return false; /* AF_UNIX, AF_NETLINK, AF_UNSPEC (disconnect), unreadable */
	if (d->has_addr && !d->local)
		return true;
	return dns_like(d);
}

/* The socket's protocol name, from the socket inode's xattr: no copy of the
 * sandbox's descriptor is ever held by the supervisor. */
static void read_sock_proto(pid_t pid, int fd, char *buf, size_t cap)
{
	char p[64];
	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, fd);
	ssize_t n = getxattr(p, "system.sockprotoname", buf, cap - 1);
	buf[n > 0 ? (size_t)n : 0] = 0;
}

/* The peer of a connected UDP socket of the caller, for a send without an
 * address (glibc's resolver connects, then sendmmsg()s): from the caller's
 * network namespace's /proc/PID/net/udp and udp6, matched by the socket's
 * inode. Read-only: the supervisor never holds the sandbox's descriptor. At
 * most 64 KiB of each table is looked at. */
static void read_udp_peer(pid_t pid, int sock_fd, struct moat_seccomp_net_dest *d)
{
	static char buf[65536];
	char p[64], link[64];
	unsigned long ino = 0;

	snprintf(p, sizeof(p), "/proc/%d/fd/%d", (int)pid, sock_fd);
	ssize_t n = readlink(p, link, sizeof(link) - 1);
	if (n <= 0)
		return;
	link[n] = 0;
	if (sscanf(link, "socket:[%lu]", &ino) != 1)
		return;
	for (int v6 = 0; v6 < 2; v6++) {
		snprintf(p, sizeof(p), "/proc/%d/net/%s", (int)pid, v6 ? "udp6" : "udp");
		_cleanup_close_ int fd = open(p, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			continue;
		size_t len = 0;
		while (len < sizeof(buf) - 1) {
			ssize_t k = read(fd, buf + len, sizeof(buf) - 1 - len);
			if (k <= 0)
				break;
			len += (size_t)k;
		}
		buf[len] = 0;
		for (char *line = strchr(buf, '\n'); line && line[1];
		     line = strchr(line + 1, '\n')) {
			char rem[40];
			unsigned port = 0;
			unsigned long lino = 0;
			if (sscanf(line + 1,
				   " %*u: %*39[0-9A-Fa-f]:%*x %39[0-9A-Fa-f]:%x %*x %*x:%*x %*x:%*x %*x "
				   "%*u %*u %lu",
				   rem, &port, &lino) != 3 ||
			    lino != ino)
				continue;
			size_t words = strlen(rem) / 8;
			if (words != (v6 ? 4u : 1u) || strlen(rem) % 8 || port > 0xffff)
				return;
			for (size_t w = 0; w < words; w++) {
				char h[9];
				memcpy(h, rem + 8 * w, 8);
				h[8] = 0;
				/* the kernel prints each 32-bit word of the address as
				 * stored, with %08X */
				uint32_t v = (uint32_t)strtoul(h, NULL, 16);
				memcpy(d->addr + 4 * w, &v, 4);
			}
			d->family = v6 ? AF_INET6 : AF_INET;
			d->port = (uint16_t)port;
			d->local = moat_seccomp_addr_local(d->family, d->addr);
			d->peer = true;
			return;
		}
	}
}

#ifndef MSG_FASTOPEN
#define MSG_FASTOPEN 0x20000000
#endif

/* Fill ev for a network call. Returns whether anything is worth recording
 * (ev->n_dests > 0 then). Every read is bounded: at most
 * MOAT_SECCOMP_EV_NET_DESTS messages, SOCKADDR_MAX bytes of address and
 * MOAT_SECCOMP_EV_PAYLOAD bytes of data each. */
static bool read_net(pid_t pid, const struct seccomp_data *sd, struct moat_seccomp_event *ev)
{
	const __u64 *a = sd->args;
	struct moat_seccomp_net_dest *d = ev->dests;
	unsigned n = 0;

	memset(ev->dests, 0, sizeof(ev->dests)); /* 2 KiB: each call starts clean */

	ev->type = MOAT_SECCOMP_EVENT_NET;
	ev->sock_fd = (int)a[0];
	if (sd->nr == __NR_connect) {
		snprintf(ev->syscall, sizeof(ev->syscall), "connect");
		read_sockaddr(pid, a[1], a[2], &d[n++]);
	} else if (sd->nr == __NR_sendto) {
		snprintf(ev->syscall, sizeof(ev->syscall), "sendto");
		ev->send_flags = (int)a[3];
		read_sockaddr(pid, a[4], a[5], &d[0]);
		read_payload(pid, a[1], a[2], &d[0]);
		n = 1;
	} else if (sd->nr == __NR_sendmsg) {
		struct msghdr m;
		snprintf(ev->syscall, sizeof(ev->syscall), "sendmsg");
		ev->send_flags = (int)a[2];
		if (read_span(pid, a[1], &m, sizeof(m)) == sizeof(m))
			read_msghdr(pid, &m, &d[n++]);
	} else {
		struct mmsghdr mm[MOAT_SECCOMP_EV_NET_DESTS];
		snprintf(ev->syscall, sizeof(ev->syscall), "sendmmsg");
		ev->send_flags = (int)a[3];
		size_t want = (size_t)MIN(a[2], (uint64_t)ELEMENTSOF(mm)) * sizeof(mm[0]);
		size_t got = read_span(pid, a[1], mm, want);
		for (size_t i = 0; i < got / sizeof(mm[0]); i++)
			read_msghdr(pid, &mm[i].msg_hdr, &d[n++]);
	}
	/* Keep what is worth recording, packed. */
	unsigned kept = 0;
	for (unsigned i = 0; i < n; i++)
		if (dest_interesting(&d[i])) {
			if (kept != i)
				d[kept] = d[i];
			kept++;
		}
	ev->n_dests = kept;
	if (!kept)
		return false;
	read_sock_proto(pid, ev->sock_fd, ev->sock_proto, sizeof(ev->sock_proto));
	/* A connected stream socket ignores the address of a send; an
	 * unconnected one refuses it (EPIPE) unless it is a TCP Fast Open. */
	bool stream = startswith(ev->sock_proto, "TCP") || startswith(ev->sock_proto, "MPTCP");
	if (stream && sd->nr != __NR_connect && !(ev->send_flags & MSG_FASTOPEN))
		for (unsigned i = 0; i < kept; i++)
			if (d[i].has_addr)
				d[i].ignored = true;
	bool udp = startswith(ev->sock_proto, "UDP");
	for (unsigned i = 0; i < kept; i++)
		if (!d[i].has_addr && udp)
			read_udp_peer(pid, ev->sock_fd, &d[i]);
	unsigned live = 0;
	for (unsigned i = 0; i < kept; i++)
		live += !d[i].ignored;
	if (!live)
		ev->n_dests = 0;
	return ev->n_dests > 0;
}

/* The MOAT_SECCOMP_NET_* bit of a syscall number, or -1. */
static int net_bit(int nr)
{
	return nr == __NR_connect     ? MOAT_SECCOMP_NET_CONNECT
		: nr == __NR_sendto   ? MOAT_SECCOMP_NET_SENDTO
		: nr == __NR_sendmsg  ? MOAT_SECCOMP_NET_SENDMSG
		: nr == __NR_sendmmsg ? MOAT_SECCOMP_NET_SENDMMSG
				      : -1;
}

int moat_seccomp_notify_handle_root(int notify_fd, int *root_fd, struct moat_seccomp_event *ret_ev)
{
	return moat_seccomp_notify_handle_net(notify_fd, root_fd, 0, ret_ev);
}

int moat_seccomp_notify_handle_net(int notify_fd, int *root_fd, unsigned net_mask,
				   struct moat_seccomp_event *ret_ev)
{
	struct seccomp_notif req;
	struct seccomp_notif_resp resp;
	struct pollfd pfd = {.fd = notify_fd, .events = POLLIN};

	if (notify_fd < 0 || !ret_ev)
		return -EINVAL;
	/* Do not block in RECV when nothing is pending (the caller's epoll may have
	 * reported a notification whose task was killed in between). */
	int r = poll(&pfd, 1, 0);
	if (r < 0)
		return negerrno();
	if (r == 0)
		return -EAGAIN;
	if (!(pfd.revents & POLLIN))
		return (pfd.revents & POLLHUP) ? -ENOTCONN : -EIO;

	memset(&req, 0, sizeof(req)); /* the kernel requires a zeroed struct */
	if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_RECV, &req) < 0)
		return errno == ENOENT ? -ENOENT : negerrno();

	struct moat_seccomp_event *ev = ret_ev;
	/* Up to the payload buffers (NET events set what they use). */
	memset(ev, 0, offsetof(struct moat_seccomp_event, dests));
	ev->exe[0] = ev->cwd[0] = ev->path[0] = 0;
	ev->dirfd = 0;
	ev->exec_flags = 0;
	ev->argc = 0;
	ev->truncated = ev->missing = false;
	ev->argv_buf[0] = 0;
	ev->pid = (pid_t)req.pid;
	ev->nr = req.data.nr;
	memcpy(ev->args, req.data.args, sizeof(ev->args));

	resp = (struct seccomp_notif_resp){.id = req.id};
	int nb = net_bit(req.data.nr);
	if (nb >= 0 && (net_mask & (1u << nb))) {
		/* Only read, never decided here: the call continues and the kernel
		 * answers it exactly as without the listener. */
		if (read_net(ev->pid, &req.data, ev)) {
			ev->ppid = read_ppid(ev->pid);
			read_link(ev->pid, "exe", ev->exe, sizeof(ev->exe));
			if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0)
				return -ENOENT;
		}
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	} else if (req.data.nr == __NR_execve || req.data.nr == __NR_execveat) {
		bool at = req.data.nr == __NR_execveat;
		_cleanup_close_ int new_root = -1;
		ev->type = MOAT_SECCOMP_EVENT_EXEC;
		snprintf(ev->syscall, sizeof(ev->syscall), "%s", at ? "execveat" : "execve");
		ev->dirfd = at ? (int)req.data.args[0] : AT_FDCWD;
		ev->exec_flags = at ? (int)req.data.args[4] : 0;
		read_exec_args(ev->pid, req.data.args[at ? 1 : 0], req.data.args[at ? 2 : 1], ev);
		ev->missing = exec_path_missing(ev->pid, root_fd, ev->dirfd, ev->path, &new_root);
		/* A step of a PATH search is not recorded: nothing more to read. */
		if (!ev->missing) {
			ev->ppid = read_ppid(ev->pid);
			read_link(ev->pid, "cwd", ev->cwd, sizeof(ev->cwd));
		}
		/* What we read belongs to the task still blocked in this call, not to
		 * a process that reused its pid (also the root we opened for it). */
		if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_ID_VALID, &req.id) < 0)
			return -ENOENT;
		if (new_root >= 0 && root_fd && *root_fd < 0)
			*root_fd = TAKE_FD(new_root);
		resp.flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
	} else {
		char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, req.data.nr);
		snprintf(ev->syscall, sizeof(ev->syscall), "%s", name ? name : "?");
		free(name);
		ev->ppid = read_ppid(ev->pid);
		read_link(ev->pid, "exe", ev->exe, sizeof(ev->exe));
		read_link(ev->pid, "cwd", ev->cwd, sizeof(ev->cwd));
		/* Every notifying denial is EPERM (ENOSYS rules never notify; a unit
		 * test checks the table). */
		ev->type = MOAT_SECCOMP_EVENT_DENIED;
		ev->err = EPERM;
		resp.error = -EPERM;
	}
	if (ioctl(notify_fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) < 0 && errno != ENOENT)
		return negerrno();
	/* ENOENT: the caller died or was interrupted meanwhile; the attempt happened
	 * and stays recorded. */
	return 0;
}

int moat_seccomp_notify_handle(int notify_fd, struct moat_seccomp_event *ret_ev)
{
	return moat_seccomp_notify_handle_root(notify_fd, NULL, ret_ev);
}

/* ---- doctor ---------------------------------------------------------------- */

static bool action_avail(uint32_t action)
{
	return syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) == 0;
}

int moat_seccomp_probe(struct moat_seccomp_probe *ret)
{
	if (!ret)
		return -EINVAL;
	*ret = (struct moat_seccomp_probe){0};
	ret->filter = action_avail(SECCOMP_RET_ERRNO);
	ret->kill_process = action_avail(SECCOMP_RET_KILL_PROCESS);
	ret->notify = action_avail(SECCOMP_RET_USER_NOTIF);
	struct seccomp_notif_sizes sz;
	if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) == 0)
		ret->notif_sizes_ok = sz.seccomp_notif == sizeof(struct seccomp_notif) &&
			sz.seccomp_notif_resp == sizeof(struct seccomp_notif_resp);
	ret->api_level = seccomp_api_get();
	const struct scmp_version *v = seccomp_version();
	if (v) {
		ret->lib_major = v->major;
		ret->lib_minor = v->minor;
		ret->lib_micro = v->micro;
	}
	ret->n_rules_total = ELEMENTSOF(rules);
	for (size_t i = 0; i < ELEMENTSOF(rules); i++)
		if (rule_nr(&rules[i]) >= 0)
			ret->n_rules++;
	return 0;
}
