/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshot trees (workspace/snapshot.h): a faithful copy, and a sync that makes a
 * live tree equal to a target without following the live tree's symlinks. */
#include "harness/tap.h"

#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "workspace/snapshot.h"
#include "shared/macro.h"

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

static void rmrfp(char **d)
{
	if (*d)
		nftw(*d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	free(*d);
}

static char *mktmp(void)
{
	char *d = strdup("/tmp/moat-snap-XXXXXX");
	if (!d || !mkdtemp(d))
		moat_tap_fail(__FILE__, __LINE__, "mkdtemp: %m");
	return d;
}

static int dopen(const char *base, const char *sub)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, sub);
	mkdir(p, 0755);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		moat_tap_fail(__FILE__, __LINE__, "open %s: %m", p);
	return fd;
}

static void put(int dfd, const char *name, const char *data, mode_t mode)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		moat_tap_fail(__FILE__, __LINE__, "write %s: %m", name);
	fchmod(fd, mode);
	close(fd);
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

static mode_t mode_of(int dfd, const char *name)
{
	struct stat st;
	return fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 ? st.st_mode : 0;
}

TEST(snapshot_copy_then_sync_back)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int live = dopen(d, "live"), snap = dopen(d, "snap"),
			    outside = dopen(d, "outside");
	char lnk[64];
	uint64_t bytes = 0;

	put(live, "a", "one", 0640);
	ASSERT_EQ(mkdirat(live, "sub", 0750), 0);
	put(live, "sub/b", "bee", 0600);
	ASSERT_EQ(symlinkat("a", live, "link"), 0);
	ASSERT_EQ(mkfifoat(live, "fifo", 0600), 0);
	put(outside, "keep", "outside", 0644);

	ASSERT_EQ(moat_snap_copy(live, snap, &bytes), 0);
	ASSERT_EQ(bytes, 6);
	ASSERT_STREQ(slurp(snap, "sub/b"), "bee");
	ASSERT_EQ(mode_of(snap, "a") & 07777, 0640);
	ASSERT_TRUE(S_ISFIFO(mode_of(snap, "fifo")));

	/* the live tree changes in every way, and plants a symlink where the
	 * snapshot has a directory, pointing outside */
	put(live, "a", "two!", 0640);
	ASSERT_EQ(fchmodat(live, "a", 0777, 0), 0);
	put(live, "sub/b", "bee", 0600); /* the same bytes again */
	ASSERT_EQ(unlinkat(live, "sub/b", 0), 0);
	ASSERT_EQ(unlinkat(live, "sub", AT_REMOVEDIR), 0);
	char target[512];
	snprintf(target, sizeof(target), "%s/outside", d);
	ASSERT_EQ(symlinkat(target, live, "sub"), 0);
	put(live, "new", "new", 0644);
	ASSERT_EQ(unlinkat(live, "link", 0), 0);
	ASSERT_EQ(symlinkat("new", live, "link"), 0);

	ASSERT_EQ(moat_snap_sync(snap, -1, live, -1, true, true), 0);
	ASSERT_STREQ(slurp(live, "a"), "one");
	ASSERT_EQ(mode_of(live, "a") & 07777, 0640);
	ASSERT_TRUE(S_ISDIR(mode_of(live, "sub")));
	ASSERT_STREQ(slurp(live, "sub/b"), "bee");
	ASSERT_EQ(mode_of(live, "sub") & 07777, 0750);
	ASSERT_ERRNO(faccessat(live, "new", F_OK, AT_SYMLINK_NOFOLLOW), ENOENT);
	ssize_t n = readlinkat(live, "link", lnk, sizeof(lnk) - 1);
	ASSERT_EQ(n, 1);
	lnk[n] = '\0';
	ASSERT_STREQ(lnk, "a");
	/* nothing was written through the planted symlink */
	ASSERT_STREQ(slurp(outside, "keep"), "outside");
	ASSERT_ERRNO(faccessat(outside, "b", F_OK, AT_SYMLINK_NOFOLLOW), ENOENT);
	/* the snapshot itself is unchanged */
	ASSERT_STREQ(slurp(snap, "a"), "one");

	/* reset to an empty target removes everything */
	_cleanup_close_ int empty = dopen(d, "empty");
	ASSERT_EQ(moat_snap_sync(empty, -1, live, -1, true, false), 0);
	ASSERT_ERRNO(faccessat(live, "a", F_OK, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_ERRNO(faccessat(live, "sub", F_OK, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_STREQ(slurp(outside, "keep"), "outside");
}

/* The target as an overlay shows it: the snapshot's upper copy (top) over
 * the lower tree; a whiteout hides a lower file, an opaque directory hides
 * the lower directory's entries. */
TEST(snapshot_sync_overlay_view)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int low = dopen(d, "low"), top = dopen(d, "top"), live = dopen(d, "live");

	put(low, "x", "x", 0644);
	put(low, "y", "y", 0644);
	ASSERT_EQ(mkdirat(low, "d", 0755), 0);
	put(low, "d/lower-only", "l", 0644);
	ASSERT_EQ(mkdirat(low, "m", 0755), 0);
	put(low, "m/kept", "k", 0644);
	/* the live tree is the lower one plus changes */
	put(live, "x", "x", 0644);
	put(live, "y", "changed", 0644);
	ASSERT_EQ(mkdirat(live, "d", 0755), 0);
	put(live, "d/lower-only", "l", 0644);
	ASSERT_EQ(mkdirat(live, "m", 0755), 0);
	put(live, "m/kept", "k", 0644);

	if (mknodat(top, "x", S_IFCHR | 0, makedev(0, 0)) < 0)
		moat_tap_skip("cannot create a whiteout here: %m");
	ASSERT_EQ(mkdirat(top, "d", 0755), 0);
	_cleanup_close_ int td = openat(top, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fsetxattr(td, "user.overlay.opaque", "y", 1, 0) < 0)
		moat_tap_skip("no user xattrs on this file system: %m");
	put(top, "d/upper-only", "u", 0644);
	ASSERT_EQ(mkdirat(top, "m", 0755), 0);
	put(top, "m/added", "a", 0644);

	ASSERT_EQ(moat_snap_sync(top, low, live, -1, true, false), 0);
	ASSERT_ERRNO(faccessat(live, "x", F_OK, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_STREQ(slurp(live, "y"), "y");
	ASSERT_ERRNO(faccessat(live, "d/lower-only", F_OK, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_STREQ(slurp(live, "d/upper-only"), "u");
	ASSERT_STREQ(slurp(live, "m/kept"), "k");
	ASSERT_STREQ(slurp(live, "m/added"), "a");
	/* the overlay's own attributes are never copied into a live tree */
	_cleanup_close_ int ld = openat(live, "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	char v[4];
	ASSERT_ERRNO(fgetxattr(ld, "user.overlay.opaque", v, sizeof(v)), ENODATA);
}
