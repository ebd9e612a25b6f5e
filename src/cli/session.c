/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Sessions: moat create / exec / ls / logs / stop / rm / cp (docs/SESSIONS.md).
 * A session is a sandbox served by its own supervisor process (libmoat's
 * moat_session_*); these commands are its clients.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"

#define DEFAULT_MAX_COPY (1ull << 30)

/* "250ms", "90s", "10m", "2h", "1d", bare number = seconds. */
static int parse_duration(const char *s, uint64_t *ret_ms)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	uint64_t mul = strcmp(end, "ms") == 0	     ? 1
		: strcmp(end, "s") == 0 || *end == 0 ? 1000
		: strcmp(end, "m") == 0		     ? 60000
		: strcmp(end, "h") == 0		     ? 3600000
		: strcmp(end, "d") == 0		     ? 86400000
						     : 0;
	if (!mul || v > UINT64_MAX / mul)
		return -1;
	*ret_ms = v * mul;
	return 0;
}

/* "4096", "512K", "64M", "1G" (binary units). */
static int parse_size(const char *s, uint64_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || s[0] == '-')
		return -1;
	unsigned shift = 0;
	switch (*end) {
	case 'k':
	case 'K':
		shift = 10;
		break;
	case 'm':
	case 'M':
		shift = 20;
		break;
	case 'g':
	case 'G':
		shift = 30;
		break;
	case 0:
		break;
	default:
		return -1;
	}
	if (*end && end[1] && strcmp(end + 1, "B") != 0 && strcmp(end + 1, "iB") != 0)
		return -1;
	if (v > (UINT64_MAX >> shift))
		return -1;
	*ret = (uint64_t)v << shift;
	return 0;
}

static int session_error(const char *cmd, const struct moat_error *e)
{
	fprintf(stderr, "moat %s: ", cmd);
	moat_cli_put_safe(stderr, e->message[0] ? e->message : "unknown error");
	fputc('\n', stderr);
	/* no such session: bad usage (2); anything else: 1 */
	return strcmp(e->stage, "session") == 0 && (e->err == ENOENT || e->err == ECONNREFUSED)
		? MOAT_EXIT_USAGE
		: 1;
}

/* ---- moat create ---------------------------------------------------------- */

int moat_cli_create(int argc, char **argv)
{
	struct moat_session_opts o = {0};
	struct moat_error err = {0};
	char id[40];
	/* the session's own options first, then the run options */
	char **rest = calloc((size_t)argc + 1, sizeof(char *));
	int nrest = 0;
	if (!rest)
		return MOAT_EXIT_SETUP;
	rest[nrest++] = argv[0];
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t *dur = strcmp(a, "--idle-timeout") == 0 ? &o.idle_timeout_ms
			: strcmp(a, "--lifetime") == 0		 ? &o.lifetime_ms
								 : NULL;
		if (strcmp(a, "--") == 0) {
			fprintf(stderr,
				"moat create: takes no command (start one with moat exec)\n");
			free(rest);
			return MOAT_EXIT_USAGE;
		}
		if (dur || strcmp(a, "--name") == 0) {
			if (!v) {
				fprintf(stderr, "moat create: %s needs a value\n", a);
				free(rest);
				return MOAT_EXIT_USAGE;
			}
			if (dur && parse_duration(v, dur) < 0) {
				fprintf(stderr, "moat create: %s: not a duration: ", a);
				moat_cli_put_safe(stderr, v);
				fputc('\n', stderr);
				free(rest);
				return MOAT_EXIT_USAGE;
			}
			if (!dur)
				o.name = v;
			i++;
			continue;
		}
		rest[nrest++] = argv[i];
		/* a run option's value may look like anything */
		if (a[0] == '-' && !strchr(a, '=') &&
		    (strcmp(a, "--policy") == 0 || moat_policy_option_takes_value(a) == 1) && v) {
			rest[nrest++] = argv[++i];
		}
	}
	struct moat_policy *p = moat_policy_new();
	int i = 1;
	if (!p) {
		free(rest);
		return MOAT_EXIT_SETUP;
	}
	if (moat_cli_parse_policy_options(p, nrest, rest, &i, "create") < 0) {
		moat_policy_free(p);
		free(rest);
		return MOAT_EXIT_USAGE;
	}
	if (i < nrest) {
		fprintf(stderr, "moat create: unexpected argument ");
		moat_cli_put_safe(stderr, rest[i]);
		fputs(" (moat create takes no command: start one with moat exec)\n", stderr);
		moat_policy_free(p);
		free(rest);
		return MOAT_EXIT_USAGE;
	}
	if (moat_policy_validate(p, &err) < 0) {
		moat_cli_print_error(&err);
		moat_policy_free(p);
		free(rest);
		return MOAT_EXIT_USAGE;
	}
	/* --image: opened (verified, unpacked) here, its Env, WorkingDir and
	 * User the defaults; the session's supervisor takes its own hold on
	 * the cached tree before this one is let go */
	struct moat_image *img = NULL;
	int ik = moat_cli_image_prepare(&p, nrest, rest, 1, "create", &img);
	free(rest);
	if (ik < 0) {
		moat_policy_free(p);
		return ik == -1 ? MOAT_EXIT_USAGE : MOAT_EXIT_SETUP;
	}
	const char *note = moat_workspace_note(p);
	if (note)
		fprintf(stderr, "moat: %s\n", note);
	signal(SIGPIPE, SIG_IGN);
	int k = moat_session_create(p, &o, id, &err);
	moat_policy_free(p);
	moat_image_free(img);
	if (k < 0) {
		if (strcmp(err.stage, "usage") == 0 || strcmp(err.stage, "policy") == 0) {
			moat_cli_print_error(&err);
			return MOAT_EXIT_USAGE;
		}
		fprintf(stderr, "moat: sandbox not started: %s step: ", err.stage);
		moat_cli_put_safe(stderr, err.message);
		fputc('\n', stderr);
		return MOAT_EXIT_SETUP;
	}
	printf("%s\n", id);
	return 0;
}

