/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The state directory: register/list/unregister, run.json, and gc of crashed runs. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/tap.h"
#include "supervisor/state.h"
#include "supervisor/run.h"
#include "limits/supervise_limits.h"
#include "shared/macro.h"

static char sdir[128];

static void make_sdir(void)
{
	char tmpl[] = "/tmp/moat-statetest.XXXXXX";
	ASSERT_TRUE(mkdtemp(tmpl) != NULL);
	/* A sub-directory that does not exist yet: register creates it. */
	snprintf(sdir, sizeof(sdir), "%s/state/runs", tmpl);
}

static void drop_sdir(void)
{
	char cmd[300];
	snprintf(cmd, sizeof(cmd), "rm -rf '%.*s'", (int)(strstr(sdir, "/state/runs") - sdir),
		 sdir);
	(void)!system(cmd);
}

static void fill(struct moat_state_record *r, const char *id)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->id, sizeof(r->id), "%s", id);
	r->pid = getpid();
	r->start_us = 1700000000123456ull;
}

/* Entries of the state directory, not counting the spare directories kept
 * for the next runs (empty, at most 4: count_spares) */
static unsigned count_prefix(const char *prefix, bool match)
{
	unsigned n = 0;
	DIR *d = opendir(sdir);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (!streq(de->d_name, ".") && !streq(de->d_name, "..") &&
		    startswith(de->d_name, prefix) == match)
			n++;
	if (d)
		closedir(d);
	return n;
}

static unsigned count_entries(void)
{
	return count_prefix(".spare-", false);
}

static unsigned count_spares(void)
{
	return count_prefix(".spare-", true);
}

TEST(state_default_dir)
{
	char buf[256];
	if (geteuid() == 0) {
		ASSERT_EQ(moat_state_default_dir(buf, sizeof(buf)), 0);
		ASSERT_STREQ(buf, "/run/moat/live");
		return;
	}
	setenv("XDG_STATE_HOME", "/xdg", 1);
	ASSERT_EQ(moat_state_default_dir(buf, sizeof(buf)), 0);
	ASSERT_STREQ(buf, "/xdg/moat/live");
	setenv("XDG_STATE_HOME", "relative", 1); /* ignored, as the spec says */
	setenv("HOME", "/home/u", 1);
	ASSERT_EQ(moat_state_default_dir(buf, sizeof(buf)), 0);
	ASSERT_STREQ(buf, "/home/u/.local/state/moat/live");
	ASSERT_EQ(moat_state_default_dir(buf, 8), -ENAMETOOLONG);
}

TEST(state_new_id)
{
	char a[33], b[33];
	ASSERT_EQ(moat_state_new_id(a, sizeof(a)), 0);
	ASSERT_EQ(moat_state_new_id(b, sizeof(b)), 0);
	ASSERT_EQ(strlen(a), 32);
	ASSERT_TRUE(strspn(a, "0123456789abcdef") == 32);
	ASSERT_TRUE(!streq(a, b));
	ASSERT_EQ(moat_state_new_id(a, 10), -ENOBUFS);
}

