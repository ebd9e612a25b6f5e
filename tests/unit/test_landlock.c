/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Landlock layer, applied to a forked child of the test (fixtures are made
 * before and removed after by the unrestricted parent). Exact errnos, with a
 * control for every denial: the same access works before the restriction or
 * on an allowed object.
 */
#include "harness/tap.h"
#include "kernel/landlock.h"
#include "shared/macro.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>

#include "compat/landlock.h"

static char top[64];

static void need_abi(int min)
{
	int abi = moat_landlock_abi();
	if (abi == -EOPNOTSUPP)
		SKIP("Landlock is not enabled on this kernel");
	ASSERT_TRUE(abi >= 1);
	if (abi < min)
		SKIP("Landlock ABI %d < %d", abi, min);
}

static void path(char *buf, size_t len, const char *rel)
{
	snprintf(buf, len, "%s/%s", top, rel);
}

static void mkfile(const char *rel)
{
	char p[256];
	path(p, sizeof(p), rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, "data\n", 5), 5);
	close(fd);
}

/* top/{ro,rw,other} with a file in each. */
static void fixtures(void)
{
	char p[256];
	snprintf(top, sizeof(top), "/tmp/moat-ll.XXXXXX");
	ASSERT_TRUE(mkdtemp(top) != NULL);
	ASSERT_EQ(chmod(top, 0755), 0);
	for (const char *d = "ro\0rw\0other\0"; *d; d += strlen(d) + 1) {
		path(p, sizeof(p), d);
		ASSERT_EQ(mkdir(p, 0755), 0);
	}
	mkfile("ro/f");
	mkfile("rw/f");
	mkfile("other/f");
}

/* Run fn in a child, then clean the fixtures up; the child's status is the result. */
static void run_child(void (*fn)(void))
{
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		fn();
		_exit(0);
	}
	int st = 0;
	ASSERT_EQ(waitpid(pid, &st, 0), pid);
	if (top[0]) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", top);
		ASSERT_EQ(system(cmd), 0);
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		moat_tap_fail(__FILE__, __LINE__, "child failed (status 0x%x)", st);
}

static int open_rel(const char *rel, int flags)
{
	char p[256];
	path(p, sizeof(p), rel);
	return open(p, flags | O_CLOEXEC, 0644);
}

TEST(landlock_rights_per_abi)
{
	ASSERT_EQ(moat_landlock_fs_rights(0), 0);
	ASSERT_EQ(moat_landlock_fs_rights(1), 0x1fff);
	ASSERT_EQ(moat_landlock_fs_rights(2), 0x3fff);
	ASSERT_EQ(moat_landlock_fs_rights(3), 0x7fff);
	ASSERT_EQ(moat_landlock_fs_rights(4), 0x7fff);
	ASSERT_EQ(moat_landlock_fs_rights(5), 0xffff);
	ASSERT_EQ(moat_landlock_fs_rights(7), 0xffff);
	ASSERT_EQ(moat_landlock_net_rights(3), 0);
	ASSERT_EQ(moat_landlock_net_rights(4), 3);
	ASSERT_EQ(moat_landlock_scope_rights(5), 0);
	ASSERT_EQ(moat_landlock_scope_rights(6), 3);
	char buf[256];
	ASSERT_STREQ(moat_landlock_rights_str('f', 0x7, buf, sizeof(buf)),
		     "execute,write_file,read_file");
	ASSERT_STREQ(moat_landlock_rights_str('n', 3, buf, sizeof(buf)), "bind_tcp,connect_tcp");
	ASSERT_STREQ(moat_landlock_rights_str('s', 0, buf, sizeof(buf)), "none");
	ASSERT_STREQ(moat_landlock_rights_str('f', 0xffff, buf, 12), "execute,wri");
}

TEST(landlock_probe)
{
	struct moat_landlock_report r;
	need_abi(1);
	ASSERT_EQ(moat_landlock_probe(NULL, &r), 0);
	ASSERT_EQ(r.abi, moat_landlock_abi());
	ASSERT_TRUE(!r.enforced);
	ASSERT_EQ(r.handled_fs, moat_landlock_fs_rights(r.abi));
	ASSERT_EQ(r.handled_net, moat_landlock_net_rights(r.abi));
	ASSERT_EQ(r.scoped, moat_landlock_scope_rights(r.abi));
}

