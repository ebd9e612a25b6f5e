/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-008 mount manipulation: try-syscall for mount/umount2 and the new mount
 * API (bad pointers and flags: EFAULT/EINVAL/EBADF mean the call reached the
 * kernel), then real attempts: tmpfs over /tmp, lazy unmount of /proc/kcore's
 * mask, and a read-write remount of a read-only bind.
 * --remount-target DIR: the read-only bind to try (default /usr). With
 * --control and --setup-ro, the probe first makes DIR a read-only bind itself
 * (only in a throw-away mount namespace) to show that the remount path works.
 */
#include <linux/mount.h>
#include <sys/mount.h>

#include "probe.h"

static int do_mount_tmpfs(void *arg)
{
	return mount("none", "/tmp", "tmpfs", 0, NULL);
}

static int do_umount_kcore(void *arg)
{
	return umount2("/proc/kcore", MNT_DETACH);
}

static int do_remount_rw(void *arg)
{
	const char *dir = arg;
	if (probe_flag("--setup-ro") && probe_control()) {
		if (mount(dir, dir, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			return PROBE_CHILD_SETUP;
	}
	return mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND, NULL);
}

static int do_setattr_rw(void *arg)
{
	struct mount_attr a = {.attr_clr = MOUNT_ATTR_RDONLY};
	const char *dir = arg;
	if (probe_flag("--setup-ro") && probe_control()) {
		if (mount(dir, dir, NULL, MS_BIND, NULL) < 0 ||
		    mount(NULL, dir, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY, NULL) < 0)
			return PROBE_CHILD_SETUP;
	}
	return (int)syscall(SYS_mount_setattr, AT_FDCWD, dir, 0, &a, sizeof a);
}

int main(int argc, char **argv)
{
	const char *ro = probe_opt("--remount-target") ?: "/usr";

	probe_init(argc, argv);
	ro = probe_opt("--remount-target") ?: "/usr";
	TRY("RT-008/mount-badptr", mount((void *)1, (void *)1, (void *)1, 0, NULL), EPERM);
	TRY("RT-008/umount2-badflags", umount2("/", 0x7fff0000), EPERM);
	TRY("RT-008/open_tree-badflags", syscall(SYS_open_tree, -1, "", 0x7fff0000), ENOSYS, EPERM);
	TRY("RT-008/move_mount-badflags", syscall(SYS_move_mount, -1, "", -1, "", 0x7fff0000),
	    ENOSYS, EPERM);
	TRY("RT-008/fsopen-badflags", syscall(SYS_fsopen, "tmpfs", 0x7fff0000), ENOSYS, EPERM);
	TRY("RT-008/fsconfig-badfd", syscall(SYS_fsconfig, -1, 0, NULL, NULL, 0), ENOSYS, EPERM);
	TRY("RT-008/fsmount-badfd", syscall(SYS_fsmount, -1, 0, 0), ENOSYS, EPERM);
	TRY("RT-008/fspick-badflags", syscall(SYS_fspick, -1, "", 0x7fff0000), ENOSYS, EPERM);
	TRY("RT-008/mount_setattr-badflags",
	    syscall(SYS_mount_setattr, -1, "", 0x7fff0000, NULL, 0), ENOSYS, EPERM);
	probe_classify_child("RT-008/mount-tmpfs-tmp", "mount tmpfs on /tmp",
			     probe_in_child(do_mount_tmpfs, NULL), PROBE_ERRS(EPERM));
	probe_classify_child("RT-008/umount-kcore", "umount2(/proc/kcore, MNT_DETACH)",
			     probe_in_child(do_umount_kcore, NULL), PROBE_ERRS(EPERM, ENOENT));
	probe_classify_child("RT-008/remount-rw", "remount rw of a read-only bind",
			     probe_in_child(do_remount_rw, (void *)ro), PROBE_ERRS(EPERM));
	probe_classify_child("RT-008/mount_setattr-rw", "mount_setattr(clear RDONLY)",
			     probe_in_child(do_setattr_rw, (void *)ro), PROBE_ERRS(EPERM, ENOSYS));
	return probe_done();
}
