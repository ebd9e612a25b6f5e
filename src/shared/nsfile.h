/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A namespace file named by someone else (an OCI bundle's linux.namespaces
 * path): opened without a side effect and kept only when it is a namespace
 * of the kind asked for. */
#pragma once

/* Opens path O_PATH (no FIFO, no device is opened for reading), reopens it
 * through /proc/self/fd only when it is a file of nsfs, and returns that
 * descriptor (O_RDONLY, O_CLOEXEC) when NS_GET_NSTYPE is nstype (a CLONE_NEW*
 * flag). Errors: open's -errno; -EINVAL: not a namespace file; -EPROTOTYPE:
 * a namespace of another kind. */
int moat_nsfile_open(const char *path, int nstype);