static void fs_child(void)
{
	char p[256];
	int fd;
	/* Controls before the restriction. */
	ASSERT_TRUE((fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC)) >= 0);
	close(fd);
	ASSERT_TRUE((fd = open_rel("ro/f", O_WRONLY)) >= 0);
	close(fd);

	path(p, sizeof(p), "rw");
	int rwfd = open(p, O_PATH | O_CLOEXEC);
	ASSERT_TRUE(rwfd >= 0);
	path(p, sizeof(p), "ro");
	struct moat_landlock_path paths[] = {
		{.path = p, .fd = -1, .writable = false},
		{.path = NULL, .fd = rwfd, .writable = true},
	};
	struct moat_landlock_opts o = {.paths = paths, .n_paths = 2, .min_abi = 1};
	struct moat_landlock_report rep;
	ASSERT_EQ(moat_landlock_apply(&o, &rep), 0);
	ASSERT_TRUE(rep.enforced);
	ASSERT_EQ(rep.handled_fs, moat_landlock_fs_rights(rep.abi));
	ASSERT_EQ(rep.n_rules, 2);

	/* Not listed: nothing. */
	ASSERT_ERRNO(open("/etc/hostname", O_RDONLY | O_CLOEXEC), EACCES);
	ASSERT_ERRNO(open_rel("other/f", O_RDONLY), EACCES);
	ASSERT_ERRNO(open_rel("other/new", O_WRONLY | O_CREAT), EACCES);
	/* Read-only: read, not write/create/remove/truncate. */
	ASSERT_TRUE((fd = open_rel("ro/f", O_RDONLY)) >= 0);
	close(fd);
	ASSERT_TRUE((fd = open_rel("ro", O_RDONLY | O_DIRECTORY)) >= 0);
	close(fd);
	ASSERT_ERRNO(open_rel("ro/f", O_WRONLY), EACCES);
	ASSERT_ERRNO(open_rel("ro/f", O_RDONLY | O_TRUNC), EACCES);
	ASSERT_ERRNO(open_rel("ro/new", O_WRONLY | O_CREAT), EACCES);
	path(p, sizeof(p), "ro/f");
	ASSERT_ERRNO(unlink(p), EACCES);
	ASSERT_ERRNO(truncate(p, 0), EACCES);
	path(p, sizeof(p), "ro/d");
	ASSERT_ERRNO(mkdir(p, 0755), EACCES);
	/* Writable: everything. */
	ASSERT_TRUE((fd = open_rel("rw/new", O_WRONLY | O_CREAT | O_TRUNC)) >= 0);
	ASSERT_EQ(write(fd, "x", 1), 1);
	ASSERT_EQ(ftruncate(fd, 0), 0);
	close(fd);
	path(p, sizeof(p), "rw/f");
	ASSERT_EQ(truncate(p, 1), 0);
	char q[256];
	path(q, sizeof(q), "rw/g");
	ASSERT_EQ(rename(p, q), 0);
	ASSERT_EQ(unlink(q), 0);
	path(p, sizeof(p), "rw/d");
	ASSERT_EQ(mkdir(p, 0755), 0);
	ASSERT_EQ(rmdir(p), 0);
	/* Moving a file out of the writable tree into the read-only one: REFER. */
	path(p, sizeof(p), "rw/new");
	path(q, sizeof(q), "ro/new");
	errno = 0;
	ASSERT_TRUE(rename(p, q) == -1 && (errno == EACCES || errno == EXDEV));
}

TEST(landlock_fs_ro_rw_other)
{
	need_abi(1);
	fixtures();
	run_child(fs_child);
}

