/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* moat run [OPTIONS] -- COMMAND [ARG...] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"

static void run_usage(void)
{
	fprintf(stderr, "usage: moat run [OPTIONS] -- COMMAND [ARG...]\n\noptions:\n");
	moat_cli_knobs_help(stderr);
	moat_cli_options_help();
}

/* s with every byte but printable ASCII as '?': names came from the sandbox */
static void ascii_only(char *dst, size_t len, const char *s)
{
	size_t i = 0;
	for (; s[i] && i < len - 1; i++)
		dst[i] = s[i] >= 0x20 && s[i] < 0x7f ? s[i] : '?';
	dst[i] = 0;
}

/* One denied destination: where (the name or address and port as asked),
 * why (the reason, and the answer moat refused for a "resolved-*" one) and
 * the flag that would allow it: "denied 3x a.test:443 (resolved-reserved
 * 198.51.100.7) — to allow: --resolve a.test=ADDR". */
static void print_denied(const struct moat_denied *d)
{
	char host[sizeof(d->host)], addr[sizeof(d->addr)], reason[sizeof(d->reason)],
		rule[sizeof(d->rule)], proto[sizeof(d->proto)];
	ascii_only(host, sizeof(host), d->host);
	ascii_only(addr, sizeof(addr), d->addr);
	ascii_only(reason, sizeof(reason), d->reason);
	ascii_only(rule, sizeof(rule), d->rule);
	ascii_only(proto, sizeof(proto), d->proto);
	fprintf(stderr, "  denied %llux ", (unsigned long long)d->count);
	if (d->dns)
		fprintf(stderr, "dns %s", host[0] ? host : "?");
	else if (host[0])
		fprintf(stderr, "%s:%u", host, d->port);
	else if (strchr(addr, ':'))
		fprintf(stderr, "[%s]:%u", addr, d->port);
	else
		fprintf(stderr, "%s:%u", addr[0] ? addr : "?", d->port);
	/* --net none names the protocol: UDP and TCP to one port differ */
	if (!d->dns && strcmp(reason, "network-none") == 0 && proto[0])
		fprintf(stderr, "/%s", proto);
	if (reason[0] && host[0] && addr[0] && strncmp(reason, "resolved-", 9) == 0)
		fprintf(stderr, " (%s %s)", reason, addr);
	else if (reason[0])
		fprintf(stderr, " (%s)", reason);
	if (rule[0])
		fprintf(stderr, " — to allow: %s", rule);
	fputc('\n', stderr);
}

/* The network lines: the counts (connections and DNS queries, which add up
 * to the totals), what --net none refused, the most denied destinations,
 * and how many more there were. */
void moat_cli_print_network(const struct moat_status *st)
{
	uint64_t allowed = st->net_allowed + st->dns_allowed;
	uint64_t denied = st->net_denied + st->dns_denied, shown = 0;

	if (st->net_none_attempts)
		fprintf(stderr,
			"moat: network: the command tried the network %llu time(s); --net none "
			"refused it (no packet left the sandbox; it is the default). To allow a "
			"destination, add the flag shown (and no --net none):\n",
			(unsigned long long)st->net_none_attempts);
	else if (allowed || denied)
		fprintf(stderr,
			"moat: network: %llu allowed, %llu denied (connections: %llu allowed, %llu "
			"denied; dns queries: %llu answered, %llu refused)\n",
			(unsigned long long)allowed, (unsigned long long)denied,
			(unsigned long long)st->net_allowed, (unsigned long long)st->net_denied,
			(unsigned long long)st->dns_allowed, (unsigned long long)st->dns_denied);
	for (unsigned i = 0; i < st->n_top_denied && i < MOAT_TOP_DENIED_MAX; i++) {
		print_denied(&st->top_denied[i]);
		shown += st->top_denied[i].count;
	}
	if (st->net_none_attempts)
		denied = st->net_none_attempts;
	if (st->n_top_denied && denied > shown)
		fprintf(stderr, "  … and %llu more denied (moat log %s --denied)\n",
			(unsigned long long)(denied - shown), st->run_id);
}

