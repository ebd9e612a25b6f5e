/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Steps of the sandbox's init that belong to other layers, each in its own
 * file so the layers stay independent: network namespace setup (hook_net.c),
 * work that needs the namespace capabilities (hook_caps.c) and the kernel
 * restriction layers, Landlock and seccomp (hook_restrict.c). They run
 * between clone and exec: no allocation, errno set on failure.
 */
#pragma once

struct moat_init;

/* Inside the new network namespace, with capabilities (lo is already up):
 * starts the setup in a child; moat_hook_network_join waits for its result
 * (before capabilities are dropped). */
int moat_hook_network(struct moat_init *sb);
int moat_hook_network_join(struct moat_init *sb);
/* After pivot_root, before capabilities are dropped. */
int moat_hook_before_caps(struct moat_init *sb);
/* After pivot_root, while the supervisor still works: builds the Landlock
 * ruleset (not enforced yet). */
int moat_hook_restrict_prepare(struct moat_init *sb);
/* After capabilities are dropped, last before fork+exec: Landlock (as
 * prepared), then seccomp. *ret_notify_fd receives the seccomp listener, or -1. */
int moat_hook_landlock(struct moat_init *sb);
int moat_hook_seccomp(struct moat_init *sb, int *ret_notify_fd);
