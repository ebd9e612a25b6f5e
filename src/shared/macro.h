/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/shared/: no knowledge of moat: size/duration parsers, JSON escaping and positions,
 * fd sets, SCM_RIGHTS, write_all, openat2, recursive removal, cleanup macros
 */
/* Cleanup attributes, ownership transfer and small helpers shared by everything. */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _noreturn_ __attribute__((noreturn))
#define _warn_unused_ __attribute__((warn_unused_result))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand ownership over: returns the value and resets the variable. */
#define TAKE_PTR(p) \
	({ \
		__typeof__(p) take_ptr_tmp_ = (p); \
		(p) = NULL; \
		take_ptr_tmp_; \
	})
#define TAKE_FD(fd) \
	({ \
		int take_fd_tmp_ = (fd); \
		(fd) = -1; \
		take_fd_tmp_; \
	})

static inline void freep(void *p)
{
	free(*(void **)p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline int safe_close(int fd)
{
	if (fd >= 0) {
		int saved = errno;
		close(fd);
		errno = saved;
	}
	return -1;
}
static inline void closep(int *fd)
{
	*fd = safe_close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f)
{
	if (*f)
		fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline bool streq(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}
static inline bool startswith(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* -errno from a failed libc call, never 0 even if errno was clobbered. */
static inline int negerrno(void)
{
	return errno > 0 ? -errno : -EIO;
}
