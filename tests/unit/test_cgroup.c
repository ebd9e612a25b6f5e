/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * cgroup module: the v2 and hybrid logic against fake cgroupfs trees in a
 * temporary directory, and the real hierarchies of this machine (as root: real
 * limits, OOM, kill, destroy; unprivileged: creation must fail closed).
 */
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "limits/cgroup.h"
#include "shared/macro.h"

static char fake_root[256];

static void put(const char *rel, const char *content)
{
	char p[1024], dir[1100];
	snprintf(p, sizeof(p), "%s/%s", fake_root, rel);
	snprintf(dir, sizeof(dir), "mkdir -p \"$(dirname '%s')\"", p);
	ASSERT_EQ(system(dir), 0);
	FILE *f = fopen(p, "we");
	ASSERT_TRUE(f != NULL);
	fputs(content, f);
	fclose(f);
}

static char *get(const char *abs)
{
	static char buf[4096];
	int fd = open(abs, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = 0;
	return buf;
}

static char *getf(const char *a, const char *b)
{
	char p[2048];
	snprintf(p, sizeof(p), "%s/%s", a, b);
	return get(p);
}

static void make_root(void)
{
	snprintf(fake_root, sizeof(fake_root), "/tmp/moat-cgtest.XXXXXX");
	ASSERT_TRUE(mkdtemp(fake_root) != NULL);
}

static void drop_root(void)
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fake_root);
	(void)!system(cmd);
}

/* A pure v2 machine as a systemd user sees it: we sit in a scope that has
 * processes; the delegated app.slice above it is where groups go. */
static void fake_v2_user(void)
{
	const char *svc = "sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service";
	char p[512];
	make_root();
	put("proc/self/mountinfo",
	    "22 1 0:21 / / rw - ext4 /dev/sda1 rw\n"
	    "35 22 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw,nsdelegate\n");
	put("proc/self/cgroup",
	    "0::/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpuset cpu io memory hugetlb pids rdma misc\n");
	put("sys/fs/cgroup/cgroup.procs", "1\n");
	snprintf(p, sizeof(p), "%s/cgroup.controllers", svc);
	put(p, "cpu memory pids\n");
	snprintf(p, sizeof(p), "%s/cgroup.procs", svc);
	put(p, "");
	snprintf(p, sizeof(p), "%s/app.slice/cgroup.controllers", svc);
	put(p, "cpu memory pids\n");
	snprintf(p, sizeof(p), "%s/app.slice/cgroup.subtree_control", svc);
	put(p, "memory pids\n");
	snprintf(p, sizeof(p), "%s/app.slice/cgroup.procs", svc);
	put(p, "");
	snprintf(p, sizeof(p), "%s/app.slice/term.scope/cgroup.controllers", svc);
	put(p, "memory pids\n");
	snprintf(p, sizeof(p), "%s/app.slice/term.scope/cgroup.procs", svc);
	put(p, "4242\n");
}

TEST(cgroup_v2_fake_detect)
{
	struct moat_cgroup_info info;
	char want[1024];
	fake_v2_user();
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(info.mode, 2);
	ASSERT_EQ(info.n_hier, 1);
	ASSERT_EQ(info.hier[0].version, 2);
	snprintf(
		want, sizeof(want),
		"%s/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice/term.scope",
		fake_root);
	ASSERT_STREQ(info.hier[0].self, want);
	/* term.scope has processes: the base moves up to the delegated app.slice. */
	snprintf(want, sizeof(want),
		 "%s/sys/fs/cgroup/user.slice/user-1000.slice/user@1000.service/app.slice",
		 fake_root);
	ASSERT_STREQ(info.hier[0].base, want);
	ASSERT_TRUE(info.hier[0].writable);
	ASSERT_EQ(info.hier[0].controllers, MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU);
	ASSERT_EQ(info.usable, MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU);
	ASSERT_TRUE(!info.v2_tracking);
	char names[64];
	ASSERT_STREQ(moat_cgroup_ctrl_names(info.usable, names, sizeof(names)), "memory,pids,cpu");
	drop_root();
}

