/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The arguments of a denied call that say what it tried (seccomp.h,
 * moat_seccomp_describe_args): pure decoding for the audit record. */
#include "kernel/seccomp.h"

#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/socket.h>

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
#if defined(__s390__) || defined(__s390x__)
#define CLONE_FLAGS_ARG 1 /* s390 swaps clone's first two arguments */
#else
#define CLONE_FLAGS_ARG 0
#endif

struct named {
	uint64_t v;
	const char *name;
};

static const char *lookup(const struct named *t, size_t n, uint64_t v)
{
	for (size_t i = 0; i < n; i++)
		if (t[i].v == v)
			return t[i].name;
	return NULL;
}

/* "A|B|0x…" of the bits of v named in t, appended at buf + *off (cap bytes
 * in all); NULL when v is 0. */
static const char *flag_names(const struct named *t, size_t n, uint64_t v, char *buf, size_t cap,
			      size_t *off)
{
	if (!v || *off >= cap)
		return NULL;
	char *start = buf + *off;
	size_t o = *off;
	uint64_t rest = v;
	start[0] = 0;
	for (size_t i = 0; i < n && o < cap; i++)
		if (t[i].v && (v & t[i].v) == t[i].v) {
			int w = snprintf(buf + o, cap - o, "%s%s", o > *off ? "|" : "", t[i].name);
			o += w > 0 ? (size_t)w : 0;
			rest &= ~t[i].v;
		}
	if (rest && o < cap) {
		int w = snprintf(buf + o, cap - o, "%s0x%llx", o > *off ? "|" : "",
				 (unsigned long long)rest);
		o += w > 0 ? (size_t)w : 0;
	}
	*off = MIN(o + 1, cap);
	return start;
}

#define N(x) \
	{ \
		(uint64_t)(x), #x \
	}
