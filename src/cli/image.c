/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* --image for moat run and moat policy show (docs/IMAGES.md): the image is
 * opened (verified, unpacked once into the cache, locked while in use) and
 * the policy rebuilt with the image's defaults underneath the options. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

int moat_cli_image_prepare(struct moat_policy **pp, int argc, char **argv, int start,
			   const char *cmd, struct moat_image **ret_img)
{
	struct moat_error err = {0};
	struct moat_image *img = NULL;
	const char *path = moat_policy_image(*pp);
	*ret_img = NULL;
	if (!path)
		return 0;
	unsigned fl = moat_policy_image_setid(*pp) ? MOAT_IMAGE_OPEN_SETID : 0;
	if (moat_image_open(path, fl, &img, &err) < 0) {
		if (strcmp(err.stage, "usage") == 0) {
			moat_cli_print_error(&err);
			return -1;
		}
		fprintf(stderr, "moat: sandbox not started: %s step: ", err.stage);
		moat_cli_put_safe(stderr, err.message);
		fputc('\n', stderr);
		return -2;
	}
	if (moat_image_was_unpacked(img) && !moat_cli_knobs.quiet) {
		fprintf(stderr, "moat: image %s unpacked into ", moat_image_digest(img));
		moat_cli_put_safe(stderr, moat_image_root(img));
		fputc('\n', stderr);
	}
	/* the image's defaults first, then the policy file and the flags */
	struct moat_policy *p = moat_policy_new();
	int i = start;
	if (!p || moat_policy_image_defaults(p, img, &err) < 0) {
		fprintf(stderr, "moat: sandbox not started: image step: ");
		moat_cli_put_safe(stderr, p ? err.message : "out of memory");
		fputc('\n', stderr);
		moat_policy_free(p);
		moat_image_free(img);
		return -2;
	}
	if (moat_cli_parse_policy_options(p, argc, argv, &i, cmd) < 0) {
		moat_policy_free(p);
		moat_image_free(img);
		return -1;
	}
	moat_policy_free(*pp);
	*pp = p;
	*ret_img = img;
	return 0;
}