TEST(cgroup_v2_fake_create_limits_stats_destroy)
{
	struct moat_cgroup_info info;
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	const struct moat_cgroup_limits l = {.cpus_milli = 1500, .memory = 4ull << 30, .pids = 256};
	char base[1024], dir[1100];

	fake_v2_user();
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	snprintf(base, sizeof(base), "%s", info.hier[0].base);
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "run-1", &cg, &err), 0);
	ASSERT_EQ(moat_cgroup_n_dirs(cg), 1);
	snprintf(dir, sizeof(dir), "%s/moat/run-1", base);
	ASSERT_STREQ(moat_cgroup_dir(cg, 0), dir);
	ASSERT_TRUE(moat_cgroup_fd(cg) >= 0);
	ASSERT_EQ(moat_cgroup_limited(cg), MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU);

	/* app.slice lacked cpu in subtree_control; moat/ enables all three. */
	ASSERT_CONTAINS(getf(base, "cgroup.subtree_control"), "+cpu");
	ASSERT_STREQ(getf(base, "moat/cgroup.subtree_control"), "+memory +pids +cpu");
	ASSERT_STREQ(getf(dir, "memory.max"), "4294967296\n");
	ASSERT_STREQ(getf(dir, "memory.swap.max"), "0\n");
	ASSERT_STREQ(getf(dir, "memory.oom.group"), "1\n");
	ASSERT_STREQ(getf(dir, "pids.max"), "256\n");
	ASSERT_STREQ(getf(dir, "cpu.max"), "150000 100000\n");

	ASSERT_EQ(moat_cgroup_attach(cg, 777), 0);
	ASSERT_STREQ(getf(dir, "cgroup.procs"), "777\n");

	/* Statistics come from the v2 files. */
	char p[1200];
	snprintf(p, sizeof(p), "moat-x/%s", "");
	const char *files[][2] = {
		{"memory.peak", "123456789\n"},
		{"memory.current", "4096\n"},
		{"memory.events", "low 0\nhigh 0\nmax 7\noom 1\noom_kill 1\noom_group_kill 1\n"},
		{"pids.current", "0\n"},
		{"pids.peak", "256\n"},
		{"pids.events", "max 12\n"},
		{"cpu.stat", "usage_usec 5000\nuser_usec 3000\nsystem_usec 2000\n"},
	};
	for (size_t i = 0; i < ELEMENTSOF(files); i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, files[i][0]);
		FILE *f = fopen(p, "we");
		ASSERT_TRUE(f != NULL);
		fputs(files[i][1], f);
		fclose(f);
	}
	struct moat_cgroup_stats st;
	ASSERT_EQ(moat_cgroup_stats(cg, &st), 0);
	ASSERT_TRUE(st.have_mem_peak);
	ASSERT_EQ(st.mem_peak, 123456789);
	ASSERT_EQ(st.mem_current, 4096);
	ASSERT_TRUE(st.oom);
	ASSERT_EQ(st.oom_kills, 1);
	ASSERT_TRUE(st.have_pids_peak);
	ASSERT_EQ(st.pids_peak, 256);
	ASSERT_TRUE(st.pids_hit);
	ASSERT_EQ(st.pids_max_hits, 12);
	ASSERT_TRUE(st.have_cpu);
	ASSERT_EQ(st.cpu_usage_us, 5000);
	ASSERT_EQ(st.cpu_user_us, 3000);
	ASSERT_EQ(st.cpu_sys_us, 2000);

	/* Empty group: kill returns at once; destroy removes the directory. */
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	ASSERT_EQ(truncate(p, 0), 0);
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	struct stat sb;
	ASSERT_ERRNO(stat(dir, &sb), ENOENT);
	drop_root();
}

TEST(cgroup_v2_fake_kill_uses_cgroup_kill)
{
	struct moat_cgroup_info info;
	struct moat_cgroup *cg = NULL;
	const struct moat_cgroup_limits l = {.pids = 10};
	char dir[1100], p[1200];

	fake_v2_user();
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "k", &cg, NULL), 0);
	snprintf(dir, sizeof(dir), "%s", moat_cgroup_dir(cg, 0));
	/* A pid that cannot exist (above pid_max) stays listed: kill must write
	 * cgroup.kill, never signal by itself, and give up with -ETIMEDOUT. */
	snprintf(p, sizeof(p), "%s/cgroup.kill", dir);
	FILE *f = fopen(p, "we");
	ASSERT_TRUE(f != NULL);
	fclose(f);
	snprintf(p, sizeof(p), "%s/cgroup.procs", dir);
	f = fopen(p, "we");
	ASSERT_TRUE(f != NULL);
	fputs("2000000000\n", f);
	fclose(f);
	ASSERT_EQ(moat_cgroup_kill(cg), -ETIMEDOUT);
	ASSERT_CONTAINS(getf(dir, "cgroup.kill"), "1");
	ASSERT_EQ(truncate(p, 0), 0);
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	drop_root();
}

/* We sit at the root of a pure v2 hierarchy (a container, or root on a host
 * without systemd): groups go to /moat below the root. */
