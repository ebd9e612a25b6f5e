/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The seccomp layer, applied to the (forked) test process itself. The
 * try-syscall technique: probes pass bad fds/pointers, so a call the filter
 * lets through fails harmlessly in the kernel (EBADF/EFAULT/EINVAL) while a
 * blocked one gets exactly EPERM or ENOSYS. Controls run unfiltered first;
 * the notification sweep proves every recorded rule is caught by the filter
 * itself, not by a kernel permission check that happens to say EPERM too.
 */
#include "harness/tap.h"
#include "kernel/seccomp.h"
#include "shared/macro.h"

#include <fcntl.h>
#include <linux/filter.h>
#include <linux/keyctl.h>
#include <linux/netlink.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sys/un.h>
#include <net/if.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef IPPROTO_L2TP
#define IPPROTO_L2TP 115
#endif
#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

#define BAD ((long)1) /* an unmapped address */
#if defined(__s390__) || defined(__s390x__)
#define CLONE_ARG_TEST 1
#else
#define CLONE_ARG_TEST 0
#endif

static void load(const struct moat_seccomp_opts *o)
{
	scmp_filter_ctx ctx = NULL;
	ASSERT_EQ(moat_seccomp_build(o, &ctx), 0);
	ASSERT_EQ(moat_seccomp_load(ctx, false, NULL), 0);
	seccomp_release(ctx);
}

static void load_default(void)
{
	struct moat_seccomp_opts o = {0};
	load(&o);
}

static const char *status_field(const char *field, char *buf, size_t len)
{
	_cleanup_fclose_ FILE *f = fopen("/proc/thread-self/status", "re");
	char line[256];
	ASSERT_TRUE(f != NULL);
	while (fgets(line, sizeof(line), f))
		if (startswith(line, field)) {
			snprintf(buf, len, "%s", line + strlen(field));
			buf[strcspn(buf, "\n")] = 0;
			return buf;
		}
	return "";
}

TEST(seccomp_table_is_consistent)
{
	size_t n = 0;
	const struct moat_seccomp_rule *r = moat_seccomp_rules(&n);
	ASSERT_TRUE(n > 50);
	for (size_t i = 0; i < n; i++) {
		ASSERT_TRUE(r[i].name && r[i].label && r[i].attack && r[i].ref);
		/* The notification handler answers every recorded denial with EPERM. */
		if (r[i].notify)
			ASSERT_EQ(r[i].err, EPERM);
		/* ENOSYS marks feature probes: never recorded. */
		if (r[i].err == ENOSYS)
			ASSERT_TRUE(!r[i].notify);
		ASSERT_TRUE(r[i].err == EPERM || r[i].err == ENOSYS);
#if defined(__x86_64__)
		/* Every rule can be expressed on x86_64, the optional ones included. */
		if (moat_seccomp_validate_name(r[i].name) != 0)
			moat_tap_fail(__FILE__, __LINE__, "unknown syscall %s", r[i].name);
#endif
		for (size_t j = 0; j < i; j++)
			if (streq(r[i].label, r[j].label))
				moat_tap_fail(__FILE__, __LINE__, "duplicate label %s", r[i].label);
	}
}

/* docs/SECCOMP.md must list every rule (by its label, in backquotes). */
TEST(seccomp_doc_lists_every_rule)
{
	char path[512], *doc;
	size_t n = 0;
	snprintf(path, sizeof(path), "%s/../docs/SECCOMP.md", moat_tap_dir());
	_cleanup_fclose_ FILE *f = fopen(path, "re");
	if (!f)
		moat_tap_fail(__FILE__, __LINE__, "cannot open %s: %m", path);
	doc = calloc(1, 1 << 20);
	ASSERT_TRUE(doc != NULL);
	ASSERT_TRUE(fread(doc, 1, (1 << 20) - 1, f) > 0);
	const struct moat_seccomp_rule *r = moat_seccomp_rules(&n);
	for (size_t i = 0; i < n; i++) {
		char key[128];
		snprintf(key, sizeof(key), "`%s`", r[i].label);
		ASSERT_CONTAINS(doc, key);
	}
	free(doc);
}

TEST(seccomp_validate_name)
{
	ASSERT_EQ(moat_seccomp_validate_name("ptrace"), 0);
	ASSERT_EQ(moat_seccomp_validate_name("execve"), 0);
	ASSERT_EQ(moat_seccomp_validate_name("open_tree_attr"), 0); /* by fallback number */
	ASSERT_EQ(moat_seccomp_validate_name("no_such_call"), -EINVAL);
	ASSERT_EQ(moat_seccomp_validate_name(""), -EINVAL);
	ASSERT_EQ(moat_seccomp_validate_name(NULL), -EINVAL);
#if defined(__x86_64__)
	ASSERT_EQ(moat_seccomp_validate_name("socketcall"), -EINVAL); /* i386 only */
#endif
}

TEST(seccomp_build_rejects_bad_names)
{
	scmp_filter_ctx ctx = NULL;
	const char *bad[] = {"no_such_call"};
	const char *pt[] = {"ptrace"};
	struct moat_seccomp_opts o = {.allow = bad, .n_allow = 1};
	ASSERT_EQ(moat_seccomp_build(&o, &ctx), -EINVAL);
	o = (struct moat_seccomp_opts){.deny = bad, .n_deny = 1};
	ASSERT_EQ(moat_seccomp_build(&o, &ctx), -EINVAL);
	o = (struct moat_seccomp_opts){.allow = pt, .n_allow = 1, .deny = pt, .n_deny = 1};
	ASSERT_EQ(moat_seccomp_build(&o, &ctx), -EINVAL);
	ASSERT_TRUE(ctx == NULL);
}

/* Controls: without the filter these probes reach the kernel, so the errnos
 * asserted below come from the filter. */
TEST(seccomp_controls_unfiltered)
{
	ASSERT_ERRNO(syscall(SYS_clone3, BAD, 88), EFAULT);
	/* EFAULT, or EPERM with kernel.io_uring_disabled: never ENOSYS. */
	errno = 0;
	ASSERT_TRUE(syscall(SYS_io_uring_setup, 1, BAD) == -1 && errno != ENOSYS);
	/* EFAULT as root, EPERM (capability check) otherwise: never ENOSYS. */
	errno = 0;
	ASSERT_TRUE(syscall(SYS_fsopen, BAD, 0) == -1 && errno != ENOSYS);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, (1ULL << 32) | TIOCSTI, BAD), EBADF);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCLINUX, BAD), EBADF);
	ASSERT_ERRNO(syscall(SYS_ptrace, PTRACE_PEEKDATA, 0x7ffffff0, 0, 0), ESRCH);
	ASSERT_ERRNO(syscall(SYS_keyctl, -1, 0, 0, 0, 0), EOPNOTSUPP);
	int p = personality(0xffffffff);
	ASSERT_TRUE(personality(ADDR_NO_RANDOMIZE) >= 0);
	ASSERT_EQ(personality(0xffffffff), ADDR_NO_RANDOMIZE);
	personality((unsigned long)p);
}