/* ---- moat exec ------------------------------------------------------------ */

static void exec_usage(void)
{
	fprintf(stderr,
		"usage: moat exec ID|NAME [--env K=V]... [--cwd DIR] [--tty|--no-tty] "
		"[--timeout D] -- COMMAND [ARG...]\n");
}

static void send_size(struct moat_session_exec *e)
{
	struct winsize ws;
	int src = isatty(STDIN_FILENO) ? STDIN_FILENO : isatty(STDOUT_FILENO) ? STDOUT_FILENO : -1;
	if (src >= 0 && ioctl(src, TIOCGWINSZ, &ws) == 0)
		moat_session_exec_resize(e, ws.ws_row, ws.ws_col);
}

int moat_cli_exec(int argc, char **argv)
{
	const char *id = NULL, *cwd = NULL;
	char *env[257];
	unsigned n_env = 0;
	int tty = 0; /* 0 auto, 1 always, -1 never */
	uint64_t timeout = 0;
	int i = 1;
	for (; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (strcmp(a, "--") == 0) {
			i++;
			break;
		}
		if (strcmp(a, "--tty") == 0)
			tty = 1;
		else if (strcmp(a, "--no-tty") == 0)
			tty = -1;
		else if ((strcmp(a, "--env") == 0 || strcmp(a, "--cwd") == 0 ||
			  strcmp(a, "--timeout") == 0) &&
			 v) {
			i++;
			if (a[2] == 'e') {
				if (!strchr(v, '=') || v[0] == '=' || n_env >= 256) {
					fprintf(stderr,
						"moat exec: --env wants NAME=VALUE (at most "
						"256)\n");
					return MOAT_EXIT_USAGE;
				}
				env[n_env++] = argv[i];
			} else if (a[2] == 'c')
				cwd = v;
			else if (parse_duration(v, &timeout) < 0 || timeout == 0) {
				fprintf(stderr, "moat exec: --timeout: not a duration\n");
				return MOAT_EXIT_USAGE;
			}
		} else if (a[0] != '-' && !id)
			id = a;
		else if (a[0] != '-' && id)
			break; /* the command, without "--" */
		else {
			fprintf(stderr, "moat exec: unknown option ");
			moat_cli_put_safe(stderr, a);
			fputc('\n', stderr);
			exec_usage();
			return MOAT_EXIT_USAGE;
		}
	}
	env[n_env] = NULL;
	if (!id || i >= argc) {
		exec_usage();
		return MOAT_EXIT_USAGE;
	}
	unsigned tty_mask = 0;
	for (int k = 0; k < 3; k++)
		if (isatty(k))
			tty_mask |= 1u << k;
	if (tty == 1)
		tty_mask = 7;
	else if (tty == -1 && tty_mask) {
		fprintf(stderr,
			"moat exec: a standard stream is a terminal and --no-tty was "
			"given: redirect it (the sandbox never receives the host's "
			"terminal)\n");
		return MOAT_EXIT_USAGE;
	}
	struct moat_exec x = {.argv = argv + i,
			      .env = n_env ? env : NULL,
			      .cwd = cwd,
			      .tty_mask = tty_mask,
			      .timeout_ms = timeout};
	for (int k = 0; k < 3; k++)
		x.fd[k] = fcntl(k, F_GETFD) >= 0 ? k : -1;

	/* signals through a signalfd: forwarded to the process */
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigaddset(&mask, SIGQUIT);
	sigaddset(&mask, SIGWINCH);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	int sigfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);

	/* the session supervisor, which relays the terminal, switches it to
	 * raw (after handing on what the canonical buffer held: no NUL from a
	 * pending ^D) and restores it before the status comes; restored here
	 * too, as it was before (the supervisor may die) */
	struct termios saved;
	bool raw = tty_mask && isatty(STDIN_FILENO) && tcgetattr(STDIN_FILENO, &saved) == 0;
	struct moat_session_exec *e = NULL;
	struct moat_error err = {0};
	if (moat_session_exec(id, &x, &e, &err) < 0) {
		if (strcmp(err.stage, "command") == 0) {
			moat_cli_print_error(&err);
			return err.err == ENOENT ? MOAT_EXIT_NOT_FOUND : MOAT_EXIT_CANNOT_EXEC;
		}
		if (strcmp(err.stage, "session") == 0)
			return session_error("exec", &err);
		if (strcmp(err.stage, "usage") == 0) {
			moat_cli_print_error(&err);
			return MOAT_EXIT_USAGE;
		}
		fprintf(stderr, "moat exec: not started: %s step: ", err.stage);
		moat_cli_put_safe(stderr, err.message);
		fputc('\n', stderr);
		return MOAT_EXIT_SETUP;
	}
	if (tty_mask)
		send_size(e);
	struct moat_proc_status ps;
	int k;
	for (;;) {
		struct pollfd pf[2] = {{.fd = moat_session_exec_fd(e), .events = POLLIN},
				       {.fd = sigfd, .events = POLLIN}};
		if (poll(pf, sigfd >= 0 ? 2 : 1, -1) < 0 && errno != EINTR) {
			k = -errno;
			break;
		}
		if (sigfd >= 0 && pf[1].revents) {
			struct signalfd_siginfo si;
			while (read(sigfd, &si, sizeof(si)) == sizeof(si)) {
				if (si.ssi_signo == SIGWINCH)
					send_size(e);
				else
					moat_session_exec_signal(e, (int)si.ssi_signo);
			}
		}
		if (pf[0].revents) {
			k = moat_session_exec_wait(e, &ps);
			break;
		}
	}
	if (raw)
		tcsetattr(STDIN_FILENO, TCSADRAIN, &saved);
	moat_session_exec_free(e);
	if (k < 0) {
		fprintf(stderr, "moat exec: the sandbox went away before the command ended\n");
		return 128 + SIGKILL;
	}
	if (ps.stdio_error[0]) {
		fprintf(stderr, "moat: ");
		moat_cli_put_safe(stderr, ps.stdio_error);
		fputc('\n', stderr);
		if (ps.exit_code == 0)
			ps.exit_code = 1;
	}
	return ps.exit_code;
}