TEST(state_record_json_roundtrip_and_rejects)
{
	struct moat_state_record r, back;
	fill(&r, "run-1");
	r.n_cgroups = 2;
	snprintf(r.cgroups[0], sizeof(r.cgroups[0]), "/sys/fs/cgroup/pids/moat/run-1");
	snprintf(r.cgroups[1], sizeof(r.cgroups[1]), "/sys/fs/cgroup/unified/moat/run-1");
	r.n_tmpdirs = 1;
	snprintf(r.tmpdirs[0], sizeof(r.tmpdirs[0]), "/tmp/moat-\"quoted\"");
	char *json = NULL;
	ASSERT_EQ(moat_state_record_to_json(&r, &json), 0);
	ASSERT_EQ(moat_state_record_parse(json, strlen(json), &back), 0);
	free(json);
	ASSERT_TRUE(memcmp(&r, &back, sizeof(r)) == 0);

	const char *bad[] = {
		"",
		"[]",
		"{\"id\":\"a\",\"pid\":1,\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[],\"x\":1}",
		"{\"id\":\"../a\",\"pid\":1,\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[]}",
		"{\"id\":\"a\",\"id\":\"b\",\"pid\":1,\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[]}",
		"{\"id\":\"a\",\"pid\":0,\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[]}",
		"{\"id\":\"a\",\"pid\":1,\"start_us\":-1,\"cgroups\":[],\"tmpdirs\":[]}",
		"{\"id\":\"a\",\"pid\":1,\"start_us\":0,\"cgroups\":[\"rel\"],\"tmpdirs\":[]}",
		"{\"id\":\"a\",\"pid\":1,\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[\"/a\\u0000b\"]}",
		"{\"id\":\"a\",\"pid\":1,\"start_us\":0,\"cgroups\":[\"/1\",\"/2\",\"/3\",\"/4\",\"/5\","
		"\"/6\",\"/7\",\"/8\",\"/9\"],\"tmpdirs\":[]}",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++)
		ASSERT_EQ(moat_state_record_parse(bad[i], strlen(bad[i]), &back), -EINVAL);
	ASSERT_EQ(moat_state_record_parse("{}", MOAT_STATE_JSON_MAX + 1, &back), -EFBIG);
}

TEST(state_register_list_unregister)
{
	struct moat_state_record r;
	struct moat_state_entry *e = NULL, *e2 = NULL;
	struct moat_state_record *list = NULL;
	size_t n = 0;
	make_sdir();
	fill(&r, "live-one");
	ASSERT_EQ(moat_state_register(sdir, &r, &e), 0);
	ASSERT_EQ(moat_state_register(sdir, &r, &e2), -EEXIST);
	ASSERT_EQ(count_entries(), 1);

	ASSERT_EQ(moat_state_list(sdir, &list, &n), 0);
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(list[0].id, "live-one");
	ASSERT_EQ(list[0].pid, getpid());
	ASSERT_EQ(list[0].start_us, 1700000000123456ull);
	free(list);

	/* Update: the cgroups and temporary directories appear later. */
	r.n_tmpdirs = 1;
	snprintf(r.tmpdirs[0], sizeof(r.tmpdirs[0]), "/tmp/moat-x");
	ASSERT_EQ(moat_state_update(e, &r), 0);

	/* Another process sees it live too, and gc leaves it alone. */
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		struct moat_state_record *l2 = NULL;
		size_t n2 = 0;
		struct moat_state_gc_result g;
		if (moat_state_list(sdir, &l2, &n2) < 0 || n2 != 1 || l2[0].n_tmpdirs != 1)
			_exit(1);
		if (moat_state_gc(sdir, &g) < 0 || g.live != 1 || g.removed != 0)
			_exit(2);
		_exit(0);
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);

	ASSERT_EQ(moat_state_unregister(e), 0);
	ASSERT_EQ(count_entries(), 0);
	ASSERT_EQ(moat_state_list(sdir, &list, &n), 0);
	ASSERT_EQ(n, 0);
	free(list);
	drop_sdir();
}

static void make_tmpdir(char *buf, size_t len, const char *outside)
{
	snprintf(buf, len, "/tmp/moat-gctest.XXXXXX");
	ASSERT_TRUE(mkdtemp(buf) != NULL);
	char p[512];
	snprintf(p, sizeof(p), "%s/a/b/c", buf);
	char cmd[2048];
	snprintf(cmd, sizeof(cmd), "mkdir -p '%s' && echo hi > '%s/file' && ln -s '%s' '%s/a/link'",
		 p, p, outside, buf);
	ASSERT_EQ(system(cmd), 0);
}

/* A run whose supervisor died without cleaning up: a child registers, makes
 * a cgroup with a sleeping process when it can, and _exits. */