static void min_abi_child(void)
{
	struct moat_landlock_report rep;
	struct moat_landlock_opts o = {.min_abi = MOAT_LANDLOCK_ABI_KNOWN + 50};
	ASSERT_EQ(moat_landlock_apply(&o, &rep), -EOPNOTSUPP);
	ASSERT_EQ(rep.abi, moat_landlock_abi());
	ASSERT_TRUE(!rep.enforced);
	/* Nothing was enforced: the caller decides (fail closed or degrade). */
	int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	/* A missing path fails the whole apply, nothing half-applied. */
	struct moat_landlock_path p = {.path = "/nonexistent/moat", .fd = -1};
	o = (struct moat_landlock_opts){.paths = &p, .n_paths = 1, .min_abi = 1};
	ASSERT_EQ(moat_landlock_apply(&o, &rep), -ENOENT);
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	o = (struct moat_landlock_opts){.n_paths = 1};
	ASSERT_EQ(moat_landlock_apply(&o, &rep), -EINVAL);
}

TEST(landlock_fails_closed)
{
	need_abi(1);
	top[0] = 0;
	run_child(min_abi_child);
}

/* A caller-given kind replaces the fstat; a wrong one never widens rights. */
static void kind_child(void)
{
	char p[256], f[256];
	struct moat_landlock_report rep;
	path(p, sizeof(p), "rw");
	path(f, sizeof(f), "ro/f");
	/* a file given as a directory: refused by the kernel, nothing applied */
	struct moat_landlock_path bad = {
		.path = f, .fd = -1, .writable = true, .kind = MOAT_LANDLOCK_KIND_DIR};
	struct moat_landlock_opts o = {.paths = &bad, .n_paths = 1, .min_abi = 1};
	ASSERT_EQ(moat_landlock_apply(&o, &rep), -EINVAL);
	int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	/* a directory given as a file: file rights only (no create, no listing) */
	struct moat_landlock_path paths[] = {
		{.path = p, .fd = -1, .writable = true, .kind = MOAT_LANDLOCK_KIND_FILE},
		{.path = f, .fd = -1, .writable = false, .kind = MOAT_LANDLOCK_KIND_FILE},
	};
	o = (struct moat_landlock_opts){.paths = paths, .n_paths = 2, .min_abi = 1};
	ASSERT_EQ(moat_landlock_apply(&o, &rep), 0);
	ASSERT_EQ(rep.n_rules, 2);
	ASSERT_TRUE((fd = open_rel("rw/f", O_RDWR)) >= 0);
	close(fd);
	ASSERT_ERRNO(open_rel("rw/new", O_WRONLY | O_CREAT), EACCES);
	ASSERT_ERRNO(open_rel("rw", O_RDONLY | O_DIRECTORY), EACCES);
	ASSERT_TRUE((fd = open_rel("ro/f", O_RDONLY)) >= 0);
	close(fd);
	ASSERT_ERRNO(open_rel("ro/f", O_WRONLY), EACCES);
}

TEST(landlock_known_kind)
{
	need_abi(1);
	fixtures();
	run_child(kind_child);
}

/* prepare builds without restricting; enforce restricts with what was built. */
static void prepare_child(void)
{
	char p[256];
	struct moat_landlock_report rep;
	int ruleset = -1, fd;
	path(p, sizeof(p), "rw");
	struct moat_landlock_path rw = {.path = p, .fd = -1, .writable = true};
	struct moat_landlock_opts o = {.paths = &rw, .n_paths = 1, .min_abi = 1};
	ASSERT_EQ(moat_landlock_prepare(&o, &ruleset, &rep), 0);
	ASSERT_TRUE(ruleset >= 0);
	ASSERT_TRUE(!rep.enforced);
	ASSERT_EQ(rep.n_rules, 1);
	/* not restricted yet */
	ASSERT_TRUE((fd = open_rel("other/f", O_RDONLY)) >= 0);
	close(fd);
	ASSERT_EQ(moat_landlock_enforce(ruleset, false), 0);
	close(ruleset);
	ASSERT_ERRNO(open_rel("other/f", O_RDONLY), EACCES);
	ASSERT_TRUE((fd = open_rel("rw/f", O_RDWR)) >= 0);
	close(fd);
	/* -1 (best effort without Landlock) enforces nothing and succeeds */
	ASSERT_EQ(moat_landlock_enforce(-1, true), 0);
}

TEST(landlock_prepare_then_enforce)
{
	need_abi(1);
	fixtures();
	run_child(prepare_child);
}

static int tcp_listener(uint16_t *ret_port)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	ASSERT_EQ(listen(fd, 8), 0);
	ASSERT_EQ(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	*ret_port = ntohs(a.sin_port);
	return fd;
}