TEST(seccomp_blocks_namespaces)
{
	static const unsigned long ns[] = {CLONE_NEWNS,	 CLONE_NEWCGROUP, CLONE_NEWUTS,
					   CLONE_NEWIPC, CLONE_NEWUSER,	  CLONE_NEWPID,
					   CLONE_NEWNET};
	load_default();
	ASSERT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	ASSERT_ERRNO(unshare(0x80 /* CLONE_NEWTIME */), EPERM);
	ASSERT_ERRNO(unshare(CLONE_FILES), EPERM);
	ASSERT_ERRNO(syscall(SYS_setns, -1, 0), EPERM);
	for (size_t i = 0; i < ELEMENTSOF(ns); i++)
		ASSERT_ERRNO(syscall(SYS_clone, ns[i] | SIGCHLD, 0, 0, 0, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_clone, CLONE_NEWUSER | CLONE_NEWNET | SIGCHLD, 0, 0, 0, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_clone3, BAD, 88), ENOSYS);
}

TEST(seccomp_blocks_kernel_surface)
{
	load_default();
	ASSERT_ERRNO(mount((char *)BAD, (char *)BAD, (char *)BAD, 0, NULL), EPERM);
	ASSERT_ERRNO(umount2((char *)BAD, MNT_DETACH), EPERM);
	ASSERT_ERRNO(syscall(SYS_fsopen, BAD, 0), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_open_tree, -1, BAD, 0), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_mount_setattr, -1, BAD, 0, BAD, 32), ENOSYS);
	ASSERT_ERRNO(syscall(467 /* open_tree_attr */, -1, BAD, 0, BAD, 32), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_pivot_root, BAD, BAD), EPERM);
	ASSERT_ERRNO(chroot((char *)BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_bpf, 5 /* BPF_PROG_LOAD */, BAD, 128), EPERM);
	ASSERT_ERRNO(syscall(SYS_perf_event_open, BAD, 0, -1, -1, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_userfaultfd, O_CLOEXEC), EPERM);
	ASSERT_ERRNO(syscall(SYS_io_uring_setup, 1, BAD), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_io_uring_enter, -1, 0, 0, 0, NULL, 0), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_io_uring_register, -1, 0, NULL, 0), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_keyctl, KEYCTL_DESCRIBE, KEY_SPEC_USER_KEYRING, BAD, 256, 0),
		     EPERM);
	ASSERT_ERRNO(syscall(SYS_add_key, BAD, BAD, BAD, 1, KEY_SPEC_SESSION_KEYRING), EPERM);
	ASSERT_ERRNO(syscall(SYS_request_key, BAD, BAD, NULL, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_ptrace, PTRACE_ATTACH, 1, 0, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_process_vm_readv, 1, BAD, 1, BAD, 1, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_kcmp, 1, getpid(), 0, 0, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_open_by_handle_at, -1, BAD, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_name_to_handle_at, -1, BAD, BAD, BAD, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_finit_module, -1, BAD, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_kexec_load, 0, 0, NULL, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_reboot, 0, 0, 0, NULL), EPERM);
	ASSERT_ERRNO(syscall(SYS_acct, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_settimeofday, BAD, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_syslog, 3 /* READ_ALL */, BAD, 16), EPERM);
}

TEST(seccomp_blocks_tty_ioctls_whatever_upper_bits)
{
	load_default();
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCSTI, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, (1ULL << 32) | TIOCSTI, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, 0xffffffff00000000ULL | TIOCSTI, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCLINUX, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, (1ULL << 40) | TIOCLINUX, BAD), EPERM);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCSETD, BAD), EPERM);
	/* Other ioctls reach the kernel. */
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCGWINSZ, BAD), EBADF);
}

TEST(seccomp_socket_families)
{
	load_default();
	ASSERT_ERRNO(socket(AF_PACKET, SOCK_RAW, 0), EPERM);
	ASSERT_ERRNO(socket(AF_VSOCK, SOCK_STREAM, 0), EPERM);
	ASSERT_ERRNO(socket(AF_ALG, SOCK_SEQPACKET, 0), EPERM);
	ASSERT_ERRNO(socket(AF_KEY, SOCK_RAW, 2), EPERM);
	ASSERT_ERRNO(socket(AF_BLUETOOTH, SOCK_STREAM, 0), EPERM);
	ASSERT_ERRNO(socket(0, SOCK_STREAM, 0), EPERM);
	/* Upper bits the kernel would truncate away do not smuggle a family in. */
	ASSERT_ERRNO(syscall(SYS_socket, (1ULL << 32) | AF_PACKET, SOCK_RAW, 0), EPERM);
	ASSERT_ERRNO(socket(AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER), EPERM);
	ASSERT_ERRNO(socket(AF_NETLINK, SOCK_RAW, NETLINK_AUDIT), EPERM);
	ASSERT_ERRNO(socket(AF_INET, SOCK_DCCP, IPPROTO_DCCP), EPERM);
	ASSERT_ERRNO(socket(AF_INET6, SOCK_DCCP | SOCK_CLOEXEC, 0), EPERM);
	ASSERT_ERRNO(socket(AF_INET, SOCK_STREAM, IPPROTO_SCTP), EPERM);
	ASSERT_ERRNO(syscall(SYS_socket, AF_INET6, SOCK_SEQPACKET, (1ULL << 32) | IPPROTO_SCTP),
		     EPERM);
	int sv[2];
	ASSERT_ERRNO(socketpair(AF_INET, SOCK_STREAM, 0, sv), EPERM);
	/* The allowed ones work. */
	int fd;
	ASSERT_TRUE((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	close(fd);
	ASSERT_TRUE((fd = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0)) >= 0);
	close(fd);
	ASSERT_TRUE((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)) >= 0);
	close(fd);
	ASSERT_TRUE((fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE)) >= 0);
	close(fd);
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

TEST(seccomp_personality)
{
	load_default();
	ASSERT_ERRNO(personality(ADDR_NO_RANDOMIZE), EPERM);
	ASSERT_ERRNO(personality(READ_IMPLIES_EXEC), EPERM);
	ASSERT_ERRNO(personality(PER_BSD), EPERM);
	ASSERT_ERRNO(personality(PER_LINUX32 | ADDR_NO_RANDOMIZE), EPERM);
	ASSERT_ERRNO(personality(0xfffffffe), EPERM);
	ASSERT_ERRNO(personality(1), EPERM);
	ASSERT_ERRNO(syscall(SYS_personality, (1ULL << 32) | ADDR_NO_RANDOMIZE), EPERM);
	ASSERT_ERRNO(syscall(SYS_personality, 1ULL << 32), EPERM);
	/* Harmless values: query, PER_LINUX32, UNAME26, back to PER_LINUX. */
	ASSERT_EQ(personality(0xffffffff), PER_LINUX);
	ASSERT_EQ(personality(PER_LINUX32), PER_LINUX);
	ASSERT_EQ(personality(UNAME26 | PER_LINUX32), PER_LINUX32);
	ASSERT_EQ(personality(UNAME26), UNAME26 | PER_LINUX32);
	ASSERT_EQ(personality(PER_LINUX), UNAME26);
	ASSERT_EQ(personality(0xffffffff), PER_LINUX);
}

static void *thread_status(void *arg)
{
	char buf[64];
	pthread_barrier_t *b = arg;
	pthread_barrier_wait(b); /* filter loads now */
	pthread_barrier_wait(b);
	return strdup(status_field("Seccomp:", buf, sizeof(buf)));
}

