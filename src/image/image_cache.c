/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The image cache (image.h) and moat_image_open() (moat.h). One directory
 * per image, named by the digest that pins every byte of it (an OCI
 * manifest's; a docker-archive's config, whose diff_ids pin the layers),
 * holding rootfs/ and config.json. It is unpacked in a private .tmp-*
 * directory (exclusively locked while it is made) and renamed into place:
 * a second unpack running at the same time loses the rename and uses the
 * winner's. A user of an image holds a shared flock on its directory;
 * moat_image_gc() removes what nobody holds (renamed away under an
 * exclusive lock first, so that no new user can pick it up half-removed).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <nettle/sha2.h>

#include "image/image.h"
#include "moat/moat.h"
#include "policy/errors.h"
#include "shared/io.h"
#include "shared/macro.h"
#include "shared/openat2.h"
#include "shared/rmtree.h"

#define RES (RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)
#define STAGE "image"
#define TOP_DIRS_MAX 32u

struct moat_image {
	char digest[MOAT_IMAGE_DIGEST_LEN + 1];
	char *dir; /* the cache directory of this image */
	char *root; /* dir/rootfs */
	int lock_fd; /* dir, LOCK_SH held */
	bool unpacked; /* this call unpacked it (no cache hit) */
	struct moat_image_config cfg;
	char **argv; /* Entrypoint + Cmd, NULL-terminated, or NULL */
	char *top_dirs[TOP_DIRS_MAX + 1];
	unsigned n_top_dirs;
};

int moat_image_cache_dir(char **ret)
{
	const char *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
	char *s = NULL;
	int n;
	if (x && x[0] == '/')
		n = asprintf(&s, "%s/moat/images", x);
	else if (geteuid() == 0)
		n = asprintf(&s, "/var/cache/moat/images");
	else if (h && h[0] == '/')
		n = asprintf(&s, "%s/.cache/moat/images", h);
	else
		return -ENOENT;
	if (n < 0)
		return -ENOMEM;
	*ret = s;
	return 0;
}

