/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Reading one secret's value from its source (environment variable, file, or
 * command with a timeout) into locked memory, checked before it is kept. */
#include "proxy/secrets_int.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sandbox/paths.h"
#include "shared/macro.h"

/* The scratch buffer sources are read into. */
#define VALUE_CAP (MOAT_SECRETS_MAX_VALUE + 1)

static const char *source_name(enum moat_secret_source src)
{
	switch (src) {
	case MOAT_SECRET_ENV:
		return "environment variable";
	case MOAT_SECRET_FILE:
		return "file";
	case MOAT_SECRET_COMMAND:
		return "command";
	}
	return "source";
}

static int read_file_value(const struct moat_secret *def, char *buf, size_t *ret_len,
			   struct moat_error *e)
{
	_cleanup_close_ int fd = -1;
	struct stat st;
	size_t total = 0;

	/* never through a symlink a sandbox could have planted (sandbox/paths.h) */
	fd = moat_path_read_file(def->from, NULL);
	if (fd < 0)
		return moat_secrets_error(
			e, fd, "secret %s: cannot open file %s: %s%s", def->name, def->from,
			strerror(-fd), fd == -ELOOP ? " (a symlink: pass the resolved path)" : "");
	if (fstat(fd, &st) < 0)
		return moat_secrets_error(e, negerrno(), "secret %s: cannot stat file %s: %s",
					  def->name, def->from, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return moat_secrets_error(e, -EINVAL, "secret %s: %s is not a regular file",
					  def->name, def->from);
	if ((uint64_t)st.st_size > MOAT_SECRETS_MAX_VALUE)
		return moat_secrets_error(e, -EFBIG, "secret %s: file %s is larger than %u bytes",
					  def->name, def->from, MOAT_SECRETS_MAX_VALUE);
	for (;;) {
		ssize_t n = read(fd, buf + total, VALUE_CAP - total);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return moat_secrets_error(e, negerrno(),
						  "secret %s: cannot read file %s: %s", def->name,
						  def->from, strerror(errno));
		}
		if (n == 0)
			break;
		total += (size_t)n;
		if (total > MOAT_SECRETS_MAX_VALUE)
			return moat_secrets_error(e, -EFBIG,
						  "secret %s: file %s is larger than %u bytes",
						  def->name, def->from, MOAT_SECRETS_MAX_VALUE);
	}
	*ret_len = total;
	return 0;
}

