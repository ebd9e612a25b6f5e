/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * moat gc's part of the image cache (image_cache.c; moat.h): every cached
 * image no run holds (a shared flock while a sandbox uses it) is taken with
 * an exclusive lock, renamed away, then removed, so that no new run can
 * pick up a half-removed tree; so is what an interrupted unpack left
 * (.tmp-*, no longer locked) and an earlier gc's .trash-*.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "image/image.h"
#include "moat/moat.h"
#include "policy/errors.h"
#include "shared/macro.h"
#include "shared/rmtree.h"

#define STAGE "image"

int moat_image_gc(struct moat_image_gc_result *ret, struct moat_error *err)
{
	_cleanup_free_ char *cache_path = NULL;
	memset(ret, 0, sizeof(*ret));
	if (moat_image_cache_dir(&cache_path) < 0)
		return 0;
	_cleanup_close_ int cache =
		open(cache_path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (cache < 0)
		return errno == ENOENT ? 0
				       : moat_error_set(err, STAGE, errno, "cache %s: %s",
							cache_path, strerror(errno));
	int dfd = dup(cache);
	DIR *d = dfd >= 0 ? fdopendir(dfd) : NULL;
	if (!d) {
		safe_close(dfd);
		return moat_error_set(err, STAGE, errno, "cache %s: %s", cache_path,
				      strerror(errno));
	}
	struct dirent *de;
	while ((de = readdir(d))) {
		const char *n = de->d_name;
		bool image = strlen(n) == 64 && strspn(n, "0123456789abcdef") == 64;
		bool stale = strncmp(n, ".tmp-", 5) == 0 || strncmp(n, ".trash-", 7) == 0;
		if (!image && !stale)
			continue;
		_cleanup_close_ int fd =
			openat(cache, n, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (fd < 0)
			continue;
		/* in use (a sandbox's shared lock, an unpack's exclusive one) */
		if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
			ret->in_use++;
			continue;
		}
		char trash[96];
		snprintf(trash, sizeof(trash), ".trash-%.64s", n);
		if (image && renameat(cache, n, cache, trash) < 0) {
			ret->failed++;
			continue;
		}
		int k = moat_rmtree_at(cache, image ? trash : n, 4096);
		if (k < 0)
			ret->failed++;
		else if (image)
			ret->removed++;
		else
			ret->stale++;
	}
	closedir(d);
	return 0;
}
