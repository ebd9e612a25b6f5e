/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Recursive removal beneath a directory fd (see rmtree.h): unlinkat first,
 * then, for a directory on the same device, its entries and rmdir. */
#include "shared/rmtree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include "shared/macro.h"

static int rmtree_at(int dfd, const char *name, unsigned depth, unsigned max_depth)
{
	/* a file, a symlink (the link itself) or nothing: done in one call */
	if (unlinkat(dfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return negerrno();
	if (depth > max_depth)
		return -ELOOP;
	/* O_NOFOLLOW: if name was replaced by a symlink since, this fails */
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	struct stat pst, cst;
	if (fstat(dfd, &pst) < 0 || fstat(fd, &cst) < 0) {
		int r = negerrno();
		close(fd);
		return r;
	}
	if (pst.st_dev != cst.st_dev) {
		close(fd);
		return -EXDEV; /* a mount: never descend into it */
	}
	DIR *d = fdopendir(fd);
	if (!d) {
		int r = negerrno();
		close(fd);
		return r;
	}
	int first = 0;
	struct dirent *de;
	while ((de = readdir(d))) {
		if (streq(de->d_name, ".") || streq(de->d_name, ".."))
			continue;
		int r = rmtree_at(dirfd(d), de->d_name, depth + 1, max_depth);
		if (r < 0 && !first)
			first = r;
	}
	closedir(d);
	if (unlinkat(dfd, name, AT_REMOVEDIR) < 0 && errno != ENOENT && !first)
		first = negerrno();
	return first;
}

int moat_rmtree_at(int dfd, const char *name, unsigned max_depth)
{
	return rmtree_at(dfd, name, 0, max_depth);
}
