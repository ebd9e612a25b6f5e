/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to the fsdiff_*.c files: limits, the walk state and the helpers
 * more than one of them uses. Not installed, not for other callers. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "workspace/fsdiff.h"

#define PATH_MAX_BYTES 4095
#define PKG_JSON_MAX (4u << 20)
#define MANIFEST_MAX_BYTES (256u << 20)

struct walk {
	struct moat_manifest *m;
	const struct moat_flag_rules *rules;
	struct moat_fsdiff_limits lim;
	char path[PATH_MAX_BYTES + 1];
};

/* fsdiff.c: opening beneath a root, hashing, hex, names of types */
int moat_fsdiff_openat2_beneath(int dirfd, const char *path, uint64_t flags, mode_t mode);
int moat_fsdiff_open_parent(int root, const char *path, const char **ret_name);
int moat_fsdiff_sha256_at(int dirfd, const char *name, uint8_t out[32]);
void moat_fsdiff_hex(const uint8_t *in, size_t n, char *out);
int moat_fsdiff_unhex(const char *s, uint8_t *out, size_t n);
const char *moat_fsdiff_type_name(mode_t t);
mode_t moat_fsdiff_type_from_name(const char *s);

/* fsdiff.c: manifest entries, directory listing, extended attributes */
int moat_fsdiff_set_str(char **dst, const char *s);
int moat_fsdiff_refuse_entry(struct moat_fs_entry *e);
int moat_fsdiff_list_dir(int dirfd, char ***ret, size_t *ret_n);
void moat_fsdiff_free_names(char **v, size_t n);
int moat_fsdiff_xattrs_apply(int fd, const char *set);
int moat_fsdiff_xattrs_apply_at(int parent, const char *name, const struct moat_fs_entry *e);

/* fsdiff_git.c: the pass over repositories found by structure */
int moat_fsdiff_git_pass(struct walk *w, int upper, int lower, const char *workspace);

/* fsdiff_apply.c: temporary files next to their destination */
int moat_fsdiff_tmp_name(char buf[32]);
int moat_fsdiff_write_file_tmp(const struct moat_manifest *m, const struct moat_fs_entry *e,
			       int src, int parent, const char *tmp, bool with_xattrs);
