/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "workspace/fsdiff.h"

/* The unified diffs of the run's held regular files against the workspace
 * (@ws_fd, -1 if it cannot be opened: diff against empty), escaped for a
 * terminal, binary files marked; bounded (review_diff.c). Caller frees. */
int moat_review_content_diff(int run_dirfd, int ws_fd, const struct moat_manifest *m,
			     char **ret_text);