/* RT-021: every thread is filtered (TSYNC), NNP is set, nothing undoes it. */
TEST(seccomp_all_threads_and_no_undo)
{
	pthread_t t;
	pthread_barrier_t b;
	char buf[64];
	void *res = NULL;

	ASSERT_EQ(pthread_barrier_init(&b, NULL, 2), 0);
	ASSERT_EQ(pthread_create(&t, NULL, thread_status, &b), 0);
	pthread_barrier_wait(&b);
	load_default();
	pthread_barrier_wait(&b);
	ASSERT_EQ(pthread_join(t, &res), 0);
	ASSERT_STREQ(res, "\t2");
	free(res);
	ASSERT_STREQ(status_field("Seccomp:", buf, sizeof(buf)), "\t2");
	ASSERT_STREQ(status_field("NoNewPrivs:", buf, sizeof(buf)), "\t1");
	ASSERT_ERRNO(prctl(PR_SET_NO_NEW_PRIVS, 0, 0, 0, 0), EINVAL);
	ASSERT_ERRNO(prctl(PR_SET_SECCOMP, SECCOMP_MODE_DISABLED, 0, 0, 0), EINVAL);
	/* A stacked permissive filter cannot loosen the first one. */
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	ASSERT_TRUE(ctx != NULL);
	ASSERT_EQ(seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EXDEV), SCMP_SYS(getppid), 0), 0);
	ASSERT_EQ(seccomp_load(ctx), 0);
	seccomp_release(ctx);
	ASSERT_ERRNO(syscall(SYS_getppid), EXDEV);
	ASSERT_ERRNO(mount((char *)BAD, (char *)BAD, (char *)BAD, 0, NULL), EPERM);
}

TEST(seccomp_allowed_calls_still_work)
{
	char buf[256];
	load_default();
	ASSERT_TRUE(getpid() > 0);
	int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(read(fd, buf, sizeof(buf)) > 0);
	close(fd);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0)
		_exit(42);
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	ASSERT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 42);
	/* An ioctl that is not denied reaches the kernel. */
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCGWINSZ, BAD), EBADF);
	ASSERT_ERRNO(syscall(SYS_clone3, BAD, 88), ENOSYS);
	/* posix_spawn (vfork-style clone) and exec still work. */
	ASSERT_EQ(system("exit 7") >> 8, 7);
}

TEST(seccomp_allow_and_deny_lists)
{
	const char *allow[] = {"ptrace"}, *deny[] = {"uname", "sethostname"};
	struct moat_seccomp_opts o = {.allow = allow, .n_allow = 1, .deny = deny, .n_deny = 2};
	ASSERT_ERRNO(syscall(SYS_uname, BAD), EFAULT);
	load(&o);
	ASSERT_ERRNO(syscall(SYS_ptrace, PTRACE_PEEKDATA, 0x7ffffff0, 0, 0), ESRCH);
	ASSERT_ERRNO(syscall(SYS_process_vm_readv, 1, BAD, 1, BAD, 1, 0), EPERM);
	ASSERT_ERRNO(syscall(SYS_uname, BAD), EPERM);
}

/* Other syscall ABIs kill the process: x32 numbers and i386 int 0x80. */
static int run_killed(void (*fn)(void), bool filter)
{
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		struct rlimit rl = {0, 0};
		setrlimit(RLIMIT_CORE, &rl);
		if (filter)
			load_default();
		fn();
		_exit(0);
	}
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	return WIFSIGNALED(st) ? WTERMSIG(st) : -WEXITSTATUS(st);
}

static void x32_getpid(void)
{
	long r = syscall(0x40000000 | SYS_getpid);
	_exit(r > 0 ? 0 : 3);
}

#if defined(__x86_64__)
static void i386_getpid(void)
{
	long r = 20; /* i386 __NR_getpid */
	__asm__ volatile("int $0x80" : "+a"(r) : : "memory");
	_exit(r > 0 ? 0 : 4);
}
#endif

TEST(seccomp_foreign_abis_killed)
{
	ASSERT_EQ(run_killed(x32_getpid, true), SIGSYS);
#if defined(__x86_64__)
	int c = run_killed(i386_getpid, false);
	if (c != 0)
		SKIP("int 0x80 does not work here even unfiltered (signal/exit %d): no IA32 emulation",
		     c);
	ASSERT_EQ(run_killed(i386_getpid, true), SIGSYS);
#endif
}

TEST(seccomp_probe)
{
	struct moat_seccomp_probe p;
	ASSERT_EQ(moat_seccomp_probe(&p), 0);
	ASSERT_TRUE(p.filter);
	ASSERT_TRUE(p.kill_process);
	ASSERT_TRUE(p.notify);
	ASSERT_TRUE(p.notif_sizes_ok);
	ASSERT_TRUE(p.api_level >= 5);
	ASSERT_EQ(p.lib_major, 2);
#if defined(__x86_64__)
	ASSERT_EQ(p.n_rules, p.n_rules_total);
#endif
}

/* ---- notification ---------------------------------------------------------- */

static void send_fd(int sock, int fd)
{
	char c = 'F';
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	cm->cmsg_level = SOL_SOCKET;
	cm->cmsg_type = SCM_RIGHTS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &fd, sizeof(int));
	if (sendmsg(sock, &m, 0) != 1)
		_exit(90);
}

static int recv_fd(int sock)
{
	char c;
	struct iovec iov = {&c, 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} u;
	struct msghdr m = {.msg_iov = &iov,
			   .msg_iovlen = 1,
			   .msg_control = u.buf,
			   .msg_controllen = sizeof(u.buf)};
	int fd = -1;
	if (recvmsg(sock, &m, MSG_CMSG_CLOEXEC) != 1)
		return -1;
	struct cmsghdr *cm = CMSG_FIRSTHDR(&m);
	if (cm && cm->cmsg_type == SCM_RIGHTS)
		memcpy(&fd, CMSG_DATA(cm), sizeof(int));
	return fd;
}

/* Start a child that installs the filter with notification, hands the
 * listener over and runs fn. Returns the child pid and the listener. */
static bool use_install; /* load through moat_seccomp_export/install */
static bool use_record_net; /* the --net none network recording rules */
static bool use_own_netns; /* the child first enters a new user+network namespace */
static const char *const *use_deny; /* a --deny-syscall list (NULL-terminated) */
static unsigned use_net_mask; /* what next_event treats as network records */

