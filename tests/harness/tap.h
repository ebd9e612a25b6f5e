/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A small TAP harness. Tests self-register with TEST(name) and each runs in a
 * forked child with a timeout, because namespaces, seccomp and Landlock cannot
 * be undone inside one process. Asserts print file:line and both values.
 */
#pragma once

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*moat_tap_fn)(void);
void moat_tap_register(const char *name, const char *file, moat_tap_fn fn);
_Noreturn void moat_tap_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
_Noreturn void moat_tap_skip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* unshare(CLONE_NEWUSER | more_ns) with the caller's uid and gid mapped to 0
 * inside: a throw-away namespace to mount in (more_ns CLONE_NEWNS) as root or
 * as an unprivileged user. Fails the test when it cannot. */
void moat_tap_enter_userns(int more_ns);
/* Directory of the test fixtures (tests/), from MOAT_TEST_DIR or the default. */
const char *moat_tap_dir(void);

#define TEST(name) \
	static void test_##name(void); \
	__attribute__((constructor)) static void register_##name(void) \
	{ \
		moat_tap_register(#name, __FILE__, test_##name); \
	} \
	static void test_##name(void)

#define SKIP(...) moat_tap_skip(__VA_ARGS__)

#define ASSERT_TRUE(x) \
	do { \
		if (!(x)) \
			moat_tap_fail(__FILE__, __LINE__, "expected true: %s", #x); \
	} while (0)

#define ASSERT_EQ(a, b) \
	do { \
		intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b); \
		if (a_ != b_) \
			moat_tap_fail(__FILE__, __LINE__, "%s == %s: %jd != %jd", #a, #b, a_, b_); \
	} while (0)

#define ASSERT_NE(a, b) \
	do { \
		intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b); \
		if (a_ == b_) \
			moat_tap_fail(__FILE__, __LINE__, "%s != %s: both %jd", #a, #b, a_); \
	} while (0)

#define ASSERT_GE(a, b) \
	do { \
		intmax_t a_ = (intmax_t)(a), b_ = (intmax_t)(b); \
		if (!(a_ >= b_)) \
			moat_tap_fail(__FILE__, __LINE__, "%s >= %s: %jd < %jd", #a, #b, a_, b_); \
	} while (0)

#define ASSERT_STREQ(a, b) \
	do { \
		const char *a_ = (a), *b_ = (b); \
		if (!a_ || !b_ || strcmp(a_, b_) != 0) \
			moat_tap_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, \
				      a_ ? a_ : "(null)", b_ ? b_ : "(null)"); \
	} while (0)

#define ASSERT_CONTAINS(hay, needle) \
	do { \
		const char *h_ = (hay), *n_ = (needle); \
		if (!h_ || !strstr(h_, n_)) \
			moat_tap_fail(__FILE__, __LINE__, "%s contains \"%s\": got \"%s\"", #hay, \
				      n_, h_ ? h_ : "(null)"); \
	} while (0)

/* Expression must fail with -1 and errno e (syscall style). */
#define ASSERT_ERRNO(expr, e) \
	do { \
		errno = 0; \
		long r_ = (long)(expr); \
		int e_ = errno; \
		if (r_ != -1 || e_ != (e)) \
			moat_tap_fail(__FILE__, __LINE__, "%s: want -1/%s, got %ld/%s", #expr, \
				      strerrorname_np(e), r_, e_ ? strerrorname_np(e_) : "0"); \
	} while (0)
