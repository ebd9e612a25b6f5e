/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: config.json (runtime-spec) -> moat's records (oci/oci_config.c),
 * and the same bytes as an exec's process.json. The records are always
 * well formed: four strings each, or one error naming a field. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "oci/oci.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check(const struct moat_oci_recs *r, int k)
{
	size_t pos = 0, n = 0;
	const char *t;
	if (r->len && r->buf[r->len - 1] != 0)
		abort();
	while ((t = moat_oci_recs_next(r, &pos)))
		n++;
	if (n % 4 || n / 4 != r->n)
		abort();
	if (k == -EINVAL && (!r->failed || r->n != 1))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_oci_recs r;
	int k = moat_oci_parse((const char *)data, size, "/bundle", &r);
	check(&r, k);
	moat_oci_recs_done(&r);
	k = moat_oci_parse_process((const char *)data, size, &r);
	check(&r, k);
	moat_oci_recs_done(&r);
	return 0;
}