static pid_t start_notified(bool record_exec, void (*fn)(void), int *ret_fd)
{
	struct moat_seccomp_prog prog = {0};
	if (use_install) {
		struct moat_seccomp_opts o = {.notify = true, .record_exec = record_exec};
		scmp_filter_ctx ctx = NULL;
		ASSERT_EQ(moat_seccomp_build(&o, &ctx), 0);
		ASSERT_EQ(moat_seccomp_export(ctx, true, &prog), 0);
		seccomp_release(ctx);
		ASSERT_TRUE(prog.len > 10);
	}
	int sv[2];
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		struct moat_seccomp_opts o = {
			.notify = true, .record_exec = record_exec, .record_net = use_record_net};
		scmp_filter_ctx ctx = NULL;
		int fd = -1;
		while (use_deny && use_deny[o.n_deny])
			o.n_deny++;
		o.deny = use_deny;
		close(sv[0]);
		/* Network probes never leave the test: a namespace with only (a
		 * down) loopback, like the sandbox's with --net none. */
		if (use_own_netns && unshare(CLONE_NEWUSER | CLONE_NEWNET) < 0)
			_exit(93);
		if (use_own_netns) { /* lo up, as in the sandbox */
			struct ifreq ifr = {.ifr_name = "lo"};
			int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
			if (s < 0 || ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
				_exit(95);
			ifr.ifr_flags |= IFF_UP;
			if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
				_exit(96);
			close(s);
		}
		if (use_install) {
			if (moat_seccomp_install(&prog, &fd) < 0 || fd < 0)
				_exit(92);
		} else if (moat_seccomp_build(&o, &ctx) < 0 ||
			   moat_seccomp_load(ctx, true, &fd) < 0 || fd < 0)
			_exit(91);
		if (use_record_net) {
			/* sendmsg now goes to the listener itself: the parent takes
			 * it with pidfd_getfd, as moat does (sandbox.c) */
			char ack = 0;
			if (write(sv[1], &fd, sizeof(fd)) != sizeof(fd) ||
			    read(sv[1], &ack, 1) != 1)
				_exit(94);
		} else {
			send_fd(sv[1], fd);
		}
		close(fd);
		close(sv[1]);
		fn();
		_exit(0);
	}
	close(sv[1]);
	moat_seccomp_prog_done(&prog);
	if (use_record_net) {
		int num = -1;
		ASSERT_EQ(recv(sv[0], &num, sizeof(num), 0), (ssize_t)sizeof(num));
		int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
		ASSERT_TRUE(pfd >= 0);
		*ret_fd = (int)syscall(SYS_pidfd_getfd, pfd, num, 0);
		close(pfd);
		ASSERT_EQ(send(sv[0], "k", 1, 0), 1);
	} else {
		*ret_fd = recv_fd(sv[0]);
	}
	close(sv[0]);
	ASSERT_TRUE(*ret_fd >= 0);
	return pid;
}

/* Wait (up to 10 s) for one event. */
static int next_event(int fd, struct moat_seccomp_event *ev)
{
	for (int i = 0; i < 100; i++) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (poll(&p, 1, 100) < 0)
			return -errno;
		int r = moat_seccomp_notify_handle_net(fd, NULL, use_net_mask, ev);
		if (r != -EAGAIN)
			return r;
	}
	return -ETIMEDOUT;
}

static int wait_status(pid_t pid)
{
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void deny_then_exec(void)
{
	/* Each denied call must come back as EPERM (the supervisor's answer). */
	if (unshare(CLONE_NEWUSER) != -1 || errno != EPERM)
		_exit(10);
	if (syscall(SYS_ptrace, PTRACE_ATTACH, 1, 0, 0) != -1 || errno != EPERM)
		_exit(11);
	/* ENOSYS probes are answered in the kernel, without an event. */
	if (syscall(SYS_clone3, BAD, 88) != -1 || errno != ENOSYS)
		_exit(12);
	/* A grandchild execs through execveat, then this child through execve. */
	pid_t pid = fork();
	if (pid == 0) {
		int dir = open("/bin", O_PATH | O_DIRECTORY | O_CLOEXEC);
		static char a0[] = "true", a1[] = "via-execveat";
		char *const argv[] = {a0, a1, NULL};
		syscall(SYS_execveat, dir, "true", argv, environ, 0);
		_exit(13);
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		_exit(14);
	if (chdir("/tmp") < 0)
		_exit(15);
	/* A PATH-search miss is recorded as such. */
	static char m0[] = "/nonexistent/moat-missing";
	char *const margv[] = {m0, NULL};
	if (execve(m0, margv, environ) != -1 || errno != ENOENT)
		_exit(17);
	static char b0[] = "/bin/true", b1[] = "moat-marker", b2[] = "second arg";
	char *const argv[] = {b0, b1, b2, NULL};
	execve(argv[0], argv, environ);
	_exit(16);
}

static void notify_denial_and_exec_events(void)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	pid_t pid = start_notified(true, deny_then_exec, &fd);

	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_DENIED);
	ASSERT_STREQ(ev.syscall, "unshare");
	ASSERT_EQ(ev.pid, pid);
	ASSERT_EQ(ev.ppid, getpid());
	ASSERT_EQ(ev.err, EPERM);
	ASSERT_EQ(ev.args[0], CLONE_NEWUSER);
	ASSERT_CONTAINS(ev.exe, "unit-tests");

	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_DENIED);
	ASSERT_STREQ(ev.syscall, "ptrace");

	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_EXEC);
	ASSERT_STREQ(ev.syscall, "execveat");
	ASSERT_STREQ(ev.path, "true");
	ASSERT_TRUE(ev.dirfd >= 0);
	ASSERT_TRUE(!ev.missing);
	ASSERT_EQ(ev.argc, 2);
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 0), "true");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 1), "via-execveat");
	ASSERT_TRUE(moat_seccomp_event_arg(&ev, 2) == NULL);
	ASSERT_EQ(ev.ppid, pid);

	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_EXEC);
	ASSERT_STREQ(ev.path, "/nonexistent/moat-missing");
	ASSERT_TRUE(ev.missing);

	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_EXEC);
	ASSERT_STREQ(ev.syscall, "execve");
	ASSERT_EQ(ev.pid, pid);
	ASSERT_STREQ(ev.path, "/bin/true");
	ASSERT_STREQ(ev.cwd, "/tmp");
	ASSERT_TRUE(!ev.missing);
	ASSERT_EQ(ev.argc, 3);
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 1), "moat-marker");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 2), "second arg");
	ASSERT_TRUE(!ev.truncated);

	ASSERT_EQ(wait_status(pid), 0);
	/* Nobody uses the filter any more. */
	ASSERT_EQ(next_event(fd, &ev), -ENOTCONN);
	close(fd);
}

TEST(seccomp_notify_denial_and_exec_events)
{
	notify_denial_and_exec_events();
}

/* The same through the no-allocation path the sandbox's init uses. */
TEST(seccomp_notify_via_exported_program)
{
	use_install = true;
	notify_denial_and_exec_events();
}

static void install_child(void)
{
	struct moat_seccomp_opts o = {0};
	struct moat_seccomp_prog prog = {0};
	scmp_filter_ctx ctx = NULL;
	char buf[64];
	int fd = 0;
	ASSERT_EQ(moat_seccomp_build(&o, &ctx), 0);
	ASSERT_EQ(moat_seccomp_export(ctx, false, &prog), 0);
	seccomp_release(ctx);
	ASSERT_EQ(moat_seccomp_install(&prog, &fd), 0);
	ASSERT_EQ(fd, -1);
	moat_seccomp_prog_done(&prog);
	ASSERT_STREQ(status_field("NoNewPrivs:", buf, sizeof(buf)), "\t1");
	ASSERT_ERRNO(unshare(CLONE_NEWUSER), EPERM);
	ASSERT_ERRNO(syscall(SYS_clone3, BAD, 88), ENOSYS);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, (1ULL << 32) | TIOCSTI, BAD), EPERM);
	ASSERT_ERRNO(personality(ADDR_NO_RANDOMIZE), EPERM);
	ASSERT_ERRNO(syscall(SYS_ioctl, -1, TIOCGWINSZ, BAD), EBADF);
	x32_getpid(); /* killed */
}