/* ---- moat ls -------------------------------------------------------------- */

static void json_str(const char *s)
{
	putchar('"');
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			printf("\\%c", *p);
		else if (*p < 0x20 || *p >= 0x7f)
			printf("\\u%04x", *p);
		else
			putchar(*p);
	}
	putchar('"');
}

/* 512M, 1.5G, 100K, 12 (bytes) */
static void human_size(char *buf, size_t len, uint64_t v)
{
	static const char units[] = "KMGT";
	double d = (double)v;
	int u = -1;
	while (d >= 1024.0 && u < 3) {
		d /= 1024.0;
		u++;
	}
	if (u < 0)
		snprintf(buf, len, "%llu", (unsigned long long)v);
	else if (d == (double)(uint64_t)d)
		snprintf(buf, len, "%llu%c", (unsigned long long)d, units[u]);
	else
		snprintf(buf, len, "%.1f%c", d, units[u]);
}

/* The limits column: "mem=512M,cpus=1.5,pids=4096,disk=1G,timeout=30s"
 * (only those set), "-" for none. */
static void limits_text(char *buf, size_t len, const struct moat_session_info *s)
{
	size_t off = 0;
	char v[32];
	buf[0] = '\0';
#define ADD(...) \
	do { \
		int n_ = snprintf(buf + off, len - off, "%s", off ? "," : ""); \
		if (n_ > 0 && (size_t)n_ < len - off) \
			off += (size_t)n_; \
		n_ = snprintf(buf + off, len - off, __VA_ARGS__); \
		if (n_ > 0 && (size_t)n_ < len - off) \
			off += (size_t)n_; \
	} while (0)
	if (s->memory_max) {
		human_size(v, sizeof(v), s->memory_max);
		ADD("mem=%s", v);
	}
	if (s->cpus_milli)
		ADD("cpus=%llu.%llu", (unsigned long long)(s->cpus_milli / 1000),
		    (unsigned long long)(s->cpus_milli % 1000 / 100));
	if (s->pids_max)
		ADD("pids=%llu", (unsigned long long)s->pids_max);
	if (s->disk_max) {
		human_size(v, sizeof(v), s->disk_max);
		ADD("disk=%s", v);
	}
	if (s->timeout_ms)
		ADD("timeout=%llu%s",
		    (unsigned long long)(s->timeout_ms % 1000 ? s->timeout_ms
							      : s->timeout_ms / 1000),
		    s->timeout_ms % 1000 ? "ms" : "s");
#undef ADD
	if (!off)
		snprintf(buf, len, "-");
}