TEST(state_gc_crashed_run)
{
	char tmpdir[128], outside[] = "/tmp/moat-outside.XXXXXX";
	struct moat_state_entry *live = NULL;
	struct moat_state_record r;
	make_sdir();
	int ofd = mkstemp(outside);
	ASSERT_TRUE(ofd >= 0);
	close(ofd);
	make_tmpdir(tmpdir, sizeof(tmpdir), outside);

	/* One live run (ours) that gc must not touch. */
	fill(&r, "still-running");
	ASSERT_EQ(moat_state_register(sdir, &r, &live), 0);

	ASSERT_EQ(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	pid_t *sleeper =
		mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	ASSERT_TRUE(sleeper != MAP_FAILED);
	*sleeper = 0;
	char id[64];
	snprintf(id, sizeof(id), "crashed-%d", (int)getpid());
	bool with_cgroup = geteuid() == 0;
	pid_t pid = fork();
	ASSERT_TRUE(pid >= 0);
	if (pid == 0) {
		struct moat_state_record c;
		struct moat_state_entry *e = NULL;
		fill(&c, id);
		c.n_tmpdirs = 1;
		snprintf(c.tmpdirs[0], sizeof(c.tmpdirs[0]), "%s", tmpdir);
		if (with_cgroup) {
			struct moat_cgroup *cg = NULL;
			const struct moat_cgroup_limits l = {.pids = 16};
			if (moat_cgroup_create(&l, id, &cg, NULL) < 0)
				_exit(3);
			for (unsigned i = 0; i < moat_cgroup_n_dirs(cg); i++)
				snprintf(c.cgroups[c.n_cgroups++], MOAT_STATE_PATH, "%s",
					 moat_cgroup_dir(cg, i));
			pid_t s = fork();
			if (s == 0) {
				for (;;)
					pause();
			}
			if (s < 0 || moat_cgroup_attach(cg, s) < 0)
				_exit(4);
			*sleeper = s;
		}
		if (moat_state_register(sdir, &c, &e) < 0)
			_exit(5);
		_exit(0); /* "crash": no unregister, no destroy */
	}
	int status;
	ASSERT_EQ(waitpid(pid, &status, 0), pid);
	ASSERT_TRUE(WIFEXITED(status));
	ASSERT_EQ(WEXITSTATUS(status), 0);
	ASSERT_EQ(count_entries(), 2);

	/* ps shows only the live one. */
	struct moat_state_record *list = NULL;
	size_t n = 0;
	ASSERT_EQ(moat_state_list(sdir, &list, &n), 0);
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(list[0].id, "still-running");
	free(list);

	struct moat_state_gc_result g;
	ASSERT_EQ(moat_state_gc(sdir, &g), 0);
	ASSERT_EQ(g.live, 1);
	ASSERT_EQ(g.removed, 1);
	ASSERT_EQ(g.failed, 0);
	ASSERT_EQ(g.tmpdirs, 1);
	ASSERT_EQ(count_entries(), 1);
	struct stat st;
	ASSERT_ERRNO(stat(tmpdir, &st), ENOENT);
	ASSERT_EQ(stat(outside, &st), 0); /* the symlink was not followed */
	unlink(outside);
	if (with_cgroup) {
		ASSERT_TRUE(g.cgroups >= 1);
		ASSERT_TRUE(*sleeper > 0);
		ASSERT_EQ(waitpid(*sleeper, &status, 0), *sleeper);
		ASSERT_TRUE(WIFSIGNALED(status));
		ASSERT_EQ(WTERMSIG(status), SIGKILL);
	}
	ASSERT_EQ(moat_state_unregister(live), 0);
	ASSERT_EQ(count_entries(), 0);
	drop_sdir();
}

/* A tampered run.json must not make gc remove things that are not a run's. */
TEST(state_gc_refuses_foreign_paths)
{
	char victim[] = "/tmp/victim.XXXXXX";
	make_sdir();
	ASSERT_TRUE(mkdtemp(victim) != NULL);
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/evil' && printf '%%s' '{\"id\":\"evil\",\"pid\":1,\"start_us\":0,"
		 "\"cgroups\":[\"/tmp\"],\"tmpdirs\":[\"%s\"]}' > '%s/evil/run.json' && "
		 ": > '%s/evil/lock'",
		 sdir, victim, sdir, sdir);
	ASSERT_EQ(system(cmd), 0);
	struct moat_state_gc_result g;
	ASSERT_TRUE(moat_state_gc(sdir, &g) < 0);
	ASSERT_EQ(g.failed, 1);
	ASSERT_EQ(g.removed, 0);
	struct stat st;
	ASSERT_EQ(stat(victim, &st), 0);
	ASSERT_EQ(count_entries(), 1); /* kept for a human to look at */
	rmdir(victim);
	drop_sdir();
}

/* gc removes only the temporaries the caller owns: a record naming another
 * user's "moat-" directory (edited by someone else) removes nothing. The
 * owner check itself for every caller; through gc as root, with a directory
 * given to another uid (unprivileged, no directory of another owner can be
 * made). Positive control: the same directory, owned by the caller, goes. */
TEST(state_gc_refuses_foreign_owner)
{
	char d[] = "/tmp/moat-ownertest-XXXXXX";
	char f[64], cmd[2048];
	struct stat st;
	ASSERT_TRUE(mkdtemp(d) != NULL);
	snprintf(f, sizeof(f), "%s/file", d);
	int fd = open(f, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ(moat_state_remove_tmpdir(d, geteuid() + 1), -EPERM);
	ASSERT_EQ(stat(f, &st), 0); /* nothing inside removed either */
	ASSERT_EQ(moat_state_remove_tmpdir(d, geteuid()), 0);
	ASSERT_ERRNO(stat(d, &st), ENOENT);
	ASSERT_EQ(moat_state_remove_tmpdir(d, geteuid()), 0); /* gone: nothing to do */

	if (geteuid() != 0)
		return;
	make_sdir();
	ASSERT_TRUE(mkdtemp(strcpy(d, "/tmp/moat-ownertest-XXXXXX")) != NULL);
	ASSERT_EQ(chown(d, 65534, 65534), 0);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/foreign' && printf '%%s' '{\"id\":\"foreign\",\"pid\":1,"
		 "\"start_us\":0,\"cgroups\":[],\"tmpdirs\":[\"%s\"]}' > "
		 "'%s/foreign/run.json' && : > '%s/foreign/lock'",
		 sdir, d, sdir, sdir);
	ASSERT_EQ(system(cmd), 0);
	struct moat_state_gc_result g;
	ASSERT_EQ(moat_state_gc(sdir, &g), -EPERM);
	ASSERT_EQ(g.failed, 1);
	ASSERT_EQ(g.tmpdirs, 0);
	ASSERT_EQ(stat(d, &st), 0);
	ASSERT_EQ(count_entries(), 1); /* kept for a human to look at */
	/* control: once it is the caller's, the same record's gc removes it */
	ASSERT_EQ(chown(d, 0, 0), 0);
	ASSERT_EQ(moat_state_gc(sdir, &g), 0);
	ASSERT_EQ(g.removed, 1);
	ASSERT_EQ(g.tmpdirs, 1);
	ASSERT_ERRNO(stat(d, &st), ENOENT);
	drop_sdir();
}

/* A run's temporary is named in its record before it exists; without a
 * record none is made (fail closed); after a crash gc removes each. */
TEST(state_mkdtemp_named_before_made)
{
	static struct moat_run run;
	struct moat_error err = {0};
	struct moat_state_record rec, *list = NULL;
	struct moat_state_gc_result g;
	char a[64] = "/tmp/moat-mktest-XXXXXX", b[64] = "/tmp/moat-mktest-XXXXXX";
	struct stat st;
	size_t n = 0;
	make_sdir();
	memset(&run, 0, sizeof(run));
	fill(&rec, "mk-one");
	run.err = &err;
	run.state_rec = &rec;
	ASSERT_TRUE(moat_supervise_state_mkdtemp(&run, "isolation", a) < 0);
	ASSERT_STREQ(err.stage, "isolation");
	ASSERT_TRUE(strstr(err.message, "no state record") != NULL);
	ASSERT_ERRNO(stat(a, &st), ENOENT); /* nothing made */
	ASSERT_EQ(rec.n_tmpdirs, 0);

	ASSERT_EQ(moat_state_register(sdir, &rec, &run.state), 0);
	snprintf(a, sizeof(a), "/tmp/moat-mktest-XXXXXX");
	ASSERT_EQ(moat_supervise_state_mkdtemp(&run, "isolation", a), 0);
	ASSERT_EQ(moat_supervise_state_mkdtemp(&run, "credentials", b), 0);
	ASSERT_TRUE(strcmp(a, b) != 0);
	ASSERT_EQ(stat(a, &st), 0);
	ASSERT_TRUE(S_ISDIR(st.st_mode) && (st.st_mode & 07777) == 0700 && st.st_uid == geteuid());
	ASSERT_EQ(moat_state_list(sdir, &list, &n), 0);
	ASSERT_EQ(n, 1);
	ASSERT_EQ(list[0].n_tmpdirs, 2);
	ASSERT_STREQ(list[0].tmpdirs[0], a);
	ASSERT_STREQ(list[0].tmpdirs[1], b);
	free(list);
	char bad[] = "/tmp/moat-mktest-no-x";
	ASSERT_TRUE(moat_supervise_state_mkdtemp(&run, "isolation", bad) < 0);

	/* the supervisor "crashes": its lock goes, gc removes both */
	moat_state_abandon(run.state);
	run.state = NULL;
	ASSERT_EQ(moat_state_gc(sdir, &g), 0);
	ASSERT_EQ(g.removed, 1);
	ASSERT_EQ(g.tmpdirs, 2);
	ASSERT_ERRNO(stat(a, &st), ENOENT);
	ASSERT_ERRNO(stat(b, &st), ENOENT);
	drop_sdir();
}

/* Stale half-built (.tmp-) entries go; fresh ones stay (a run is starting). */
TEST(state_gc_stale_dot_entries)
{
	make_sdir();
	char cmd[2048];
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p '%s/.tmp-old' '%s/.tmp-new' && : > '%s/.tmp-old/lock' && "
		 "touch -d '2 hours ago' '%s/.tmp-old'",
		 sdir, sdir, sdir, sdir);
	ASSERT_EQ(system(cmd), 0);
	struct moat_state_gc_result g;
	ASSERT_EQ(moat_state_gc(sdir, &g), 0);
	char p[300];
	struct stat st;
	snprintf(p, sizeof(p), "%s/.tmp-old", sdir);
	ASSERT_ERRNO(stat(p, &st), ENOENT);
	snprintf(p, sizeof(p), "%s/.tmp-new", sdir);
	ASSERT_EQ(stat(p, &st), 0);
	drop_sdir();
}

/* The public wrappers the CLI uses (moat gc, moat ps). */
TEST(state_public_gc_ps)
{
	struct moat_state_record r;
	struct moat_state_entry *e = NULL;
	struct moat_run_info *runs = NULL;
	struct moat_gc_result g;
	struct moat_error err;
	size_t n = 0;
	make_sdir();
	/* Nothing recorded yet: the directory does not even exist. */
	ASSERT_EQ(moat_gc(sdir, &g, &err), 0);
	ASSERT_EQ(g.removed + g.live + g.failed, 0);
	ASSERT_EQ(moat_ps(sdir, &runs, &n, &err), 0);
	ASSERT_EQ(n, 0);
	free(runs);
	fill(&r, "pub");
	ASSERT_EQ(moat_state_register(sdir, &r, &e), 0);
	ASSERT_EQ(moat_ps(sdir, &runs, &n, &err), 0);
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(runs[0].id, "pub");
	ASSERT_EQ(runs[0].pid, getpid());
	free(runs);
	ASSERT_EQ(moat_gc(sdir, &g, &err), 0);
	ASSERT_EQ(g.live, 1);
	ASSERT_EQ(moat_state_unregister(e), 0);
	drop_sdir();
}

TEST(state_200_cycles_no_leak)
{
	struct moat_state_record r;
	int fds = 0;
	make_sdir();
	for (int i = 0; i < 200; i++) {
		struct moat_state_entry *e = NULL;
		char id[32];
		snprintf(id, sizeof(id), "cycle-%d", i);
		fill(&r, id);
		ASSERT_EQ(moat_state_register(sdir, &r, &e), 0);
		ASSERT_EQ(moat_state_unregister(e), 0);
		if (i == 0) {
			DIR *d = opendir("/proc/self/fd");
			struct dirent *de;
			while (d && (de = readdir(d)))
				fds += de->d_name[0] != '.';
			closedir(d);
		}
	}
	int now = 0;
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	while (d && (de = readdir(d)))
		now += de->d_name[0] != '.';
	closedir(d);
	ASSERT_EQ(now, fds);
	ASSERT_EQ(count_entries(), 0);
	drop_sdir();
}

/* An ended entry's directory is kept as a spare (removing a directory costs a
 * synchronous discard on ext4 with -o discard) and taken by the next run:
 * empty, at most four, never removed by gc, and never a live entry. */
TEST(state_spare_dirs_reused_and_bounded)
{
	struct moat_state_record r;
	struct moat_state_entry *e[6] = {0};
	make_sdir();
	fill(&r, "one");
	ASSERT_EQ(moat_state_register(sdir, &r, &e[0]), 0);
	ASSERT_EQ(moat_state_unregister(e[0]), 0);
	ASSERT_EQ(count_entries(), 0);
	ASSERT_EQ(count_spares(), 1);
	char p[400];
	snprintf(p, sizeof(p), "%s/.spare-0", sdir);
	DIR *d = opendir(p);
	ASSERT_TRUE(d != NULL);
	unsigned files = 0;
	struct dirent *de;
	while ((de = readdir(d)))
		files += !streq(de->d_name, ".") && !streq(de->d_name, "..");
	closedir(d);
	ASSERT_EQ(files, 0); /* nothing of the ended run is left in it */
	/* the next run takes it: no spare while it runs */
	fill(&r, "two");
	ASSERT_EQ(moat_state_register(sdir, &r, &e[0]), 0);
	ASSERT_EQ(count_spares(), 0);
	ASSERT_EQ(count_entries(), 1);
	struct moat_state_record *list = NULL;
	size_t n = 0;
	ASSERT_EQ(moat_state_list(sdir, &list, &n), 0);
	ASSERT_EQ(n, 1);
	ASSERT_STREQ(list[0].id, "two");
	free(list);
	/* six at once: at most four spares stay when they end */
	for (int i = 1; i < 6; i++) {
		char id[32];
		snprintf(id, sizeof(id), "many-%d", i);
		fill(&r, id);
		ASSERT_EQ(moat_state_register(sdir, &r, &e[i]), 0);
	}
	for (int i = 0; i < 6; i++)
		ASSERT_EQ(moat_state_unregister(e[i]), 0);
	ASSERT_EQ(count_entries(), 0);
	ASSERT_EQ(count_spares(), 4);
	/* gc leaves them, even when old (half-removed dot entries it removes
	 * after 60 s): they are no run of anyone */
	struct timespec old[2] = {{.tv_sec = time(NULL) - 3600}, {.tv_sec = time(NULL) - 3600}};
	for (int i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s/.spare-%d", sdir, i);
		ASSERT_EQ(utimensat(AT_FDCWD, p, old, 0), 0);
	}
	struct moat_state_gc_result res;
	memset(&res, 0, sizeof(res));
	ASSERT_EQ(moat_state_gc(sdir, &res), 0);
	ASSERT_EQ(count_spares(), 4);
	/* control: an old half-removed entry is removed by the same gc */
	snprintf(p, sizeof(p), "%s/.dead-x", sdir);
	ASSERT_EQ(mkdir(p, 0700), 0);
	ASSERT_EQ(utimensat(AT_FDCWD, p, old, 0), 0);
	ASSERT_EQ(moat_state_gc(sdir, &res), 0);
	ASSERT_EQ(access(p, F_OK), -1);
	drop_sdir();
}
