/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "harness/tap.h"
#include "shared/parse.h"

TEST(parse_size)
{
	uint64_t v = 0;
	ASSERT_EQ(moat_parse_size("4096", &v), 0);
	ASSERT_EQ(v, 4096);
	ASSERT_EQ(moat_parse_size("4G", &v), 0);
	ASSERT_EQ(v, 4ull << 30);
	ASSERT_EQ(moat_parse_size("512KiB", &v), 0);
	ASSERT_EQ(v, 512ull << 10);
	ASSERT_EQ(moat_parse_size("1.5M", &v), 0);
	ASSERT_EQ(v, 3ull << 19);
	ASSERT_EQ(moat_parse_size("", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("-1", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("1.5", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("12X", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("99999999999T", &v), -ERANGE);
}

TEST(parse_duration)
{
	uint64_t v = 0;
	ASSERT_EQ(moat_parse_duration("90s", &v), 0);
	ASSERT_EQ(v, 90000);
	ASSERT_EQ(moat_parse_duration("10m", &v), 0);
	ASSERT_EQ(v, 600000);
	ASSERT_EQ(moat_parse_duration("1h30m", &v), 0);
	ASSERT_EQ(v, 5400000);
	ASSERT_EQ(moat_parse_duration("250ms", &v), 0);
	ASSERT_EQ(v, 250);
	ASSERT_EQ(moat_parse_duration("1.5s", &v), 0);
	ASSERT_EQ(v, 1500);
	ASSERT_EQ(moat_parse_duration("5", &v), 0);
	ASSERT_EQ(v, 5000);
	ASSERT_EQ(moat_parse_duration("s", &v), -EINVAL);
	ASSERT_EQ(moat_parse_duration("10x", &v), -EINVAL);
	ASSERT_EQ(moat_parse_duration("", &v), -EINVAL);
}

TEST(parse_milli)
{
	uint64_t v = 0;
	ASSERT_EQ(moat_parse_milli("1.5", &v), 0);
	ASSERT_EQ(v, 1500);
	ASSERT_EQ(moat_parse_milli("2", &v), 0);
	ASSERT_EQ(v, 2000);
	ASSERT_EQ(moat_parse_milli("0", &v), -ERANGE);
	ASSERT_EQ(moat_parse_milli("abc", &v), -EINVAL);
}

/* Unit spellings (issue 18): K/M/G/T/P/E in either case, then B or iB; a
 * lowercase b (bits) is refused; overflow is an error, never a wrap. */
TEST(parse_size_units_and_overflow)
{
	uint64_t v = 0;
	ASSERT_EQ(moat_parse_size("1g", &v), 0);
	ASSERT_EQ(v, 1ull << 30);
	ASSERT_EQ(moat_parse_size("1GB", &v), 0);
	ASSERT_EQ(v, 1ull << 30);
	ASSERT_EQ(moat_parse_size("1GiB", &v), 0);
	ASSERT_EQ(v, 1ull << 30);
	ASSERT_EQ(moat_parse_size("2kib", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("100B", &v), 0);
	ASSERT_EQ(v, 100);
	ASSERT_EQ(moat_parse_size("1Gb", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("1b", &v), -EINVAL);
	ASSERT_EQ(moat_parse_size("1E", &v), 0);
	ASSERT_EQ(v, 1ull << 60);
	ASSERT_EQ(moat_parse_size("15.999E", &v), 0);
	ASSERT_EQ(moat_parse_size("16E", &v), -ERANGE);
	ASSERT_EQ(moat_parse_size("17179869184G", &v), -ERANGE);
	ASSERT_EQ(moat_parse_size("1844674407370955161", &v), 0);
	ASSERT_EQ(moat_parse_size("18446744073709551616", &v), -ERANGE);
}

TEST(parse_duration_units_and_overflow)
{
	uint64_t v = 0;
	ASSERT_EQ(moat_parse_duration("1d", &v), 0);
	ASSERT_EQ(v, 86400000);
	ASSERT_EQ(moat_parse_duration("10M", &v), -EINVAL);
	ASSERT_EQ(moat_parse_duration("99999999999h", &v), 0); /* in range of u64 */
	ASSERT_EQ(moat_parse_duration("9999999999999999d", &v), -ERANGE);
	ASSERT_EQ(moat_parse_duration("5124095576030h", &v), 0);
	ASSERT_EQ(moat_parse_duration("5124095576030432h", &v), -ERANGE);
}