static const struct named clone_flags[] = {
	N(CLONE_NEWNS),
	N(CLONE_NEWCGROUP),
	N(CLONE_NEWUTS),
	N(CLONE_NEWIPC),
	N(CLONE_NEWUSER),
	N(CLONE_NEWPID),
	N(CLONE_NEWNET),
	{0x80, "CLONE_NEWTIME"},
	N(CLONE_VM),
	N(CLONE_FS),
	N(CLONE_FILES),
	N(CLONE_SIGHAND),
	N(CLONE_THREAD),
	N(CLONE_SYSVSEM),
	N(CLONE_SETTLS),
	N(CLONE_PARENT_SETTID),
	N(CLONE_CHILD_CLEARTID),
	N(CLONE_CHILD_SETTID),
	N(CLONE_VFORK),
	N(CLONE_PARENT),
	N(CLONE_PTRACE),
	N(CLONE_UNTRACED),
	N(CLONE_IO),
	N(CLONE_PIDFD),
	N(SIGCHLD),
};
static const struct named families[] = {
	N(AF_UNSPEC),	    N(AF_UNIX),	       N(AF_INET),	 N(AF_INET6),
	N(AF_NETLINK),	    N(AF_PACKET),      {40, "AF_VSOCK"}, {38, "AF_ALG"},
	{30, "AF_TIPC"},    {21, "AF_RDS"},    {15, "AF_KEY"},	 {31, "AF_BLUETOOTH"},
	{29, "AF_CAN"},	    {44, "AF_XDP"},    {4, "AF_IPX"},	 {5, "AF_APPLETALK"},
	{3, "AF_AX25"},	    {9, "AF_X25"},     {24, "AF_PPPOX"}, {36, "AF_IEEE802154"},
	{42, "AF_QIPCRTR"}, {45, "AF_MCTP"},   {8, "AF_ATMPVC"}, {20, "AF_ATMSVC"},
	{35, "AF_PHONET"},  {41, "AF_KCM"},    {43, "AF_SMC"},	 {37, "AF_CAIF"},
	{39, "AF_NFC"},	    {19, "AF_ECONET"}, {18, "AF_ASH"},
};
static const struct named sock_types[] = {
	N(SOCK_STREAM),	   N(SOCK_DGRAM), N(SOCK_RAW),	  N(SOCK_RDM),
	N(SOCK_SEQPACKET), N(SOCK_DCCP),  N(SOCK_PACKET),
};
static const struct named sock_type_flags[] = {N(SOCK_NONBLOCK), N(SOCK_CLOEXEC)};
static const struct named ioctls[] = {
	N(TIOCSTI),
	N(TIOCLINUX),
	N(TIOCCONS),
	N(TIOCSETD),
};
static const struct named ns_types[] = {
	N(CLONE_NEWNS),	  N(CLONE_NEWCGROUP), N(CLONE_NEWUTS), N(CLONE_NEWIPC),
	N(CLONE_NEWUSER), N(CLONE_NEWPID),    N(CLONE_NEWNET), {0x80, "CLONE_NEWTIME"},
};
static const struct named ptrace_reqs[] = {
	{0, "PTRACE_TRACEME"},	{1, "PTRACE_PEEKTEXT"},	       {2, "PTRACE_PEEKDATA"},
	{4, "PTRACE_POKETEXT"}, {5, "PTRACE_POKEDATA"},	       {16, "PTRACE_ATTACH"},
	{17, "PTRACE_DETACH"},	{0x4206, "PTRACE_SEIZE"},      {0x4207, "PTRACE_INTERRUPT"},
	{12, "PTRACE_GETREGS"}, {13, "PTRACE_SETREGS"},	       {24, "PTRACE_SYSCALL"},
	{7, "PTRACE_CONT"},	{0x4200, "PTRACE_SETOPTIONS"},
};
static const struct named mount_flags[] = {
	N(MS_RDONLY), N(MS_NOSUID), N(MS_NODEV),   N(MS_NOEXEC), N(MS_REMOUNT), N(MS_BIND),
	N(MS_MOVE),   N(MS_REC),    N(MS_PRIVATE), N(MS_SLAVE),	 N(MS_SHARED),	N(MS_UNBINDABLE),
};
static const struct named umount_flags[] = {N(MNT_FORCE), N(MNT_DETACH), N(MNT_EXPIRE),
					    N(UMOUNT_NOFOLLOW)};
static const struct named personas[] = {
	N(ADDR_NO_RANDOMIZE), N(READ_IMPLIES_EXEC), N(ADDR_COMPAT_LAYOUT), N(MMAP_PAGE_ZERO),
	N(ADDR_LIMIT_32BIT),  N(ADDR_LIMIT_3GB),    N(SHORT_INODE),	   N(WHOLE_SECONDS),
	N(STICKY_TIMEOUTS),   N(UNAME26),	    N(FDPIC_FUNCPTRS),
};
#undef N