int moat_cli_ls(int argc, char **argv)
{
	bool json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0)
			json = true;
		else {
			fprintf(stderr, "usage: moat ls [--json]\n");
			return MOAT_EXIT_USAGE;
		}
	}
	struct moat_session_info *v = NULL;
	size_t n = 0;
	struct moat_error err = {0};
	if (moat_session_list(&v, &n, &err) < 0)
		return session_error("ls", &err);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	uint64_t now_us = (uint64_t)now.tv_sec * 1000000u + (uint64_t)now.tv_nsec / 1000u;
	if (json)
		putchar('[');
	else
		printf("%-16s %-16s %-8s %8s %6s %4s %10s  %-12s  %s\n", "ID", "NAME", "STATE",
		       "AGE", "EXECS", "RUN", "MEMORY", "POLICY", "LIMITS");
	for (size_t i = 0; i < n; i++) {
		const struct moat_session_info *s = &v[i];
		uint64_t age = s->created_us && now_us > s->created_us
			? (now_us - s->created_us) / 1000000u
			: 0;
		if (json) {
			printf("%s{\"id\":", i ? "," : "");
			json_str(s->id);
			printf(",\"name\":");
			if (s->name[0])
				json_str(s->name);
			else
				printf("null");
			printf(",\"state\":");
			json_str(s->state);
			if (s->reason[0]) {
				printf(",\"reason\":");
				json_str(s->reason);
			}
			printf(",\"pid\":%d,\"created_us\":%llu,\"age_s\":%llu,\"execs\":%llu,"
			       "\"running\":%u,\"memory\":%llu,\"idle_timeout_ms\":%llu,"
			       "\"lifetime_ms\":%llu,\"policy_sha256\":",
			       s->pid, (unsigned long long)s->created_us, (unsigned long long)age,
			       (unsigned long long)s->execs, s->running,
			       (unsigned long long)s->mem_current,
			       (unsigned long long)s->idle_timeout_ms,
			       (unsigned long long)s->lifetime_ms);
			json_str(s->policy_sha256);
			printf(",\"limits\":{\"memory\":%llu,\"cpus_milli\":%llu,\"pids\":%llu,"
			       "\"disk\":%llu,\"timeout_ms\":%llu}}",
			       (unsigned long long)s->memory_max, (unsigned long long)s->cpus_milli,
			       (unsigned long long)s->pids_max, (unsigned long long)s->disk_max,
			       (unsigned long long)s->timeout_ms);
		} else {
			char mem[32] = "-";
			if (s->mem_current)
				snprintf(mem, sizeof(mem), "%.1fM",
					 (double)s->mem_current / (1024.0 * 1024.0));
			char lim[160];
			limits_text(lim, sizeof(lim), s);
			printf("%-16s %-16s %-8s %7llus %6llu %4u %10s  %-12.12s  %s\n", s->id,
			       s->name[0] ? s->name : "-", s->state, (unsigned long long)age,
			       (unsigned long long)s->execs, s->running, mem,
			       s->policy_sha256[0] ? s->policy_sha256 : "-", lim);
			if (s->reason[0])
				printf("  %s: %s\n", s->id, s->reason);
		}
	}
	if (json)
		puts("]");
	free(v);
	return 0;
}