/* mkdir -p, the directories it makes 0700; an fd of the last one. */
static int open_cache(const char *path, struct moat_error *err)
{
	char buf[PATH_MAX];
	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return moat_error_set(err, STAGE, ENAMETOOLONG, "cache %s: too long", path);
	for (char *c = buf + 1; *c; c++)
		if (*c == '/') {
			*c = 0;
			if (mkdir(buf, 0700) < 0 && errno != EEXIST)
				return moat_error_set(err, STAGE, errno, "cache %s: %s", buf,
						      strerror(errno));
			*c = '/';
		}
	if (mkdir(buf, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, STAGE, errno, "cache %s: %s", buf, strerror(errno));
	int fd = open(buf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return moat_error_set(err, STAGE, errno, "cache %s: %s", buf, strerror(errno));
	/* shared between this user's sandboxes only */
	if (st.st_uid != geteuid() || (st.st_mode & 022)) {
		close(fd);
		return moat_error_set(err, STAGE, EPERM,
				      "cache %s: not owned by you or writable by others (refused)",
				      buf);
	}
	return fd;
}

/* A blob of the layout, its size and digest checked: an fd. */
static int open_blob(int layout, const struct moat_image_desc *d, const char *what,
		     struct moat_error *err)
{
	char name[96], got[MOAT_IMAGE_DIGEST_LEN + 1];
	uint64_t len;
	snprintf(name, sizeof(name), "blobs/sha256/%s", d->digest + 7);
	int fd = (int)moat_openat2(layout, name, O_RDONLY | O_CLOEXEC, 0, RES);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return moat_error_set(err, STAGE, errno, "%s: blob %s: %s", what, d->digest,
				      strerror(errno));
	int k = S_ISREG(st.st_mode) ? moat_image_hash_fd(fd, MOAT_IMAGE_BLOB_MAX, got, &len)
				    : -EINVAL;
	if (k < 0) {
		close(fd);
		return moat_error_set(err, STAGE, -k, "%s: blob %s: %s", what, d->digest,
				      strerror(-k));
	}
	if (!streq(got, d->digest) || len != d->size) {
		close(fd);
		return moat_error_set(err, STAGE, EBADMSG,
				      "%s: blob %s: digest mismatch (the file is %s, %llu bytes; "
				      "%llu expected): refused",
				      what, d->digest, got, (unsigned long long)len,
				      (unsigned long long)d->size);
	}
	return fd;
}

/* The file name of the layout, its digest and size checked (d): its bytes
 * (a copy, not parsed). */
static int read_verified(int layout, const char *name, const struct moat_image_desc *d,
			 const char *what, char **ret, size_t *ret_len, struct moat_error *err)
{
	char got[MOAT_IMAGE_DIGEST_LEN + 1];
	uint64_t n;
	if (d->size > MOAT_IMAGE_JSON_MAX)
		return moat_error_set(err, STAGE, EFBIG, "%s: over %u bytes", what,
				      MOAT_IMAGE_JSON_MAX);
	_cleanup_close_ int fd = (int)moat_openat2(layout, name, O_RDONLY | O_CLOEXEC, 0, RES);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return moat_error_set(err, STAGE, errno, "%s: %s", what, strerror(errno));
	if (!S_ISREG(st.st_mode) || moat_image_hash_fd(fd, MOAT_IMAGE_JSON_MAX, got, &n) < 0 ||
	    !streq(got, d->digest) || n != d->size)
		return moat_error_set(err, STAGE, EBADMSG,
				      "%s: not the file of digest %s, %llu bytes: refused", what,
				      d->digest, (unsigned long long)d->size);
	char *b = malloc(d->size + 1);
	if (!b)
		return moat_error_set(err, STAGE, ENOMEM, "out of memory");
	size_t len = 0;
	while (len < d->size) {
		ssize_t m = pread(fd, b + len, d->size - len, (off_t)len);
		if (m < 0 && errno == EINTR)
			continue;
		if (m <= 0)
			break;
		len += (size_t)m;
	}
	if (len != d->size) {
		free(b);
		return moat_error_set(err, STAGE, EIO, "%s: short read", what);
	}
	b[len] = 0;
	*ret = b;
	*ret_len = len;
	return 0;
}

/* What to unpack. The layers (descs: OCI; names: docker-archive) are
 * opened and verified only when the image is not in the cache yet
 * (open_layers): one blob fd per layer with the digest the unpacker checks
 * again on the bytes it reads. */
struct plan {
	char key[MOAT_IMAGE_DIGEST_LEN + 1];
	char *config;
	size_t config_len;
	unsigned n_layers;
	struct moat_image_desc descs[MOAT_IMAGE_LAYERS_MAX];
	char *names[MOAT_IMAGE_LAYERS_MAX];
	int fds[MOAT_IMAGE_LAYERS_MAX];
	char digests[MOAT_IMAGE_LAYERS_MAX][MOAT_IMAGE_DIGEST_LEN + 1];
	uint64_t sizes[MOAT_IMAGE_LAYERS_MAX];
	unsigned n;
};

static void plan_done(struct plan *pl)
{
	for (unsigned i = 0; i < pl->n; i++)
		safe_close(pl->fds[i]);
	for (unsigned i = 0; i < pl->n_layers; i++)
		free(pl->names[i]);
	free(pl->config);
	pl->config = NULL;
	pl->n = pl->n_layers = 0;
}

/* The image's JSON read and parsed by the confined reader (image_read.c):
 * the parent gets a checked plan and never parses the JSON itself. What it
 * keeps of the reader's word it checks: the config file hashes to the
 * digest named (and is copied into the cache as bytes, not parsed), every
 * layer hashes to its digest when it is unpacked (open_layers), and the
 * cache key is computed here from those digests and the unpack flags, so
 * that a reader that lied could not name another image's cache entry. */
static int plan_read(int layout, struct plan *pl, struct moat_image_config *cfg, unsigned uflags,
		     char ret_digest[MOAT_IMAGE_DIGEST_LEN + 1], struct moat_error *err)
{
	char why[700];
	struct moat_image_plan *p = calloc(1, sizeof(*p));
	if (!p)
		return moat_error_set(err, STAGE, ENOMEM, "out of memory");
	int k = moat_image_read(layout, p, why, sizeof(why));
	if (k < 0) {
		k = moat_error_set(err, STAGE, -k, "%s", why);
		free(p);
		return k;
	}
	struct moat_image_desc cd = {.size = p->config_size};
	memcpy(cd.digest, p->config_digest, sizeof(cd.digest));
	if ((k = read_verified(layout, p->config_name, &cd, "config", &pl->config, &pl->config_len,
			       err)) < 0)
		goto out;
	struct sha256_ctx sha;
	unsigned char md[SHA256_DIGEST_SIZE], fl = (unsigned char)uflags;
	sha256_init(&sha);
	sha256_update(&sha, 20, (const uint8_t *)"moat image cache v1");
	sha256_update(&sha, 1, &fl);
	sha256_update(&sha, MOAT_IMAGE_DIGEST_LEN, (const uint8_t *)p->config_digest);
	for (unsigned i = 0; i < p->n_layers; i++) {
		/* docker-archive: the layer is its diff_id, checked on it */
		const char *d = p->docker ? p->cfg.diff_ids[i] : p->layers[i].digest;
		sha256_update(&sha, MOAT_IMAGE_DIGEST_LEN, (const uint8_t *)d);
		pl->descs[i] = p->layers[i];
		pl->names[i] = TAKE_PTR(p->names[i]);
	}
	sha256_digest(&sha, sizeof(md), md);
	memcpy(pl->key, "sha256:", 7);
	for (int i = 0; i < 32; i++)
		snprintf(pl->key + 7 + 2 * i, 3, "%02x", md[i]);
	pl->n_layers = p->n_layers;
	memcpy(ret_digest, p->digest, MOAT_IMAGE_DIGEST_LEN + 1);
	*cfg = p->cfg;
	memset(&p->cfg, 0, sizeof(p->cfg));
out:
	moat_image_plan_done(p);
	free(p);
	return k;
}

/* The layers opened, their digests checked (OCI: the descriptors';
 * docker-archive: the config's diff_ids, of the uncompressed tars). */
static int open_layers(int layout, struct plan *pl, const struct moat_image_config *cfg,
		       struct moat_error *err)
{
	for (unsigned i = 0; i < pl->n_layers; i++) {
		char what[32], got[MOAT_IMAGE_DIGEST_LEN + 1];
		uint64_t n;
		snprintf(what, sizeof(what), "layer %u", i);
		if (!pl->names[i]) {
			int fd = open_blob(layout, &pl->descs[i], what, err);
			if (fd < 0)
				return fd;
			pl->fds[pl->n++] = fd;
			memcpy(pl->digests[i], pl->descs[i].digest, MOAT_IMAGE_DIGEST_LEN + 1);
			pl->sizes[i] = pl->descs[i].size;
			continue;
		}
		int fd = (int)moat_openat2(layout, pl->names[i], O_RDONLY | O_CLOEXEC, 0, RES);
		struct stat st;
		if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			int e = fd < 0 ? errno : EINVAL;
			safe_close(fd);
			return moat_error_set(err, STAGE, e,
					      "layer %u (%s): not a file of the archive", i,
					      pl->names[i]);
		}
		pl->fds[pl->n++] = fd;
		int k = moat_image_hash_fd(fd, MOAT_IMAGE_BLOB_MAX, got, &n);
		if (k < 0)
			return moat_error_set(err, STAGE, -k, "layer %u: %s", i, strerror(-k));
		/* docker-archive layers are the uncompressed tars */
		if (!streq(got, cfg->diff_ids[i]))
			return moat_error_set(err, STAGE, EBADMSG,
					      "layer %u (%s): digest mismatch (the file is %s, the "
					      "config's diff_id %s; moat reads uncompressed "
					      "docker-archive layers only): refused",
					      i, pl->names[i], got, cfg->diff_ids[i]);
		memcpy(pl->digests[i], got, sizeof(got));
		pl->sizes[i] = n;
	}
	return 0;
}

static int make_tmp(int cache, char *name, size_t len, struct moat_error *err)
{
	for (int tries = 0; tries < 16; tries++) {
		unsigned char b[8];
		if (getrandom(b, sizeof(b), 0) != sizeof(b))
			return moat_error_set(err, STAGE, EIO, "no randomness");
		snprintf(name, len, ".tmp-%02x%02x%02x%02x%02x%02x%02x%02x", b[0], b[1], b[2], b[3],
			 b[4], b[5], b[6], b[7]);
		if (mkdirat(cache, name, 0700) == 0) {
			int fd = openat(cache, name,
					O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				return moat_error_set(err, STAGE, errno, "%s: %s", name,
						      strerror(errno));
			/* held while it is made: moat gc leaves it alone */
			(void)flock(fd, LOCK_EX);
			return fd;
		}
		if (errno != EEXIST)
			return moat_error_set(err, STAGE, errno, "cache: %s", strerror(errno));
	}
	return moat_error_set(err, STAGE, EEXIST, "cache: no temporary name");
}

/* The image directory name under the cache, locked shared: an fd, or
 * -ENOENT when it is not there (or gc took it meanwhile). */
static int take(int cache, const char *hex)
{
	int fd = openat(cache, hex, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : negerrno();
	struct stat a, b;
	if (flock(fd, LOCK_SH) < 0 || fstat(fd, &a) < 0 ||
	    fstatat(cache, hex, &b, AT_SYMLINK_NOFOLLOW) < 0 || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev || faccessat(fd, "config.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		close(fd);
		return -ENOENT;
	}
	return fd;
}

static int unpack_into(int cache, struct plan *pl, unsigned flags, int tmp, const char *tmpname,
		       struct moat_error *err)
{
	char why[600];
	uint64_t bytes = 0, entries = 0;
	if (mkdirat(tmp, "image", 0700) < 0)
		return moat_error_set(err, STAGE, errno, "cache: %s", strerror(errno));
	_cleanup_close_ int img = openat(tmp, "image", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (img < 0 || mkdirat(img, "rootfs", 0755) < 0)
		return moat_error_set(err, STAGE, errno, "cache: %s", strerror(errno));
	_cleanup_close_ int root = openat(img, "rootfs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return moat_error_set(err, STAGE, errno, "cache: %s", strerror(errno));
	for (unsigned i = 0; i < pl->n; i++) {
		int k = moat_image_unpack(pl->fds[i], root, pl->digests[i], pl->sizes[i], flags,
					  &bytes, MOAT_IMAGE_UNPACKED_MAX, &entries,
					  MOAT_IMAGE_ENTRIES_MAX, why, sizeof(why));
		if (k < 0)
			return moat_error_set(err, STAGE, -k, "layer %u (%s): %s: refused", i,
					      pl->digests[i], why);
	}
	_cleanup_close_ int cf =
		openat(img, "config.json", O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (cf < 0 || moat_write_all(cf, pl->config, pl->config_len) < 0)
		return moat_error_set(err, STAGE, errno, "cache: config.json: %s", strerror(errno));
	/* into place; a concurrent unpack of the same image may have won */
	char sub[80];
	snprintf(sub, sizeof(sub), "%s/image", tmpname);
	if (renameat(cache, sub, cache, pl->key + 7) < 0 && errno != EEXIST && errno != ENOTEMPTY)
		return moat_error_set(err, STAGE, errno, "cache: rename: %s", strerror(errno));
	return 0;
}

/* The archive's own tar into tmp/archive: its directory fd. */
static int open_archive(int cache, int src, int tmp, struct moat_error *err)
{
	char why[600];
	uint64_t bytes = 0, entries = 0;
	if (mkdirat(tmp, "archive", 0700) < 0)
		return moat_error_set(err, STAGE, errno, "cache: %s", strerror(errno));
	int dir = openat(tmp, "archive", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return moat_error_set(err, STAGE, errno, "cache: %s", strerror(errno));
	int k = moat_image_unpack(src, dir, NULL, 0, MOAT_IMAGE_F_PLAIN, &bytes,
				  MOAT_IMAGE_UNPACKED_MAX, &entries, MOAT_IMAGE_ENTRIES_MAX, why,
				  sizeof(why));
	if (k < 0) {
		close(dir);
		return moat_error_set(err, STAGE, -k, "the archive: %s: refused", why);
	}
	return dir;
}

static void strv_free(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

void moat_image_free(struct moat_image *img)
{
	if (!img)
		return;
	safe_close(img->lock_fd);
	free(img->dir);
	free(img->root);
	strv_free(img->argv);
	for (unsigned i = 0; i < img->n_top_dirs; i++)
		free(img->top_dirs[i]);
	moat_image_config_done(&img->cfg);
	free(img);
}

/* The directories at the top of the image that moat's plan does not
 * already make or bind (/srv, /app, ...): bound read-only too. */
static int list_top(struct moat_image *img, int dirfd)
{
	static const char *const skip[] = {"proc", "sys", "dev",   "tmp",   "etc",
					   "home", "run", "var",   "usr",   "bin",
					   "sbin", "lib", "lib32", "lib64", "libx32",
					   "opt",  "mnt", "media", "boot",  "lost+found"};
	int fd = openat(dirfd, "rootfs", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	DIR *d = fdopendir(fd);
	if (!d) {
		close(fd);
		return negerrno();
	}
	struct dirent *de;
	while ((de = readdir(d)) && img->n_top_dirs < TOP_DIRS_MAX) {
		bool s = de->d_name[0] == '.' || de->d_type != DT_DIR;
		for (size_t i = 0; !s && i < ELEMENTSOF(skip); i++)
			s = streq(de->d_name, skip[i]);
		if (s)
			continue;
		if (!(img->top_dirs[img->n_top_dirs] = strdup(de->d_name))) {
			closedir(d);
			return -ENOMEM;
		}
		img->n_top_dirs++;
	}
	closedir(d);
	return 0;
}

static char **join_argv(const struct moat_image_config *c)
{
	size_t n = c->n_entrypoint + c->n_cmd;
	if (!n)
		return NULL;
	char **v = calloc(n + 1, sizeof(char *));
	for (size_t i = 0; v && i < n; i++)
		if (!(v[i] = strdup(i < c->n_entrypoint ? c->entrypoint[i]
							: c->cmd[i - c->n_entrypoint]))) {
			strv_free(v);
			return NULL;
		}
	return v;
}

int moat_image_open(const char *path, unsigned flags, struct moat_image **ret,
		    struct moat_error *err)
{
	_cleanup_free_ char *cache_path = NULL;
	struct plan pl = {.n = 0};
	_cleanup_close_ int cache = -1, src = -1;
	int k, tmp = -1, layout = -1;
	char tmpname[40] = "";
	*ret = NULL;
	struct moat_image *img = calloc(1, sizeof(*img));
	if (!img)
		return moat_error_set(err, STAGE, ENOMEM, "out of memory");
	img->lock_fd = -1;
	unsigned uflags = flags & MOAT_IMAGE_OPEN_SETID ? MOAT_IMAGE_F_SETID : 0;

	/* O_NONBLOCK: a fifo given as PATH must not hang the open */
	src = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	/* a path that is not there is the user's mistake, as for --rootfs */
	if (src < 0 || fstat(src, &st) < 0) {
		k = moat_error_set(err, "usage", errno, "--image %s: %s", path, strerror(errno));
		goto out;
	}
	/* the cache only once the path is one (nothing made for a typo) */
	if ((k = moat_image_cache_dir(&cache_path)) < 0) {
		k = moat_error_set(err, STAGE, -k, "no cache directory (set XDG_CACHE_HOME)");
		goto out;
	}
	cache = open_cache(cache_path, err);
	if (cache < 0) {
		k = cache;
		goto out;
	}
	if (S_ISDIR(st.st_mode))
		layout = TAKE_FD(src);
	else if (S_ISREG(st.st_mode)) {
		if ((tmp = make_tmp(cache, tmpname, sizeof(tmpname), err)) < 0) {
			k = tmp;
			goto out;
		}
		if ((layout = open_archive(cache, src, tmp, err)) < 0) {
			k = layout;
			goto out;
		}
	} else {
		k = moat_error_set(err, "usage", EINVAL,
				   "--image %s: not a directory (OCI layout) or a file (archive)",
				   path);
		goto out;
	}
	if ((k = plan_read(layout, &pl, &img->cfg, uflags, img->digest, err)) < 0)
		goto out;

	for (int tries = 0;; tries++) {
		int fd = take(cache, pl.key + 7);
		if (fd >= 0) {
			img->lock_fd = fd;
			break;
		}
		if (fd != -ENOENT || tries >= 3) {
			k = moat_error_set(err, STAGE, -fd, "cache: %s: %s", pl.key + 7,
					   strerror(-fd));
			goto out;
		}
		if (tmp < 0 && (tmp = make_tmp(cache, tmpname, sizeof(tmpname), err)) < 0) {
			k = tmp;
			goto out;
		}
		if (!pl.n && (k = open_layers(layout, &pl, &img->cfg, err)) < 0)
			goto out;
		if ((k = unpack_into(cache, &pl, uflags, tmp, tmpname, err)) < 0)
			goto out;
		img->unpacked = true;
	}
	if (asprintf(&img->dir, "%s/%s", cache_path, pl.key + 7) < 0 ||
	    asprintf(&img->root, "%s/rootfs", img->dir) < 0) {
		k = moat_error_set(err, STAGE, ENOMEM, "out of memory");
		goto out;
	}
	if ((k = list_top(img, img->lock_fd)) < 0) {
		k = moat_error_set(err, STAGE, -k, "cache: %s: %s", img->dir, strerror(-k));
		goto out;
	}
	img->argv = join_argv(&img->cfg);
	k = 0;
out:
	plan_done(&pl);
	safe_close(layout);
	if (tmp >= 0) {
		(void)moat_rmtree_at(cache, tmpname, 4096);
		close(tmp);
	}
	if (k < 0)
		moat_image_free(img);
	else
		*ret = img;
	return k < 0 ? k : 0;
}

int moat_image_hold(const char *root)
{
	char dir[PATH_MAX];
	size_t n = strlen(root);
	if (n < 8 || n >= sizeof(dir) || strcmp(root + n - 7, "/rootfs") != 0)
		return -EINVAL;
	memcpy(dir, root, n - 7);
	dir[n - 7] = 0;
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	if (flock(fd, LOCK_SH) < 0 || faccessat(fd, "config.json", F_OK, AT_SYMLINK_NOFOLLOW) < 0) {
		int e = errno;
		close(fd);
		return -e;
	}
	return fd;
}

const char *moat_image_digest(const struct moat_image *img)
{
	return img->digest;
}

const char *moat_image_root(const struct moat_image *img)
{
	return img->root;
}

bool moat_image_was_unpacked(const struct moat_image *img)
{
	return img->unpacked;
}

char *const *moat_image_argv(const struct moat_image *img)
{
	return img->argv;
}

const struct moat_image_config *moat_image_config_of(const struct moat_image *img)
{
	return &img->cfg;
}

char *const *moat_image_top_dirs(const struct moat_image *img, unsigned *ret_n)
{
	*ret_n = img->n_top_dirs;
	return img->top_dirs;
}
