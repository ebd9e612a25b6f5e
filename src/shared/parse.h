/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Pure parsers for values users type: sizes, durations, numbers, ids. */
#pragma once

#include <stdbool.h>
#include <stdint.h>

/* "4096", "512K", "4G", "1.5GiB" (binary units; K/M/G/T with optional "iB"/"B").
 * Returns 0 or -EINVAL / -ERANGE. */
int moat_parse_size(const char *s, uint64_t *ret_bytes);
/* "250ms", "90s", "10m", "2h", "1h30m", bare number = seconds. Returns milliseconds. */
int moat_parse_duration(const char *s, uint64_t *ret_ms);
/* A decimal integer in [min, max]. */
int moat_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *ret);
/* "1.5" -> 1500 (thousandths), in (0, 4096]. */
int moat_parse_milli(const char *s, uint64_t *ret_milli);
/* Format bytes as "4.0 GiB" into buf. */
const char *moat_format_size(uint64_t bytes, char *buf, unsigned len);
