/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --image (src/image/): the tar entry rules, the JSON of an image, and the
 * confined unpacker against real layers written here with libarchive. */
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "image/image.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

static int check(const char *path, mode_t type, mode_t mode, const char *link, bool hard,
		 unsigned flags, struct moat_image_checked *c, char *why)
{
	struct moat_image_entry e = {
		.path = path,
		.type = hard ? 0 : type,
		.mode = mode,
		.symlink = hard ? NULL : link,
		.hardlink = hard ? link : NULL,
	};
	return moat_image_entry_check(&e, flags, c, why, 400);
}

TEST(image_entry_names)
{
	struct moat_image_checked c;
	char why[400];
	ASSERT_EQ(check("./usr//bin/", S_IFDIR, 0755, NULL, false, 0, &c, why), 0);
	ASSERT_STREQ(c.path, "usr/bin");
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_DIR);
	ASSERT_EQ(check("./", S_IFDIR, 0755, NULL, false, 0, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_SKIP);
	ASSERT_EQ(check("../x", S_IFREG, 0644, NULL, false, 0, &c, why), -EINVAL);
	ASSERT_CONTAINS(why, "leaves the tree");
	ASSERT_EQ(check("a/../../x", S_IFREG, 0644, NULL, false, 0, &c, why), -EINVAL);
	ASSERT_EQ(check("/etc/passwd", S_IFREG, 0644, NULL, false, 0, &c, why), -EINVAL);
	ASSERT_EQ(check("a/..", S_IFDIR, 0755, NULL, false, 0, &c, why), -EINVAL);
	/* a name that only looks like one */
	ASSERT_EQ(check("a/..b/...", S_IFREG, 0644, NULL, false, 0, &c, why), 0);
	ASSERT_STREQ(c.path, "a/..b/...");
	char longname[300];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ASSERT_EQ(check(longname, S_IFREG, 0644, NULL, false, 0, &c, why), -ENAMETOOLONG);
	/* control characters are shown as '?' */
	ASSERT_EQ(check("/x\033[2J", S_IFREG, 0644, NULL, false, 0, &c, why), -EINVAL);
	ASSERT_TRUE(strchr(why, '\033') == NULL);
}

