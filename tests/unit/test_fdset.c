/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The helpers' descriptor hygiene (shared/fdset.h): compaction, and the exact
 * check with its positive controls (an extra descriptor, a wrong kind, a
 * missing one). Each test runs in its own forked child. */
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/tap.h"
#include "shared/fdset.h"
#include "shared/macro.h"

static const enum moat_fdset_kind helper_layout[] = {
	MOAT_FDSET_NULL, MOAT_FDSET_NULL,   MOAT_FDSET_NULL,
	MOAT_FDSET_PIPE, MOAT_FDSET_SOCKET, MOAT_FDSET_MEMFD,
};

/* A layout like the helpers': /dev/null 0-2, a pipe, a socket, a sealed memfd,
 * plus descriptors scattered high up that must disappear. */
static int make_layout(void)
{
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC), p[2], sv[2];
	int mfd = memfd_create("t", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (nul < 0 || mfd < 0 || pipe2(p, O_CLOEXEC) < 0 ||
	    socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0 ||
	    fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		return -1;
	(void)!dup2(nul, 100); /* a stray one, no CLOEXEC */
	(void)!dup2(nul, 777);
	const int keep[] = {nul, nul, nul, p[1], sv[0], mfd};
	return moat_fdset_compact(keep, ELEMENTSOF(keep));
}

TEST(fdset_compact_then_exact)
{
	char why[200];
	ASSERT_EQ(make_layout(), 0);
	ASSERT_EQ(moat_fdset_check(helper_layout, ELEMENTSOF(helper_layout), why, sizeof(why)), 0);
	/* the targets are inherited across exec, nothing else is open */
	ASSERT_EQ(fcntl(3, F_GETFD) & FD_CLOEXEC, 0);
	ASSERT_TRUE(fcntl(100, F_GETFD) < 0);
	ASSERT_TRUE(fcntl(777, F_GETFD) < 0);
	ASSERT_TRUE(fcntl(6, F_GETFD) < 0);
}

TEST(fdset_extra_descriptor_is_a_mismatch)
{
	char why[200];
	ASSERT_EQ(make_layout(), 0);
	int extra = open("/dev/null", O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(extra, 6);
	ASSERT_EQ(moat_fdset_check(helper_layout, ELEMENTSOF(helper_layout), why, sizeof(why)),
		  -EBADF);
	ASSERT_TRUE(strstr(why, "descriptor 6") != NULL);
	/* a high one too */
	close(extra);
	ASSERT_EQ(dup2(0, 999), 999);
	ASSERT_EQ(moat_fdset_check(helper_layout, ELEMENTSOF(helper_layout), why, sizeof(why)),
		  -EBADF);
	ASSERT_TRUE(strstr(why, "descriptor 999") != NULL);
}

TEST(fdset_wrong_kind_or_missing_is_a_mismatch)
{
	char why[200];
	ASSERT_EQ(make_layout(), 0);
	/* a regular file where the socket should be */
	int f = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	ASSERT_EQ(dup2(f, 4), 4);
	close(f);
	ASSERT_EQ(moat_fdset_check(helper_layout, ELEMENTSOF(helper_layout), why, sizeof(why)),
		  -EBADF);
	ASSERT_TRUE(strstr(why, "descriptor 4 is not a socket") != NULL);
	/* one missing */
	close(4);
	ASSERT_EQ(moat_fdset_check(helper_layout, ELEMENTSOF(helper_layout), why, sizeof(why)),
		  -EBADF);
	/* a memfd without seals is not the helper's configuration */
	int sv[2], m = memfd_create("u", MFD_CLOEXEC);
	ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	ASSERT_EQ(dup2(sv[0], 4), 4);
	ASSERT_EQ(dup2(m, 5), 5);
	close(sv[0]);
	close(sv[1]);
	close(m);
	ASSERT_EQ(moat_fdset_check(helper_layout, ELEMENTSOF(helper_layout), why, sizeof(why)),
		  -EBADF);
	ASSERT_TRUE(strstr(why, "descriptor 5 is not a memfd") != NULL);
}

TEST(fdset_describe_like_the_test_script)
{
	char buf[512];
	ASSERT_EQ(make_layout(), 0);
	ASSERT_EQ(moat_fdset_describe(buf, sizeof(buf)), 0);
	ASSERT_STREQ(buf,
		     "0=/dev/null 1=/dev/null 2=/dev/null 3=pipe 4=socket 5=/memfd:t (deleted)");
}