TEST(cgroup_v2_fake_root)
{
	struct moat_cgroup_info info;
	char want[1024];
	make_root();
	put("proc/self/mountinfo",
	    "35 22 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 rw\n");
	put("proc/self/cgroup", "0::/\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
	put("sys/fs/cgroup/cgroup.subtree_control", "");
	put("sys/fs/cgroup/cgroup.procs", "1\n55\n");
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(info.mode, 2);
	snprintf(want, sizeof(want), "%s/sys/fs/cgroup", fake_root);
	ASSERT_STREQ(info.hier[0].base, want);
	ASSERT_EQ(info.hier[0].controllers, MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU);

	struct moat_cgroup *cg = NULL;
	const struct moat_cgroup_limits l = {.memory = 1 << 20};
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "r", &cg, NULL), 0);
	/* The root may enable controllers although it has processes. */
	ASSERT_CONTAINS(getf(want, "cgroup.subtree_control"), "+memory");
	ASSERT_STREQ(getf(want, "moat/r/memory.max"), "1048576\n");
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	drop_root();
}

/* A scope with processes and nothing writable above it: controllers cannot be
 * had, so a requested limit fails closed; without limits a tracking group is
 * still made right below us. */
TEST(cgroup_v2_fake_no_delegation_fails_closed)
{
	struct moat_cgroup_info info;
	struct moat_error err;
	struct moat_cgroup *cg = NULL;
	make_root();
	put("proc/self/mountinfo", "35 22 0:30 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
	put("proc/self/cgroup", "0::/a.scope\n");
	put("sys/fs/cgroup/cgroup.controllers", "cpu memory pids\n");
	put("sys/fs/cgroup/a.scope/cgroup.controllers", "memory pids\n");
	put("sys/fs/cgroup/a.scope/cgroup.subtree_control", "");
	put("sys/fs/cgroup/a.scope/cgroup.procs", "99\n");
	/* The root's cgroup.procs is read-only: not ours. */
	put("sys/fs/cgroup/cgroup.procs", "1\n");
	char p[600];
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/cgroup.procs", fake_root);
	ASSERT_EQ(chmod(p, 0444), 0);
	if (geteuid() == 0) {
		/* root ignores file modes: the root cgroup is writable, so the base is the
		 * root; check that instead and stop. */
		ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
		snprintf(p, sizeof(p), "%s/sys/fs/cgroup", fake_root);
		ASSERT_STREQ(info.hier[0].base, p);
		drop_root();
		return;
	}
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(info.mode, 2);
	ASSERT_EQ(info.hier[0].controllers, 0);
	const struct moat_cgroup_limits l = {.pids = 10};
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "x", &cg, &err), -EOPNOTSUPP);
	ASSERT_CONTAINS(err.message, "pids");
	drop_root();
}

/* This machine's shape: v1 controllers, a controller-less v2 mount, and our
 * memory cgroup below a per-process group. */
static void fake_hybrid(void)
{
	make_root();
	put("proc/self/mountinfo",
	    "30 22 0:25 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
	    "31 30 0:26 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
	    "32 30 0:27 / /sys/fs/cgroup/cpuacct rw - cgroup cgroup rw,cpuacct\n"
	    "33 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
	    "34 30 0:29 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
	    "35 30 0:30 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n"
	    "36 30 0:31 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n"
	    "37 30 0:32 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw\n"
	    "38 30 0:32 / /mnt/again\\040x rw - cgroup2 cgroup2 rw\n");
	put("proc/self/cgroup",
	    "9:name=systemd:/\n8:pids:/\n6:freezer:/\n"
	    "4:memory:/process_api/abc\n2:cpuacct:/\n1:cpu:/\n0::/\n");
	put("sys/fs/cgroup/unified/cgroup.controllers", "");
	put("sys/fs/cgroup/unified/cgroup.procs", "1\n");
	put("sys/fs/cgroup/memory/process_api/abc/cgroup.procs", "1\n");
	put("sys/fs/cgroup/pids/cgroup.procs", "1\n");
	put("sys/fs/cgroup/cpu/cgroup.procs", "1\n");
	put("sys/fs/cgroup/cpuacct/cgroup.procs", "1\n");
	put("sys/fs/cgroup/freezer/cgroup.procs", "1\n");
}

