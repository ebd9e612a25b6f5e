/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * An opened image's root and config into a policy (moat.h): the root,
 * digest and top directories, and the config's Env, WorkingDir and User as
 * values that whatever is set after (a policy file, flags) replaces.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "image/image.h"
#include "moat/moat.h"
#include "policy/errors.h"
#include "policy/policy.h"
#include "policy/policy_int.h"
#include "shared/macro.h"
#include "shared/openat2.h"

#define ID_FILE_MAX (1u << 20)

/* name's numeric id in the image's etc/passwd or etc/group (field 3 and, for
 * passwd, 4): 0, or -ENOENT. The files are the image's bytes: bounded,
 * opened beneath the root without a symlink, parsed line by line. */
static int lookup(const char *root, const char *file, const char *name, unsigned *ret_id,
		  unsigned *ret_gid)
{
	_cleanup_close_ int rfd = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (rfd < 0)
		return negerrno();
	_cleanup_close_ int fd =
		(int)moat_openat2(rfd, file, O_RDONLY | O_CLOEXEC, 0,
				  RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > ID_FILE_MAX)
		return -ENOENT;
	_cleanup_free_ char *b = malloc((size_t)st.st_size + 1);
	if (!b)
		return -ENOMEM;
	ssize_t n = read(fd, b, (size_t)st.st_size);
	if (n < 0)
		return negerrno();
	b[n] = 0;
	size_t nl = strlen(name);
	for (char *line = b, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = 0;
		if (strncmp(line, name, nl) != 0 || line[nl] != ':')
			continue;
		char *f = strchr(line + nl + 1, ':'); /* past the password */
		if (!f)
			return -ENOENT;
		char *end;
		unsigned long id = strtoul(f + 1, &end, 10);
		if (end == f + 1 || *end != ':' || id > 65535)
			return -ENOENT;
		*ret_id = (unsigned)id;
		if (ret_gid) {
			unsigned long g = strtoul(end + 1, &end, 10);
			if (*end != ':' && *end != 0)
				return -ENOENT;
			*ret_gid = g > 65535 ? 0 : (unsigned)g;
		}
		return 0;
	}
	return -ENOENT;
}

static bool numeric(const char *s, unsigned *ret)
{
	char *end;
	if (!*s || strspn(s, "0123456789") != strlen(s))
		return false;
	unsigned long v = strtoul(s, &end, 10);
	if (v > 65535)
		return false;
	*ret = (unsigned)v;
	return true;
}

/* User "name", "uid", "uid:gid", "name:group". An image user of 0, or
 * none, keeps moat's default identity (agent, uid 1000): most images name
 * root only because engines have no other default, and `moat run` gives
 * the sandbox's own root (no capability, docs/POLICY.md) only when --uid 0
 * asks for it. */
static int apply_user(struct moat_policy *p, const char *root, const char *user,
		      struct moat_error *err)
{
	char u[256], *g;
	unsigned uid = 0, gid = 0, pgid = 0;
	bool have_gid = false;
	char why[200], num[16];
	snprintf(u, sizeof(u), "%s", user);
	g = strchr(u, ':');
	if (g)
		*g++ = 0;
	if (!numeric(u, &uid)) {
		if (lookup(root, "etc/passwd", u, &uid, &pgid) < 0)
			return moat_error_set(err, "image", ENOENT,
					      "config: User %.100s: no such user in the image's "
					      "/etc/passwd",
					      u);
		gid = pgid;
		have_gid = true;
		if (uid && moat_pset_user(p, u, why, sizeof(why)) < 0)
			return moat_error_set(err, "image", EINVAL, "config: User %.100s: %s", u,
					      why);
	}
	if (g && *g) {
		if (!numeric(g, &gid) && lookup(root, "etc/group", g, &gid, NULL) < 0)
			return moat_error_set(err, "image", ENOENT,
					      "config: User: group %.100s: not in the image's "
					      "/etc/group",
					      g);
		have_gid = true;
	}
	if (uid == 0)
		return 0;
	snprintf(num, sizeof(num), "%u", uid);
	if (moat_pset_uid(p, num, why, sizeof(why)) < 0)
		return moat_error_set(err, "image", EINVAL, "config: User %.100s: uid %s", user,
				      why);
	snprintf(num, sizeof(num), "%u", have_gid && gid ? gid : uid);
	if (moat_pset_gid(p, num, why, sizeof(why)) < 0)
		return moat_error_set(err, "image", EINVAL, "config: User %.100s: gid %s", user,
				      why);
	return 0;
}

const char *moat_policy_image(const struct moat_policy *p)
{
	return p->image;
}

bool moat_policy_image_setid(const struct moat_policy *p)
{
	return p->image_allow_setid;
}

int moat_policy_image_defaults(struct moat_policy *p, const struct moat_image *img,
			       struct moat_error *err)
{
	const struct moat_image_config *c = moat_image_config_of(img);
	unsigned n_dirs;
	char *const *dirs = moat_image_top_dirs(img, &n_dirs);
	char why[200];

	free(p->image_root);
	free(p->image_digest);
	moat_policy_strv_free(p->image_dirs, p->n_image_dirs);
	p->image_dirs = NULL;
	p->n_image_dirs = 0;
	p->image_root = strdup(moat_image_root(img));
	p->image_digest = strdup(moat_image_digest(img));
	if (!p->image_root || !p->image_digest)
		return moat_error_set(err, "image", ENOMEM, "out of memory");
	if (n_dirs) {
		if (!(p->image_dirs = calloc(n_dirs, sizeof(char *))))
			return moat_error_set(err, "image", ENOMEM, "out of memory");
		for (unsigned i = 0; i < n_dirs; i++) {
			if (!(p->image_dirs[i] = strdup(dirs[i])))
				return moat_error_set(err, "image", ENOMEM, "out of memory");
			p->n_image_dirs++;
		}
	}
	for (size_t i = 0; i < c->n_env; i++) {
		char *eq = strchr(c->env[i], '=');
		_cleanup_free_ char *name = strndup(c->env[i], (size_t)(eq - c->env[i]));
		if (!name || moat_policy_env_add(p, name, eq + 1) < 0)
			return moat_error_set(err, "image", E2BIG, "config: Env: too many");
	}
	if (c->workdir && moat_pset_cwd(p, c->workdir, why, sizeof(why)) < 0)
		return moat_error_set(err, "image", EINVAL, "config: WorkingDir: %s", why);
	if (c->user)
		return apply_user(p, p->image_root, c->user, err);
	return 0;
}

int moat_policy_image_copy(struct moat_policy *dst, const struct moat_policy *src)
{
	if (!src->image_root)
		return 0;
	free(dst->image_root);
	free(dst->image_digest);
	moat_policy_strv_free(dst->image_dirs, dst->n_image_dirs);
	dst->image_dirs = NULL;
	dst->n_image_dirs = 0;
	dst->image_root = strdup(src->image_root);
	dst->image_digest = src->image_digest ? strdup(src->image_digest) : NULL;
	if (!dst->image_root || (src->image_digest && !dst->image_digest))
		return -ENOMEM;
	if (src->n_image_dirs && !(dst->image_dirs = calloc(src->n_image_dirs, sizeof(char *))))
		return -ENOMEM;
	for (unsigned i = 0; i < src->n_image_dirs; i++) {
		if (!(dst->image_dirs[i] = strdup(src->image_dirs[i])))
			return -ENOMEM;
		dst->n_image_dirs++;
	}
	return 0;
}
