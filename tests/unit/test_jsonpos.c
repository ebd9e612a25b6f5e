/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"
#include "shared/jsonpos.h"

TEST(jsonpos_locate)
{
	const char *t = "{\n  \"a\": { \"b\": [1, {\"c\": true}] },\n  \"d\": \"x\"\n}";
	struct moat_json_path_elem p1[] = {{"a", 0}, {"b", 0}, {NULL, 1}, {"c", 0}};
	unsigned l = 0, c = 0;
	ASSERT_EQ(moat_json_locate(t, strlen(t), p1, 4, 0, &l, &c), 0);
	ASSERT_EQ(l, 2);
	ASSERT_EQ(c, 25);
	ASSERT_EQ(moat_json_locate(t, strlen(t), p1, 4, 1, &l, &c), 0);
	ASSERT_EQ(c, 20);
	struct moat_json_path_elem p2[] = {{"d", 0}};
	ASSERT_EQ(moat_json_locate(t, strlen(t), p2, 1, 0, &l, &c), 0);
	ASSERT_EQ(l, 3);
	ASSERT_EQ(c, 8);
	struct moat_json_path_elem p3[] = {{"zz", 0}};
	ASSERT_EQ(moat_json_locate(t, strlen(t), p3, 1, 0, &l, &c), -ENOENT);
	/* malformed input never crashes */
	ASSERT_TRUE(moat_json_locate("{\"a\":", 5, p2, 1, 0, &l, &c) < 0);
	ASSERT_TRUE(moat_json_locate("[[[[", 4, p2, 1, 0, &l, &c) < 0);
}