TEST(cgroup_hybrid_fake)
{
	struct moat_cgroup_info info;
	struct moat_cgroup *cg = NULL;
	const struct moat_cgroup_limits l = {.cpus_milli = 500, .memory = 32 << 20, .pids = 5};
	fake_hybrid();
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(info.mode, 1);
	ASSERT_TRUE(info.v2_tracking);
	ASSERT_EQ(info.n_hier, 6);
	ASSERT_EQ(info.available,
		  MOAT_CG_MEMORY | MOAT_CG_PIDS | MOAT_CG_CPU | MOAT_CG_CPUACCT | MOAT_CG_FREEZER);
	const char *mem_base = NULL;
	for (unsigned i = 0; i < info.n_hier; i++)
		if (info.hier[i].controllers == MOAT_CG_MEMORY)
			mem_base = info.hier[i].base;
	ASSERT_TRUE(mem_base != NULL);
	ASSERT_CONTAINS(mem_base, "/sys/fs/cgroup/memory/process_api/abc");
	char text[4096];
	ASSERT_TRUE(moat_cgroup_describe(&info, text, sizeof(text)) > 0);
	ASSERT_CONTAINS(text, "cgroup: v1 (legacy/hybrid)");
	ASSERT_CONTAINS(text, "v2 tracking group for cgroup.kill");
	ASSERT_CONTAINS(text, "v1 memory");
	ASSERT_CONTAINS(text, "/memory/process_api/abc/moat (writable)");
	ASSERT_EQ(moat_cgroup_describe(&info, text, 16), -ENOBUFS);

	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "h1", &cg, NULL), 0);
	ASSERT_EQ(moat_cgroup_n_dirs(cg), 6);
	ASSERT_TRUE(moat_cgroup_fd(cg) >= 0); /* the v2 tracking group */
	char p[1200];
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/memory/process_api/abc/moat/h1", fake_root);
	ASSERT_STREQ(getf(p, "memory.limit_in_bytes"), "33554432\n");
	ASSERT_STREQ(getf(p, "memory.swappiness"), "0\n");
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/pids/moat/h1", fake_root);
	ASSERT_STREQ(getf(p, "pids.max"), "5\n");
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/cpu/moat/h1", fake_root);
	ASSERT_STREQ(getf(p, "cpu.cfs_quota_us"), "50000\n");
	ASSERT_STREQ(getf(p, "cpu.cfs_period_us"), "100000\n");
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	drop_root();
}

TEST(cgroup_fake_missing_controller_and_bad_id)
{
	struct moat_cgroup_info info;
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	make_root();
	put("proc/self/mountinfo",
	    "33 30 0:28 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
	put("proc/self/cgroup", "4:memory:/\n");
	put("sys/fs/cgroup/memory/cgroup.procs", "");
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(info.mode, 1);
	const struct moat_cgroup_limits l = {.memory = 1 << 20, .pids = 5};
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "m", &cg, &err), -EOPNOTSUPP);
	ASSERT_STREQ(err.stage, "cgroup");
	ASSERT_CONTAINS(err.message, "pids");
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "../x", &cg, &err), -EINVAL);
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "", &cg, &err), -EINVAL);
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, ".hidden", &cg, &err), -EINVAL);
	drop_root();
}

TEST(cgroup_open_refuses_non_cgroupfs)
{
	struct moat_cgroup *cg = NULL;
	char tmp[] = "/tmp", relative[] = "relative/x";
	char *dirs[] = {tmp};
	ASSERT_EQ(moat_cgroup_open(dirs, 1, &cg), -EINVAL);
	char *rel[] = {relative};
	ASSERT_EQ(moat_cgroup_open(rel, 1, &cg), -EINVAL);
}

TEST(rlimits_plan_and_apply)
{
	struct moat_rlimit_opts o;
	const struct moat_cgroup_limits l = {.memory = 1ull << 30, .pids = 64};
	moat_rlimits_plan(&l, 512, 1 << 20, false, &o);
	ASSERT_EQ(o.nofile, 512);
	ASSERT_EQ(o.fsize, 1 << 20);
	ASSERT_EQ(o.as, 0);
	ASSERT_EQ(o.nproc, 0);
	moat_rlimits_plan(&l, 512, 1 << 20, true, &o);
	ASSERT_EQ(o.as, 1ull << 30);
	ASSERT_EQ(o.nproc, 64);

	ASSERT_EQ(moat_rlimits_apply(&o), 0);
	struct rlimit rl;
	ASSERT_EQ(getrlimit(RLIMIT_CORE, &rl), 0);
	ASSERT_EQ(rl.rlim_cur, 0);
	ASSERT_EQ(rl.rlim_max, 0);
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ASSERT_EQ(rl.rlim_max, 512);
	ASSERT_EQ(getrlimit(RLIMIT_AS, &rl), 0);
	ASSERT_EQ(rl.rlim_max, 1ull << 30);
	/* Never raises: asking for more keeps the lower hard limit. */
	o.nofile = 100000;
	ASSERT_EQ(moat_rlimits_apply(&o), 0);
	ASSERT_EQ(getrlimit(RLIMIT_NOFILE, &rl), 0);
	ASSERT_EQ(rl.rlim_max, 512);
	/* The limits bind: files past FSIZE give EFBIG (SIGXFSZ ignored). */
	signal(SIGXFSZ, SIG_IGN);
	char path[] = "/tmp/moat-fsize.XXXXXX";
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	unlink(path);
	static char block[1 << 16];
	ssize_t n = 0;
	for (int i = 0; i < 32 && n >= 0; i++)
		n = write(fd, block, sizeof(block));
	ASSERT_EQ(n, -1);
	ASSERT_EQ(errno, EFBIG);
	close(fd);
	/* ... and big mappings fail at RLIMIT_AS. */
	ASSERT_TRUE(mmap(NULL, 2ull << 30, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
			 0) == MAP_FAILED);
}

