/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: the policy parser (JSON + every key's validation + line:column). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "moat/moat.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error e;
	if (!p)
		return 0;
	if (moat_policy_load_string(p, (const char *)data, size, "fuzz", &e) >= 0 &&
	    moat_policy_validate(p, &e) >= 0) {
		char *json = NULL, *plan = NULL;
		if (moat_policy_to_json(p, &json) >= 0) {
			/* what we print must parse back */
			struct moat_policy *q = moat_policy_new();
			if (q &&
			    moat_policy_load_string(q, json, strlen(json), "roundtrip", &e) < 0)
				abort();
			moat_policy_free(q);
		}
		moat_policy_plan_text(p, &plan);
		free(json);
		free(plan);
	}
	moat_policy_free(p);
	return 0;
}
