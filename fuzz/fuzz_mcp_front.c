/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Fuzz target: the MCP front's handling of client bytes (JSON-RPC lines,
 * tool arguments); its answers and records go to /dev/null. */
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "mcp/mcp_front.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int null_fd = -1;
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct moat_mcp_front *f = moat_mcp_front_new(null_fd, null_fd);
	if (!f)
		return 0;
	/* in two chunks: a line may span reads */
	size_t half = size / 2;
	moat_mcp_front_feed(f, (const char *)data, half);
	moat_mcp_front_feed(f, (const char *)data + half, size - half);
	moat_mcp_front_feed(f, "\n", 1);
	moat_mcp_front_free(f);
	return 0;
}