/* ---- the real hierarchies of this machine --------------------------------------- */

static void unique_id(char *buf, size_t len, const char *what)
{
	snprintf(buf, len, "unit-%s-%d", what, (int)getpid());
}

/* Unprivileged (or root that dropped to nobody): creating a limited group
 * must fail with EACCES/EPERM, which is the caller's fail-closed path. */
static void expect_unprivileged_refusal(void)
{
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	const struct moat_cgroup_limits l = {.memory = 32 << 20, .pids = 5};
	char id[64];
	unique_id(id, sizeof(id), "unpriv");
	struct moat_cgroup_info info;
	ASSERT_EQ(moat_cgroup_detect(&info), 0);
	int r = moat_cgroup_create(&l, id, &cg, &err);
	if (r == 0) {
		moat_cgroup_destroy(cg);
		moat_tap_fail(__FILE__, __LINE__, "unprivileged uid %d could create a cgroup",
			      (int)geteuid());
	}
	ASSERT_TRUE(r == -EACCES || r == -EPERM || r == -EROFS);
	ASSERT_STREQ(err.stage, "cgroup");
	ASSERT_CONTAINS(err.message, "cannot create cgroup");
}

static bool can_create_real(void)
{
	struct moat_cgroup_info info;
	if (moat_cgroup_detect(&info) < 0)
		return false;
	return (info.usable & (MOAT_CG_MEMORY | MOAT_CG_PIDS)) == (MOAT_CG_MEMORY | MOAT_CG_PIDS);
}

TEST(cgroup_real_detect)
{
	struct moat_cgroup_info info;
	ASSERT_EQ(moat_cgroup_detect(&info), 0);
	ASSERT_TRUE(info.mode == 1 || info.mode == 2);
	ASSERT_TRUE(info.n_hier > 0);
	ASSERT_TRUE(info.available & MOAT_CG_MEMORY);
	ASSERT_TRUE(info.available & MOAT_CG_PIDS);
	/* Every hierarchy's self directory exists (we sit in it). */
	for (unsigned i = 0; i < info.n_hier; i++) {
		struct stat sb;
		ASSERT_EQ(stat(info.hier[i].self, &sb), 0);
		ASSERT_EQ(stat(info.hier[i].base, &sb), 0);
	}
}

TEST(cgroup_real_unprivileged_fails_closed)
{
	if (geteuid() != 0) {
		expect_unprivileged_refusal();
		return;
	}
	/* As root: drop to nobody in a child and check the same. */
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		expect_unprivileged_refusal();
		_exit(0);
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
}

/* Fork a child that waits on a pipe until it has been attached, then runs fn. */
static pid_t spawn_in(struct moat_cgroup *cg, void (*fn)(void))
{
	int p[2];
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		char c;
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(90);
		fn();
		_exit(0);
	}
	close(p[0]);
	ASSERT_EQ(moat_cgroup_attach(cg, pid), 0);
	ASSERT_EQ(write(p[1], "x", 1), 1);
	close(p[1]);
	return pid;
}

/* Fork until refused: exit 0 if the refusal was EAGAIN after 3..5 forks. */
static void fork_until_refused(void)
{
	int n = 0;
	for (; n < 100; n++) {
		pid_t c = fork();
		if (c == 0) {
			pause();
			_exit(0);
		}
		if (c < 0)
			break;
	}
	_exit(errno == EAGAIN && n >= 3 && n <= 4 ? 0 : 10 + n);
}

TEST(cgroup_real_pids_limit)
{
	if (!can_create_real()) {
		expect_unprivileged_refusal();
		return;
	}
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	const struct moat_cgroup_limits l = {.pids = 5};
	ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	char id[64];
	unique_id(id, sizeof(id), "pids");
	ASSERT_EQ(moat_cgroup_create(&l, id, &cg, &err), 0);
	ASSERT_TRUE(moat_cgroup_limited(cg) & MOAT_CG_PIDS);
	pid_t pid = spawn_in(cg, fork_until_refused);
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0); /* 1 + 4 forks = 5 = pids.max */
	struct moat_cgroup_stats st;
	ASSERT_EQ(moat_cgroup_stats(cg, &st), 0);
	ASSERT_TRUE(st.pids_hit);
	ASSERT_GE(st.pids_max_hits, 1);
	ASSERT_EQ(st.pids_current, 4); /* the paused grandchildren */
	if (st.have_pids_peak)
		ASSERT_EQ(st.pids_peak, 5);
	ASSERT_EQ(moat_cgroup_kill(cg), 0);
	/* Zombies stay charged until reaped: reap the orphans that came to us. */
	for (int i = 0; i < 1000; i++) {
		while (waitpid(-1, NULL, WNOHANG) > 0)
			;
		ASSERT_EQ(moat_cgroup_stats(cg, &st), 0);
		if (st.pids_current == 0)
			break;
		usleep(1000);
	}
	ASSERT_EQ(st.pids_current, 0);
	char dir[1100];
	snprintf(dir, sizeof(dir), "%s", moat_cgroup_dir(cg, 0));
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	struct stat sb;
	ASSERT_ERRNO(stat(dir, &sb), ENOENT);
}

