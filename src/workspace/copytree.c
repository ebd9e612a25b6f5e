/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "workspace/copytree.h"

#include <dirent.h>
#include <fcntl.h>
#include <nettle/sha2.h>
#include <sys/stat.h>

#include "shared/io.h"
#include "shared/macro.h"

struct walk {
	uint64_t max_bytes;
	unsigned flags;
	uint64_t entries;
	struct moat_copy_report *rep;
	char path[4096 + 256]; /* relative path of the current entry, for reports only */
};

void moat_copy_report_done(struct moat_copy_report *r)
{
	if (!r)
		return;
	for (unsigned i = 0; i < r->n_notes; i++) {
		free(r->notes[i].path);
		free(r->notes[i].target);
	}
	free(r->stopped_at);
	*r = (struct moat_copy_report){0};
}

int moat_copytree_copy_data(int in_fd, int out_fd, uint64_t max, struct sha256_ctx *sha,
			    uint64_t *ret_bytes)
{
	char buf[65536];
	uint64_t total = 0;

	for (;;) {
		ssize_t n = read(in_fd, buf, sizeof(buf));
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return negerrno();
		}
		if (n == 0)
			break;
		if (max && total + (uint64_t)n > max) {
			if (ret_bytes)
				*ret_bytes = total;
			return -EFBIG;
		}
		if (sha)
			sha256_update(sha, (size_t)n, (const uint8_t *)buf);
		int r = moat_write_all(out_fd, buf, (size_t)n);
		if (r < 0)
			return r;
		total += (uint64_t)n;
	}
	if (ret_bytes)
		*ret_bytes = total;
	return 0;
}

static void note(struct walk *w, const char *reason, const char *target)
{
	struct moat_copy_report *r = w->rep;
	if (r->n_notes >= MOAT_COPY_MAX_NOTES)
		return;
	r->notes[r->n_notes] = (struct moat_copy_note){
		.path = strdup(w->path),
		.target = target ? strdup(target) : NULL,
		.reason = reason,
	};
	r->n_notes++;
}

static void stop_at(struct walk *w)
{
	if (!w->rep->stopped_at)
		w->rep->stopped_at = strdup(w->path);
}

static int is_empty_dir(int dirfd)
{
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	DIR *d;
	struct dirent *e;
	int r = 1;

	if (fd < 0)
		return negerrno();
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return -ENOMEM;
	}
	while ((e = readdir(d)))
		if (!streq(e->d_name, ".") && !streq(e->d_name, "..")) {
			r = 0;
			break;
		}
	closedir(d);
	return r;
}

