/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * One tar entry of a layer, checked and classified (image.h). Pure. What is
 * refused: names that leave the tree (absolute, ".."), device nodes, fifos,
 * sockets, set-id bits (unless allowed), whiteouts of "." or "..", aufs
 * metadata (.wh..wh.*), over-long names or links. In an archive's own tar
 * (MOAT_IMAGE_F_PLAIN) links are skipped and .wh. names are plain files. Symlinks are kept as they
 * are, absolute ones too: they resolve inside the sandbox's root at run
 * time, and the unpacker never follows one (image_unpack.c).
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "image/image.h"
#include "shared/macro.h"

#define WH ".wh."
#define WH_OPQ ".wh..wh..opq"

_printf_(4, 5) static int fail(int e, char *why, size_t whylen, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (why && whylen)
		vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return -e;
}

/* A printable copy of a hostile name for a message. */
static const char *shown(const char *s, char *buf, size_t n)
{
	size_t i = 0;
	for (; s && s[i] && i + 1 < n; i++)
		buf[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	buf[i] = 0;
	return buf;
}

/* name without "./" and "//" and a "/" last into out; -EINVAL when it is
 * absolute or has "..", -ENAMETOOLONG past the limits. "" is the root. */
static int normalise(const char *name, char *out, size_t outlen)
{
	size_t o = 0;
	if (name[0] == '/')
		return -EINVAL;
	for (const char *c = name; *c;) {
		size_t n = strcspn(c, "/");
		if (n > MOAT_IMAGE_NAME_MAX)
			return -ENAMETOOLONG;
		if (n == 2 && c[0] == '.' && c[1] == '.')
			return -EINVAL;
		if (n && !(n == 1 && c[0] == '.')) {
			if (o + (o ? 1 : 0) + n + 1 > outlen || o + n + 1 > MOAT_IMAGE_PATH_MAX + 1)
				return -ENAMETOOLONG;
			if (o)
				out[o++] = '/';
			memcpy(out + o, c, n);
			o += n;
		}
		c += n;
		while (*c == '/')
			c++;
	}
	out[o] = 0;
	return 0;
}

int moat_image_entry_check(const struct moat_image_entry *e, unsigned flags,
			   struct moat_image_checked *ret, char *why, size_t whylen)
{
	char b[120];
	int k;
	memset(ret, 0, sizeof(*ret));
	if (!e->path)
		return fail(EINVAL, why, whylen, "an entry without a name");
	if (strlen(e->path) > MOAT_IMAGE_PATH_MAX)
		return fail(ENAMETOOLONG, why, whylen, "%s...: name longer than %u bytes",
			    shown(e->path, b, 60), MOAT_IMAGE_PATH_MAX);
	if ((k = normalise(e->path, ret->path, sizeof(ret->path))) < 0)
		return fail(-k, why, whylen, "%s: %s", shown(e->path, b, sizeof(b)),
			    k == -EINVAL ? "the name leaves the tree (absolute or \"..\")"
					 : "a name component is too long");
	if (e->size < 0 || (uint64_t)e->size > MOAT_IMAGE_BLOB_MAX)
		return fail(EFBIG, why, whylen, "%s: size out of range", shown(e->path, b, 100));
	ret->mode = e->mode & 07777;
	if ((e->mode & (S_ISUID | S_ISGID)) && !(flags & MOAT_IMAGE_F_SETID) &&
	    e->type != S_IFDIR && !e->hardlink)
		return fail(EPERM, why, whylen,
			    "%s: set-user-ID or set-group-ID file (refused unless "
			    "--image-allow-setid)",
			    shown(e->path, b, sizeof(b)));
	if (e->type == S_IFDIR)
		ret->mode &= ~(mode_t)(S_ISUID | S_ISGID) | (ret->mode & S_ISGID);
	if (!ret->path[0]) {
		if (e->type != S_IFDIR || e->hardlink)
			return fail(EINVAL, why, whylen, "the tree's root is not a directory");
		ret->kind = MOAT_IMAGE_ENT_SKIP;
		return 0;
	}

	const char *slash = strrchr(ret->path, '/');
	const char *base = slash ? slash + 1 : ret->path;
	if (!(flags & MOAT_IMAGE_F_PLAIN) && strncmp(base, WH, strlen(WH)) == 0) {
		size_t dlen = slash ? (size_t)(slash - ret->path) : 0;
		if (streq(base, WH_OPQ))
			ret->kind = MOAT_IMAGE_ENT_OPAQUE;
		else {
			const char *n = base + strlen(WH);
			if (!*n || streq(n, ".") || streq(n, ".."))
				return fail(EPERM, why, whylen,
					    "%s: a whiteout of \"%s\" (refused: it names no entry "
					    "of the directory)",
					    shown(e->path, b, sizeof(b)), n);
			if (strncmp(n, WH, strlen(WH)) == 0)
				return fail(EPERM, why, whylen,
					    "%s: aufs metadata (.wh..wh.*): not an OCI whiteout",
					    shown(e->path, b, sizeof(b)));
			snprintf(ret->name, sizeof(ret->name), "%s", n);
			ret->kind = MOAT_IMAGE_ENT_WHITEOUT;
		}
		ret->path[dlen] = 0;
		return 0;
	}

	/* an archive's own links (docker-archive's legacy <id>/layer.tar ->
	 * ../<digest>.tar) are not made: its manifest names the files, which
	 * are opened without following any link */
	if ((flags & MOAT_IMAGE_F_PLAIN) && (e->hardlink || e->type == S_IFLNK)) {
		ret->kind = MOAT_IMAGE_ENT_SKIP;
		return 0;
	}
	if (e->hardlink) {
		if ((k = normalise(e->hardlink, ret->link, sizeof(ret->link))) < 0 || !ret->link[0])
			return fail(EPERM, why, whylen,
				    "%s: a hard link to %s, outside the tree (absolute or \"..\")",
				    shown(e->path, b, 100), shown(e->hardlink, b + 100, 20));
		if (streq(ret->link, ret->path))
			return fail(EINVAL, why, whylen, "%s: a hard link to itself",
				    shown(e->path, b, sizeof(b)));
		ret->kind = MOAT_IMAGE_ENT_HARDLINK;
		return 0;
	}
	switch (e->type) {
	case S_IFREG:
		ret->kind = MOAT_IMAGE_ENT_FILE;
		return 0;
	case S_IFDIR:
		ret->kind = MOAT_IMAGE_ENT_DIR;
		return 0;
	case S_IFLNK:
		if (!e->symlink || !e->symlink[0] || strlen(e->symlink) > MOAT_IMAGE_PATH_MAX)
			return fail(EINVAL, why, whylen,
				    "%s: a symlink with no or a too long target",
				    shown(e->path, b, sizeof(b)));
		snprintf(ret->link, sizeof(ret->link), "%s", e->symlink);
		ret->mode = 0777;
		ret->kind = MOAT_IMAGE_ENT_SYMLINK;
		return 0;
	case S_IFCHR:
	case S_IFBLK:
		return fail(EPERM, why, whylen, "%s: a device node (refused)",
			    shown(e->path, b, sizeof(b)));
	case S_IFIFO:
		return fail(EPERM, why, whylen, "%s: a fifo (refused)",
			    shown(e->path, b, sizeof(b)));
	case S_IFSOCK:
		return fail(EPERM, why, whylen, "%s: a socket (refused)",
			    shown(e->path, b, sizeof(b)));
	default:
		return fail(EINVAL, why, whylen, "%s: an entry of unknown type",
			    shown(e->path, b, sizeof(b)));
	}
}