static void balloon(void)
{
	size_t sz = 100u << 20;
	char *m = mmap(NULL, sz, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		_exit(20);
	for (size_t i = 0; i < sz; i += 4096)
		m[i] = 1;
	_exit(21); /* must not get here */
}

TEST(cgroup_real_memory_oom)
{
	if (!can_create_real()) {
		expect_unprivileged_refusal();
		return;
	}
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	const struct moat_cgroup_limits l = {.memory = 32 << 20};
	char id[64];
	unique_id(id, sizeof(id), "mem");
	ASSERT_EQ(moat_cgroup_create(&l, id, &cg, &err), 0);
	ASSERT_TRUE(moat_cgroup_limited(cg) & MOAT_CG_MEMORY);
	pid_t pid = spawn_in(cg, balloon);
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFSIGNALED(status));
	ASSERT_EQ(WTERMSIG(status), SIGKILL);
	struct moat_cgroup_stats st;
	ASSERT_EQ(moat_cgroup_stats(cg, &st), 0);
	ASSERT_TRUE(st.oom);
	ASSERT_TRUE(st.have_mem_peak);
	ASSERT_TRUE(st.mem_peak <= (32u << 20));
	ASSERT_TRUE(st.mem_peak >= (16u << 20));
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
}

static pid_t *daemon_pid;

/* Double fork + setsid + ignore SIGHUP/SIGTERM, report the daemon's pid. */
static void double_fork(void)
{
	pid_t c = fork();
	if (c == 0) {
		setsid();
		pid_t d = fork();
		if (d == 0) {
			signal(SIGHUP, SIG_IGN);
			signal(SIGTERM, SIG_IGN);
			*daemon_pid = getpid();
			for (;;)
				pause();
		}
		_exit(0);
	}
	waitpid(c, NULL, 0);
	for (;;)
		pause();
}

static bool proc_alive(pid_t pid)
{
	char p[64], buf[512];
	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' && rp[2] != 'Z' && rp[2] != 'X';
}

TEST(cgroup_real_kill_double_forked_daemon)
{
	if (!can_create_real()) {
		expect_unprivileged_refusal();
		return;
	}
	/* Orphans come to us, so they can be reaped and checked. */
	ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	daemon_pid = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(daemon_pid != MAP_FAILED);
	*daemon_pid = 0;
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	const struct moat_cgroup_limits l = {.pids = 32, .memory = 64 << 20};
	char id[64];
	unique_id(id, sizeof(id), "kill");
	ASSERT_EQ(moat_cgroup_create(&l, id, &cg, &err), 0);
	pid_t pid = spawn_in(cg, double_fork);
	for (int i = 0; i < 2000 && *daemon_pid == 0; i++)
		usleep(1000);
	pid_t d = *daemon_pid;
	ASSERT_TRUE(d > 0);
	ASSERT_TRUE(proc_alive(d));
	ASSERT_EQ(moat_cgroup_kill(cg), 0);
	/* Reap what came to us. */
	while (waitpid(-1, NULL, WNOHANG) > 0 || (proc_alive(d) && usleep(1000) == 0))
		;
	ASSERT_TRUE(!proc_alive(d));
	ASSERT_TRUE(!proc_alive(pid));
	unsigned n = moat_cgroup_n_dirs(cg);
	char dirs[MOAT_CGROUP_MAX_HIER][1100];
	for (unsigned i = 0; i < n; i++)
		snprintf(dirs[i], sizeof(dirs[i]), "%s", moat_cgroup_dir(cg, i));
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	struct stat sb;
	for (unsigned i = 0; i < n; i++)
		ASSERT_ERRNO(stat(dirs[i], &sb), ENOENT);
}