static int copy_file(struct walk *w, int sfd, int dfd, const char *name, const struct stat *st)
{
	_cleanup_close_ int in = -1, out = -1;
	struct stat st2;
	uint64_t copied = 0, left;
	int r;

	if (w->max_bytes) {
		left = w->max_bytes - w->rep->bytes;
		if ((uint64_t)st->st_size > left) {
			stop_at(w);
			return -EFBIG;
		}
	} else {
		left = 0;
	}
	/* O_NONBLOCK: if it became a FIFO since fstatat, do not hang; fstat refuses it. */
	in = openat(sfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (in < 0)
		return negerrno();
	if (fstat(in, &st2) < 0)
		return negerrno();
	if (!S_ISREG(st2.st_mode))
		return -EINVAL;
	out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0 && errno == EEXIST && (w->flags & MOAT_COPY_OVERWRITE)) {
		struct stat dst;
		if (fstatat(dfd, name, &dst, AT_SYMLINK_NOFOLLOW) < 0)
			return negerrno();
		if (S_ISDIR(dst.st_mode))
			return -EISDIR;
		/* a file, symlink or special file of the host: replace the name, never follow it */
		if (unlinkat(dfd, name, 0) < 0)
			return negerrno();
		out = openat(dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	}
	if (out < 0)
		return negerrno();
	r = moat_copytree_copy_data(in, out, left, NULL, &copied);
	w->rep->bytes += copied;
	if (r < 0) {
		if (r == -EFBIG)
			stop_at(w);
		(void)unlinkat(dfd, name, 0);
		return r;
	}
	if (st->st_mode & 07000)
		w->rep->stripped_modes++;
	/* as root: the copy belongs to whoever owns the destination directory */
	if (geteuid() == 0) {
		struct stat ds;
		if (fstat(dfd, &ds) == 0)
			(void)!fchown(out, ds.st_uid, ds.st_gid);
	}
	if (fchmod(out, st->st_mode & 0777) < 0)
		return negerrno();
	(void)futimens(out, (struct timespec[2]){st2.st_atim, st2.st_mtim});
	w->rep->files++;
	return 0;
}

static int copy_dir(struct walk *w, int sfd, int dfd, unsigned depth)
{
	_cleanup_close_ int rfd = openat(sfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	size_t base = strlen(w->path);
	DIR *d;
	struct dirent *e;
	int r = 0;

	if (rfd < 0)
		return negerrno();
	d = fdopendir(rfd);
	if (!d)
		return -ENOMEM;
	TAKE_FD(rfd);
	while (r >= 0 && (errno = 0, e = readdir(d))) {
		struct stat st;
		const char *name = e->d_name;

		if (streq(name, ".") || streq(name, ".."))
			continue;
		snprintf(w->path + base, sizeof(w->path) - base, "%s%s", base ? "/" : "", name);
		if (++w->entries > MOAT_COPY_MAX_ENTRIES) {
			stop_at(w);
			r = -E2BIG;
			break;
		}
		if (fstatat(sfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			r = negerrno();
			break;
		}
		/* the sandbox may leave its own files unreadable; the source is a
		 * tree the sandbox no longer uses, so grant the owner access there */
		if ((S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) && st.st_uid == geteuid() &&
		    geteuid() != 0) {
			mode_t need = S_ISDIR(st.st_mode) ? 0500 : 0400;
			if ((st.st_mode & need) != need)
				(void)!fchmodat(sfd, name, (st.st_mode & 07777) | need, 0);
		}
		if (S_ISREG(st.st_mode)) {
			r = copy_file(w, sfd, dfd, name, &st);
		} else if (S_ISDIR(st.st_mode)) {
			_cleanup_close_ int cs = -1, cd = -1;
			if (depth + 1 > MOAT_COPY_MAX_DEPTH) {
				stop_at(w);
				r = -ELOOP;
				break;
			}
			if (mkdirat(dfd, name, 0700) < 0 &&
			    !(errno == EEXIST && (w->flags & MOAT_COPY_OVERWRITE))) {
				r = negerrno();
				break;
			}
			if (geteuid() == 0) {
				struct stat ds;
				if (fstat(dfd, &ds) == 0)
					(void)!fchownat(dfd, name, ds.st_uid, ds.st_gid,
							AT_SYMLINK_NOFOLLOW);
			}
			cs = openat(sfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			/* O_NOFOLLOW|O_DIRECTORY: an existing host symlink here is an error */
			cd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (cs < 0 || cd < 0) {
				r = negerrno();
				break;
			}
			r = copy_dir(w, cs, cd, depth + 1);
			if (r >= 0 && fchmod(cd, (st.st_mode & 0777) | 0700) < 0)
				r = negerrno();
			if (st.st_mode & 07000)
				w->rep->stripped_modes++;
			w->rep->dirs++;
		} else if (S_ISLNK(st.st_mode)) {
			char target[4096];
			ssize_t n = readlinkat(sfd, name, target, sizeof(target) - 1);
			target[n > 0 ? n : 0] = '\0';
			w->rep->skipped_symlinks++;
			note(w, "symlink", target);
		} else {
			w->rep->skipped_special++;
			note(w,
			     S_ISFIFO(st.st_mode)	    ? "fifo"
				     : S_ISSOCK(st.st_mode) ? "socket"
							    : "device",
			     NULL);
		}
		w->path[base] = '\0';
	}
	if (r >= 0 && errno)
		r = negerrno();
	w->path[base] = '\0';
	closedir(d);
	return r;
}

int moat_copytree_safe(int src_dirfd, int dst_dirfd, uint64_t max_bytes, unsigned flags,
		       struct moat_copy_report *ret)
{
	struct moat_copy_report dummy = {0};
	struct walk w = {
		.max_bytes = max_bytes,
		.flags = flags,
		.rep = ret ? ret : &dummy,
	};
	int r;

	*w.rep = (struct moat_copy_report){0};
	if (!(flags & MOAT_COPY_OVERWRITE)) {
		r = is_empty_dir(dst_dirfd);
		if (r < 0)
			return r;
		if (r == 0)
			return -ENOTEMPTY;
	}
	r = copy_dir(&w, src_dirfd, dst_dirfd, 0);
	moat_copy_report_done(&dummy);
	return r;
}
