/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor's side of --net allow: proxy configuration from the policy,
 * the proxy variables of the sandbox's environment, the listeners the
 * sandbox's init created in its network namespace (received as fds of kind
 * MOAT_FD_NET + i), the proxy worker process, and its decision events.
 * Called from supervise.c at the fixed points of a run.
 */
#pragma once

#include <stdint.h>

#include "lib/run.h"

/* Before clone: validate the rules into a proxy configuration. */
int moat_net_prepare(struct moat_run *r);
int moat_net_env(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *));
/* An fd from the sandbox: 1 if it was a network listener (now owned), else 0. */
int moat_net_take_fd(struct moat_run *r, int kind, int fd);
/* After setup: fork the proxy worker, register its event pipe with @tag. */
/* After clone, before the command can run: load the secrets' values and the
 * upstream trust store (fails the run closed). */
int moat_net_started(struct moat_run *r);
int moat_net_start(struct moat_run *r, int epfd, uint32_t tag);
void moat_net_dispatch(struct moat_run *r);
/* After the run: collect the last events. */
void moat_net_finish(struct moat_run *r);
/* Kill the worker, close everything. Safe at any point. */
void moat_net_teardown(struct moat_run *r);
/* "moat __proxy": the exec'd proxy helper, with the descriptors and the
 * configuration moat_net_start() gave it (see supervise_net.c). Returns the
 * exit status. */
int moat_net_helper_main(void);