/* Destroy kills what is still running, and gc's re-open path works. */
TEST(cgroup_real_destroy_running_and_reopen)
{
	if (!can_create_real()) {
		expect_unprivileged_refusal();
		return;
	}
	ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	daemon_pid = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(daemon_pid != MAP_FAILED);
	*daemon_pid = 0;
	struct moat_cgroup *cg = NULL;
	const struct moat_cgroup_limits l = {.pids = 32};
	char id[64];
	unique_id(id, sizeof(id), "reopen");
	ASSERT_EQ(moat_cgroup_create(&l, id, &cg, NULL), 0);
	pid_t pid = spawn_in(cg, double_fork);
	for (int i = 0; i < 2000 && *daemon_pid == 0; i++)
		usleep(1000);
	ASSERT_TRUE(*daemon_pid > 0);
	unsigned n = moat_cgroup_n_dirs(cg);
	char *dirs[MOAT_CGROUP_MAX_HIER];
	for (unsigned i = 0; i < n; i++)
		dirs[i] = strdup(moat_cgroup_dir(cg, i));
	/* Forget cg without destroying it (a crashed supervisor) and re-open. */
	struct moat_cgroup *again = NULL;
	ASSERT_EQ(moat_cgroup_open(dirs, n, &again), 0);
	ASSERT_EQ(moat_cgroup_n_dirs(again), n);
	ASSERT_EQ(moat_cgroup_destroy(again), 0);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
	ASSERT_TRUE(!proc_alive(*daemon_pid));
	ASSERT_TRUE(!proc_alive(pid));
	struct stat sb;
	for (unsigned i = 0; i < n; i++)
		ASSERT_ERRNO(stat(dirs[i], &sb), ENOENT);
	/* The original handle's directories are already gone: destroy is quiet. */
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
}

static int count_fds(void)
{
	int n = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	while (d && (de = readdir(d)))
		n += de->d_name[0] != '.';
	if (d)
		closedir(d);
	return n;
}

/* 200 create/destroy cycles (root: real groups; unprivileged: refused
 * creations) leave the fd count and the cgroup tree as they were. */
TEST(cgroup_real_200_cycles_no_leak)
{
	const struct moat_cgroup_limits l = {.memory = 64 << 20, .pids = 32, .cpus_milli = 500};
	int fds = count_fds();
	bool can = can_create_real();
	for (int i = 0; i < 200; i++) {
		struct moat_cgroup *cg = NULL;
		char id[64];
		snprintf(id, sizeof(id), "unit-cycle-%d-%d", (int)getpid(), i);
		int r = moat_cgroup_create(&l, id, &cg, NULL);
		if (!can) {
			ASSERT_TRUE(r == -EACCES || r == -EPERM);
			continue;
		}
		ASSERT_EQ(r, 0);
		char dir[1100];
		snprintf(dir, sizeof(dir), "%s", moat_cgroup_dir(cg, 0));
		ASSERT_EQ(moat_cgroup_destroy(cg), 0);
		struct stat sb;
		ASSERT_ERRNO(stat(dir, &sb), ENOENT);
	}
	ASSERT_EQ(count_fds(), fds);
}

/* OCI memory.disableOOMKiller: v1's memory.oom_control gets 1 (the memory
 * hierarchy only); v2 has no such switch, and creation fails closed. */
TEST(cgroup_fake_disable_oom_killer)
{
	struct moat_cgroup_info info;
	struct moat_cgroup *cg = NULL;
	struct moat_error err = {0};
	const struct moat_cgroup_limits l = {.memory = 32 << 20, .oom_kill_disable = true};
	char p[1200];
	struct stat sb;
	fake_hybrid();
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "o1", &cg, &err), 0);
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/memory/process_api/abc/moat/o1", fake_root);
	ASSERT_STREQ(getf(p, "memory.oom_control"), "1\n");
	ASSERT_STREQ(getf(p, "memory.limit_in_bytes"), "33554432\n");
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/pids/moat/o1/memory.oom_control", fake_root);
	ASSERT_ERRNO(stat(p, &sb), ENOENT);
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	/* control: without the field no oom_control is written */
	const struct moat_cgroup_limits plain = {.memory = 32 << 20};
	ASSERT_EQ(moat_cgroup_create_with(&info, &plain, "o2", &cg, &err), 0);
	snprintf(p, sizeof(p), "%s/sys/fs/cgroup/memory/process_api/abc/moat/o2/memory.oom_control",
		 fake_root);
	ASSERT_ERRNO(stat(p, &sb), ENOENT);
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	drop_root();

	fake_v2_user();
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	cg = NULL;
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "o3", &cg, &err), -EOPNOTSUPP);
	ASSERT_TRUE(cg == NULL);
	ASSERT_CONTAINS(err.message, "memory.oom_control");
	drop_root();
}

/* The v1 kill path with a freezer: freeze, then signal, then thaw. In a fake
 * v1 tree the group's cgroup.procs and freezer.state are FIFOs served by a
 * helper in the order the kill must take; any other order leaves both sides
 * blocked in open(2) and the alarm fails the test. The helper sees the
 * victim die of SIGKILL before it lets the thaw's write through. */
