/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: what --image reads from an image before any layer is
 * unpacked (image/image_json.c) and the rule every tar entry passes
 * (image/image_entry.c). The first byte picks the parser:
 *   0 index.json, 1 a manifest, 2 an image config, 3 docker-archive's
 *   manifest.json, 0xff the confined reader's result as the parent decodes
 *   it (image/image_read.c: the only image bytes moat itself parses),
 *   4..0xfe one tar entry: a flags byte, a type byte, two mode bytes, then
 *   NAME NUL LINK.
 * Invariants: an accepted entry's name is relative, has no "." or ".."
 * component, no empty one, and fits; a refused one says why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "image/image.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const char *p)
{
	if (p[0] == '/' || strlen(p) > MOAT_IMAGE_PATH_MAX)
		abort();
	for (const char *c = p; *c;) {
		size_t n = strcspn(c, "/");
		if (n == 0 || (n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
			abort();
		c += n;
		if (*c == '/' && !*++c)
			abort(); /* a "/" last */
	}
}

static void entry(const uint8_t *d, size_t n)
{
	static const mode_t types[] = {S_IFREG, S_IFDIR, S_IFLNK,  S_IFCHR,
				       S_IFBLK, S_IFIFO, S_IFSOCK, 0};
	if (n < 4)
		return;
	char *s = malloc(n - 4 + 2);
	if (!s)
		return;
	memcpy(s, d + 4, n - 4);
	s[n - 4] = s[n - 3] = 0;
	const char *link = s + strlen(s) + 1;
	struct moat_image_entry e = {
		.path = s,
		.type = types[d[1] % 8],
		.mode = (mode_t)(d[2] | d[3] << 8) & 07777,
		.symlink = d[1] & 0x10 ? NULL : link,
		.hardlink = d[1] & 0x10 ? link : NULL,
		.size = d[1] & 0x20 ? -1 : 0,
	};
	struct moat_image_checked c;
	char why[400] = "";
	int k = moat_image_entry_check(&e, d[0] & 3, &c, why, sizeof(why));
	if (k < 0) {
		if (!why[0])
			abort();
	} else {
		if (c.kind != MOAT_IMAGE_ENT_SKIP && c.kind != MOAT_IMAGE_ENT_WHITEOUT &&
		    c.kind != MOAT_IMAGE_ENT_OPAQUE && !c.path[0])
			abort();
		if (c.path[0])
			check_name(c.path);
		if (c.kind == MOAT_IMAGE_ENT_HARDLINK)
			check_name(c.link);
		if (c.kind == MOAT_IMAGE_ENT_WHITEOUT &&
		    (!c.name[0] || !strcmp(c.name, ".") || !strcmp(c.name, "..") ||
		     strchr(c.name, '/')))
			abort();
		if ((c.mode & (S_ISUID | S_ISGID)) && !(d[0] & MOAT_IMAGE_F_SETID) &&
		    c.kind == MOAT_IMAGE_ENT_FILE)
			abort();
		if (c.kind == MOAT_IMAGE_ENT_DIR || c.kind == MOAT_IMAGE_ENT_FILE ||
		    c.kind == MOAT_IMAGE_ENT_SYMLINK || c.kind == MOAT_IMAGE_ENT_HARDLINK ||
		    c.kind == MOAT_IMAGE_ENT_SKIP)
			; /* the kinds a tar entry may become */
		else if (d[0] & MOAT_IMAGE_F_PLAIN)
			abort(); /* no whiteout in an archive's own tar */
	}
	free(s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char why[400];
	if (size < 1)
		return 0;
	const char *j = (const char *)data + 1;
	size_t n = size - 1;
	switch (data[0]) {
	case 0: {
		struct moat_image_desc d;
		if (moat_image_parse_index(j, n, &d, why, sizeof(why)) == 0 &&
		    moat_image_digest_check(d.digest) < 0)
			abort();
		break;
	}
	case 1: {
		struct moat_image_manifest *m = malloc(sizeof(*m));
		if (m && moat_image_parse_manifest(j, n, m, why, sizeof(why)) == 0) {
			if (!m->n_layers || m->n_layers > MOAT_IMAGE_LAYERS_MAX ||
			    moat_image_digest_check(m->config.digest) < 0)
				abort();
			for (unsigned i = 0; i < m->n_layers; i++)
				if (moat_image_digest_check(m->layers[i].digest) < 0)
					abort();
		}
		free(m);
		break;
	}
	case 2: {
		struct moat_image_config *c = malloc(sizeof(*c));
		if (c && moat_image_parse_config(j, n, c, why, sizeof(why)) == 0) {
			for (size_t i = 0; i < c->n_env; i++)
				if (!strchr(c->env[i], '='))
					abort();
			if (c->workdir && c->workdir[0] != '/')
				abort();
			moat_image_config_done(c);
		}
		free(c);
		break;
	}
	case 3: {
		struct moat_image_docker dk;
		if (moat_image_parse_docker(j, n, &dk, why, sizeof(why)) == 0) {
			if (moat_image_rel_check(dk.config) < 0)
				abort();
			for (unsigned i = 0; i < dk.n_layers; i++)
				if (moat_image_rel_check(dk.layers[i]) < 0)
					abort();
			moat_image_docker_done(&dk);
		}
		break;
	}
	case 0xff: {
		struct moat_image_plan *p = malloc(sizeof(*p));
		if (p && moat_image_plan_decode(j, n, p, why, sizeof(why)) == 0) {
			if (!p->n_layers || p->cfg.n_diff_ids != p->n_layers ||
			    moat_image_digest_check(p->digest) < 0 ||
			    moat_image_rel_check(p->config_name) < 0)
				abort();
			for (size_t i = 0; i < p->cfg.n_env; i++)
				if (!moat_image_env_ok(p->cfg.env[i]))
					abort();
			if (p->cfg.workdir && p->cfg.workdir[0] != '/')
				abort();
			for (unsigned i = 0; i < p->n_layers; i++)
				if (p->docker ? moat_image_rel_check(p->names[i]) < 0
					      : moat_image_digest_check(p->layers[i].digest) < 0)
					abort();
			moat_image_plan_done(p);
		}
		free(p);
		break;
	}
	default:
		entry(data, size);
	}
	return 0;
}