static int pidfd_open_(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kill_group(pid_t pid)
{
	/* The command runs in its own process group, so its children go too. */
	(void)kill(-pid, SIGKILL);
	(void)kill(pid, SIGKILL);
	while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
		;
}

static int run_command_value(const struct moat_secret *def, unsigned timeout_ms, char *buf,
			     size_t *ret_len, struct moat_error *e)
{
	_cleanup_close_ int rfd = -1, wfd = -1, pidfd = -1;
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, all;
	char arg0[] = "sh", arg1[] = "-c";
	char *argv[] = {arg0, arg1, def->from, NULL};
	long long deadline = now_ms() + timeout_ms;
	size_t total = 0;
	bool eof = false, exited = false;
	int p[2], status = 0, r;
	pid_t pid;

	if (pipe2(p, O_CLOEXEC) < 0)
		return moat_secrets_error(e, negerrno(), "secret %s: pipe: %s", def->name,
					  strerror(errno));
	rfd = p[0];
	wfd = p[1];
	sigemptyset(&none);
	sigfillset(&all);
	posix_spawn_file_actions_init(&fa);
	posix_spawnattr_init(&attr);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, wfd, 1);
	/* 0, 1 and stderr only: also nothing the caller leaked to moat */
	posix_spawn_file_actions_addclosefrom_np(&fa, 3);
	posix_spawnattr_setflags(
		&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	posix_spawnattr_setpgroup(&attr, 0);
	posix_spawnattr_setsigmask(&attr, &none);
	posix_spawnattr_setsigdefault(&attr, &all);
	r = posix_spawn(&pid, "/bin/sh", &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	posix_spawnattr_destroy(&attr);
	if (r != 0)
		return moat_secrets_error(e, -r, "secret %s: cannot run command: %s", def->name,
					  strerror(r));
	wfd = safe_close(wfd);
	pidfd = pidfd_open_(pid);
	if (fcntl(rfd, F_SETFL, O_NONBLOCK) < 0) {
		kill_group(pid);
		return moat_secrets_error(e, negerrno(), "secret %s: fcntl: %s", def->name,
					  strerror(errno));
	}

	while (!eof || !exited) {
		struct pollfd pf[2];
		nfds_t n = 0;
		long long left = deadline - now_ms();
		if (left <= 0) {
			kill_group(pid);
			return moat_secrets_error(e, -ETIMEDOUT,
						  "secret %s: command timed out after %u ms",
						  def->name, timeout_ms);
		}
		if (!eof)
			pf[n++] = (struct pollfd){.fd = rfd, .events = POLLIN};
		if (!exited && pidfd >= 0)
			pf[n++] = (struct pollfd){.fd = pidfd, .events = POLLIN};
		if (n == 0) {
			/* No pidfd: poll for the exit every 10 ms. */
			struct timespec ts = {0, 10 * 1000000};
			nanosleep(&ts, NULL);
		} else if (poll(pf, n, (int)MIN(left, 1000)) < 0 && errno != EINTR) {
			kill_group(pid);
			return moat_secrets_error(e, negerrno(), "secret %s: poll: %s", def->name,
						  strerror(errno));
		}
		if (!eof) {
			ssize_t got = read(rfd, buf + total, VALUE_CAP - total);
			if (got == 0)
				eof = true;
			else if (got > 0) {
				total += (size_t)got;
				if (total > MOAT_SECRETS_MAX_VALUE) {
					kill_group(pid);
					return moat_secrets_error(
						e, -EFBIG,
						"secret %s: command printed more than %u bytes",
						def->name, MOAT_SECRETS_MAX_VALUE);
				}
			} else if (errno != EAGAIN && errno != EINTR) {
				kill_group(pid);
				return moat_secrets_error(e, negerrno(),
							  "secret %s: reading command output: %s",
							  def->name, strerror(errno));
			}
		}
		if (!exited) {
			pid_t w = waitpid(pid, &status, WNOHANG);
			if (w == pid)
				exited = true;
			else if (w < 0 && errno != EINTR)
				return moat_secrets_error(e, negerrno(), "secret %s: waitpid: %s",
							  def->name, strerror(errno));
		}
	}
	/* Leftover children of the command: nothing may outlive loading. */
	(void)kill(-pid, SIGKILL);

	if (WIFSIGNALED(status))
		return moat_secrets_error(e, -ECHILD, "secret %s: command killed by signal %d",
					  def->name, WTERMSIG(status));
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		return moat_secrets_error(e, -ECHILD, "secret %s: command exited with status %d",
					  def->name, WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	*ret_len = total;
	return 0;
}

int moat_secrets_load_value(const struct moat_secret *def, unsigned timeout_ms, char **ret_value,
			    size_t *ret_len, struct moat_error *ret_err)
{
	char *buf;
	size_t len = 0;
	int r = 0;

	if (!def || !moat_secrets_valid_name(def->name))
		return moat_secrets_error(ret_err, -EINVAL, "secret %s: invalid name",
					  def && def->name ? def->name : "(null)");
	if (!def->from || !*def->from)
		return moat_secrets_error(ret_err, -EINVAL, "secret %s: no source given",
					  def->name);

	buf = moat_secrets_secure_alloc(VALUE_CAP);
	if (!buf)
		return moat_secrets_error(ret_err, -ENOMEM, "secret %s: out of memory", def->name);

	switch (def->source) {
	case MOAT_SECRET_ENV: {
		const char *v = getenv(def->from);
		if (!v) {
			r = moat_secrets_error(ret_err, -ENOENT,
					       "secret %s: environment variable %s is not set",
					       def->name, def->from);
			break;
		}
		len = strlen(v);
		if (len > MOAT_SECRETS_MAX_VALUE) {
			r = moat_secrets_error(
				ret_err, -EFBIG,
				"secret %s: environment variable %s is longer than %u bytes",
				def->name, def->from, MOAT_SECRETS_MAX_VALUE);
			break;
		}
		memcpy(buf, v, len);
		break;
	}
	case MOAT_SECRET_FILE:
		r = read_file_value(def, buf, &len, ret_err);
		break;
	case MOAT_SECRET_COMMAND:
		r = run_command_value(def, timeout_ms, buf, &len, ret_err);
		break;
	default:
		r = moat_secrets_error(ret_err, -EINVAL, "secret %s: unknown source", def->name);
	}
	if (r >= 0) {
		/* One trailing newline (as `echo` and most token files have). */
		if (len > 0 && buf[len - 1] == '\n')
			buf[--len] = '\0';
		if (len > 0 && buf[len - 1] == '\r')
			buf[--len] = '\0';
		buf[len] = '\0';
		if (len == 0)
			r = moat_secrets_error(ret_err, -ENODATA,
					       "secret %s: the %s %s gave an empty value",
					       def->name, source_name(def->source), def->from);
		else if (!moat_secrets_valid_header_text(buf, len))
			r = moat_secrets_error(
				ret_err, -EINVAL,
				"secret %s: the value from %s %s contains a control character "
				"(newline, NUL...) and cannot be sent in a header",
				def->name, source_name(def->source), def->from);
	}
	if (r >= 0) {
		/* Keep only what is needed in locked memory. */
		char *v = moat_secrets_secure_alloc(len + 1);
		if (v) {
			memcpy(v, buf, len + 1);
			*ret_value = v;
			*ret_len = len;
		} else
			r = moat_secrets_error(ret_err, -ENOMEM, "secret %s: out of memory",
					       def->name);
	}
	moat_secrets_secure_free(buf, VALUE_CAP);
	return r < 0 ? r : 0;
}