TEST(image_entry_types)
{
	struct moat_image_checked c;
	char why[400];
	ASSERT_EQ(check("dev/mem", S_IFCHR, 0600, NULL, false, 0, &c, why), -EPERM);
	ASSERT_CONTAINS(why, "device node");
	ASSERT_EQ(check("dev/sda", S_IFBLK, 0600, NULL, false, 0, &c, why), -EPERM);
	ASSERT_EQ(check("p", S_IFIFO, 0600, NULL, false, 0, &c, why), -EPERM);
	ASSERT_EQ(check("s", S_IFSOCK, 0600, NULL, false, 0, &c, why), -EPERM);
	/* set-id: refused unless allowed (control: allowed, kept) */
	ASSERT_EQ(check("bin/su", S_IFREG, 04755, NULL, false, 0, &c, why), -EPERM);
	ASSERT_EQ(check("bin/sg", S_IFREG, 02755, NULL, false, 0, &c, why), -EPERM);
	ASSERT_EQ(check("bin/su", S_IFREG, 04755, NULL, false, MOAT_IMAGE_F_SETID, &c, why), 0);
	ASSERT_EQ(c.mode, 04755);
	/* absolute symlinks are kept as they are */
	ASSERT_EQ(check("bin/sh", S_IFLNK, 0777, "/bin/busybox", false, 0, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_SYMLINK);
	ASSERT_STREQ(c.link, "/bin/busybox");
	ASSERT_EQ(check("bin/x", S_IFLNK, 0777, "", false, 0, &c, why), -EINVAL);
	/* hard links: inside the tree only */
	ASSERT_EQ(check("a", 0, 0644, "./b/c", true, 0, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_HARDLINK);
	ASSERT_STREQ(c.link, "b/c");
	ASSERT_EQ(check("a", 0, 0644, "../../etc/shadow", true, 0, &c, why), -EPERM);
	ASSERT_EQ(check("a", 0, 0644, "/etc/shadow", true, 0, &c, why), -EPERM);
	ASSERT_EQ(check("a", 0, 0644, "a", true, 0, &c, why), -EINVAL);
	/* an archive's own tar: files and directories only, links not made */
	ASSERT_EQ(check("l", S_IFLNK, 0777, "x", false, MOAT_IMAGE_F_PLAIN, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_SKIP);
	ASSERT_EQ(check("h", 0, 0644, "x", true, MOAT_IMAGE_F_PLAIN, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_SKIP);
	ASSERT_EQ(check("../h", 0, 0644, "x", true, MOAT_IMAGE_F_PLAIN, &c, why), -EINVAL);
}

TEST(image_entry_whiteouts)
{
	struct moat_image_checked c;
	char why[400];
	ASSERT_EQ(check("etc/.wh.shadow", S_IFREG, 0, NULL, false, 0, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_WHITEOUT);
	ASSERT_STREQ(c.path, "etc");
	ASSERT_STREQ(c.name, "shadow");
	ASSERT_EQ(check(".wh.bin", S_IFREG, 0, NULL, false, 0, &c, why), 0);
	ASSERT_STREQ(c.path, "");
	ASSERT_STREQ(c.name, "bin");
	ASSERT_EQ(check("usr/.wh..wh..opq", S_IFREG, 0, NULL, false, 0, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_OPAQUE);
	ASSERT_STREQ(c.path, "usr");
	ASSERT_EQ(check("usr/.wh...", S_IFREG, 0, NULL, false, 0, &c, why), -EPERM);
	ASSERT_CONTAINS(why, "whiteout of \"..\"");
	ASSERT_EQ(check("usr/.wh..", S_IFREG, 0, NULL, false, 0, &c, why), -EPERM);
	ASSERT_EQ(check("usr/.wh.", S_IFREG, 0, NULL, false, 0, &c, why), -EPERM);
	ASSERT_EQ(check("usr/.wh..wh.plnk", S_IFREG, 0, NULL, false, 0, &c, why), -EPERM);
	/* in an archive's own tar a .wh. name is a file */
	ASSERT_EQ(check("usr/.wh.x", S_IFREG, 0644, NULL, false, MOAT_IMAGE_F_PLAIN, &c, why), 0);
	ASSERT_EQ(c.kind, MOAT_IMAGE_ENT_FILE);
}

#define D1 "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define D2 "sha256:2222222222222222222222222222222222222222222222222222222222222222"

TEST(image_json_index)
{
	struct moat_image_desc d;
	char why[400];
	const char *one = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
			  "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"" D1
			  "\",\"size\":10}]}";
	ASSERT_EQ(moat_image_parse_index(one, strlen(one), &d, why, sizeof(why)), 0);
	ASSERT_STREQ(d.digest, D1);
	ASSERT_EQ(d.size, 10);
	/* the host's platform is chosen; two for it are refused */
	const char *two =
		"{\"schemaVersion\":2,\"manifests\":["
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
		"\"" D1 "\",\"size\":1,\"platform\":{\"os\":\"linux\",\"architecture\":"
		"\"s390x\"}},"
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
		"\"" D2 "\",\"size\":2,\"platform\":{\"os\":\"linux\",\"architecture\":"
		"\"amd64\"}}]}";
	ASSERT_EQ(moat_image_parse_index(two, strlen(two), &d, why, sizeof(why)), 0);
	ASSERT_STREQ(d.digest, D2);
	const char *amb =
		"{\"schemaVersion\":2,\"manifests\":["
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
		"\"" D1 "\",\"size\":1},"
		"{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":"
		"\"" D2 "\",\"size\":2}]}";
	ASSERT_EQ(moat_image_parse_index(amb, strlen(amb), &d, why, sizeof(why)), -EINVAL);
	ASSERT_CONTAINS(why, "more than one");
	const char *bad =
		"{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		"\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:../../x\","
		"\"size\":1}]}";
	ASSERT_EQ(moat_image_parse_index(bad, strlen(bad), &d, why, sizeof(why)), -EINVAL);
	const char *mt = "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":\"text/plain\","
			 "\"digest\":\"" D1 "\",\"size\":1}]}";
	ASSERT_EQ(moat_image_parse_index(mt, strlen(mt), &d, why, sizeof(why)), -EPROTONOSUPPORT);
}

TEST(image_json_manifest_config)
{
	struct moat_image_manifest m;
	struct moat_image_config c;
	char why[400];
	const char *man = "{\"schemaVersion\":2,\"config\":{\"mediaType\":"
			  "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1
			  "\",\"size\":5},\"layers\":[{\"mediaType\":"
			  "\"application/vnd.oci.image.layer.v1.tar+zstd\",\"digest\":\"" D2
			  "\",\"size\":7}]}";
	ASSERT_EQ(moat_image_parse_manifest(man, strlen(man), &m, why, sizeof(why)), 0);
	ASSERT_EQ(m.n_layers, 1);
	ASSERT_EQ(m.layers[0].comp, MOAT_IMAGE_COMP_ZSTD);
	const char *bz = "{\"schemaVersion\":2,\"config\":{\"mediaType\":"
			 "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"" D1
			 "\",\"size\":5},\"layers\":[{\"mediaType\":"
			 "\"application/vnd.oci.image.layer.v1.tar+bzip2\",\"digest\":\"" D2
			 "\",\"size\":7}]}";
	ASSERT_EQ(moat_image_parse_manifest(bz, strlen(bz), &m, why, sizeof(why)),
		  -EPROTONOSUPPORT);
	ASSERT_CONTAINS(why, "tar+bzip2");
	const char *cfg = "{\"os\":\"linux\",\"config\":{\"Env\":[\"PATH=/bin\",\"A=b=c\"],"
			  "\"Cmd\":[\"sh\"],\"WorkingDir\":\"/w\",\"User\":\"1:2\"},"
			  "\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" D2 "\"]}}";
	ASSERT_EQ(moat_image_parse_config(cfg, strlen(cfg), &c, why, sizeof(why)), 0);
	ASSERT_EQ(c.n_env, 2);
	ASSERT_STREQ(c.env[1], "A=b=c");
	ASSERT_STREQ(c.cmd[0], "sh");
	ASSERT_TRUE(c.entrypoint == NULL);
	ASSERT_STREQ(c.workdir, "/w");
	ASSERT_STREQ(c.user, "1:2");
	ASSERT_EQ(c.n_diff_ids, 1);
	moat_image_config_done(&c);
	const char *env = "{\"config\":{\"Env\":[\"NOEQUALS\"]},\"rootfs\":{\"type\":\"layers\","
			  "\"diff_ids\":[]}}";
	ASSERT_EQ(moat_image_parse_config(env, strlen(env), &c, why, sizeof(why)), -EINVAL);
	const char *wd = "{\"config\":{\"WorkingDir\":\"rel\"},\"rootfs\":{\"type\":\"layers\","
			 "\"diff_ids\":[]}}";
	ASSERT_EQ(moat_image_parse_config(wd, strlen(wd), &c, why, sizeof(why)), -EINVAL);
	struct moat_image_docker dk;
	const char *dm = "[{\"Config\":\"c.json\",\"Layers\":[\"../../etc/passwd\"]}]";
	ASSERT_EQ(moat_image_parse_docker(dm, strlen(dm), &dk, why, sizeof(why)), -EINVAL);
	const char *dm2 = "[{\"Config\":\"c.json\",\"Layers\":[\"a/layer.tar\"]}]";
	ASSERT_EQ(moat_image_parse_docker(dm2, strlen(dm2), &dk, why, sizeof(why)), 0);
	ASSERT_STREQ(dk.layers[0], "a/layer.tar");
	moat_image_docker_done(&dk);
}

/* A tar of ENTRIES into a temporary file: its fd. Each entry "T NAME [X]":
 * T f (file, X its data), d (dir), l (symlink to X). */
static int layer(const char *const *entries, size_t n)
{
	char path[] = "/tmp/moat-layer-XXXXXX";
	int fd = mkstemp(path);
	ASSERT_TRUE(fd >= 0);
	unlink(path);
	struct archive *a = archive_write_new();
	archive_write_set_format_pax_restricted(a);
	ASSERT_EQ(archive_write_open_fd(a, fd), ARCHIVE_OK);
	for (size_t i = 0; i < n; i++) {
		char t = entries[i][0], name[128], x[128] = "";
		ASSERT_TRUE(sscanf(entries[i] + 2, "%127s %127s", name, x) >= 1);
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_pathname(e, name);
		archive_entry_set_filetype(e, t == 'f' ? AE_IFREG : t == 'd' ? AE_IFDIR : AE_IFLNK);
		archive_entry_set_perm(e, t == 'f' ? 0644 : 0755);
		if (t == 'l')
			archive_entry_set_symlink(e, x);
		archive_entry_set_size(e, t == 'f' ? (la_int64_t)strlen(x) : 0);
		ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK);
		if (t == 'f')
			ASSERT_EQ(archive_write_data(a, x, strlen(x)), (la_ssize_t)strlen(x));
		archive_entry_free(e);
	}
	archive_write_close(a);
	archive_write_free(a);
	return fd;
}

static int unpack(int blob, int root, const char *digest, char *why)
{
	uint64_t bytes = 0, entries = 0;
	char d[MOAT_IMAGE_DIGEST_LEN + 1];
	uint64_t len = 0;
	if (!digest) {
		ASSERT_EQ(moat_image_hash_fd(blob, 1u << 30, d, &len), 0);
		digest = d;
	}
	return moat_image_unpack(blob, root, digest, len, 0, &bytes, 1u << 30, &entries, 1000, why,
				 400);
}

TEST(image_unpack_layers)
{
	char dir[] = "/tmp/moat-unpack-XXXXXX", why[400] = "";
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	char out[sizeof(dir) + 16];
	snprintf(out, sizeof(out), "%s/outside", dir);
	ASSERT_EQ(mkdir(out, 0755), 0);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(mkdirat(dfd, "root", 0755), 0);
	int root = openat(dfd, "root", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_TRUE(root >= 0);

	char tgt[sizeof(out) + 16];
	snprintf(tgt, sizeof(tgt), "l escape %s", out);
	const char *l1[] = {"d etc", "f etc/os-release ID=test", "l bin/sh /bin/busybox", tgt};
	int b1 = layer(l1, ELEMENTSOF(l1));
	ASSERT_EQ(unpack(b1, root, NULL, why), 0);
	char buf[64] = "";
	int fd = openat(root, "etc/os-release", O_RDONLY | O_CLOEXEC);
	ASSERT_TRUE(fd >= 0 && read(fd, buf, sizeof(buf)) == 7);
	close(fd);
	ASSERT_STREQ(buf, "ID=test");
	ASSERT_EQ(readlinkat(root, "bin/sh", buf, sizeof(buf)), 12);

	/* a later layer that writes through the symlink of an earlier one:
	 * refused, nothing lands in the directory it names */
	const char *l3[] = {"f escape/pwned x"};
	int b3 = layer(l3, 1);
	ASSERT_EQ(unpack(b3, root, NULL, why), -EPERM);
	ASSERT_CONTAINS(why, "never written through");
	ASSERT_TRUE(faccessat(dfd, "outside/pwned", F_OK, 0) < 0);
	/* control: the path does lead outside when links are followed */
	fd = openat(root, "escape/pwned", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	close(fd);
	ASSERT_TRUE(faccessat(dfd, "outside/pwned", F_OK, 0) == 0);

	/* a digest that is not the blob's: refused */
	const char *l4[] = {"f a b"};
	int b4 = layer(l4, 1);
	ASSERT_EQ(unpack(b4, root,
			 "sha256:0000000000000000000000000000000000000000000000000000000000000000",
			 why),
		  -EPERM);
	ASSERT_CONTAINS(why, "not sha256:0000");

	/* a whiteout hides what a lower layer put there */
	const char *l5[] = {"f etc/.wh.os-release"};
	int b5 = layer(l5, 1);
	ASSERT_EQ(unpack(b5, root, NULL, why), 0);
	ASSERT_TRUE(faccessat(root, "etc/os-release", F_OK, AT_SYMLINK_NOFOLLOW) < 0);
	ASSERT_TRUE(faccessat(root, "etc", F_OK, AT_SYMLINK_NOFOLLOW) == 0);

	close(b1);
	close(b3);
	close(b4);
	close(b5);
	close(root);
	close(dfd);
	int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(moat_rmtree_at(tmp, dir + 5, 64), 0);
	close(tmp);
}

/* ---- the confined children's descriptors (moat_image_spawn_child) ---- */

/* "FD DEV INO RDEV TYPE" a line for every descriptor this process holds
 * (the listing's own aside), to out; then the process ends. */
_Noreturn static void list_fds(int out)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;
	if (!d)
		_exit(3);
	while ((e = readdir(d))) {
		struct stat st = {0};
		int fd = atoi(e->d_name);
		if (e->d_name[0] == '.' || fd == dirfd(d))
			continue;
		(void)fstat(fd, &st);
		dprintf(out, "%d %llu %llu %llu %o\n", fd, (unsigned long long)st.st_dev,
			(unsigned long long)st.st_ino, (unsigned long long)st.st_rdev,
			(unsigned)(st.st_mode & S_IFMT));
	}
	_exit(0);
}

static void list_child(void *userdata)
{
	list_fds(*(const int *)userdata);
}

static size_t read_to_end(int fd, char *buf, size_t cap)
{
	size_t n = 0;
	ssize_t m;
	while (n < cap - 1 &&
	       ((m = read(fd, buf + n, cap - 1 - n)) > 0 || (m < 0 && errno == EINTR)))
		n += m > 0 ? (size_t)m : 0;
	buf[n] = 0;
	return n;
}

/* In a process of its own with a known descriptor table: the directory
 * (dfd) at 4 and the file (ffd) at 3, so that the first one handed on sits
 * where the second goes; /dev/zero at 9 without O_CLOEXEC and the result
 * pipe at 20. Hands on {4, 3} (how = 2) or {4} (1) with
 * moat_image_spawn_child, or forks plainly (0, the control), and writes
 * "RC STATUS" and the child's listing to the result pipe. */
_Noreturn static void fds_probe(int how, int dfd, int ffd, int res)
{
	int hd = fcntl(dfd, F_DUPFD_CLOEXEC, 30), hf = fcntl(ffd, F_DUPFD_CLOEXEC, 30);
	int hr = fcntl(res, F_DUPFD_CLOEXEC, 30), z = open("/dev/zero", O_RDONLY | O_CLOEXEC);
	int hz = z < 0 ? -1 : fcntl(z, F_DUPFD_CLOEXEC, 30);
	if (hd < 0 || hf < 0 || hr < 0 || hz < 0 || close_range(3, 29, 0) < 0 ||
	    dup3(hf, 3, O_CLOEXEC) < 0 || dup3(hd, 4, O_CLOEXEC) < 0 || dup2(hz, 9) < 0 ||
	    dup3(hr, 20, O_CLOEXEC) < 0)
		_exit(10);
	static const int two[] = {4, 3};
	int out_no = 3 + how, k = 0, rfd = -1, st = 0;
	pid_t pid = -1;
	if (how > 0) {
		k = moat_image_spawn_child(two, (unsigned)how, list_child, &out_no, &pid, &rfd);
	} else {
		int pp[2];
		if (pipe2(pp, O_CLOEXEC) < 0)
			_exit(11);
		pid = fork();
		if (pid == 0)
			list_fds(pp[1]);
		close(pp[1]);
		rfd = pp[0];
	}
	static char buf[8192];
	size_t n = k < 0 || pid < 0 ? 0 : read_to_end(rfd, buf, sizeof(buf));
	if (pid > 0)
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
	dprintf(20, "%d %d\n%.*s", k, st, (int)n, buf);
	_exit(0);
}

struct fd_seen {
	int fd;
	unsigned long long dev, ino, rdev;
	unsigned type;
};

/* The listing of fds_probe(how): its RC and STATUS, the descriptors in
 * *seen (at most max), their count returned. */
static size_t probe_fds(int how, int dfd, int ffd, int *ret_rc, int *ret_st, struct fd_seen *seen,
			size_t max)
{
	int res[2];
	static char buf[8192];
	*ret_rc = *ret_st = -1;
	if (pipe2(res, O_CLOEXEC) < 0)
		return 0;
	pid_t pid = fork();
	if (pid == 0) {
		close(res[0]);
		fds_probe(how, dfd, ffd, res[1]);
	}
	close(res[1]);
	read_to_end(res[0], buf, sizeof(buf));
	close(res[0]);
	int st = 0;
	while (pid > 0 && waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	size_t n = 0;
	char *line = strchr(buf, '\n');
	if (sscanf(buf, "%d %d", ret_rc, ret_st) != 2 || !line)
		return 0;
	while (n < max &&
	       sscanf(line + 1, "%d %llu %llu %llu %o", &seen[n].fd, &seen[n].dev, &seen[n].ino,
		      &seen[n].rdev, &seen[n].type) == 5) {
		n++;
		line = strchr(line + 1, '\n');
		if (!line)
			break;
	}
	return n;
}

static const struct fd_seen *seen_fd(const struct fd_seen *seen, size_t n, int fd)
{
	for (size_t i = 0; i < n; i++)
		if (seen[i].fd == fd)
			return &seen[i];
	return NULL;
}

/* The child that parses an image's bytes holds /dev/null on 0..2, the
 * descriptors handed to it at 3, 4, … in their order (even where one
 * already sat at another's place), its result pipe after them, and no
 * other: not the parent's descriptors with or without O_CLOEXEC. The
 * control: a child forked plainly holds them, and the listing shows it. */
TEST(image_child_fds)
{
	char dir[] = "/tmp/moat-fds-XXXXXX";
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int ffd = openat(dfd, "blob", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	ASSERT_TRUE(dfd >= 0 && ffd >= 0);
	struct stat sd, sf, sn, sz;
	ASSERT_EQ(fstat(dfd, &sd), 0);
	ASSERT_EQ(fstat(ffd, &sf), 0);
	ASSERT_EQ(stat("/dev/null", &sn), 0);
	ASSERT_EQ(stat("/dev/zero", &sz), 0);
	static struct fd_seen seen[64];
	int rc, st;

	/* control: a plain fork keeps all the parent holds */
	size_t n = probe_fds(0, dfd, ffd, &rc, &st, seen, ELEMENTSOF(seen));
	ASSERT_EQ(rc, 0);
	ASSERT_EQ(st, 0);
	const struct fd_seen *z = seen_fd(seen, n, 9);
	ASSERT_TRUE(z && z->rdev == (unsigned long long)sz.st_rdev);
	ASSERT_TRUE(seen_fd(seen, n, 20) != NULL);
	ASSERT_GE(n, 8);

	for (int how = 1; how <= 2; how++) {
		n = probe_fds(how, dfd, ffd, &rc, &st, seen, ELEMENTSOF(seen));
		ASSERT_EQ(rc, 0);
		ASSERT_EQ(st, 0);
		/* 0..2, the ones handed on, the pipe: nothing else */
		ASSERT_EQ(n, 3 + (size_t)how + 1);
		for (int fd = 0; fd < 3; fd++) {
			const struct fd_seen *s = seen_fd(seen, n, fd);
			ASSERT_TRUE(s && s->type == S_IFCHR &&
				    s->rdev == (unsigned long long)sn.st_rdev);
		}
		/* the directory (at 4 in the parent) first, the file (at 3) second */
		const struct fd_seen *a = seen_fd(seen, n, 3);
		ASSERT_TRUE(a && a->type == S_IFDIR && a->ino == (unsigned long long)sd.st_ino &&
			    a->dev == (unsigned long long)sd.st_dev);
		if (how == 2) {
			const struct fd_seen *b = seen_fd(seen, n, 4);
			ASSERT_TRUE(b && b->type == S_IFREG &&
				    b->ino == (unsigned long long)sf.st_ino);
		}
		const struct fd_seen *p = seen_fd(seen, n, 3 + how);
		ASSERT_TRUE(p && p->type == S_IFIFO);
	}

	/* more than it hands on: refused before any fork */
	static const int five[] = {0, 1, 2, 0, 1};
	pid_t pid = -1;
	int rfd = -1, arg = 0;
	ASSERT_EQ(moat_image_spawn_child(five, ELEMENTSOF(five), list_child, &arg, &pid, &rfd),
		  -EINVAL);
	ASSERT_EQ(pid, -1);

	close(ffd);
	close(dfd);
	int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(moat_rmtree_at(tmp, dir + 5, 64), 0);
	close(tmp);
}

/* ---- the confined reader's result (image_read.c) ---- */

struct recs {
	char b[8192];
	size_t n;
};

static void rec(struct recs *r, char tag, const void *p, size_t n)
{
	r->b[r->n] = tag;
	for (int i = 0; i < 4; i++)
		r->b[r->n + 1 + (size_t)i] = (char)(n >> (8 * i) & 0xff);
	memcpy(r->b + r->n + 5, p, n);
	r->n += 5 + n;
}

static void rec_s(struct recs *r, char tag, const char *s)
{
	rec(r, tag, s, strlen(s));
}

#define DG "sha256:1111111111111111111111111111111111111111111111111111111111111111"
#define DC "sha256:2222222222222222222222222222222222222222222222222222222222222222"
#define DL "sha256:3333333333333333333333333333333333333333333333333333333333333333"

/* A good plan, then with one record changed (what, value) instead. */
static size_t plan_with(struct recs *r, char what, const char *value, bool end)
{
	char f[MOAT_IMAGE_DIGEST_LEN + 8 + 100], l[MOAT_IMAGE_DIGEST_LEN + 9];
	const char *cname = what == 'F'
		? value
		: "blobs/sha256/"
		  "2222222222222222222222222222222222222222222222222222222222222222";
	r->n = 0;
	rec_s(r, 'D', DG);
	memcpy(f, DC, MOAT_IMAGE_DIGEST_LEN);
	memset(f + MOAT_IMAGE_DIGEST_LEN, 0, 8);
	f[MOAT_IMAGE_DIGEST_LEN] = 7;
	memcpy(f + MOAT_IMAGE_DIGEST_LEN + 8, cname, strlen(cname));
	rec(r, 'F', f, MOAT_IMAGE_DIGEST_LEN + 8 + strlen(cname));
	memcpy(l, DL, MOAT_IMAGE_DIGEST_LEN);
	memset(l + MOAT_IMAGE_DIGEST_LEN, 0, 9);
	l[MOAT_IMAGE_DIGEST_LEN] = 42;
	l[MOAT_IMAGE_DIGEST_LEN + 8] = what == 'L' ? 9 : MOAT_IMAGE_COMP_GZIP;
	rec(r, 'L', l, sizeof(l));
	if (what != 'I')
		rec_s(r, 'I', DL);
	rec_s(r, 'E', what == 'E' ? value : "PATH=/bin");
	rec_s(r, 'W', what == 'W' ? value : "/srv");
	rec_s(r, 'U', "app");
	rec_s(r, 'P', "/bin/sh");
	if (what == 'C')
		rec(r, 'C', value, 3); /* with its NUL */
	else
		rec_s(r, 'C', "echo hi");
	if (end)
		rec(r, 'X', "", 0);
	if (what == '+')
		rec_s(r, 'U', "root");
	return r->n;
}

TEST(image_plan_decode)
{
	static struct recs r;
	static struct moat_image_plan p;
	char why[400] = "";
	plan_with(&r, 0, NULL, true);
	ASSERT_EQ(moat_image_plan_decode(r.b, r.n, &p, why, sizeof(why)), 0);
	ASSERT_STREQ(p.digest, DG);
	ASSERT_STREQ(p.config_digest, DC);
	ASSERT_EQ(p.config_size, 7);
	ASSERT_EQ(p.n_layers, 1);
	ASSERT_STREQ(p.layers[0].digest, DL);
	ASSERT_EQ(p.layers[0].size, 42);
	ASSERT_EQ(p.layers[0].comp, MOAT_IMAGE_COMP_GZIP);
	ASSERT_EQ(p.cfg.n_env, 1);
	ASSERT_STREQ(p.cfg.env[0], "PATH=/bin");
	ASSERT_STREQ(p.cfg.workdir, "/srv");
	ASSERT_STREQ(p.cfg.user, "app");
	ASSERT_EQ(p.cfg.n_entrypoint, 1);
	ASSERT_STREQ(p.cfg.cmd[0], "echo hi");
	moat_image_plan_done(&p);

	/* what a reader that was taken over might send: each refused */
	static const struct {
		char what;
		const char *value;
		bool end;
		const char *msg;
	} forged[] = {
		{0, NULL, false, "incomplete"}, /* cut short: no end record */
		{'+', NULL, true, "after its end"},
		{'F', "blobs/sha256/../../etc/shadow", true, "the config"},
		{'F', "other/config.json", true, "not the blob of its digest"},
		{'E', "=x", true, "Env"},
		{'E', "LD_PRELOAD", true, "Env"},
		{'W', "relative", true, "WorkingDir"},
		{'C', "a\0b", true, "Cmd"},
		{'L', NULL, true, "a layer"},
		{'I', NULL, true, "incomplete"}, /* no diff_id for the layer */
	};
	for (size_t i = 0; i < ELEMENTSOF(forged); i++) {
		plan_with(&r, forged[i].what, forged[i].value, forged[i].end);
		why[0] = 0;
		ASSERT_EQ(moat_image_plan_decode(r.b, r.n, &p, why, sizeof(why)), -EBADMSG);
		ASSERT_CONTAINS(why, forged[i].msg);
	}
	/* a length past the end */
	plan_with(&r, 0, NULL, true);
	r.b[r.n - 5 + 1] = 1;
	ASSERT_EQ(moat_image_plan_decode(r.b, r.n, &p, why, sizeof(why)), -EBADMSG);
	ASSERT_CONTAINS(why, "truncated");
	/* a refusal: its errno, its message shown without control bytes */
	r.n = 0;
	rec(&r, 'R', "\x16\0\0\0config: \033[2Jbad", sizeof("\x16\0\0\0config: \033[2Jbad") - 1);
	ASSERT_EQ(moat_image_plan_decode(r.b, r.n, &p, why, sizeof(why)), -EINVAL);
	ASSERT_STREQ(why, "the confined reader: config: ?[2Jbad");
}

/* name in dir: the bytes; its digest into d when d */
static void put_file(int dfd, const char *name, const char *s, char *d)
{
	int fd = openat(dfd, name, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	uint64_t len;
	if (fd < 0 || write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		abort();
	if (d && moat_image_hash_fd(fd, 1u << 20, d, &len) < 0)
		abort();
	close(fd);
}

/* An OCI layout in dir with the config json; its blobs in blobs_dir. */
static void mk_layout(const char *dir, const char *blobs_dir, const char *config,
		      char mdig[MOAT_IMAGE_DIGEST_LEN + 1])
{
	char cdig[MOAT_IMAGE_DIGEST_LEN + 1], ldig[MOAT_IMAGE_DIGEST_LEN + 1], buf[2048];
	char p[512];
	snprintf(p, sizeof(p), "%s/sha256", blobs_dir);
	if (mkdir(blobs_dir, 0755) < 0 || mkdir(p, 0755) < 0)
		abort();
	int b = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC), l = open(dir, O_RDONLY | O_CLOEXEC);
	put_file(b, "t", config, cdig);
	renameat(b, "t", b, cdig + 7);
	put_file(b, "t", "layer bytes", ldig);
	renameat(b, "t", b, ldig + 7);
	snprintf(buf, sizeof(buf),
		 "{\"schemaVersion\":2,\"config\":{\"mediaType\":"
		 "\"application/vnd.oci.image.config.v1+json\",\"digest\":\"%s\",\"size\":%zu},"
		 "\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\","
		 "\"digest\":\"%s\",\"size\":11}]}",
		 cdig, strlen(config), ldig);
	put_file(b, "t", buf, mdig);
	renameat(b, "t", b, mdig + 7);
	snprintf(p, sizeof(p),
		 "{\"schemaVersion\":2,\"manifests\":[{\"mediaType\":"
		 "\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"%s\",\"size\":%zu}]}",
		 mdig, strlen(buf));
	put_file(l, "index.json", p, NULL);
	put_file(l, "oci-layout", "{\"imageLayoutVersion\":\"1.0.0\"}", NULL);
	close(b);
	close(l);
}

TEST(image_read_confined)
{
	char dir[] = "/tmp/moat-read-XXXXXX", why[700] = "", p[256], q[256];
	char mdig[MOAT_IMAGE_DIGEST_LEN + 1];
	static struct moat_image_plan pl;
	ASSERT_TRUE(mkdtemp(dir) != NULL);
	ASSERT_EQ(chmod(dir, 0755), 0);
	const char *cfg = "{\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"" DL "\"]},"
			  "\"config\":{\"Env\":[\"A=1\"],\"User\":\"app\"}}";

	/* a good layout: the plan */
	snprintf(p, sizeof(p), "%s/good", dir);
	snprintf(q, sizeof(q), "%s/good/blobs", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	mk_layout(p, q, cfg, mdig);
	int fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(moat_image_read(fd, &pl, why, sizeof(why)), 0);
	close(fd);
	ASSERT_STREQ(pl.digest, mdig);
	ASSERT_EQ(pl.n_layers, 1);
	ASSERT_STREQ(pl.cfg.env[0], "A=1");
	ASSERT_STREQ(pl.cfg.user, "app");
	moat_image_plan_done(&pl);

	/* a config that is not JSON: the reader's refusal, through its pipe */
	snprintf(p, sizeof(p), "%s/bad", dir);
	snprintf(q, sizeof(q), "%s/bad/blobs", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	mk_layout(p, q, "{\"rootfs\": [", mdig);
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(moat_image_read(fd, &pl, why, sizeof(why)), -EINVAL);
	close(fd);
	ASSERT_CONTAINS(why, "the confined reader: not JSON");

	/* the reader's root is the layout: blobs behind an absolute symlink
	 * to a directory outside are not reachable from it */
	snprintf(p, sizeof(p), "%s/link", dir);
	snprintf(q, sizeof(q), "%s/outside", dir);
	ASSERT_EQ(mkdir(p, 0755), 0);
	mk_layout(p, q, cfg, mdig);
	snprintf(p, sizeof(p), "%s/link/blobs", dir);
	ASSERT_EQ(symlink(q, p), 0);
	/* control: outside a chroot the manifest is there through the link */
	snprintf(p, sizeof(p), "%s/link/blobs/sha256/%s", dir, mdig + 7);
	ASSERT_EQ(access(p, R_OK), 0);
	snprintf(p, sizeof(p), "%s/link", dir);
	fd = open(p, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(moat_image_read(fd, &pl, why, sizeof(why)), -ENOENT);
	close(fd);
	ASSERT_CONTAINS(why, "the confined reader: manifest: No such file");

	int tmp = open("/tmp", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	ASSERT_EQ(moat_rmtree_at(tmp, dir + 5, 64), 0);
	close(tmp);
}