/* The workspace review lines; paths came from the sandbox: escaped. */
static void print_review(const struct moat_status *st)
{
	char path[512];
	if (st->review_errno)
		fprintf(stderr, "  workspace changes NOT applied: manifest failed: %s\n",
			strerror(st->review_errno));
	if (st->held_not_kept)
		fprintf(stderr,
			"  %llu held-back change(s) NOT KEPT: they need %llu bytes, over the cap of "
			"%llu (--held-max, --runs-max; `moat gc` frees space); none of them was "
			"applied, `moat apply` cannot apply them\n",
			(unsigned long long)st->held_dropped, (unsigned long long)st->held_needed,
			(unsigned long long)st->held_cap);
	for (unsigned i = 0; i < st->n_review && i < MOAT_REVIEW_MAX; i++) {
		const struct moat_review_entry *e = &st->review[i];
		moat_escape(e->path, strlen(e->path), path, 256);
		fprintf(stderr, "  %-8s %s  (", moat_review_state_name(e->state), path);
		moat_cli_put_safe(stderr, e->reason);
		fputs(")\n", stderr);
	}
	if (st->review_more)
		fprintf(stderr, "  … and %llu more (moat diff %s)\n",
			(unsigned long long)st->review_more, st->run_id);
	if (st->rw_new_repo[0]) {
		moat_escape(st->rw_new_repo, strlen(st->rw_new_repo), path, sizeof(path));
		fprintf(stderr,
			"  WARNING: the run created a git repository in the rw workspace: %s\n"
			"  its config and hooks were not reviewed: inspect them before any git "
			"command there\n",
			path);
	}
}

void moat_cli_print_workspace(const struct moat_status *st)
{
	/* workspace review and /output (observe.c) */
	if (st->files_changed)
		fprintf(stderr,
			"moat: workspace: %llu change(s), %llu applied, %llu held back, %llu refused\n",
			(unsigned long long)st->files_changed,
			(unsigned long long)st->files_applied, (unsigned long long)st->files_held,
			(unsigned long long)st->files_refused);
	if (st->files_listed) {
		fputs("moat: applied and listed (they run only when you run them): ", stderr);
		moat_cli_put_safe(stderr, st->listed);
		fputc('\n', stderr);
	}
	if (st->files_accepted_automatic)
		fprintf(stderr,
			"moat: WARNING: --accept-automatic applied %llu change(s) that run code "
			"automatically on the host (hooks, CI, start-up, agent or build files): "
			"inspect them (moat diff %s)\n",
			(unsigned long long)st->files_accepted_automatic, st->run_id);
	if (st->held_failed)
		fprintf(stderr,
			"moat: the command failed: no workspace change was applied "
			"(--apply-on-failure applies them as usual)\n");
	print_review(st);
	if (st->files_held)
		fprintf(stderr, "moat: review: moat diff %s   apply: moat apply %s [PATH...]\n",
			st->run_id, st->run_id);
	if (st->output_files || st->output_skipped)
		fprintf(stderr,
			"moat: /output: %llu file(s) collected, %llu skipped (links, special files)\n",
			(unsigned long long)st->output_files,
			(unsigned long long)st->output_skipped);
	if (st->output_error[0]) {
		fputs("moat: ", stderr);
		moat_cli_put_safe(stderr, st->output_error);
		fputc('\n', stderr);
	}
}

/* 16 MiB, 1536 KiB, 1000 bytes: exact (a limit as it was set) */
static void exact_size(char *buf, size_t len, uint64_t v)
{
	if (v && v % (1u << 20) == 0)
		snprintf(buf, len, "%llu MiB", (unsigned long long)(v >> 20));
	else if (v && v % 1024 == 0)
		snprintf(buf, len, "%llu KiB", (unsigned long long)(v >> 10));
	else
		snprintf(buf, len, "%llu bytes", (unsigned long long)v);
}

