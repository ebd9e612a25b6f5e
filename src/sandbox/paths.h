/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host paths the user names (--workspace, --ro/--rw, --input, --output,
 * --rootfs, --log, --json-status, the run state directories): resolved once,
 * one component at a time from /, never through a symlink that a sandbox could
 * have planted, and held as an fd that every later mount, read or write goes
 * through.
 *
 * The rule (docs/THREAT_MODEL.md, "User-given host paths"): a symlink on the
 * way is followed only if it is owned by root, sits directly in /, /usr or /var
 * and every directory from / down to it is owned by root and writable by no
 * one else (the merged-/usr links /bin, /lib, /sbin, /var/run...). Any other
 * symlink, even the caller's own, is refused with -ELOOP: in unprivileged mode
 * the sandbox writes as the caller's own uid, and in root mode on a root-owned
 * workspace as root, so ownership alone cannot tell a planted link from the
 * user's. The error names the link and the resolved path to pass instead.
 *
 * Nothing here allocates or prints: the sandbox's init calls it between clone
 * and exec.
 */
#pragma once

#include <stdbool.h>
#include <sys/types.h>

#include "policy/policy.h"
#include "moat/moat.h"

enum moat_path_flags {
	MOAT_PATH_DIR = 1u << 0, /* the result must be a directory */
	MOAT_PATH_NOFOLLOW_LAST = 1u << 1, /* a final symlink is returned, not followed */
	MOAT_PATH_MKDIR = 1u << 2, /* missing components are created (mode) */
	MOAT_PATH_NO_LINKS = 1u << 3, /* no symlink at all, not even a trusted one */
	/* what is created is the invoking user's (moat_path_invoker), and only
	 * where that user may write: for what moat writes for the user */
	MOAT_PATH_AS_INVOKER = 1u << 4,
};

/* The user moat writes files for: as root under sudo, the user who ran sudo
 * (SUDO_UID/SUDO_GID, as for --on-alert); otherwise the caller. */
void moat_path_invoker(uid_t *ret_uid, gid_t *ret_gid);

/* What a resolution found: on success the path it reached (every trusted link
 * replaced by its target: no symlink left in it); on -ELOOP the symlink met on
 * the way and what it points to. */
struct moat_path_info {
	char resolved[MOAT_MAX_PATH];
	char link[MOAT_MAX_PATH]; /* "" if no symlink was involved */
	char target[MOAT_MAX_PATH];
};

/* Resolves the absolute path as above and returns an O_PATH fd (caller closes)
 * or -errno: -ELOOP for a symlink that is not followed (why->link names it),
 * -ENOTDIR, -ENOENT... why may be NULL. */
int moat_path_open(const char *path, unsigned flags, mode_t mode, struct moat_path_info *why);

/* The parent directory of path as an O_PATH fd (created with mode if flags has
 * MOAT_PATH_MKDIR) and, in *ret_name, a pointer to path's last component. */
int moat_path_open_parent(const char *path, unsigned flags, mode_t mode, const char **ret_name,
			  struct moat_path_info *why);

/* A file moat writes for the user (--log, --json-status): opened from its held
 * parent with O_NOFOLLOW, created (mode) if missing, O_APPEND or truncated as
 * oflags say. An existing symlink, fifo, device or directory is refused
 * (-ELOOP, -EINVAL, -EISDIR): nothing but a regular file is ever written.
 * flags: MOAT_PATH_MKDIR creates missing parents (0700); with
 * MOAT_PATH_AS_INVOKER the file and the parents created belong to the
 * invoking user, and where that user could not write is refused (-EACCES). */
int moat_path_write_file(const char *path, int oflags, mode_t mode, unsigned flags,
			 struct moat_path_info *why);

/* The same below a directory moat already holds (dirfd, whose path is dir, for
 * messages): name is one component; the same refusals; moat's own user. */
int moat_path_write_file_at(int dirfd, const char *dir, const char *name, int oflags, mode_t mode,
			    struct moat_path_info *why);

/* A file moat reads for the user (--policy, moat log FILE): a regular file,
 * never through an untrusted symlink. */
int moat_path_read_file(const char *path, struct moat_path_info *why);

/* Checks, without writing, that path could be written by moat_path_write_file
 * (its parent resolves, the file is absent or a regular file). */
int moat_path_check_writable(const char *path, unsigned flags, struct moat_path_info *why);

/* Fills e for a failed resolution of `what` (an option name such as
 * "--workspace") at path: names the refused link and the resolved path to pass
 * instead. Returns -err. Supervisor only (it calls realpath). */
int moat_path_error(struct moat_error *e, const char *stage, const char *what, const char *path,
		    int err, const struct moat_path_info *why);

/* Whether fd (reached at fd_path) and the absolute path overlap: fd is path or one
 * of its ancestors (for a path not there yet: of its nearest existing
 * ancestor, where it would be created), or path is an ancestor of fd. Compared
 * by device and inode; a file fd only by the directory it is in. 1, 0 or -errno. For moat's own state: no sandbox may
 * write where a later moat invocation reads its records (spawn.c). */
int moat_path_overlaps(int fd, const char *fd_path, const char *path);

/* Whether a symlink (owned by link_uid) found in directory parent (the path so
 * far, "" for /) may be followed, given that every directory down to it is
 * owned by root and writable by no one else (system_chain). Pure, for tests. */
bool moat_path_link_trusted(const char *parent, bool system_chain, uid_t link_uid);
