/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "shared/parse.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

int moat_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret)
{
	char *end;
	if (!s || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno == ERANGE)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	if (v < min || v > max)
		return -ERANGE;
	*ret = v;
	return 0;
}

/* Parses "123" or "123.45" into an integer part and thousandths, without
 * floating point so results are exact and overflow is detected. */
static int parse_decimal(const char **s, uint64_t *ret_int, uint64_t *ret_milli)
{
	const char *p = *s;
	uint64_t ip = 0, frac = 0;
	unsigned digits = 0;
	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	while (isdigit((unsigned char)*p)) {
		if (ip > (UINT64_MAX - 9) / 10)
			return -ERANGE;
		ip = ip * 10 + (uint64_t)(*p++ - '0');
	}
	if (*p == '.') {
		p++;
		if (!isdigit((unsigned char)*p))
			return -EINVAL;
		while (isdigit((unsigned char)*p)) {
			if (digits < 3) {
				frac = frac * 10 + (uint64_t)(*p - '0');
				digits++;
			}
			p++;
		}
		while (digits < 3) {
			frac *= 10;
			digits++;
		}
	}
	*s = p;
	*ret_int = ip;
	*ret_milli = frac;
	return 0;
}

static int mul_milli(uint64_t ip, uint64_t milli, uint64_t unit, uint64_t *ret)
{
	/* 128-bit products: a unit of up to 2^60 times up to 999 thousandths,
	 * and any overflow is an error, never a wrap */
	unsigned __int128 v = (unsigned __int128)ip * unit + (unsigned __int128)milli * unit / 1000;
	if (v > UINT64_MAX)
		return -ERANGE;
	*ret = (uint64_t)v;
	return 0;
}

int moat_parse_size(const char *s, uint64_t *ret_bytes)
{
	static const char units[] = "KMGTPE";
	uint64_t ip, milli, unit = 1;
	if (!s)
		return -EINVAL;
	int r = parse_decimal(&s, &ip, &milli);
	if (r < 0)
		return r;
	const char *u = *s ? strchr(units, toupper((unsigned char)*s)) : NULL;
	if (u) {
		unit = 1ull << (10 * (unsigned)(u - units + 1));
		s++;
		/* "B" or "iB" after the unit; a lowercase "b" would be bits */
		if (strcmp(s, "B") == 0 || strcmp(s, "iB") == 0)
			s += strlen(s);
	} else if (strcmp(s, "B") == 0) {
		s++;
	}
	if (*s)
		return -EINVAL;
	if (unit == 1 && milli)
		return -EINVAL; /* fractional bytes */
	return mul_milli(ip, milli, unit, ret_bytes);
}

int moat_parse_duration(const char *s, uint64_t *ret_ms)
{
	uint64_t total = 0;
	if (!s || !*s)
		return -EINVAL;
	while (*s) {
		uint64_t ip, milli, unit, v;
		int r = parse_decimal(&s, &ip, &milli);
		if (r < 0)
			return r;
		if (strncmp(s, "ms", 2) == 0) {
			unit = 1;
			s += 2;
		} else if (*s == 's') {
			unit = 1000;
			s++;
		} else if (*s == 'm') {
			unit = 60 * 1000;
			s++;
		} else if (*s == 'h') {
			unit = 3600 * 1000;
			s++;
		} else if (*s == 'd') {
			unit = 24ull * 3600 * 1000;
			s++;
		} else if (*s == 0) {
			unit = 1000;
		} else {
			return -EINVAL;
		}
		if (unit == 1 && milli)
			return -EINVAL;
		r = mul_milli(ip, milli, unit, &v);
		if (r < 0)
			return r;
		if (total > UINT64_MAX - v)
			return -ERANGE;
		total += v;
	}
	*ret_ms = total;
	return 0;
}

int moat_parse_milli(const char *s, uint64_t *ret_milli)
{
	uint64_t ip, milli;
	if (!s)
		return -EINVAL;
	int r = parse_decimal(&s, &ip, &milli);
	if (r < 0)
		return r;
	if (*s)
		return -EINVAL;
	if (ip > 4096)
		return -ERANGE;
	uint64_t v = ip * 1000 + milli;
	if (v == 0 || v > 4096 * 1000)
		return -ERANGE;
	*ret_milli = v;
	return 0;
}

const char *moat_format_size(uint64_t bytes, char *buf, unsigned len)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	unsigned u = 0;
	double v = (double)bytes;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}
