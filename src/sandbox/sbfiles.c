/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Files of a ready sandbox, for the session API, `moat serve` and `moat mcp`:
 * read, write, mkdir, list, stat, remove. Each is a process of the sandbox (the
 * host's coreutils under the sandbox's user, seccomp, Landlock and mount
 * namespace), so it can reach exactly what the sandbox's own processes can,
 * and it is recorded like them (`process` events). The paths are argv
 * entries, never shell text. The supervisor only moves bytes through pipes
 * and parses one bounded, NUL-separated listing format.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "policy/errors.h"
#include "supervisor/run.h"
#include "shared/macro.h"

#define LIST_MAX_BYTES (16u << 20)
/* Each file operation's process is bounded in time: the sandbox may turn a
 * path into a fifo (or a FUSE-like stall) under it, and its caller (a
 * session's supervisor) must not wait forever. */
#define FILES_TIMEOUT_MS 60000u
/* argv entries are not modified by exec: constant strings are fine */
#define S(x) ((char *)(uintptr_t)(x))

/* Runs argv with stdin from `in` (len bytes; NULL: closed) and stdout
 * collected up to max bytes (*ret_out NULL: discarded); stderr's first line
 * goes into the error. Returns the exit code, or < 0. */
static int run_io(struct moat_sandbox *sb, char *const *argv, const void *in, size_t in_len,
		  uint64_t max, char **ret_out, size_t *ret_len, bool *ret_truncated,
		  struct moat_error *err)
{
	int pin[2] = {-1, -1}, pout[2] = {-1, -1}, perr[2] = {-1, -1};
	char *out = NULL, ebuf[512];
	size_t olen = 0, ocap = 0, elen = 0, in_off = 0;
	bool truncated = false;
	int k;
	if ((in && pipe2(pin, O_CLOEXEC) < 0) || pipe2(pout, O_CLOEXEC) < 0 ||
	    pipe2(perr, O_CLOEXEC) < 0) {
		k = moat_error_set(err, "files", errno, "pipe: %s", strerror(errno));
		goto out;
	}
	struct moat_exec x = {
		.argv = argv, .fd = {pin[0], pout[1], perr[1]}, .timeout_ms = FILES_TIMEOUT_MS};
	struct moat_proc *pr = NULL;
	k = moat_sandbox_exec(sb, &x, &pr, err);
	pin[0] = safe_close(pin[0]);
	pout[1] = safe_close(pout[1]);
	perr[1] = safe_close(perr[1]);
	if (k < 0)
		goto out;
	if (pin[1] >= 0)
		fcntl(pin[1], F_SETFL, O_NONBLOCK);
	fcntl(pout[0], F_SETFL, O_NONBLOCK);
	fcntl(perr[0], F_SETFL, O_NONBLOCK);
	/* move the bytes while the sandbox is served */
	while (pout[0] >= 0 || perr[0] >= 0 || pin[1] >= 0) {
		struct pollfd pf[4] = {{.fd = moat_sandbox_fd(sb), .events = POLLIN},
				       {.fd = pout[0], .events = POLLIN},
				       {.fd = perr[0], .events = POLLIN},
				       {.fd = pin[1], .events = POLLOUT}};
		if (poll(pf, 4, 1000) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			(void)moat_sandbox_poll(&sb->r, 0);
		if (pf[1].revents) {
			char buf[65536];
			ssize_t n = read(pout[0], buf, sizeof(buf));
			if (n > 0 && olen < max && ret_out) {
				size_t take = MIN((size_t)n, (size_t)(max - olen));
				if (olen + take > ocap) {
					size_t nc = MAX(ocap * 2, olen + take + 1);
					char *no = realloc(out, nc);
					if (!no) {
						k = -ENOMEM;
						goto kill;
					}
					out = no;
					ocap = nc;
				}
				memcpy(out + olen, buf, take);
				olen += take;
				truncated |= take < (size_t)n;
			} else if (n > 0)
				truncated |= ret_out != NULL;
			else if (n == 0 || errno != EAGAIN)
				pout[0] = safe_close(pout[0]);
			if (truncated && ret_out)
				goto kill; /* over the cap: stop it */
		}
		if (pf[2].revents) {
			char buf[512];
			ssize_t n = read(perr[0], buf, sizeof(buf));
			if (n > 0 && elen < sizeof(ebuf) - 1) {
				size_t take = MIN((size_t)n, sizeof(ebuf) - 1 - elen);
				memcpy(ebuf + elen, buf, take);
				elen += take;
			} else if (n == 0 || (n < 0 && errno != EAGAIN))
				perr[0] = safe_close(perr[0]);
		}
		if (pin[1] >= 0 && (pf[3].revents & (POLLOUT | POLLERR | POLLHUP))) {
			ssize_t n = in_off < in_len
				? write(pin[1], (const char *)in + in_off, in_len - in_off)
				: 0;
			if (n > 0)
				in_off += (size_t)n;
			if (in_off >= in_len || (n < 0 && errno != EAGAIN))
				pin[1] = safe_close(pin[1]);
		}
		if (pr->exited && pout[0] < 0 && perr[0] < 0)
			break;
	}
	struct moat_proc_status st;
	moat_proc_wait(pr, &st);
	moat_proc_release(pr);
	ebuf[elen] = '\0';
	char *nl = strchr(ebuf, '\n');
	if (nl)
		*nl = '\0';
	if (st.exit_code != 0)
		moat_error_set(err, "files", EIO, "%s: %s", argv[0], elen ? ebuf : "failed");
	k = st.exit_code;
	if (ret_out) {
		*ret_out = out ? out : strdup("");
		out = NULL;
		*ret_len = olen;
	}
	if (ret_truncated)
		*ret_truncated = truncated;
	goto out;
kill:
	moat_proc_signal(pr, SIGKILL);
	moat_proc_wait(pr, NULL);
	moat_proc_release(pr);
	if (k >= 0) {
		/* over the cap: the data so far, and say so */
		*ret_out = out;
		out = NULL;
		*ret_len = olen;
		if (ret_truncated)
			*ret_truncated = true;
		k = 0;
	}
out:
	free(out);
	safe_close(pin[0]);
	safe_close(pin[1]);
	safe_close(pout[0]);
	safe_close(pout[1]);
	safe_close(perr[0]);
	safe_close(perr[1]);
	return k;
}

static int check_path(const char *path, struct moat_error *err)
{
	if (!path || path[0] != '/' || strlen(path) >= 4096)
		return moat_error_set(err, "usage", EINVAL,
				      "a path in the sandbox must be absolute (and < 4096 bytes)");
	return 0;
}

int moat_sandbox_read_file(struct moat_sandbox *sb, const char *path, uint64_t max, char **ret_data,
			   size_t *ret_len, bool *ret_truncated, struct moat_error *err)
{
	int k = check_path(path, err);
	if (k < 0)
		return k;
	char *const argv[] = {S("cat"), S("--"), (char *)(uintptr_t)path, NULL};
	k = run_io(sb, argv, NULL, 0, max, ret_data, ret_len, ret_truncated, err);
	if (k > 0) {
		free(*ret_data);
		*ret_data = NULL;
		return -ENOENT;
	}
	return k;
}

int moat_sandbox_write_file(struct moat_sandbox *sb, const char *path, const void *data, size_t len,
			    struct moat_error *err)
{
	int k = check_path(path, err);
	if (k < 0)
		return k;
	/* the path is $1 of a fixed script, never part of it */
	char *const argv[] = {
		S("sh"), S("-c"), S("exec cat >\"$1\""), S("moat-write"), (char *)(uintptr_t)path,
		NULL};
	k = run_io(sb, argv, data ? data : "", len, 0, NULL, NULL, NULL, err);
	return k > 0 ? -EIO : k;
}

int moat_sandbox_mkdir(struct moat_sandbox *sb, const char *path, unsigned mode,
		       struct moat_error *err)
{
	int k = check_path(path, err);
	if (k < 0)
		return k;
	char m[8];
	snprintf(m, sizeof(m), "%o", mode & 0777u);
	/* no -p: a new directory, never one that is there already */
	char *const argv[] = {S("mkdir"), S("-m"), m, S("--"), (char *)(uintptr_t)path, NULL};
	k = run_io(sb, argv, NULL, 0, 0, NULL, NULL, NULL, err);
	return k > 0 ? -EIO : k;
}

int moat_sandbox_remove(struct moat_sandbox *sb, const char *path, bool recursive,
			struct moat_error *err)
{
	int k = check_path(path, err);
	if (k < 0)
		return k;
	char *const argv[] = {S("rm"), recursive ? S("-rf") : S("-f"), S("--"),
			      (char *)(uintptr_t)path, NULL};
	k = run_io(sb, argv, NULL, 0, 0, NULL, NULL, NULL, err);
	return k > 0 ? -EIO : k;
}

static int parse_entries(char *buf, size_t len, struct moat_file_info **ret, size_t *ret_n)
{
	size_t n = 0, cap = 0;
	struct moat_file_info *v = NULL;
	for (size_t off = 0; off < len;) {
		char *rec = buf + off, *end = memchr(rec, '\0', len - off);
		if (!end)
			break;
		off = (size_t)(end - buf) + 1;
		/* TYPE \t SIZE \t MODE(octal) \t MTIME \t NAME */
		char *f[5];
		char *s = rec;
		unsigned i = 0;
		for (; i < 4; i++) {
			char *t = strchr(s, '\t');
			if (!t)
				break;
			*t = '\0';
			f[i] = s;
			s = t + 1;
		}
		if (i < 4)
			continue;
		f[4] = s;
		if (n == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct moat_file_info *nv = realloc(v, nc * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
			cap = nc;
		}
		struct moat_file_info *e = &v[n++];
		memset(e, 0, sizeof(*e));
		e->type = f[0][0] == 'd' ? MOAT_FILE_DIR
			: f[0][0] == 'f' ? MOAT_FILE_REG
			: f[0][0] == 'l' ? MOAT_FILE_SYMLINK
					 : MOAT_FILE_OTHER;
		e->size = strtoull(f[1], NULL, 10);
		e->mode = (unsigned)strtoul(f[2], NULL, 8) & 07777;
		e->mtime_s = strtoull(f[3], NULL, 10);
		snprintf(e->name, sizeof(e->name), "%s", f[4]);
	}
	*ret = v;
	*ret_n = n;
	return 0;
}

static int find_entries(struct moat_sandbox *sb, const char *path, bool self,
			struct moat_file_info **ret, size_t *ret_n, struct moat_error *err)
{
	int k = check_path(path, err);
	if (k < 0)
		return k;
	char *p = S(path), *fmt = S("%y\t%s\t%m\t%T@\t%f\\0");
	char *const one[] = {S("find"), p, S("-maxdepth"), S("0"), S("-printf"), fmt, NULL};
	char *const all[] = {
		S("find"), p,	S("-mindepth"), S("1"), S("-maxdepth"), S("1"), S("-printf"),
		fmt,	   NULL};
	char *const *argv = self ? one : all;
	char *out = NULL;
	size_t len = 0;
	bool truncated = false;
	k = run_io(sb, argv, NULL, 0, LIST_MAX_BYTES, &out, &len, &truncated, err);
	if (k > 0) {
		free(out);
		return -ENOENT;
	}
	if (k < 0)
		return k;
	k = parse_entries(out, len, ret, ret_n);
	free(out);
	return k < 0 ? k : truncated ? 1 : 0;
}

int moat_sandbox_list_dir(struct moat_sandbox *sb, const char *path, struct moat_file_info **ret,
			  size_t *ret_n, struct moat_error *err)
{
	return find_entries(sb, path, false, ret, ret_n, err);
}

int moat_sandbox_stat(struct moat_sandbox *sb, const char *path, struct moat_file_info *ret,
		      struct moat_error *err)
{
	struct moat_file_info *v = NULL;
	size_t n = 0;
	int k = find_entries(sb, path, true, &v, &n, err);
	if (k >= 0 && n == 1)
		*ret = v[0];
	else if (k >= 0)
		k = -ENOENT;
	free(v);
	return k < 0 ? k : 0;
}