static int tcp_connect(uint16_t port)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK),
				.sin_port = htons(port)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	int r = connect(fd, (struct sockaddr *)&a, sizeof(a));
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static void net_child(void)
{
	uint16_t p1, p2;
	int l1 = tcp_listener(&p1), l2 = tcp_listener(&p2);
	ASSERT_EQ(tcp_connect(p1), 0); /* controls */
	ASSERT_EQ(tcp_connect(p2), 0);
	struct moat_landlock_opts o = {
		.net_none = true, .connect_ports = &p2, .n_connect_ports = 1, .min_abi = 4};
	struct moat_landlock_report rep;
	ASSERT_EQ(moat_landlock_apply(&o, &rep), 0);
	ASSERT_EQ(rep.handled_net, LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP);
	ASSERT_ERRNO(tcp_connect(p1), EACCES);
	ASSERT_EQ(tcp_connect(p2), 0);
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_ERRNO(bind(fd, (struct sockaddr *)&a, sizeof(a)), EACCES);
	close(fd);
	/* UDP is outside Landlock's TCP rights (the network namespace covers it). */
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	close(fd);
	close(l1);
	close(l2);
}

TEST(landlock_net_none_tcp)
{
	need_abi(4);
	top[0] = 0;
	run_child(net_child);
}

static socklen_t abstract_addr(struct sockaddr_un *a, const char *name)
{
	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	size_t n = strlen(name);
	memcpy(a->sun_path + 1, name, n);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
}

static int abstract_listen(const char *name)
{
	struct sockaddr_un a;
	socklen_t len = abstract_addr(&a, name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(bind(fd, (struct sockaddr *)&a, len), 0);
	ASSERT_EQ(listen(fd, 4), 0);
	return fd;
}

static int abstract_connect(const char *name)
{
	struct sockaddr_un a;
	socklen_t len = abstract_addr(&a, name);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ASSERT_TRUE(fd >= 0);
	int r = connect(fd, (struct sockaddr *)&a, len);
	int e = errno;
	close(fd);
	errno = e;
	return r;
}

static void scope_child(void)
{
	char outside[64], inside[64];
	snprintf(outside, sizeof(outside), "moat-ll-out-%d", (int)getpid());
	snprintf(inside, sizeof(inside), "moat-ll-in-%d", (int)getpid());
	int lo = abstract_listen(outside);
	ASSERT_EQ(abstract_connect(outside), 0); /* control */
	ASSERT_EQ(kill(getppid(), 0), 0); /* control */
	struct moat_landlock_opts o = {.scope = true, .min_abi = 6};
	struct moat_landlock_report rep;
	ASSERT_EQ(moat_landlock_apply(&o, &rep), 0);
	ASSERT_EQ(rep.scoped, LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL);
	/* A socket bound outside the domain is out of reach... */
	ASSERT_ERRNO(abstract_connect(outside), EPERM);
	/* ...one bound inside it is not. */
	int li = abstract_listen(inside);
	ASSERT_EQ(abstract_connect(inside), 0);
	/* Signals: not to the (unrestricted) parent, yes to ourselves. */
	ASSERT_ERRNO(kill(getppid(), SIGCONT), EPERM);
	ASSERT_EQ(kill(getpid(), 0), 0);
	close(li);
	close(lo);
}

TEST(landlock_scope_abstract_unix_and_signal)
{
	need_abi(6);
	top[0] = 0;
	run_child(scope_child);
}

/* Best effort (min_abi 0) on a kernel without Landlock is a no-op with a
 * report saying so; on this kernel it enforces like min_abi 1. */
static void best_effort_child(void)
{
	struct moat_landlock_report rep;
	struct moat_landlock_opts o = {0};
	ASSERT_EQ(moat_landlock_apply(&o, &rep), 0);
	ASSERT_TRUE(rep.enforced);
	ASSERT_ERRNO(open("/etc/hostname", O_RDONLY | O_CLOEXEC), EACCES);
}

TEST(landlock_best_effort_enforces_what_exists)
{
	need_abi(1);
	top[0] = 0;
	run_child(best_effort_child);
}
