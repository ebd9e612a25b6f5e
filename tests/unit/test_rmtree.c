/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one recursive removal (shared/rmtree.c): symlinks are removed, never
 * followed; another mount is never entered; the depth is bounded. */
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/tap.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

static void mk(int dfd, const char *path, bool dir)
{
	int r = dir ? mkdirat(dfd, path, 0755) : -1;
	if (!dir) {
		int fd = openat(dfd, path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		r = fd >= 0 && write(fd, "x", 1) == 1 ? 0 : -1;
		if (fd >= 0)
			close(fd);
	}
	if (r < 0)
		moat_tap_fail(__FILE__, __LINE__, "create %s: %m", path);
}

static bool there(int dfd, const char *path)
{
	struct stat st;
	return fstatat(dfd, path, &st, AT_SYMLINK_NOFOLLOW) == 0;
}

static int tmp_dir(char *buf, size_t len)
{
	snprintf(buf, len, "/tmp/moat-rmtree-XXXXXX");
	ASSERT_TRUE(mkdtemp(buf) != NULL);
	int fd = open(buf, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	return fd;
}

TEST(rmtree_removes_links_not_their_targets)
{
	char tmp[64];
	int t = tmp_dir(tmp, sizeof(tmp));
	mk(t, "outside", true);
	mk(t, "outside/keep", false);
	mk(t, "tree", true);
	mk(t, "tree/a", true);
	mk(t, "tree/a/b", true);
	mk(t, "tree/a/b/file", false);
	mk(t, "tree/empty", true);
	ASSERT_EQ(symlinkat("../outside", t, "tree/dirlink"), 0);
	ASSERT_EQ(symlinkat("../../outside/keep", t, "tree/a/filelink"), 0);
	/* control: the links do reach outside, so following them would remove it */
	struct stat st;
	ASSERT_EQ(fstatat(t, "tree/dirlink/keep", &st, 0), 0);
	ASSERT_EQ(fstatat(t, "tree/a/filelink", &st, 0), 0);

	ASSERT_EQ(moat_rmtree_at(t, "tree", 16), 0);
	ASSERT_TRUE(!there(t, "tree"));
	ASSERT_TRUE(there(t, "outside/keep"));
	/* gone already: not an error */
	ASSERT_EQ(moat_rmtree_at(t, "tree", 16), 0);
	/* a plain file and a link at the top */
	ASSERT_EQ(symlinkat("outside", t, "toplink"), 0);
	ASSERT_EQ(moat_rmtree_at(t, "toplink", 16), 0);
	ASSERT_TRUE(there(t, "outside/keep"));
	ASSERT_EQ(moat_rmtree_at(t, "outside", 16), 0);
	ASSERT_TRUE(!there(t, "outside"));
	close(t);
	ASSERT_EQ(rmdir(tmp), 0);
}

TEST(rmtree_depth_is_bounded)
{
	char tmp[64];
	int t = tmp_dir(tmp, sizeof(tmp));
	mk(t, "d", true);
	mk(t, "d/d", true);
	mk(t, "d/d/d", true);
	mk(t, "d/d/d/d", true);
	mk(t, "d/d/d/d/f", false);
	mk(t, "d/side", false);
	/* d is level 0; d/d/d/d is level 3: refused with a limit of 2 */
	ASSERT_EQ(moat_rmtree_at(t, "d", 2), -ELOOP);
	ASSERT_TRUE(there(t, "d/d/d/d/f"));
	/* the walk went on past the error: what it could remove is gone */
	ASSERT_TRUE(!there(t, "d/side"));
	ASSERT_EQ(moat_rmtree_at(t, "d", 3), 0);
	ASSERT_TRUE(!there(t, "d"));
	close(t);
	ASSERT_EQ(rmdir(tmp), 0);
}

/* A mount below the tree (here a tmpfs in a throw-away user+mount
 * namespace) is neither entered nor removed. */
TEST(rmtree_never_enters_a_mount)
{
	char tmp[64], mnt[128];
	int t = tmp_dir(tmp, sizeof(tmp));
	moat_tap_enter_userns(CLONE_NEWNS);
	ASSERT_EQ(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	/* an fd opened before unshare walks the old namespace's mounts */
	close(t);
	t = open(tmp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(t >= 0);
	mk(t, "tree", true);
	mk(t, "tree/m", true);
	mk(t, "tree/sibling", false);
	snprintf(mnt, sizeof(mnt), "%s/tree/m", tmp);
	ASSERT_EQ(mount("tmpfs", mnt, "tmpfs", 0, "size=64k"), 0);
	mk(t, "tree/m/inner", false);
	/* control: it is another device, the case the check is about */
	struct stat a, b;
	ASSERT_EQ(fstatat(t, "tree", &a, 0), 0);
	ASSERT_EQ(fstatat(t, "tree/m", &b, 0), 0);
	ASSERT_NE(a.st_dev, b.st_dev);

	ASSERT_EQ(moat_rmtree_at(t, "tree", 16), -EXDEV);
	ASSERT_TRUE(there(t, "tree/m/inner"));
	ASSERT_TRUE(!there(t, "tree/sibling"));
	ASSERT_EQ(umount2(mnt, MNT_DETACH), 0);
	ASSERT_EQ(moat_rmtree_at(t, "tree", 16), 0);
	ASSERT_TRUE(!there(t, "tree"));
	close(t);
	ASSERT_EQ(rmdir(tmp), 0);
}
