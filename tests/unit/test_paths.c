/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* User-given host paths (sandbox/paths.c): what is followed, what is refused. */
#include "harness/tap.h"

#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sandbox/paths.h"
#include "shared/macro.h"

static char *tmpdir(void)
{
	char tpl[] = "/tmp/moat-paths.XXXXXX";
	char *d = mkdtemp(tpl);
	return d ? strdup(d) : NULL;
}

static char *join(const char *a, const char *b)
{
	static char buf[4][4096];
	static int i;
	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", a, b);
	return buf[i];
}

TEST(paths_link_trust_rule)
{
	/* root's links directly in /, /usr, /var, with a root-only chain */
	ASSERT_TRUE(moat_path_link_trusted("", true, 0));
	ASSERT_TRUE(moat_path_link_trusted("/usr", true, 0));
	ASSERT_TRUE(moat_path_link_trusted("/var", true, 0));
	/* anything else is refused: a root-owned tree deeper down may be a
	 * workspace a root-mode sandbox wrote to as root */
	ASSERT_TRUE(!moat_path_link_trusted("/srv/ws", true, 0));
	ASSERT_TRUE(!moat_path_link_trusted("/usr/bin", true, 0));
	ASSERT_TRUE(!moat_path_link_trusted("", true, 1000));
	ASSERT_TRUE(!moat_path_link_trusted("", false, 0));
	ASSERT_TRUE(!moat_path_link_trusted("/tmp", false, 0));
}

TEST(paths_planted_links_refused)
{
	_cleanup_free_ char *d = tmpdir();
	ASSERT_TRUE(d != NULL);
	struct moat_path_info why;
	ASSERT_EQ(mkdir(join(d, "secret"), 0700), 0);
	ASSERT_EQ(mkdir(join(d, "real"), 0700), 0);
	ASSERT_EQ(symlink(join(d, "secret"), join(d, "link")), 0);
	ASSERT_EQ(symlink("/nonexistent/x", join(d, "dangling")), 0);

	/* positive control: the kernel follows the link */
	int c = open(join(d, "link"), O_PATH | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(c >= 0);
	close(c);

	ASSERT_EQ(moat_path_open(join(d, "link"), MOAT_PATH_DIR, 0, &why), -ELOOP);
	ASSERT_STREQ(why.link, join(d, "link"));
	ASSERT_STREQ(why.target, join(d, "secret"));
	/* in the middle of the path */
	char mid[4096];
	snprintf(mid, sizeof(mid), "%s/link/x", d);
	ASSERT_EQ(moat_path_open(mid, MOAT_PATH_DIR | MOAT_PATH_MKDIR, 0700, &why), -ELOOP);
	ASSERT_STREQ(why.link, join(d, "link"));
	struct stat st;
	ASSERT_ERRNO(stat(join(d, "secret/x"), &st), ENOENT);
	ASSERT_EQ(moat_path_open(join(d, "dangling"), 0, 0, &why), -ELOOP);
	/* the final link itself, when asked for */
	int fd = moat_path_open(join(d, "link"), MOAT_PATH_NOFOLLOW_LAST, 0, NULL);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(fstat(fd, &st), 0);
	ASSERT_TRUE(S_ISLNK(st.st_mode));
	close(fd);
	/* a real directory resolves, and is what the fd holds */
	fd = moat_path_open(join(d, "real"), MOAT_PATH_DIR, 0, &why);
	ASSERT_TRUE(fd >= 0);
	ASSERT_STREQ(why.resolved, join(d, "real"));
	close(fd);
	/* files moat writes: no link, no fifo, no directory, no second name */
	ASSERT_EQ(moat_path_write_file(join(d, "link"), O_APPEND, 0600, 0, &why), -ELOOP);
	ASSERT_EQ(moat_path_write_file(join(d, "dangling"), O_APPEND, 0600, 0, &why), -ELOOP);
	ASSERT_ERRNO(stat("/nonexistent/x", &st), ENOENT);
	char sub[4096];
	snprintf(sub, sizeof(sub), "%s/link/new.log", d);
	ASSERT_EQ(moat_path_write_file(sub, O_APPEND, 0600, MOAT_PATH_MKDIR, &why), -ELOOP);
	ASSERT_ERRNO(stat(join(d, "secret/new.log"), &st), ENOENT);
	ASSERT_EQ(mkfifo(join(d, "fifo"), 0600), 0);
	ASSERT_EQ(moat_path_write_file(join(d, "fifo"), O_APPEND, 0600, 0, NULL), -EINVAL);
	ASSERT_EQ(moat_path_write_file(join(d, "real"), O_APPEND, 0600, 0, NULL), -EISDIR);
	fd = open(join(d, "one"), O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_EQ(link(join(d, "one"), join(d, "two")), 0);
	ASSERT_EQ(moat_path_write_file(join(d, "two"), O_APPEND, 0600, 0, NULL), -EMLINK);
	ASSERT_EQ(moat_path_check_writable(join(d, "two"), 0, NULL), -EMLINK);
	ASSERT_EQ(moat_path_check_writable(join(d, "link"), 0, NULL), -ELOOP);
	ASSERT_EQ(moat_path_check_writable(join(d, "absent"), 0, NULL), 0);
	/* control: a new file in a real directory is created, mkdir -p too */
	snprintf(sub, sizeof(sub), "%s/real/a/b/log", d);
	fd = moat_path_write_file(sub, O_APPEND, 0600, MOAT_PATH_MKDIR, NULL);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(write(fd, "x", 1), 1);
	close(fd);
	/* the same refusals below a held directory (the default event log) */
	int dfd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(dfd >= 0);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "link", O_APPEND, 0600, &why), -ELOOP);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "dangling", O_APPEND, 0600, &why), -ELOOP);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "fifo", O_APPEND, 0600, NULL), -EINVAL);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "real", O_APPEND, 0600, NULL), -EISDIR);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "two", O_APPEND, 0600, NULL), -EMLINK);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "link/x", O_APPEND, 0600, NULL), -EINVAL);
	ASSERT_EQ(moat_path_write_file_at(dfd, d, "..", O_APPEND, 0600, NULL), -EINVAL);
	ASSERT_ERRNO(stat(join(d, "secret/x"), &st), ENOENT);
	/* control: a new file is created there, with the mode asked for */
	fd = moat_path_write_file_at(dfd, d, "events.jsonl", O_APPEND, 0600, NULL);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(fstat(fd, &st), 0);
	ASSERT_TRUE(S_ISREG(st.st_mode) && (st.st_mode & 07777) == 0600);
	ASSERT_TRUE(fcntl(fd, F_GETFL) & O_APPEND);
	close(fd);
	close(dfd);
	ASSERT_EQ(moat_path_read_file(join(d, "link"), NULL), -ELOOP);
	fd = moat_path_read_file(sub, NULL);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	char cmd[4200];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	ASSERT_EQ(system(cmd), 0);
}

