/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The parts of --net allow that the supervisor needs before clone without
 * its network plugin (see net_plugin.h): the proxy variables of the
 * sandbox's environment, and the check of the policy's network rules.
 */
#pragma once

#include <stdbool.h>

struct moat_run;
struct moat_policy;

/* HTTP(S)_PROXY, ALL_PROXY and NO_PROXY (both spellings) for the sandbox. */
int moat_net_proxy_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *));
/* Whether the run needs the credential proxy (TLS interception) before
 * clone: secrets, http rules or --inspect-tls all make a per-run CA (and
 * secrets placeholders). */
bool moat_net_needs_credentials(const struct moat_policy *p);
/* The rules turned into a proxy configuration once, and thrown away:
 * -EINVAL with r->err set for a bad rule. */
int moat_net_check_rules(struct moat_run *r);