/* ---- moat logs ------------------------------------------------------------ */

int moat_cli_logs(int argc, char **argv)
{
	const char *id = NULL;
	bool follow = false, json = false;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--follow") == 0 || strcmp(argv[i], "-f") == 0)
			follow = true;
		else if (strcmp(argv[i], "--json") == 0)
			json = true;
		else if (argv[i][0] != '-' && !id)
			id = argv[i];
		else {
			fprintf(stderr, "usage: moat logs [--follow] [--json] ID|NAME\n");
			return MOAT_EXIT_USAGE;
		}
	}
	if (!id) {
		fprintf(stderr, "usage: moat logs [--follow] [--json] ID|NAME\n");
		return MOAT_EXIT_USAGE;
	}
	struct moat_session_info in;
	struct moat_error err = {0};
	char run[40];
	/* a name is resolved while the session lives; an id also after */
	if (moat_session_info(id, &in, &err) >= 0)
		snprintf(run, sizeof(run), "%s", in.id);
	else if (!follow)
		snprintf(run, sizeof(run), "%.39s", id);
	else
		return session_error("logs", &err);
	uint64_t printed = 0;
	setvbuf(stdout, NULL, _IOLBF, 0);
	for (;;) {
		/* the log is read again from its start each round: a line being
		 * written is never printed half */
		bool live = follow && moat_session_info(run, &in, NULL) >= 0;
		struct moat_log *l = NULL;
		if (moat_log_open(run, NULL, false, &l, &err) < 0) {
			if (!printed && !live) {
				moat_cli_print_error(&err);
				return MOAT_EXIT_USAGE;
			}
		} else {
			uint64_t seen = 0;
			char *line = NULL, *text = NULL;
			while (moat_log_next(l, json ? &line : NULL, json ? NULL : &text) > 0) {
				if (seen++ >= printed) {
					puts(json ? line : text);
					printed++;
				}
				free(line);
				free(text);
				line = text = NULL;
			}
			moat_log_free(l);
		}
		if (!live)
			break;
		struct timespec ts = {0, 200 * 1000000L};
		nanosleep(&ts, NULL);
	}
	return 0;
}

/* ---- moat stop / rm ------------------------------------------------------- */

int moat_cli_stop(int argc, char **argv)
{
	if (argc != 2 || argv[1][0] == '-') {
		fprintf(stderr, "usage: moat stop ID|NAME\n");
		return MOAT_EXIT_USAGE;
	}
	struct moat_error err = {0};
	signal(SIGPIPE, SIG_IGN);
	if (moat_session_stop(argv[1], &err) < 0)
		return session_error("stop", &err);
	return 0;
}

static void rm_summary(const struct moat_status *st, bool quiet)
{
	if (quiet) {
		moat_cli_print_held_notice(st);
		return;
	}
	fprintf(stderr, "moat: sandbox %s removed after %.1f s, %llu process(es)", st->run_id,
		(double)st->wall_us / 1e6, (unsigned long long)st->execs);
	if (st->degraded[0])
		fprintf(stderr, ", DEGRADED: %s", st->degraded);
	fputc('\n', stderr);
	moat_cli_print_limits(st);
	moat_cli_print_workspace(st);
	moat_cli_print_network(st);
	if (st->log_path[0]) {
		fprintf(stderr, "moat: log: moat log %s  (", st->run_id);
		moat_cli_put_safe(stderr, st->log_path);
		fputs(")\n", stderr);
	}
}

