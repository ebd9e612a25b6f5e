/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: run.json of the state directory (read back by moat gc / ps). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "supervisor/state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct moat_state_record rec, again;
	if (moat_state_record_parse((const char *)data, size, &rec) < 0)
		return 0;
	/* What parses must survive a round trip unchanged. */
	char *json = NULL;
	if (moat_state_record_to_json(&rec, &json) < 0)
		abort();
	if (moat_state_record_parse(json, strlen(json), &again) < 0 ||
	    memcmp(&rec, &again, sizeof(rec)) != 0)
		abort();
	free(json);
	return 0;
}