void moat_cli_print_limits(const struct moat_status *st)
{
	if (st->pids_limit_hits)
		fprintf(stderr,
			"moat: limits: pids limit %llu reached %llu time(s) (a fork or clone failed; --pids)\n",
			(unsigned long long)st->pids_limit,
			(unsigned long long)st->pids_limit_hits);
	if (st->oom_kills)
		fprintf(stderr,
			"moat: limits: memory limit %llu MiB reached: %llu process(es) killed (--memory)\n",
			(unsigned long long)(st->memory_limit >> 20),
			(unsigned long long)st->oom_kills);
	for (unsigned i = 0; i < st->n_disk_full && i < MOAT_DISK_FULL_MAX; i++) {
		const struct moat_disk_full *d = &st->disk_full[i];
		char size[32];
		exact_size(size, sizeof(size), d->limit);
		fprintf(stderr, "moat: limits: disk limit %s reached on ", size);
		moat_cli_put_safe(stderr, d->path);
		fprintf(stderr, " (%s: a write there fails with ENOSPC; %s)\n",
			d->inodes ? "no inode left" : "full", d->tmpfs_size ? "--tmpfs" : "--disk");
	}
	if (st->disk_full_more)
		fprintf(stderr,
			"moat: limits: and %u more full tmpfs area(s) (the audit log names them)\n",
			st->disk_full_more);
}

static void summary(const struct moat_status *st)
{
	double ms = (double)st->wall_us / 1000.0;
	double cpu = (double)(st->cpu_user_us + st->cpu_sys_us) / 1000.0;
	fprintf(stderr, "moat: run %s %s", st->run_id, moat_reason_name(st->reason));
	if (st->reason == MOAT_REASON_EXITED)
		fprintf(stderr, " %d", st->status);
	else if (st->reason == MOAT_REASON_SIGNALED)
		fprintf(stderr, " by signal %d", st->signal);
	fprintf(stderr, " (exit %d) in %.1f ms, cpu %.1f ms", st->exit_code, ms, cpu);
	if (st->denied_syscalls)
		fprintf(stderr, ", %llu denied syscalls", (unsigned long long)st->denied_syscalls);
	if (st->net_denied)
		fprintf(stderr, ", %llu denied connections", (unsigned long long)st->net_denied);
	if (st->degraded[0])
		fprintf(stderr, ", DEGRADED: %s", st->degraded);
	fputc('\n', stderr);
	moat_cli_print_limits(st);
	moat_cli_print_workspace(st);
	moat_cli_print_network(st);
	if (st->log_path[0])
		fprintf(stderr, "moat: log: moat log %s  (%s)\n", st->run_id, st->log_path);
}

/* --quiet still says, in one line, that workspace changes were not applied:
 * a held-back change is never invisible */
void moat_cli_print_held_notice(const struct moat_status *st)
{
	if (st->review_errno)
		fprintf(stderr,
			"moat: workspace changes NOT applied (manifest failed: %s): moat log %s\n",
			strerror(st->review_errno), st->run_id);
	else if (st->held_dropped)
		fprintf(stderr,
			"moat: %llu workspace change(s) NOT applied and NOT kept (over --held-max): "
			"moat diff %s\n",
			(unsigned long long)st->held_dropped, st->run_id);
	else if (st->files_held)
		fprintf(stderr,
			"moat: %llu workspace change(s) held back%s: moat diff %s   apply: moat apply "
			"%s\n",
			(unsigned long long)st->files_held,
			st->held_failed ? " (the command failed)" : "", st->run_id, st->run_id);
}

