/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pure parsers for values users type: sizes, durations, numbers, ids. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* "4096", "4096B", "512K", "4g", "1.5GiB": binary units K, M, G, T, P, E in
 * either case (1K = 1024), optionally followed by "B" or "iB" (uppercase B: a
 * lowercase "b" would be bits and is refused). Returns 0, -EINVAL (not a
 * size) or -ERANGE (more than 2^64-1 bytes: never wraps). */
int moat_parse_size(const char *s, uint64_t *ret_bytes);
/* "250ms", "90s", "10m", "2h", "1d", "1h30m", bare number = seconds; units
 * lowercase ("M" is not minutes). Returns milliseconds; -ERANGE on overflow. */
int moat_parse_duration(const char *s, uint64_t *ret_ms);
/* A decimal integer in [min, max]. */
int moat_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* "1.5" -> 1500 (thousandths), in (0, 4096]. */
int moat_parse_milli(const char *s, uint64_t *ret_milli);
/* Format bytes as "4.0 GiB" into buf. */
const char *moat_format_size(uint64_t bytes, char *buf, unsigned len);
