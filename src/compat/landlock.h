/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/compat/: kernel UAPI the distribution's headers lack (Landlock ABI >= 3), nothing
 * else; included instead of <linux/landlock.h>
 */
/*
 * Landlock UAPI up to ABI 7, for distro headers that stop earlier (Debian 12's
 * linux-libc-dev 6.1 knows ABI 2). Written from the kernel's Landlock
 * documentation (Documentation/userspace-api/landlock.rst and the
 * landlock_*(2) man pages). Every constant is guarded so a newer system header
 * wins; the ruleset attribute struct has its own name because the 6.1 header
 * already defines a shorter `struct landlock_ruleset_attr`.
 */
#pragma once

#include <stdint.h>
#include <sys/syscall.h>
#include <linux/landlock.h>

/* The three syscalls have the same number on every architecture (asm-generic). */
#ifndef __NR_landlock_create_ruleset
#define __NR_landlock_create_ruleset 444
#endif
#ifndef __NR_landlock_add_rule
#define __NR_landlock_add_rule 445
#endif
#ifndef __NR_landlock_restrict_self
#define __NR_landlock_restrict_self 446
#endif

/* landlock_create_ruleset() flags */
#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#ifndef LANDLOCK_CREATE_RULESET_ERRATA /* ABI 7 */
#define LANDLOCK_CREATE_RULESET_ERRATA (1U << 1)
#endif

/*
 * The ruleset attribute as of ABI 6: fs (ABI 1), net (ABI 4), scoped (ABI 6).
 * The kernel takes a size argument, so passing only the first field(s) to an
 * older kernel is allowed: moat passes the size that matches the ABI it found.
 */
struct moat_compat_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

/* Rule types: LANDLOCK_RULE_PATH_BENEATH = 1 is in every header. */
#define MOAT_COMPAT_LANDLOCK_RULE_PATH_BENEATH 1
#define MOAT_COMPAT_LANDLOCK_RULE_NET_PORT 2 /* ABI 4 */

struct moat_compat_path_beneath_attr {
	uint64_t allowed_access;
	int32_t parent_fd;
} __attribute__((packed));

struct moat_compat_net_port_attr {
	uint64_t allowed_access;
	uint64_t port; /* host endianness */
};

/* Filesystem access rights. ABI 1: */
#ifndef LANDLOCK_ACCESS_FS_EXECUTE
#define LANDLOCK_ACCESS_FS_EXECUTE (1ULL << 0)
#define LANDLOCK_ACCESS_FS_WRITE_FILE (1ULL << 1)
#define LANDLOCK_ACCESS_FS_READ_FILE (1ULL << 2)
#define LANDLOCK_ACCESS_FS_READ_DIR (1ULL << 3)
#define LANDLOCK_ACCESS_FS_REMOVE_DIR (1ULL << 4)
#define LANDLOCK_ACCESS_FS_REMOVE_FILE (1ULL << 5)
#define LANDLOCK_ACCESS_FS_MAKE_CHAR (1ULL << 6)
#define LANDLOCK_ACCESS_FS_MAKE_DIR (1ULL << 7)
#define LANDLOCK_ACCESS_FS_MAKE_REG (1ULL << 8)
#define LANDLOCK_ACCESS_FS_MAKE_SOCK (1ULL << 9)
#define LANDLOCK_ACCESS_FS_MAKE_FIFO (1ULL << 10)
#define LANDLOCK_ACCESS_FS_MAKE_BLOCK (1ULL << 11)
#define LANDLOCK_ACCESS_FS_MAKE_SYM (1ULL << 12)
#endif
#ifndef LANDLOCK_ACCESS_FS_REFER /* ABI 2: link/rename across directories */
#define LANDLOCK_ACCESS_FS_REFER (1ULL << 13)
#endif
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE /* ABI 3 */
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV /* ABI 5: ioctl on character/block devices */
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

/* Network access rights (ABI 4), TCP only. */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#endif
#ifndef LANDLOCK_ACCESS_NET_CONNECT_TCP
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif

/* Scopes (ABI 6): IPC toward processes outside the domain. */
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* landlock_restrict_self() flags (ABI 7): audit logging of denials. */
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SAME_EXEC_OFF (1U << 0)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON
#define LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON (1U << 1)
#endif
#ifndef LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF
#define LANDLOCK_RESTRICT_SELF_LOG_SUBDOMAINS_OFF (1U << 2)
#endif
