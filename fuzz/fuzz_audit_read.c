/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit log reader (`moat log`) on arbitrary file contents: every event
 * it returns must render to one line without control bytes, and filtering
 * must never return an event of another type.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "audit/audit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct moat_audit_filter f = {.types = (1u << MOAT_EV_EXEC) | (1u << MOAT_EV_NET)};
	char path[64];
	int fd = memfd_create("fuzz-audit", MFD_CLOEXEC);

	if (fd < 0)
		return 0;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return 0;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	for (int pass = 0; pass < 2; pass++) {
		struct moat_audit_reader *r = NULL;
		char *line = NULL, *text = NULL;
		if (moat_audit_reader_open(path, &r) < 0)
			break;
		while (moat_audit_reader_next(r, pass ? &f : NULL, &line, &text) == 1) {
			for (const unsigned char *p = (const unsigned char *)text; *p; p++)
				if (*p < 0x20 || *p == 0x7f)
					abort();
			if (pass && !strstr(line, "\"type\""))
				abort();
			if (pass && !strstr(text, " exec") && !strstr(text, " net"))
				abort();
			free(line);
			free(text);
			line = text = NULL;
		}
		moat_audit_reader_free(r);
	}
	close(fd);
	return 0;
}