TEST(paths_root_links_followed)
{
	struct stat st;
	if (lstat("/bin", &st) < 0 || !S_ISLNK(st.st_mode) || st.st_uid != 0)
		SKIP("/bin is not a root-owned symlink here");
	struct moat_path_info why;
	int fd = moat_path_open("/bin/sh", 0, 0, &why);
	/* /bin/sh may itself be a link deeper down (/usr/bin/sh -> dash):
	 * that one is not in /, /usr or /var, so it is refused by the rule */
	if (fd == -ELOOP)
		ASSERT_TRUE(strncmp(why.link, "/usr/bin/", 9) == 0);
	else
		ASSERT_TRUE(fd >= 0);
	safe_close(fd);
	fd = moat_path_open("/bin", MOAT_PATH_DIR, 0, &why);
	ASSERT_TRUE(fd >= 0);
	ASSERT_TRUE(strcmp(why.resolved, "/bin") != 0); /* where the link led */
	close(fd);
	/* no fd is left behind, however the walk ends (a link followed,
	 * refused, or a missing component) */
	int before = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(before >= 0);
	close(before);
	for (int i = 0; i < 50; i++) {
		safe_close(moat_path_open("/bin", MOAT_PATH_DIR, 0, NULL));
		ASSERT_EQ(moat_path_open("/bin/moat-no-such-file", 0, 0, NULL), -ENOENT);
		ASSERT_EQ(moat_path_open("/bin", MOAT_PATH_NO_LINKS, 0, NULL), -ELOOP);
	}
	int after = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(after, before);
	close(after);
	/* and the NO_LINKS walk the init does refuses even this one */
	ASSERT_EQ(moat_path_open("/bin", MOAT_PATH_DIR | MOAT_PATH_NO_LINKS, 0, NULL), -ELOOP);
}
