/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Copy a tree the sandbox wrote (e.g. /output) to the host without trusting
 * it: regular files and directories only, never following a symlink (skipped
 * and reported), never creating devices, FIFOs or sockets (skipped and
 * reported), set-id and sticky bits stripped, a hard cap on bytes, entries
 * and depth. Everything is done relative to directory fds (openat/fstatat
 * with AT_SYMLINK_NOFOLLOW/O_NOFOLLOW); no path string is ever resolved.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>

enum moat_copy_flags {
	MOAT_COPY_OVERWRITE = 1u << 0, /* the destination may be non-empty; files are replaced */
};

#define MOAT_COPY_MAX_ENTRIES 100000u
#define MOAT_COPY_MAX_DEPTH 64u
#define MOAT_COPY_MAX_NOTES 32u

struct moat_copy_note {
	char *path; /* relative path, raw bytes (escape before printing) */
	char *target; /* symlink target, or NULL */
	const char *reason; /* static: "symlink", "fifo", "socket", "device", "too deep", … */
};

struct moat_copy_report {
	uint64_t files, dirs, bytes;
	uint64_t skipped_symlinks, skipped_special, stripped_modes;
	struct moat_copy_note notes[MOAT_COPY_MAX_NOTES]; /* first skipped entries */
	unsigned n_notes;
	char *stopped_at; /* the entry at which a cap stopped the copy, or NULL */
};

/* Copy the contents of src_dirfd into dst_dirfd (both directory fds; O_PATH
 * is fine). Returns 0; -ENOTEMPTY if the destination is not empty and
 * MOAT_COPY_OVERWRITE is not set; -EFBIG when more than max_bytes would be
 * copied (0 = no cap; the partial file is removed), -E2BIG past
 * MOAT_COPY_MAX_ENTRIES, -ELOOP deeper than MOAT_COPY_MAX_DEPTH; other
 * -errno. The report (may be NULL) is filled in every case; free its strings
 * with moat_copy_report_done(). */
int moat_copytree_safe(int src_dirfd, int dst_dirfd, uint64_t max_bytes, unsigned flags,
		       struct moat_copy_report *ret);
void moat_copy_report_done(struct moat_copy_report *r);

/* Copy bytes from in_fd to out_fd, at most max (0 = no cap; -EFBIG past it),
 * feeding the data to sha (nettle's SHA-256 context, may be NULL). */
struct sha256_ctx;
int moat_copytree_copy_data(int in_fd, int out_fd, uint64_t max, struct sha256_ctx *sha,
			    uint64_t *ret_bytes);