TEST(seccomp_exported_program_without_notify)
{
	ASSERT_EQ(run_killed(install_child, false), SIGSYS);
}

static void huge_argv(void)
{
	static char big[4096];
	static char *argv[300];
	memset(big, 'x', sizeof(big) - 1);
	static char prog[] = "/bin/true";
	argv[0] = prog;
	for (int i = 1; i < 299; i++)
		argv[i] = big;
	execve(argv[0], argv, environ);
	_exit(20);
}

TEST(seccomp_notify_exec_caps_argv)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	pid_t pid = start_notified(true, huge_argv, &fd);
	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_EXEC);
	ASSERT_TRUE(ev.truncated);
	ASSERT_TRUE(ev.argc >= 2 && ev.argc <= MOAT_SECCOMP_EV_ARGC);
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 0), "/bin/true");
	for (unsigned i = 0; i < ev.argc; i++) {
		const char *a = moat_seccomp_event_arg(&ev, i);
		ASSERT_TRUE(a && a + strlen(a) < ev.argv_buf + sizeof(ev.argv_buf));
	}
	ASSERT_EQ(wait_status(pid), 0);
	close(fd);
}

/* Exec arguments laid across page boundaries and up to an unreadable page:
 * pages 0-2 readable, 3 PROT_NONE, 4-5 readable. */
static void paged_argv(void)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	char *m = mmap(NULL, 6 * pg, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED || mprotect(m + 3 * pg, pg, PROT_NONE) < 0)
		_exit(30);
	char *p4 = m + 4 * pg;
	/* 1: a string cut by the unreadable page (the exec then fails: EFAULT) */
	memcpy(m + 3 * pg - 3, "abc", 3);
	strcpy(p4, "/bin/true");
	strcpy(p4 + 64, "tail");
	char *a1[] = {p4, m + 3 * pg - 3, p4 + 64, NULL};
	if (execve(p4, a1, environ) != -1)
		_exit(31);
	/* 2: the path, a string and the argv array itself each crossing from one
	 * readable page to the next (the exec succeeds) */
	char *path = m + pg - 4;
	strcpy(path, "/bin/true");
	char *xs = m + 2 * pg - 30;
	memcpy(xs, "long-arg-", 9);
	memset(xs + 9, 'y', 21);
	strcpy(m + 2 * pg, "-end");
	strcpy(m + pg + 100, "crossing-string");
	char **av = (char **)(void *)(m + 5 * pg - 2 * sizeof(char *));
	av[0] = path;
	av[1] = xs;
	av[2] = m + pg + 100;
	av[3] = p4 + 64;
	av[4] = NULL;
	execve(path, av, environ);
	_exit(32);
}

static void check_paged_argv(int *root)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	pid_t pid = start_notified(true, paged_argv, &fd);
	int r;
	for (int i = 0; i < 100; i++) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ASSERT_TRUE(poll(&pf, 1, 100) >= 0);
		if ((r = moat_seccomp_notify_handle_root(fd, root, &ev)) != -EAGAIN)
			break;
	}
	ASSERT_EQ(r, 0);
	ASSERT_STREQ(ev.path, "/bin/true");
	ASSERT_TRUE(ev.truncated);
	ASSERT_EQ(ev.argc, 3);
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 1), "abc");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 2), "tail");
	ASSERT_EQ(ev.ppid, getpid());
	ASSERT_TRUE(ev.cwd[0] == '/');
	for (int i = 0; i < 100; i++) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		ASSERT_TRUE(poll(&pf, 1, 100) >= 0);
		if ((r = moat_seccomp_notify_handle_root(fd, root, &ev)) != -EAGAIN)
			break;
	}
	ASSERT_EQ(r, 0);
	ASSERT_STREQ(ev.path, "/bin/true");
	ASSERT_TRUE(!ev.truncated);
	ASSERT_TRUE(!ev.missing);
	ASSERT_EQ(ev.argc, 4);
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 0), "/bin/true");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 1), "long-arg-yyyyyyyyyyyyyyyyyyyyy-end");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 2), "crossing-string");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 3), "tail");
	ASSERT_EQ(wait_status(pid), 0);
	close(fd);
}

TEST(seccomp_notify_exec_args_across_pages)
{
	check_paged_argv(NULL);
}

/* The shared-root variant: the first exec leaves the root it checked in, the
 * next absolute path is checked below it. */
TEST(seccomp_notify_exec_shared_root)
{
	int root = -1;
	check_paged_argv(&root);
	ASSERT_TRUE(root >= 0);
	struct stat a, b;
	ASSERT_EQ(fstat(root, &a), 0);
	ASSERT_EQ(stat("/", &b), 0);
	ASSERT_TRUE(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	check_paged_argv(&root);
	close(root);
}

/* Every recorded rule, probed with harmless arguments, produces its event:
 * the filter itself caught it (a kernel EPERM would produce none). */
struct probe {
	const char *name;
	long a[6];
};
static const struct probe cond_probes[] = {
	{"clone", {CLONE_NEWUSER | SIGCHLD, 0, 0, 0, 0, 0}},
	{"personality", {ADDR_NO_RANDOMIZE, 0, 0, 0, 0, 0}},
	{"ioctl", {-1, TIOCSTI, BAD, 0, 0, 0}},
	{"ioctl", {-1, TIOCLINUX, BAD, 0, 0, 0}},
	{"ioctl", {-1, TIOCSETD, BAD, 0, 0, 0}},
	{"ioctl", {-1, TIOCCONS, BAD, 0, 0, 0}},
	{"socket", {AF_PACKET, SOCK_RAW, 0, 0, 0, 0}},
	{"socket", {AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER, 0, 0, 0}},
	{"socket", {AF_INET, SOCK_DCCP, IPPROTO_DCCP, 0, 0, 0}},
	{"socket", {AF_INET6, SOCK_STREAM, IPPROTO_SCTP, 0, 0, 0}},
	{"socket", {AF_INET, SOCK_DGRAM, IPPROTO_L2TP, 0, 0, 0}},
	{"socketpair", {AF_INET, SOCK_STREAM, 0, BAD, 0, 0}},
};

static bool sweep_skip(const struct moat_seccomp_rule *r)
{
	/* vhangup takes no argument to make harmless; it has its own errno test. */
	return !r->notify || r->match != MOAT_SECCOMP_MATCH_ALL || streq(r->name, "vhangup") ||
		seccomp_syscall_resolve_name(r->name) < 0;
}

static void sweep(void)
{
	size_t n = 0;
	const struct moat_seccomp_rule *r = moat_seccomp_rules(&n);
	for (size_t i = 0; i < n; i++) {
		if (sweep_skip(&r[i]))
			continue;
		if (syscall(seccomp_syscall_resolve_name(r[i].name), -1L, -1L, -1L, -1L, -1L,
			    -1L) != -1 ||
		    errno != EPERM)
			_exit(30);
	}
	for (size_t i = 0; i < ELEMENTSOF(cond_probes); i++) {
		const long *a = cond_probes[i].a;
		if (syscall(seccomp_syscall_resolve_name(cond_probes[i].name), a[0], a[1], a[2],
			    a[3], a[4], a[5]) != -1 ||
		    errno != EPERM)
			_exit(31);
	}
	if (syscall(SYS_vhangup) != -1 || errno != EPERM)
		_exit(32);
}

TEST(seccomp_notify_sweep_every_recorded_rule)
{
	static struct moat_seccomp_event ev;
	size_t n = 0;
	const struct moat_seccomp_rule *r = moat_seccomp_rules(&n);
	int fd = -1;
	pid_t pid = start_notified(false, sweep, &fd);

	for (size_t i = 0; i < n; i++) {
		if (sweep_skip(&r[i]))
			continue;
		ASSERT_EQ(next_event(fd, &ev), 0);
		ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_DENIED);
		ASSERT_STREQ(ev.syscall, r[i].name);
	}
	for (size_t i = 0; i < ELEMENTSOF(cond_probes); i++) {
		ASSERT_EQ(next_event(fd, &ev), 0);
		ASSERT_STREQ(ev.syscall, cond_probes[i].name);
		ASSERT_EQ(ev.args[0], (uint64_t)cond_probes[i].a[0]);
	}
	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_STREQ(ev.syscall, "vhangup");
	ASSERT_EQ(wait_status(pid), 0);
	close(fd);
}

