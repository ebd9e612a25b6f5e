/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Snapshot trees (snapshot_tree.c): copying a tree faithfully (contents,
 * modes, times, symlinks, FIFOs, overlay whiteouts, extended attributes) and
 * bringing a live tree to a target tree by changing only what differs.
 * Everything is relative to directory fds, never following a symlink; a
 * live tree's mount boundary is never crossed (another mount below it is
 * neither copied nor changed). Run by the snapshot helper (snapshot.c) in
 * the sandbox's user and mount namespaces, as the sandbox's user.
 */
#pragma once

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define MOAT_SNAP_MAX_DEPTH 256u
#define MOAT_SNAP_MAX_ENTRIES 1000000u

/* Copies the contents of src (a directory) into dst (an empty directory);
 * entries of src on another device than src itself are skipped. Adds the
 * bytes of regular files to *bytes. */
int moat_snap_copy(int src_dir, int dst_dir, uint64_t *bytes);

/* Makes the live tree l look like the target: t_top (a snapshot's copy of
 * an upper layer, or of a whole tree) over t_low (the overlay's lower tree),
 * looked up as the overlay would; either may be -1. The roots' own mode and
 * times too when root_attrs. u (or -1) is the live overlay's upper layer:
 * below a directory neither upper made opaque, only the names u or t_top
 * hold can differ; full: compare every name instead. */
int moat_snap_sync(int t_top, int t_low, int l_dir, int u_dir, bool full, bool root_attrs);

/* After a sync through an overlay: its upper directories that were made
 * opaque by re-creating them, and hold every name of the lower directory,
 * made transparent again (the view stays the same). */
int moat_snap_normalize(int u_dir, int low_dir);

/* Removes the contents of dir (not dir itself), never crossing a mount. */
int moat_snap_clear(int dir);
