/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/cli/: the thin CLI, one file per subcommand; includes only moat/moat.h and its
 * own headers (scripts/check-cli-includes.sh)
 */
/* The moat command: one file per subcommand, each using only moat/moat.h. */
#pragma once

#include <stdbool.h>
#include <stdio.h>

#include "moat/moat.h"

int moat_cli_run(int argc, char **argv);
int moat_cli_policy(int argc, char **argv);
int moat_cli_doctor(int argc, char **argv);
int moat_cli_log(int argc, char **argv);
int moat_cli_diff(int argc, char **argv);
int moat_cli_apply(int argc, char **argv);
int moat_cli_gc(int argc, char **argv);
int moat_cli_ps(int argc, char **argv);
int moat_cli_runs(int argc, char **argv);
int moat_cli_selftest(int argc, char **argv);
int moat_cli_mcp(int argc, char **argv);
/* `moat serve`: the HTTP API (serve.c). */
int moat_cli_serve(int argc, char **argv);
/* `moat __mcp-front`: the exec'd front of `moat mcp` (mcp_front.c). */
int moat_cli_mcp_front(int argc, char **argv);
/* run.c: the workspace and /output lines of a run's end (also moat rm's);
 * what came from the sandbox is escaped */
void moat_cli_print_workspace(const struct moat_status *st);
/* the `moat: limits:` lines of a summary: pids, memory and --disk limits
 * that were hit (run.c; also moat rm's) */
void moat_cli_print_limits(const struct moat_status *st);
/* the network lines of a summary: counts, denied destinations (run.c) */
void moat_cli_print_network(const struct moat_status *st);
/* --quiet: one line when workspace changes were held back (or not kept) */
void moat_cli_print_held_notice(const struct moat_status *st);
/* session.c: sessions (a sandbox that outlives one command) */
int moat_cli_create(int argc, char **argv);
int moat_cli_exec(int argc, char **argv);
int moat_cli_ls(int argc, char **argv);
int moat_cli_logs(int argc, char **argv);
int moat_cli_stop(int argc, char **argv);
int moat_cli_rm(int argc, char **argv);
int moat_cli_cp(int argc, char **argv);
int moat_cli_snapshot(int argc, char **argv);
int moat_cli_restore(int argc, char **argv);
int moat_cli_reset(int argc, char **argv);

/* oci.c: `moat oci ...` and `moat-oci ...`, the OCI runtime (docs/OCI.md) */
int moat_cli_oci(int argc, char **argv);
/* `moat __proxy`: the exec'd egress proxy helper of a --net allow run
 * (proxy.c, moat_proxy_helper_main); not a user command. */
int moat_cli_proxy_helper(int argc, char **argv);
int moat_cli_gvisor_init(int argc, char **argv);
/* `moat __probe NAME ARGS`: one red-team probe built into moat (selftest.c),
 * selected by argv only. */
int moat_cli_probe(int argc, char **argv);

/* Parses policy options from argv[*i] on (--opt VALUE, --opt=VALUE, --policy FILE)
 * into p until "--" or a non-option; *i is left at the first unparsed argument.
 * Prints the error and returns -1 on a bad option. */
/* --image (image.c): when the policy names an image, opens it and replaces
 * *pp by a policy with the image's defaults under the same options (parsed
 * again from start). 0 (also without an image), -1 a usage error, -2 the
 * image could not be used (both printed). *ret_img: free after the run. */
int moat_cli_image_prepare(struct moat_policy **pp, int argc, char **argv, int start,
			   const char *cmd, struct moat_image **ret_img);
int moat_cli_parse_policy_options(struct moat_policy *p, int argc, char **argv, int *i,
				  const char *cmd);
/* `moat run`'s own knobs, parsed with its policy options but not part of the
 * policy: --quiet (no summary), --json-status FILE (the status record). */
struct moat_cli_knobs {
	bool quiet;
	const char *status_path;
};
extern struct moat_cli_knobs moat_cli_knobs;
/* Their help lines (moat run --help). */
void moat_cli_knobs_help(FILE *f);
void moat_cli_print_error(const struct moat_error *e);
/* Writes str to f with control characters, C1 controls and invalid UTF-8
 * escaped as \xNN: error messages quote values from policy files and argv,
 * which must never reach the terminal raw. */
void moat_cli_put_safe(FILE *f, const char *str);
void moat_cli_options_help(void);
/* The name in names[0..n) closest to word if it is plausibly a typo of it
 * (edit distance <= 2), else NULL: for "did you mean". */
const char *moat_cli_suggest(const char *word, const char *const *names, size_t n);

/* The policy options' help lines, to f. */
void moat_cli_options_help_to(FILE *f);
/* help.c: the help of `moat CMD [SUB]` on stdout (0), or an error (2). */
int moat_cli_help(const char *cmd, const char *sub);
/* Whether argv asks for help (`moat CMD --help`, `moat policy SUB --help`);
 * *ret_sub: the subcommand or NULL. */
bool moat_cli_wants_help(int argc, char **argv, const char **ret_sub);
/* The command closest to cmd if it looks like a typo of one, else NULL. */
const char *moat_cli_suggest_command(const char *cmd);
