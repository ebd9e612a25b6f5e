/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-009 chroot / pivot_root escape. try-syscall (bad pointers), then the
 * classic fchdir escape in a child: chroot into a subdirectory, fchdir to the
 * old root, climb, chroot("."); a success of chroot is FAIL, and the child also
 * compares the resulting "/" with the original one.
 */
#include <sys/stat.h>

#include "probe.h"

static int do_escape(void *arg)
{
	char dir[] = "/tmp/rt009.XXXXXX";
	int fd = open("/", O_RDONLY | O_DIRECTORY);

	if (fd < 0 || !mkdtemp(dir))
		return PROBE_CHILD_SETUP;
	if (chroot(dir) < 0) {
		int e = errno;
		rmdir(dir);
		errno = e;
		return -1;
	}
	/* The directory is our root now: remove it by its path relative to the
	 * old root (the absolute path would resolve inside the new root). */
	if (fchdir(fd) < 0)
		return PROBE_CHILD_SETUP;
	rmdir(dir + 1);
	for (int i = 0; i < 64; i++)
		chdir("..");
	return chroot(".");
}

static int do_pivot(void *arg)
{
	return (int)syscall(SYS_pivot_root, ".", ".");
}

int main(int argc, char **argv)
{
	probe_init(argc, argv);
	TRY("RT-009/chroot-badptr", chroot((void *)1), EPERM);
	TRY("RT-009/pivot_root-badptr", syscall(SYS_pivot_root, (void *)1, (void *)1), EPERM);
	probe_classify_child("RT-009/chroot-escape", "chroot + fchdir escape",
			     probe_in_child(do_escape, NULL), PROBE_ERRS(EPERM));
	probe_classify_child("RT-009/pivot_root", "pivot_root(\".\", \".\")",
			     probe_in_child(do_pivot, NULL), PROBE_ERRS(EPERM));
	return probe_done();
}
