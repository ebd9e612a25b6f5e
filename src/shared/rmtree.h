/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The one recursive removal (rm -rf) of libmoat: beneath a directory fd, by
 * openat/unlinkat only, never through a symlink and never into another mount. */
#pragma once

/* Removes dfd/name and, when it is a directory, everything below it.
 * A symlink is removed, never followed; a directory on another device than
 * the one it was found in (a mount point) is not entered nor removed (-EXDEV);
 * directories deeper than max_depth levels below name are refused (-ELOOP).
 * The walk goes on past an error, so as much as can go goes; it returns the
 * first error, or 0 when name is gone (also when it was never there). */
int moat_rmtree_at(int dfd, const char *name, unsigned max_depth);
