/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Policy limits -> cgroup/rlimits: the fail-closed rule and the status reasons. */
#include <grp.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "limits/limits.h"
#include "policy/plan.h"
#include "shared/macro.h"

static void policy_limits(struct moat_policy *p, unsigned set, unsigned degrade)
{
	memset(p, 0, sizeof(*p));
	p->memory = 64 << 20;
	p->pids = 32;
	p->cpus_milli = 1000;
	p->nofile = 256;
	p->fsize = 1 << 20;
	p->limits_set = set;
	p->allow_degraded = degrade;
}

/* Runs the unprivileged checks: as nobody when root. */
static void as_unprivileged(void (*fn)(void))
{
	if (geteuid() != 0) {
		fn();
		return;
	}
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(3);
		fn();
		_exit(0);
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
}

/* The layer reads the plan's limits part, built from the policy. */
static int limits_setup(const struct moat_policy *p, const char *id, struct moat_limits *l,
			struct moat_error *err)
{
	struct moat_plan_limits pl;
	moat_plan_build_limits(p, &pl);
	return moat_limits_setup(&pl, id, l, err);
}

static void unpriv_rules(void)
{
	struct moat_policy p;
	struct moat_limits l;
	struct moat_error err;
	char id[64];
	snprintf(id, sizeof(id), "unit-limits-%d", (int)getpid());

	/* Asked for explicitly, no --allow-degraded: fail closed. */
	policy_limits(&p, MOAT_LIMIT_MEMORY, 0);
	int r = limits_setup(&p, id, &l, &err);
	ASSERT_TRUE(r == -EACCES || r == -EPERM);
	ASSERT_STREQ(err.stage, "cgroup");
	ASSERT_CONTAINS(err.message, "--allow-degraded cgroup");

	/* With --allow-degraded cgroup: rlimits instead. */
	policy_limits(&p, MOAT_LIMIT_MEMORY | MOAT_LIMIT_PIDS, MOAT_DEGRADE_CGROUP);
	ASSERT_EQ(limits_setup(&p, id, &l, &err), 0);
	ASSERT_TRUE(l.degraded);
	ASSERT_TRUE(l.cg == NULL);
	ASSERT_EQ(l.rl.as, 64 << 20);
	ASSERT_EQ(l.rl.nproc, 32);
	ASSERT_EQ(l.rl.nofile, 256);
	ASSERT_EQ(moat_limits_cgroup_fd(&l), -EOPNOTSUPP);
	ASSERT_EQ(moat_limits_attach(&l, getpid(), MOAT_CGROUP_ATTACH_V1 | MOAT_CGROUP_ATTACH_V2),
		  0);
	struct moat_status st = {.reason = MOAT_REASON_EXITED};
	moat_limits_finish(&l, &st);
	ASSERT_STREQ(st.degraded, "cgroup");
	ASSERT_EQ(moat_limits_teardown(&l), 0);

	/* Only defaults: degrade without being asked, and say so. */
	policy_limits(&p, 0, 0);
	ASSERT_EQ(limits_setup(&p, id, &l, &err), 0);
	ASSERT_TRUE(l.degraded);
	ASSERT_EQ(l.rl.as, 64 << 20);
}

TEST(limits_unprivileged_fail_closed_or_degrade)
{
	as_unprivileged(unpriv_rules);
}

TEST(limits_root_creates_cgroup)
{
	if (geteuid() != 0) {
		as_unprivileged(unpriv_rules);
		return;
	}
	struct moat_policy p;
	struct moat_limits l;
	struct moat_error err;
	char id[64];
	snprintf(id, sizeof(id), "unit-limits-root-%d", (int)getpid());
	policy_limits(&p, MOAT_LIMIT_MEMORY, 0);
	ASSERT_EQ(limits_setup(&p, id, &l, &err), 0);
	ASSERT_TRUE(!l.degraded);
	ASSERT_TRUE(l.cg != NULL);
	ASSERT_EQ(l.rl.as, 0); /* cgroups bind: no address-space limit */
	ASSERT_EQ(l.rl.nproc, 0);
	ASSERT_TRUE(moat_cgroup_limited(l.cg) & MOAT_CG_MEMORY);
	char dir[1100];
	snprintf(dir, sizeof(dir), "%s", moat_cgroup_dir(l.cg, 0));
	ASSERT_EQ(moat_limits_teardown(&l), 0);
	struct stat sb;
	ASSERT_ERRNO(stat(dir, &sb), ENOENT);
}