static int fifo_write(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = write(fd, s, strlen(s));
	close(fd);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static int fifo_read(const char *path, char *buf, size_t len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	size_t off = 0;
	ssize_t n;
	while (off + 1 < len && (n = read(fd, buf + off, len - 1 - off)) > 0)
		off += (size_t)n;
	buf[off] = 0;
	close(fd);
	return 0;
}

static int serve_kill_order(const char *procs, const char *state)
{
	char buf[64], list[32];
	int status;
	pid_t victim = fork();
	if (victim == 0) {
		for (;;)
			pause();
	}
	if (victim < 0)
		return 1;
	snprintf(list, sizeof(list), "%d\n", (int)victim);
	if (fifo_write(procs, list) < 0) /* the first count */
		return 2;
	if (fifo_read(state, buf, sizeof(buf)) < 0 || strncmp(buf, "FROZEN", 6) != 0)
		return 3; /* the freeze comes first */
	if (fifo_write(state, "FROZEN\n") < 0) /* the wait for FROZEN */
		return 4;
	if (fifo_write(procs, list) < 0) /* the signalling pass, while frozen */
		return 5;
	if (waitpid(victim, &status, 0) != victim || !WIFSIGNALED(status) ||
	    WTERMSIG(status) != SIGKILL)
		return 6;
	if (fifo_read(state, buf, sizeof(buf)) < 0 || strncmp(buf, "THAWED", 6) != 0)
		return 7; /* the thaw, after the victim died */
	/* empty now: the next count gets EOF, and every later one an empty
	 * regular file put in the FIFO's place before that EOF */
	char empty[2100];
	snprintf(empty, sizeof(empty), "%s.empty", procs);
	int efd = open(empty, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	int fd = open(procs, O_WRONLY | O_CLOEXEC);
	if (efd < 0 || fd < 0 || rename(empty, procs) < 0)
		return 8;
	close(efd);
	close(fd);
	return 0;
}

TEST(cgroup_v1_fake_kill_freezes_signals_thaws)
{
	struct moat_cgroup_info info;
	struct moat_cgroup *cg = NULL;
	struct moat_error err;
	const struct moat_cgroup_limits l = {0};
	char procs[2048], state[2048], pids_procs[2048];
	make_root();
	put("proc/self/mountinfo",
	    "30 22 0:25 / /sys/fs/cgroup rw - tmpfs tmpfs rw,mode=755\n"
	    "34 30 0:29 / /sys/fs/cgroup/freezer rw - cgroup cgroup rw,freezer\n"
	    "35 30 0:30 / /sys/fs/cgroup/pids rw - cgroup cgroup rw,pids\n");
	put("proc/self/cgroup", "8:pids:/\n6:freezer:/\n");
	put("sys/fs/cgroup/pids/cgroup.procs", "1\n");
	put("sys/fs/cgroup/freezer/cgroup.procs", "1\n");
	ASSERT_EQ(moat_cgroup_detect_at(fake_root, &info), 0);
	ASSERT_EQ(info.mode, 1);
	ASSERT_EQ(moat_cgroup_create_with(&info, &l, "k1", &cg, &err), 0);
	ASSERT_EQ(moat_cgroup_n_dirs(cg), 2);
	snprintf(procs, sizeof(procs), "%s/sys/fs/cgroup/freezer/moat/k1/cgroup.procs", fake_root);
	snprintf(state, sizeof(state), "%s/sys/fs/cgroup/freezer/moat/k1/freezer.state", fake_root);
	snprintf(pids_procs, sizeof(pids_procs), "%s/sys/fs/cgroup/pids/moat/k1/cgroup.procs",
		 fake_root);
	(void)unlink(procs);
	(void)unlink(pids_procs);
	ASSERT_EQ(mkfifo(procs, 0600), 0);
	ASSERT_EQ(mkfifo(state, 0600), 0);
	pid_t helper = fork();
	ASSERT_GE(helper, 0);
	if (helper == 0) {
		(void)prctl(PR_SET_PDEATHSIG, SIGKILL); /* not past the test */
		alarm(10);
		_exit(serve_kill_order(procs, state));
	}
	alarm(10); /* a wrong order blocks the kill in open(2) */
	ASSERT_EQ(moat_cgroup_kill(cg), 0);
	alarm(0);
	int status;
	ASSERT_EQ(waitpid(helper, &status, 0), helper);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ASSERT_EQ(unlink(procs), 0);
	ASSERT_EQ(unlink(state), 0);
	ASSERT_EQ(moat_cgroup_destroy(cg), 0);
	drop_root();
}