unsigned moat_seccomp_describe_args(const char *sc, const uint64_t a[6],
				    struct moat_seccomp_arg out[MOAT_SECCOMP_MAX_DESCRIBED],
				    char buf[MOAT_SECCOMP_DESCRIBE_BUF])
{
	const size_t cap = MOAT_SECCOMP_DESCRIBE_BUF;
	size_t off = 0;
	unsigned n = 0;

	buf[0] = 0;
#define ADD(k, v, nm) \
	out[n++] = (struct moat_seccomp_arg) \
	{ \
		.key = (k), .value = (v), .name = (nm) \
	}
	if (!sc)
		return 0;
	if (streq(sc, "ioctl")) {
		uint64_t req = a[1] & 0xffffffffULL; /* the kernel reads an unsigned int */
		ADD("request", req, lookup(ioctls, ELEMENTSOF(ioctls), req));
	} else if (streq(sc, "socket") || streq(sc, "socketpair")) {
		uint64_t type = a[1] & 0xf, tflags = a[1] & ~0xfULL;
		ADD("family", a[0], lookup(families, ELEMENTSOF(families), a[0]));
		const char *tn = lookup(sock_types, ELEMENTSOF(sock_types), type);
		const char *fl = flag_names(sock_type_flags, ELEMENTSOF(sock_type_flags), tflags,
					    buf, cap, &off);
		if (fl && tn && off < cap) {
			/* "SOCK_DGRAM|SOCK_CLOEXEC" */
			char tmp[64];
			snprintf(tmp, sizeof(tmp), "%s|%s", tn, fl);
			size_t l = strlen(tmp) + 1;
			char *dst = buf + off;
			if (off + l <= cap) {
				memcpy(dst, tmp, l);
				off += l;
				tn = dst;
			}
		}
		ADD("sock_type", a[1], tn);
		ADD("protocol", a[2], NULL);
	} else if (streq(sc, "clone")) {
		uint64_t f = a[CLONE_FLAGS_ARG];
		ADD("flags", f,
		    flag_names(clone_flags, ELEMENTSOF(clone_flags), f, buf, cap, &off));
	} else if (streq(sc, "unshare")) {
		ADD("flags", a[0],
		    flag_names(clone_flags, ELEMENTSOF(clone_flags), a[0], buf, cap, &off));
	} else if (streq(sc, "setns")) {
		ADD("fd", a[0], NULL);
		ADD("nstype", a[1], a[1] ? lookup(ns_types, ELEMENTSOF(ns_types), a[1]) : "any");
	} else if (streq(sc, "prctl")) {
		ADD("option", a[0], NULL);
	} else if (streq(sc, "ptrace")) {
		ADD("request", a[0], lookup(ptrace_reqs, ELEMENTSOF(ptrace_reqs), a[0]));
		ADD("target_pid", a[1], NULL);
	} else if (streq(sc, "personality")) {
		ADD("persona", a[0],
		    a[0] == 0xffffffffULL
			    ? "query"
			    : flag_names(personas, ELEMENTSOF(personas), a[0], buf, cap, &off));
	} else if (streq(sc, "mount")) {
		ADD("flags", a[3],
		    flag_names(mount_flags, ELEMENTSOF(mount_flags), a[3], buf, cap, &off));
	} else if (streq(sc, "umount2")) {
		ADD("flags", a[1],
		    flag_names(umount_flags, ELEMENTSOF(umount_flags), a[1], buf, cap, &off));
	} else if (streq(sc, "chmod") || streq(sc, "fchmod") || streq(sc, "creat")) {
		ADD("mode", a[1], NULL);
	} else if (streq(sc, "fchmodat") || streq(sc, "fchmodat2") || streq(sc, "mknod") ||
		   streq(sc, "open")) {
		ADD("mode", a[2], NULL);
		if (streq(sc, "open"))
			ADD("flags", a[1], NULL);
	} else if (streq(sc, "openat") || streq(sc, "mknodat")) {
		ADD("mode", a[streq(sc, "openat") ? 3 : 2], NULL);
		if (streq(sc, "openat"))
			ADD("flags", a[2], NULL);
	} else if (streq(sc, "keyctl")) {
		ADD("operation", a[0], NULL);
	} else if (streq(sc, "bpf")) {
		ADD("cmd", a[0], NULL);
	} else if (streq(sc, "kcmp")) {
		ADD("pid1", a[0], NULL);
		ADD("pid2", a[1], NULL);
		ADD("kcmp_type", a[2], NULL);
	} else if (streq(sc, "process_vm_readv") || streq(sc, "process_vm_writev") ||
		   streq(sc, "pidfd_getfd") || streq(sc, "process_madvise")) {
		ADD(streq(sc, "process_vm_readv") || streq(sc, "process_vm_writev") ? "target_pid"
										    : "pidfd",
		    a[0], NULL);
	}
#undef ADD
	return n;
}