static void allowed_only(void)
{
	char buf[64];
	for (int i = 0; i < 1000; i++)
		if (getppid() <= 0 || getcwd(buf, sizeof(buf)) == NULL)
			_exit(40);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	_exit(fd >= 0 ? 0 : 41);
}

/* Allowed calls never reach the listener (hot paths stay in the kernel). */
TEST(seccomp_notify_not_on_allowed_calls)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	pid_t pid = start_notified(false, allowed_only, &fd);
	ASSERT_EQ(wait_status(pid), 0);
	ASSERT_EQ(next_event(fd, &ev), -ENOTCONN);
	close(fd);
}

static void die_blocked(void)
{
	syscall(SYS_ptrace, PTRACE_ATTACH, 1, 0, 0);
	_exit(50);
}

/* A caller killed while waiting for its answer: no event, no hang. */
TEST(seccomp_notify_caller_gone)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	pid_t pid = start_notified(false, die_blocked, &fd);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ASSERT_EQ(poll(&p, 1, 5000), 1);
	kill(pid, SIGKILL);
	ASSERT_EQ(wait_status(pid), 128 + SIGKILL);
	int r = moat_seccomp_notify_handle(fd, &ev);
	ASSERT_TRUE(r == -ENOENT || r == -ENOTCONN || r == -EAGAIN);
	close(fd);
}

/* Every program compiled at build time (seccomp_baked.c) is exactly what
 * libseccomp compiles now for the same options; policies with lists get none. */
TEST(seccomp_baked_equal_fresh)
{
	ASSERT_EQ(5u, moat_seccomp_n_baked);
	for (unsigned i = 0; i < moat_seccomp_n_baked; i++) {
		const struct moat_seccomp_baked *b = &moat_seccomp_baked[i];
		struct moat_seccomp_opts o = {.notify = b->notify,
					      .record_exec = b->record_exec,
					      .record_net = b->record_net};
		struct moat_seccomp_prog p = {0};
		scmp_filter_ctx ctx = NULL;

		ASSERT_TRUE(moat_seccomp_baked_find(&o) == b);
		ASSERT_EQ(0, moat_seccomp_build(&o, &ctx));
		ASSERT_EQ(0, moat_seccomp_export(ctx, o.notify, &p));
		seccomp_release(ctx);
		ASSERT_EQ(p.len, b->len);
		ASSERT_TRUE(memcmp(p.insns, b->insns, p.len * sizeof(p.insns[0])) == 0);
		moat_seccomp_prog_done(&p);
	}
	static const char *const one[] = {"ptrace"};
	struct moat_seccomp_opts with_allow = {.allow = one, .n_allow = 1, .notify = true};
	struct moat_seccomp_opts with_deny = {.deny = one, .n_deny = 1};
	ASSERT_TRUE(moat_seccomp_baked_find(&with_allow) == NULL);
	ASSERT_TRUE(moat_seccomp_baked_find(&with_deny) == NULL);
}

/* ---- network recording (--net none) ---------------------------------------- */

static const uint8_t dns_query_example_com[] = {
	0x12, 0x34, 0x01, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, /* header */
	5,    'e',  'x',  'f',	'i',  'l',  7,	  'e',	'x',  'a',  'm',  'p',
	'l',  'e',  3,	  'c',	'o',  'm',  0,	  0x00, 0x1c, 0x00, 0x01, /* AAAA IN */
};

static void net_calls(void)
{
	struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(80)};
	struct sockaddr_in udp = {.sin_family = AF_INET, .sin_port = htons(53)};
	struct sockaddr_in lo = {.sin_family = AF_INET, .sin_port = htons(53)};
	struct sockaddr_in6 mapped = {.sin6_family = AF_INET6, .sin6_port = htons(443)};
	struct sockaddr_un un = {.sun_family = AF_UNIX, .sun_path = "/nonexistent/moat.sock"};
	inet_pton(AF_INET, "192.0.2.1", &out.sin_addr);
	inet_pton(AF_INET, "198.51.100.1", &udp.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &lo.sin_addr);
	inet_pton(AF_INET6, "::ffff:192.0.2.7", &mapped.sin6_addr);

	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int u6 = socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int x = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (t < 0 || u < 0 || u6 < 0 || x < 0)
		_exit(60);
	/* 1: TCP connect outside; the kernel's answer stands (no route) */
	if (connect(t, (struct sockaddr *)&out, sizeof(out)) == 0)
		_exit(61);
	/* 2: UDP sendto outside */
	if (sendto(u, "x", 1, 0, (struct sockaddr *)&udp, sizeof(udp)) >= 0)
		_exit(62);
	/* not an event: send() without an address stays in the kernel */
	(void)!send(u, "x", 1, MSG_DONTWAIT);
	/* 3: AF_UNIX connect: an event with nothing to record */
	if (connect(x, (struct sockaddr *)&un, sizeof(un)) == 0)
		_exit(63);
	/* 4: v4-mapped connect of a UDP6 socket */
	(void)!connect(u6, (struct sockaddr *)&mapped, sizeof(mapped));
	/* 5: sendmmsg of a DNS query to loopback:53 */
	static uint8_t q[sizeof(dns_query_example_com)];
	memcpy(q, dns_query_example_com, sizeof(q));
	struct iovec iov = {q, sizeof(q)};
	struct mmsghdr mm[2] = {
		{.msg_hdr = {.msg_name = &lo,
			     .msg_namelen = sizeof(lo),
			     .msg_iov = &iov,
			     .msg_iovlen = 1}},
		{.msg_hdr = {.msg_name = &lo,
			     .msg_namelen = sizeof(lo),
			     .msg_iov = &iov,
			     .msg_iovlen = 1}},
	};
	(void)!sendmmsg(u, mm, 2, MSG_DONTWAIT);
	/* 6: sendmsg to loopback, not DNS: an event with nothing to record */
	static char not_dns[] = "hello, not dns";
	struct iovec iov2 = {not_dns, sizeof(not_dns) - 1};
	struct msghdr m = {
		.msg_name = &lo, .msg_namelen = sizeof(lo), .msg_iov = &iov2, .msg_iovlen = 1};
	(void)!sendmsg(u, &m, MSG_DONTWAIT);
	/* 7: sendto with an address on a TCP socket without MSG_FASTOPEN: ignored */
	(void)!sendto(t, "x", 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&out, sizeof(out));
	/* 8: a hostile msghdr: unmapped pointers and a huge name length */
	struct msghdr bad = {.msg_name = (void *)BAD,
			     .msg_namelen = 1u << 30,
			     .msg_iov = (void *)BAD,
			     .msg_iovlen = 1};
	(void)!sendmsg(u, &bad, MSG_DONTWAIT);
	/* 9: glibc's resolver: connect to the resolver, then send without an
	 * address; the destination is the socket's peer */
	int r = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (connect(r, (struct sockaddr *)&lo, sizeof(lo)) < 0) /* 10: loopback, nothing */
		_exit(64);
	struct msghdr mq = {.msg_iov = &iov, .msg_iovlen = 1};
	(void)!sendmsg(r, &mq, MSG_DONTWAIT);
	_exit(0);
}