int moat_cli_rm(int argc, char **argv)
{
	bool force = false, all = false, quiet = false;
	const char *ids[64];
	unsigned n = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--force") == 0 || strcmp(argv[i], "-f") == 0)
			force = true;
		else if (strcmp(argv[i], "--all") == 0)
			all = true;
		else if (strcmp(argv[i], "--quiet") == 0 || strcmp(argv[i], "-q") == 0)
			quiet = true;
		else if (argv[i][0] != '-' && n < 64)
			ids[n++] = argv[i];
		else {
			fprintf(stderr,
				"usage: moat rm [--force] [--quiet] ID|NAME... | moat rm "
				"--all [--force]\n");
			return MOAT_EXIT_USAGE;
		}
	}
	if ((all && n) || (!all && !n)) {
		fprintf(stderr,
			"usage: moat rm [--force] [--quiet] ID|NAME... | moat rm --all [--force]\n");
		return MOAT_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	struct moat_session_info *v = NULL;
	size_t nv = 0;
	struct moat_error err = {0};
	if (all) {
		if (moat_session_list(&v, &nv, &err) < 0)
			return session_error("rm", &err);
	}
	int rc = 0;
	size_t total = all ? nv : n;
	for (size_t i = 0; i < total; i++) {
		const char *id = all ? v[i].id : ids[i];
		if (all && strcmp(v[i].state, "gone") == 0)
			continue;
		struct moat_status st;
		memset(&err, 0, sizeof(err));
		if (moat_session_remove(id, force, &st, &err) < 0) {
			int r = session_error("rm", &err);
			rc = rc ? rc : r;
			continue;
		}
		rm_summary(&st, quiet);
		if (st.stdio_error[0] && !quiet) {
			fputs("moat: ", stderr);
			moat_cli_put_safe(stderr, st.stdio_error);
			fputc('\n', stderr);
		}
	}
	free(v);
	return rc;
}

/* ---- moat cp -------------------------------------------------------------- */

/* "ID:PATH" -> id (into buf) and the path, or NULL if arg is a host path. */
static const char *split_remote(const char *arg, char *buf, size_t len)
{
	const char *colon = strchr(arg, ':');
	if (!colon || colon == arg || arg[0] == '/' || arg[0] == '.' ||
	    (size_t)(colon - arg) >= len)
		return NULL;
	snprintf(buf, len, "%.*s", (int)(colon - arg), arg);
	return colon + 1;
}

/* An absolute host path (relative: to the working directory). */
static char *host_abs(const char *p)
{
	if (p[0] == '/')
		return strdup(p);
	char cwd[4096];
	if (!getcwd(cwd, sizeof(cwd)))
		return NULL;
	size_t n = strlen(cwd) + strlen(p) + 2;
	char *s = malloc(n);
	if (s)
		snprintf(s, n, "%s/%s", cwd, p);
	return s;
}

int moat_cli_cp(int argc, char **argv)
{
	uint64_t max = DEFAULT_MAX_COPY;
	const char *src = NULL, *dst = NULL;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--max-size") == 0 && i + 1 < argc) {
			if (parse_size(argv[++i], &max) < 0 || max == 0) {
				fprintf(stderr, "moat cp: --max-size: not a size\n");
				return MOAT_EXIT_USAGE;
			}
		} else if (strcmp(argv[i], "--") == 0) {
			continue;
		} else if (!src)
			src = argv[i];
		else if (!dst)
			dst = argv[i];
		else {
			src = NULL;
			break;
		}
	}
	if (!src || !dst) {
		fprintf(stderr,
			"usage: moat cp [--max-size N] SRC ID:DEST | moat cp [--max-size "
			"N] ID:SRC DEST\n");
		return MOAT_EXIT_USAGE;
	}
	char sid[64], did[64];
	const char *spath = split_remote(src, sid, sizeof(sid));
	const char *dpath = split_remote(dst, did, sizeof(did));
	if (!!spath == !!dpath) {
		fprintf(stderr, "moat cp: exactly one of SRC and DEST is ID:PATH in a sandbox\n");
		return MOAT_EXIT_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	struct moat_error err = {0};
	uint64_t len = 0;
	char *host = host_abs(spath ? dst : src);
	if (!host) {
		fprintf(stderr, "moat cp: cannot make the host path absolute\n");
		return 1;
	}
	int k = spath ? moat_session_copy_out(sid, spath, host, max, &len, &err)
		      : moat_session_copy_in(did, host, dpath, max, &len, &err);
	free(host);
	if (k < 0)
		return session_error("cp", &err);
	return 0;
}
