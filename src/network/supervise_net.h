/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/network/: the network and credentials layers: the plugins' loader and ABI,
 * the namespace's capture rules and listeners, the proxy helper's start, --net none records
 */
/*
 * The supervisor's side of --net allow: the check of the rules, the proxy
 * variables of the sandbox's environment, the credential proxy's
 * placeholders and CA bundle (through moat-net.so, net_plugin.h), the
 * listeners the sandbox's init created in its network namespace (received as
 * fds of kind MOAT_FD_NET + i), the exec'd proxy helper `moat __proxy`, and
 * its decision events. Called from supervise.c at the fixed points of a run.
 */
#pragma once

#include <stdint.h>

#include "supervisor/run.h"

/* Before clone: validate the rules. */
int moat_net_prepare(struct moat_run *r);
/* Before clone, in this order: both plugins are there and of this build,
 * the proxy variables (layer_network.c); then, for the credential proxy, the
 * placeholders and the variables naming the CA bundle (layer_credentials.c). */
int moat_net_env_proxy(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *));
int moat_net_env_credentials(struct moat_run *r,
			     int (*push)(struct moat_run *, const char *, const char *));
/* Before clone, after the run's state record exists (limits layer): the
 * per-run CA bundle's directory, recorded there, then the bundle. */
int moat_net_prepare_credentials(struct moat_run *r);
/* An fd from the sandbox: 1 if it was a network listener (now owned), else 0. */
int moat_net_take_fd(struct moat_run *r, int kind, int fd);
/* After clone, before the command can run: load the secrets' values and
 * check the upstream trust store (fails the run closed), start the helper. */
int moat_net_started(struct moat_run *r);
/* After setup: the listeners to the helper, its event pipe registered with
 * @tag. */
int moat_net_start(struct moat_run *r, int epfd, uint32_t tag);
void moat_net_dispatch(struct moat_run *r);
/* After the run: collect the last events. */
void moat_net_finish(struct moat_run *r);
/* Kill the helper, close everything. Safe at any point. */
void moat_net_teardown(struct moat_run *r);
