/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Whether this process is the host's root, or only uid 0 of a user namespace
 * of an unprivileged user (rootless podman runs its runtime so). */
#pragma once

#include <stdbool.h>
#include <stddef.h>

/* Pure: uid_map / gid_map text (as /proc/self/{uid,gid}_map shows it) and
 * the id that is asked about (the euid, the egid). True when the id maps to
 * id 0 of the parent namespace (the initial namespace maps every id onto
 * itself), or when the map does not parse or does not contain the id: the
 * caller then takes the privileged path, which never maps host id 0 into a
 * sandbox (its own uid pool) and fails where it lacks the privilege. */
bool moat_hostroot_map_is_zero(const char *map, size_t len, unsigned long id);