static void expect_net(int fd, struct moat_seccomp_event *ev, const char *sc, unsigned n)
{
	memset(ev, 0xff, sizeof(*ev)); /* nothing may depend on a clean buffer */
	ASSERT_EQ(next_event(fd, ev), 0);
	ASSERT_EQ(ev->type, MOAT_SECCOMP_EVENT_NET);
	ASSERT_STREQ(ev->syscall, sc);
	ASSERT_EQ(ev->n_dests, n);
}

TEST(seccomp_notify_net_attempts)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	use_record_net = use_own_netns = true;
	struct moat_seccomp_opts o = {.notify = true, .record_net = true};
	use_net_mask = moat_seccomp_net_record_mask(&o);
	ASSERT_EQ(use_net_mask, 0xfu);
	pid_t pid = start_notified(false, net_calls, &fd);

	expect_net(fd, &ev, "connect", 1);
	ASSERT_EQ(ev.dests[0].family, AF_INET);
	ASSERT_EQ(ev.dests[0].port, 80);
	ASSERT_TRUE(!ev.dests[0].local);
	ASSERT_EQ(ev.dests[0].addr[0], 192);
	ASSERT_STREQ(ev.sock_proto, "TCP");
	ASSERT_EQ(ev.pid, pid);
	ASSERT_EQ(ev.ppid, getpid());
	ASSERT_CONTAINS(ev.exe, "unit-tests");

	expect_net(fd, &ev, "sendto", 1);
	ASSERT_TRUE(!ev.dests[0].ignored);
	ASSERT_TRUE(ev.dests[0].has_addr);
	ASSERT_EQ(ev.dests[0].port, 53);
	ASSERT_EQ(ev.dests[0].addr[0], 198);
	ASSERT_STREQ(ev.sock_proto, "UDP");
	ASSERT_EQ(ev.dests[0].payload_len, 1);

	expect_net(fd, &ev, "connect", 0); /* AF_UNIX */

	expect_net(fd, &ev, "connect", 1);
	ASSERT_EQ(ev.dests[0].family, AF_INET6);
	ASSERT_EQ(ev.dests[0].addr[12], 192);
	ASSERT_STREQ(ev.sock_proto, "UDPv6");

	expect_net(fd, &ev, "sendmmsg", 2);
	ASSERT_TRUE(ev.dests[0].local);
	ASSERT_EQ(ev.dests[0].payload_len, sizeof(dns_query_example_com));

	expect_net(fd, &ev, "sendmsg", 0); /* loopback, not DNS */
	expect_net(fd, &ev, "sendto", 0); /* TCP ignores the address */
	expect_net(fd, &ev, "sendmsg", 0); /* hostile msghdr: read nothing, no crash */
	expect_net(fd, &ev, "connect", 0); /* to the loopback resolver */
	expect_net(fd, &ev, "sendmsg", 1); /* the query on the connected socket */
	ASSERT_TRUE(!ev.dests[0].has_addr);
	ASSERT_TRUE(ev.dests[0].peer);
	ASSERT_EQ(ev.dests[0].family, AF_INET);
	ASSERT_EQ(ev.dests[0].port, 53);
	ASSERT_EQ(ev.dests[0].addr[0], 127);
	ASSERT_EQ(ev.dests[0].addr[3], 1);
	ASSERT_TRUE(ev.dests[0].local);
	ASSERT_EQ(wait_status(pid), 0);
	ASSERT_EQ(next_event(fd, &ev), -ENOTCONN);
	close(fd);
}

/* Positive control: the same calls under the filter without the recording
 * rules reach no listener at all. */
TEST(seccomp_notify_net_control_without_record_net)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	use_record_net = false;
	use_own_netns = true;
	pid_t pid = start_notified(false, net_calls, &fd);
	ASSERT_EQ(wait_status(pid), 0);
	ASSERT_EQ(next_event(fd, &ev), -ENOTCONN);
	close(fd);
}

static void deny_sendto(void)
{
	struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(53)};
	inet_pton(AF_INET, "198.51.100.1", &out.sin_addr);
	int u = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	/* denied by the list: EPERM from the listener, not continued */
	if (sendto(u, "x", 1, 0, (struct sockaddr *)&out, sizeof(out)) != -1 || errno != EPERM)
		_exit(70);
	/* still a record, continued: the kernel's own ENETUNREACH */
	if (connect(u, (struct sockaddr *)&out, sizeof(out)) != -1 || errno != ENETUNREACH)
		_exit(71);
	_exit(0);
}

/* A network call the policy denies is a denial, even with network recording:
 * the listener never continues what the filter meant to refuse. */
TEST(seccomp_notify_net_denied_by_list_stays_denied)
{
	static struct moat_seccomp_event ev;
	static const char *const deny[] = {"sendto", NULL};
	int fd = -1;
	use_record_net = use_own_netns = true;
	use_deny = deny;
	struct moat_seccomp_opts o = {
		.notify = true, .record_net = true, .deny = deny, .n_deny = 1};
	use_net_mask = moat_seccomp_net_record_mask(&o);
	ASSERT_EQ(use_net_mask, 0xfu & ~(1u << MOAT_SECCOMP_NET_SENDTO));
	pid_t pid = start_notified(false, deny_sendto, &fd);
	ASSERT_EQ(next_event(fd, &ev), 0);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_DENIED);
	ASSERT_STREQ(ev.syscall, "sendto");
	expect_net(fd, &ev, "connect", 1);
	ASSERT_EQ(wait_status(pid), 0);
	close(fd);
	/* and without a mask (the old entry points) every network call is a denial */
	ASSERT_EQ(moat_seccomp_net_record_mask(&(struct moat_seccomp_opts){.record_net = true}),
		  0u);
}

/* A caller killed while its connect waits for the listener: no event, no hang. */
static void connect_then_wait(void)
{
	struct sockaddr_in out = {.sin_family = AF_INET, .sin_port = htons(80)};
	inet_pton(AF_INET, "192.0.2.1", &out.sin_addr);
	int t = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	(void)!connect(t, (struct sockaddr *)&out, sizeof(out));
	_exit(0);
}