int moat_cli_run(int argc, char **argv)
{
	struct moat_policy *p = moat_policy_new();
	struct moat_error err = {0};
	struct moat_status st;
	int i = 1;

	if (!p) {
		fprintf(stderr, "moat: out of memory\n");
		return MOAT_EXIT_SETUP;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		run_usage();
		moat_policy_free(p);
		return 0;
	}
	if (moat_cli_parse_policy_options(p, argc, argv, &i, "run") < 0) {
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	/* --image: its Entrypoint and Cmd when no command is given; the
	 * options are checked before the image is unpacked */
	struct moat_image *img = NULL;
	if (moat_policy_image(p) && moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	int ik = moat_cli_image_prepare(&p, argc, argv, 1, "run", &img);
	if (ik < 0) {
		moat_policy_free(p);
		return ik == -1 ? MOAT_EXIT_USAGE : MOAT_EXIT_SETUP;
	}
	char *const *cmd = i < argc ? argv + i : img ? moat_image_argv(img) : NULL;
	if (!cmd) {
		fprintf(stderr,
			"moat run: no command given (moat run [OPTIONS] -- COMMAND "
			"[ARG...]%s)\n",
			img ? "; the image has no Entrypoint or Cmd" : "");
		moat_image_free(img);
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	if (moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		moat_image_free(img);
		moat_policy_free(p);
		return MOAT_EXIT_USAGE;
	}
	/* no review without the overlay: say so before anything runs */
	const char *note = moat_workspace_note(p);
	if (note)
		fprintf(stderr, "moat: %s\n", note);
	if (!note) { /* ro: reading through a hard link exposes the other name */
		struct moat_workspace_check wc;
		struct moat_error e2 = {0};
		if (moat_workspace_check(p, &wc, &e2) >= 0 && wc.hardlinks) {
			fprintf(stderr,
				"moat: --workspace ro: %llu file(s) have other names (hard "
				"links), e.g. ",
				wc.hardlinks);
			moat_cli_put_safe(stderr, wc.hardlink_example);
			fprintf(stderr, ": the sandbox can read them\n");
		}
	}
	/* the status record's file: checked before anything runs */
	char *status_path = NULL;
	if (moat_cli_knobs.status_path &&
	    moat_status_path_check(moat_cli_knobs.status_path, &status_path, &err) < 0) {
		bool usage = strcmp(err.stage, "usage") == 0;
		if (usage)
			moat_cli_print_error(&err);
		else {
			fprintf(stderr, "moat: sandbox not started: %s step: ", err.stage);
			moat_cli_put_safe(stderr, err.message);
			fputc('\n', stderr);
		}
		moat_image_free(img);
		moat_policy_free(p);
		return usage ? MOAT_EXIT_USAGE : MOAT_EXIT_SETUP;
	}
	int k = moat_run(p, cmd, &st, &err);
	if (k < 0) {
		if (st.reason == MOAT_REASON_NOT_FOUND || st.reason == MOAT_REASON_CANNOT_EXEC)
			moat_cli_print_error(&err);
		else if (strcmp(err.stage, "usage") == 0 || strcmp(err.stage, "policy") == 0) {
			moat_cli_print_error(&err);
			st.exit_code = MOAT_EXIT_USAGE;
		} else {
			fprintf(stderr, "moat: sandbox not started: %s step: ", err.stage);
			moat_cli_put_safe(stderr, err.message);
			fputc('\n', stderr);
		}
	}
	if (status_path) {
		struct moat_error e2 = {0};
		if (moat_status_write_json(&st, status_path, &e2) < 0)
			moat_cli_print_error(&e2);
		free(status_path);
	}
	if (!moat_cli_knobs.quiet && k >= 0)
		summary(&st);
	else if (k >= 0)
		moat_cli_print_held_notice(&st);
	if (st.stdio_error[0]) {
		/* the command never saw the error: moat says it, and fails */
		fprintf(stderr, "moat: %s\n", st.stdio_error);
		if (st.exit_code == 0)
			st.exit_code = 1;
	}
	moat_policy_free(p);
	moat_image_free(img); /* the cached tree's lock: held for the whole run */
	return st.exit_code;
}
