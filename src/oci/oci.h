/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/oci/: moat as an OCI runtime: config.json read by a confined parser and translated
 * into moat options (every field honoured, satisfied or refused by name)
 */
/*
 * The OCI runtime's bundle configuration (docs/OCI.md). oci_config.c is
 * the pure translation of a runtime-spec config.json (1.0-1.3) into moat's
 * terms: policy options, the container's process, notes of what moat
 * provides itself; every field moat cannot honour is an error naming it.
 * oci_load.c runs that translation in a child process that can do nothing
 * but read and write the descriptors it was given (seccomp, no privileges)
 * and applies the records it sends back to a policy.
 *
 * Records: NUL-terminated strings, four per record (tag, field, a, b):
 *   "opt"  field option value   a policy option ("" value: a switch)
 *   "arg"  -     word  -        process.args, in order
 *   "env"  -     NAME=V -       process.env
 *   "cwd"  -     dir   -
 *   "tty"  -     -     -        process.terminal
 *   "oom"  field value -        process.oomScoreAdj (-1000..1000)
 *   "rlim" field TYPE  "S H"    process.rlimits[i]: RLIMIT_* name, soft and
 *                               hard (decimal; not RLIMIT_CORE, which is 0)
 *   "nooom" field -    -        linux.resources.memory.disableOOMKiller: true
 *   "cgp"  field path  -        linux.cgroupsPath: where the container's cgroup goes
 *   "note" field text  -        what moat provides itself instead (logged)
 *   "ann"  -     key   value    the annotations (state reports them)
 *   "pol"  field name  -        run.moat.policy: a policy file's name
 *   "log"  field name  -        run.moat.log: the audit log's name
 *   "rrw"  field size  -        root.readonly false: a writable root, its
 *                               upper layers' size ("" : --disk)
 *   "netns" field path -        linux.namespaces[i].path (network only):
 *                               the egress proxy's upstream namespace
 *   "nspath" field path kind   linux.namespaces[i].path of the ipc or uts
 *                               kind: not joined, checked to be of its kind
 *   "err"  field text  -        the first field moat cannot honour
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>

#define MOAT_OCI_CONFIG_MAX (4u << 20) /* config.json bytes */
#define MOAT_OCI_RECS_MAX (2u << 20) /* the records' bytes */
#define MOAT_OCI_RECS_N 8192 /* records */
#define MOAT_OCI_ROOT_TOP_MAX 64u /* names at the top of root.path moat binds */

struct moat_oci_recs {
	char *buf;
	size_t len, cap;
	unsigned n;
	bool failed; /* an "err" record was added: nothing else counts */
};

/* Translates json[0..len) (bundle: the bundle's absolute path, for a
 * relative root.path). Always fills *out (free with moat_oci_recs_done());
 * returns 0, or -EINVAL when an "err" record says which field, -E2BIG /
 * -ENOMEM when the records do not fit. Pure: no syscall but memory. */
int moat_oci_parse(const char *json, size_t len, const char *bundle, struct moat_oci_recs *out);
/* The same for a process.json (`exec --process`): a runtime-spec Process. */
int moat_oci_parse_process(const char *json, size_t len, struct moat_oci_recs *out);
void moat_oci_recs_done(struct moat_oci_recs *r);
/* The i-th string of the records from *pos (advanced), NULL past the end. */
const char *moat_oci_recs_next(const struct moat_oci_recs *r, size_t *pos);

/* oci_load.c: what the parser's child does before it parses: nobody where
 * it can, no_new_privs, seccomp allowing read, write, memory and exit only
 * (the rest fails with EPERM). */
int moat_oci_confine(void);
