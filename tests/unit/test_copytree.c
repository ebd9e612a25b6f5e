/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"

#include <fcntl.h>
#include <nettle/sha2.h>
#include <string.h>
#include <ftw.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "workspace/copytree.h"
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

/* Remove a test's temporary tree (never following symlinks) and free the name. */
static void rmrfp(char **d)
{
	if (*d)
		nftw(*d, rm_one, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	free(*d);
}

static char *mktmp(void)
{
	char *d = strdup("/tmp/moat-copy-XXXXXX");
	if (!d || !mkdtemp(d))
		moat_tap_fail(__FILE__, __LINE__, "mkdtemp: %m");
	return d;
}

static void put(int dfd, const char *name, const char *data, mode_t mode)
{
	int fd = openat(dfd, name, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
	if (fd < 0 || write(fd, data, strlen(data)) != (ssize_t)strlen(data))
		moat_tap_fail(__FILE__, __LINE__, "write %s: %m", name);
	fchmod(fd, mode);
	close(fd);
}

static int dopen(const char *base, const char *sub)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", base, sub);
	mkdir(p, 0755);
	int fd = open(p, O_PATH | O_DIRECTORY | O_CLOEXEC);
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

TEST(copytree_hostile_tree)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int src = dopen(d, "src"), dst = dopen(d, "dst");
	struct moat_copy_report rep;
	struct stat st;
	char longname[256];

	put(src, "ok.txt", "hello", 0644);
	put(src, "suid", "x", 04755);
	ASSERT_EQ(mkdirat(src, "sub", 0755), 0);
	put(src, "sub/inner.txt", "inner", 0600);
	put(src, "bad\nname\x1b[31m\xff", "hostile", 0644);
	memset(longname, 'L', 255);
	longname[255] = '\0';
	put(src, longname, "long", 0644);
	ASSERT_EQ(symlinkat("/etc/passwd", src, "passwd"), 0);
	ASSERT_EQ(symlinkat("../../outside", src, "sub/up"), 0);
	ASSERT_EQ(symlinkat("/etc", src, "etcdir"), 0);
	ASSERT_EQ(mkfifoat(src, "fifo", 0644), 0);
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/src/sock", d);
	ASSERT_EQ(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	close(s);

	ASSERT_EQ(moat_copytree_safe(src, dst, 1 << 20, 0, &rep), 0);
	ASSERT_EQ(rep.files, 5);
	ASSERT_EQ(rep.dirs, 1);
	ASSERT_EQ(rep.skipped_symlinks, 3);
	ASSERT_EQ(rep.skipped_special, 2);
	ASSERT_EQ(rep.stripped_modes, 1);
	ASSERT_STREQ(slurp(dst, "ok.txt"), "hello");
	ASSERT_STREQ(slurp(dst, "sub/inner.txt"), "inner");
	ASSERT_STREQ(slurp(dst, "bad\nname\x1b[31m\xff"), "hostile");
	ASSERT_STREQ(slurp(dst, longname), "long");
	ASSERT_EQ(fstatat(dst, "suid", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_EQ(st.st_mode & 07777, 0755);
	ASSERT_EQ(fstatat(dst, "sub/inner.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_EQ(st.st_mode & 07777, 0600);
	ASSERT_ERRNO(fstatat(dst, "passwd", &st, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_ERRNO(fstatat(dst, "sub/up", &st, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_ERRNO(fstatat(dst, "etcdir", &st, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_ERRNO(fstatat(dst, "fifo", &st, AT_SYMLINK_NOFOLLOW), ENOENT);
	ASSERT_ERRNO(fstatat(dst, "sock", &st, AT_SYMLINK_NOFOLLOW), ENOENT);
	bool saw_passwd = false;
	for (unsigned i = 0; i < rep.n_notes; i++)
		if (streq(rep.notes[i].path, "passwd")) {
			ASSERT_STREQ(rep.notes[i].reason, "symlink");
			ASSERT_STREQ(rep.notes[i].target, "/etc/passwd");
			saw_passwd = true;
		}
	ASSERT_TRUE(saw_passwd);
	moat_copy_report_done(&rep);

	/* a second copy into the now non-empty destination is refused ... */
	ASSERT_EQ(moat_copytree_safe(src, dst, 0, 0, &rep), -ENOTEMPTY);
	/* ... unless overwriting; a host symlink in the way is replaced, not followed */
	ASSERT_EQ(unlinkat(dst, "ok.txt", 0), 0);
	char victim[512];
	snprintf(victim, sizeof(victim), "%s/victim", d);
	int v = open(victim, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_EQ(write(v, "keep", 4), 4);
	close(v);
	ASSERT_EQ(symlinkat(victim, dst, "ok.txt"), 0);
	ASSERT_EQ(moat_copytree_safe(src, dst, 0, MOAT_COPY_OVERWRITE, &rep), 0);
	moat_copy_report_done(&rep);
	ASSERT_EQ(fstatat(dst, "ok.txt", &st, AT_SYMLINK_NOFOLLOW), 0);
	ASSERT_TRUE(S_ISREG(st.st_mode));
	_cleanup_close_ int dd = open(d, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ASSERT_STREQ(slurp(dd, "victim"), "keep");
}

TEST(copytree_byte_cap)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int src = dopen(d, "src"), dst = dopen(d, "dst");
	struct moat_copy_report rep;
	char big[3000];
	struct stat st;

	memset(big, 'b', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	put(src, "a", big, 0644);
	ASSERT_EQ(moat_copytree_safe(src, dst, 1000, 0, &rep), -EFBIG);
	ASSERT_STREQ(rep.stopped_at, "a");
	ASSERT_ERRNO(fstatat(dst, "a", &st, AT_SYMLINK_NOFOLLOW), ENOENT);
	moat_copy_report_done(&rep);
	/* a sparse 1 TiB file is refused from its size, before any copying */
	int fd = openat(src, "sparse", O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	ASSERT_TRUE(fd >= 0);
	ASSERT_EQ(ftruncate(fd, 1ll << 40), 0);
	close(fd);
	ASSERT_EQ(unlinkat(src, "a", 0), 0);
	ASSERT_EQ(moat_copytree_safe(src, dst, 1 << 20, 0, &rep), -EFBIG);
	ASSERT_EQ(rep.bytes, 0);
	moat_copy_report_done(&rep);
}

TEST(copytree_depth_cap)
{
	_cleanup_(rmrfp) char *d = mktmp();
	_cleanup_close_ int src = dopen(d, "src"), dst = dopen(d, "dst");
	struct moat_copy_report rep;
	int cur = dup(src);

	for (unsigned i = 0; i < MOAT_COPY_MAX_DEPTH + 2; i++) {
		ASSERT_EQ(mkdirat(cur, "d", 0755), 0);
		int n = openat(cur, "d", O_PATH | O_DIRECTORY | O_CLOEXEC);
		close(cur);
		cur = n;
	}
	close(cur);
	ASSERT_EQ(moat_copytree_safe(src, dst, 0, 0, &rep), -ELOOP);
	ASSERT_TRUE(rep.stopped_at != NULL);
	moat_copy_report_done(&rep);
}

/* The data copy feeds SHA-256 (the change manifest's digests): FIPS 180-4's
 * "abc" and two-block vectors, read through a pipe in one and in several
 * writes, and the copy itself byte-exact. */
TEST(copytree_copy_data_sha256)
{
	static const struct {
		const char *in;
		const char *hex;
	} v[] = {
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
		{"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
		 "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
	};
	for (size_t i = 0; i < ELEMENTSOF(v); i++) {
		int in[2], out[2];
		struct sha256_ctx ctx;
		uint8_t md[SHA256_DIGEST_SIZE];
		char hex[2 * SHA256_DIGEST_SIZE + 1], back[128] = {0};
		uint64_t n = 0;
		size_t len = strlen(v[i].in);

		ASSERT_EQ(0, pipe(in));
		ASSERT_EQ(0, pipe(out));
		ASSERT_EQ((ssize_t)len, write(in[1], v[i].in, len));
		close(in[1]);
		sha256_init(&ctx);
		ASSERT_EQ(0, moat_copytree_copy_data(in[0], out[1], 0, &ctx, &n));
		sha256_digest(&ctx, sizeof(md), md);
		for (size_t j = 0; j < sizeof(md); j++)
			snprintf(hex + 2 * j, 3, "%02x", md[j]);
		ASSERT_STREQ(v[i].hex, hex);
		ASSERT_EQ(len, (size_t)n);
		close(out[1]);
		ASSERT_EQ((ssize_t)len, read(out[0], back, sizeof(back)));
		ASSERT_TRUE(memcmp(back, v[i].in, len) == 0);
		close(in[0]);
		close(out[0]);
	}
}