/* Reasons from a fake v2 group's statistics. */
static void fake_group(char *root, size_t len, struct moat_limits *l, const char *events,
		       const char *pids_events)
{
	snprintf(root, len, "/tmp/moat-limtest.XXXXXX");
	ASSERT_TRUE(mkdtemp(root) != NULL);
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && mkdir -p proc/self sys/fs/cgroup && "
		 "echo '1 1 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw' > proc/self/mountinfo && "
		 "echo '0::/' > proc/self/cgroup && echo 'memory pids' > "
		 "sys/fs/cgroup/cgroup.controllers && : > sys/fs/cgroup/cgroup.procs",
		 root);
	ASSERT_EQ(system(cmd), 0);
	struct moat_cgroup_info info;
	ASSERT_EQ(moat_cgroup_detect_at(root, &info), 0);
	memset(l, 0, sizeof(*l));
	l->cl.memory = 1 << 20;
	l->cl.pids = 8;
	ASSERT_EQ(moat_cgroup_create_with(&info, &l->cl, "r", &l->cg, NULL), 0);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s/sys/fs/cgroup/moat/r' && printf '%s' > memory.events && printf '%s' > "
		 "pids.events && echo 1048576 > memory.peak && echo 8 > pids.peak",
		 root, events, pids_events);
	ASSERT_EQ(system(cmd), 0);
}

static void drop(const char *root, struct moat_limits *l)
{
	char cmd[600];
	moat_limits_teardown(l);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	(void)!system(cmd);
}

TEST(limits_finish_reasons)
{
	char root[64];
	struct moat_limits l;
	struct moat_status st;

	fake_group(root, sizeof(root), &l, "oom 1\noom_kill 1\n", "max 0\n");
	st = (struct moat_status){
		.reason = MOAT_REASON_SIGNALED, .signal = SIGKILL, .exit_code = 137};
	moat_limits_finish(&l, &st);
	ASSERT_EQ(st.reason, MOAT_REASON_MEMORY);
	ASSERT_EQ(st.exit_code, 137);
	ASSERT_EQ(st.mem_peak, 1048576);
	ASSERT_EQ(st.pids_peak, 8);
	ASSERT_STREQ(st.degraded, "");
	/* A shell that reported its child's OOM kill with status 1: still memory. */
	st = (struct moat_status){.reason = MOAT_REASON_EXITED, .exit_code = 1};
	moat_limits_finish(&l, &st);
	ASSERT_EQ(st.reason, MOAT_REASON_MEMORY);
	ASSERT_EQ(st.exit_code, 137);
	/* The command recovered and succeeded: its own result stands. */
	st = (struct moat_status){.reason = MOAT_REASON_EXITED, .exit_code = 0};
	moat_limits_finish(&l, &st);
	ASSERT_EQ(st.reason, MOAT_REASON_EXITED);
	ASSERT_EQ(st.exit_code, 0);
	/* A timeout stays a timeout. */
	st = (struct moat_status){.reason = MOAT_REASON_TIMEOUT, .exit_code = 124};
	moat_limits_finish(&l, &st);
	ASSERT_EQ(st.reason, MOAT_REASON_TIMEOUT);
	ASSERT_EQ(st.exit_code, 124);
	drop(root, &l);

	fake_group(root, sizeof(root), &l, "oom_kill 0\n", "max 3\n");
	st = (struct moat_status){.reason = MOAT_REASON_EXITED, .exit_code = 2};
	moat_limits_finish(&l, &st);
	ASSERT_EQ(st.reason, MOAT_REASON_PIDS);
	ASSERT_EQ(st.exit_code, 2);
	st = (struct moat_status){.reason = MOAT_REASON_EXITED, .exit_code = 0};
	moat_limits_finish(&l, &st);
	ASSERT_EQ(st.reason, MOAT_REASON_EXITED);
	drop(root, &l);
}