TEST(seccomp_notify_net_caller_gone)
{
	static struct moat_seccomp_event ev;
	int fd = -1;
	use_record_net = use_own_netns = true;
	pid_t pid = start_notified(false, connect_then_wait, &fd);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	ASSERT_EQ(poll(&p, 1, 5000), 1);
	kill(pid, SIGKILL);
	ASSERT_EQ(wait_status(pid), 128 + SIGKILL);
	int r = moat_seccomp_notify_handle(fd, &ev);
	ASSERT_TRUE(r == -ENOENT || r == -ENOTCONN || r == -EAGAIN);
	close(fd);
}

TEST(seccomp_addr_local)
{
	uint8_t a[16] = {0};
	ASSERT_TRUE(moat_seccomp_addr_local(AF_INET, a)); /* 0.0.0.0 */
	inet_pton(AF_INET, "127.3.4.5", a);
	ASSERT_TRUE(moat_seccomp_addr_local(AF_INET, a));
	inet_pton(AF_INET, "128.0.0.1", a);
	ASSERT_TRUE(!moat_seccomp_addr_local(AF_INET, a));
	inet_pton(AF_INET6, "::1", a);
	ASSERT_TRUE(moat_seccomp_addr_local(AF_INET6, a));
	inet_pton(AF_INET6, "::", a);
	ASSERT_TRUE(moat_seccomp_addr_local(AF_INET6, a));
	inet_pton(AF_INET6, "::ffff:127.0.0.1", a);
	ASSERT_TRUE(moat_seccomp_addr_local(AF_INET6, a));
	inet_pton(AF_INET6, "::ffff:192.0.2.1", a);
	ASSERT_TRUE(!moat_seccomp_addr_local(AF_INET6, a));
	inet_pton(AF_INET6, "::2", a);
	ASSERT_TRUE(!moat_seccomp_addr_local(AF_INET6, a));
	inet_pton(AF_INET6, "fe80::1", a);
	ASSERT_TRUE(!moat_seccomp_addr_local(AF_INET6, a));
	ASSERT_TRUE(!moat_seccomp_addr_local(AF_UNIX, a));
}

static const struct moat_seccomp_arg *darg(const struct moat_seccomp_arg *d, unsigned n,
					   const char *key)
{
	static const struct moat_seccomp_arg missing = {.key = "(missing)", .value = ~0ULL};
	for (unsigned i = 0; i < n; i++)
		if (streq(d[i].key, key))
			return &d[i];
	return &missing;
}
static const char *dname(const struct moat_seccomp_arg *d, unsigned n, const char *key)
{
	const char *s = darg(d, n, key)->name;
	return s ? s : "(null)";
}
static uint64_t dval(const struct moat_seccomp_arg *d, unsigned n, const char *key)
{
	return darg(d, n, key)->value;
}

TEST(seccomp_describe_args)
{
	struct moat_seccomp_arg d[MOAT_SECCOMP_MAX_DESCRIBED];
	char buf[MOAT_SECCOMP_DESCRIBE_BUF];
	unsigned n;

	uint64_t ioctl_a[6] = {0, (1ULL << 32) | TIOCSTI};
	n = moat_seccomp_describe_args("ioctl", ioctl_a, d, buf);
	ASSERT_EQ(dval(d, n, "request"), TIOCSTI); /* the kernel's 32 bits */
	ASSERT_STREQ(dname(d, n, "request"), "TIOCSTI");
	uint64_t ioctl_b[6] = {0, 0x1234};
	n = moat_seccomp_describe_args("ioctl", ioctl_b, d, buf);
	ASSERT_TRUE(streq(dname(d, n, "request"), "(null)"));

	uint64_t sock[6] = {AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, 0x300};
	n = moat_seccomp_describe_args("socket", sock, d, buf);
	ASSERT_STREQ(dname(d, n, "family"), "AF_PACKET");
	ASSERT_EQ(dval(d, n, "sock_type"), SOCK_RAW | SOCK_CLOEXEC);
	ASSERT_STREQ(dname(d, n, "sock_type"), "SOCK_RAW|SOCK_CLOEXEC");
	ASSERT_EQ(dval(d, n, "protocol"), 0x300);
	uint64_t vsock[6] = {40, SOCK_STREAM};
	n = moat_seccomp_describe_args("socketpair", vsock, d, buf);
	ASSERT_STREQ(dname(d, n, "family"), "AF_VSOCK");
	ASSERT_STREQ(dname(d, n, "sock_type"), "SOCK_STREAM");

	uint64_t un[6] = {CLONE_NEWUSER | CLONE_NEWNS | (1ULL << 40)};
	n = moat_seccomp_describe_args("unshare", un, d, buf);
	ASSERT_EQ(dval(d, n, "flags"), un[0]);
	ASSERT_STREQ(dname(d, n, "flags"), "CLONE_NEWNS|CLONE_NEWUSER|0x10000000000");
	uint64_t cl[6] = {0};
	cl[CLONE_ARG_TEST] = CLONE_NEWNET | SIGCHLD;
	n = moat_seccomp_describe_args("clone", cl, d, buf);
	ASSERT_STREQ(dname(d, n, "flags"), "CLONE_NEWNET|SIGCHLD");

	uint64_t sn[6] = {5, CLONE_NEWPID};
	n = moat_seccomp_describe_args("setns", sn, d, buf);
	ASSERT_STREQ(dname(d, n, "nstype"), "CLONE_NEWPID");
	uint64_t pt[6] = {PTRACE_ATTACH, 1};
	n = moat_seccomp_describe_args("ptrace", pt, d, buf);
	ASSERT_STREQ(dname(d, n, "request"), "PTRACE_ATTACH");
	ASSERT_EQ(dval(d, n, "target_pid"), 1);
	uint64_t pe[6] = {ADDR_NO_RANDOMIZE};
	n = moat_seccomp_describe_args("personality", pe, d, buf);
	ASSERT_STREQ(dname(d, n, "persona"), "ADDR_NO_RANDOMIZE");
	uint64_t pr[6] = {PR_SET_MM};
	n = moat_seccomp_describe_args("prctl", pr, d, buf);
	ASSERT_EQ(dval(d, n, "option"), PR_SET_MM);
	uint64_t mo[6] = {0, 0, 0, MS_BIND | MS_REC};
	n = moat_seccomp_describe_args("mount", mo, d, buf);
	ASSERT_STREQ(dname(d, n, "flags"), "MS_BIND|MS_REC");
	uint64_t ch[6] = {0, 04755};
	n = moat_seccomp_describe_args("chmod", ch, d, buf);
	ASSERT_EQ(dval(d, n, "mode"), 04755);
	ASSERT_EQ(moat_seccomp_describe_args("bogus", ch, d, buf), 0u);
	ASSERT_EQ(moat_seccomp_describe_args(NULL, ch, d, buf), 0u);
	/* every name fits and stays NUL-terminated whatever the bits */
	uint64_t all[6] = {~0ULL, ~0ULL, ~0ULL, ~0ULL};
	n = moat_seccomp_describe_args("unshare", all, d, buf);
	ASSERT_TRUE(strlen(dname(d, n, "flags")) < sizeof(buf));
	n = moat_seccomp_describe_args("socket", all, d, buf);
	ASSERT_EQ(n, 3u);
}
