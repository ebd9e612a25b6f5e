/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat_hostroot_map_is_zero (shared/hostroot.c): which uid_map says that
 * uid 0 here is the parent's uid 0 (root), and which that it is an
 * unprivileged user's (rootless podman's namespace). An unreadable or
 * strange map counts as root: the privileged path fails closed. */
#include <string.h>

#include "harness/tap.h"
#include "shared/hostroot.h"

static bool zero(const char *map, unsigned long id)
{
	return moat_hostroot_map_is_zero(map, strlen(map), id);
}

TEST(hostroot_maps)
{
	/* the initial namespace: root */
	ASSERT_TRUE(zero("         0          0 4294967295\n", 0));
	/* rootless podman without subuids: uid 0 is the user's 999 */
	ASSERT_TRUE(!zero("         0        999          1\n", 0));
	/* with subuids: 0 -> 1000, 1..65536 -> 100000.. */
	ASSERT_TRUE(!zero("0 1000 1\n1 100000 65536\n", 0));
	/* a root-made namespace that maps 0 onto 0: still root */
	ASSERT_TRUE(zero("0 0 1\n", 0));
	ASSERT_TRUE(zero("1 1000 10\n0 0 1\n", 0));
	/* the id in a later range */
	ASSERT_TRUE(!zero("0 1000 1\n5 2000 10\n", 7));
	ASSERT_TRUE(zero("0 1000 1\n5 0 10\n", 5));
	/* not mapped, empty, malformed: counted as root (fail closed) */
	ASSERT_TRUE(zero("1 1000 10\n", 0));
	ASSERT_TRUE(zero("", 0));
	ASSERT_TRUE(zero("0 x 1\n", 0));
	ASSERT_TRUE(zero("0 1000\n", 0));
	ASSERT_TRUE(zero("0 99999999999999999999 1\n", 0));
}
