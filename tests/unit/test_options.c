/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The option table as structured data (moat_policy_option_info): what the
 * CLI's help and "did you mean" are built from, without parsing text. */
#include "harness/tap.h"

#include "moat/moat.h"

TEST(options_info_is_the_table)
{
	const char *const *help = moat_policy_option_help();
	struct moat_option_info o;
	size_t i = 0;
	for (; moat_policy_option_info(i, &o) >= 0; i++) {
		ASSERT_TRUE(o.flag && o.flag[0] == '-' && o.flag[1] == '-');
		ASSERT_TRUE(!strchr(o.flag, ' ') && !strchr(o.flag, '\t'));
		ASSERT_TRUE(o.help && o.help[0]);
		ASSERT_TRUE(!o.arg || o.arg[0]);
		/* the switches take no value, the others one */
		ASSERT_EQ(moat_policy_option_takes_value(o.flag), o.arg ? 1 : 0);
		/* the same entry as the help line of old */
		char line[512];
		snprintf(line, sizeof(line), "%s%s%s\t%s", o.flag, o.arg ? " " : "",
			 o.arg ? o.arg : "", o.help);
		ASSERT_TRUE(help[i]);
		ASSERT_STREQ(help[i], line);
	}
	ASSERT_GE(i, 40u);
	ASSERT_TRUE(!help[i]);
	ASSERT_EQ(moat_policy_option_info(i, &o), -ENOENT);
	ASSERT_EQ(moat_policy_option_info(0, NULL), -ENOENT);
	ASSERT_EQ(moat_policy_option_info((size_t)-1, &o), -ENOENT);
}
