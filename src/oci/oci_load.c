/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A bundle's config.json into a policy and the container's process (moat.h,
 * "OCI runtime"; oci.h). The runtime often runs as root; config.json is
 * written by whoever describes the container. So the JSON is parsed by a
 * child that holds nothing: every descriptor closed but the config's bytes
 * (in memory) and a pipe, no uid 0 where it can drop it, no_new_privs and a
 * seccomp filter that lets it read, write, allocate and exit only. What it
 * sends back is four strings a record; its option names are checked against
 * the set the translation can produce, and every value goes through
 * moat_policy_set_option() as a flag would.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <jansson.h>
#include <limits.h>
#include <sched.h>
#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <dirent.h>
#include <sys/wait.h>
#include <unistd.h>

#include "policy/errors.h"
#include "oci/oci.h"
#include "policy/policy.h"
#include "policy/policy_int.h"
#include "sandbox/paths.h"
#include "moat/moat.h"
#include "shared/io.h"
#include "shared/macro.h"
#include "shared/nsfile.h"
#include "shared/parse.h"

/* Options a record may name (and, for --net, the one value). */
static const char *const allowed_opts[] = {
	"--rootfs",	"--ro",	       "--rw",	     "--tmpfs",	       "--hide",
	"--uid",	"--gid",       "--hostname", "--nofile",       "--fsize",
	"--memory",	"--pids",      "--cpus",     "--deny-syscall", "--net",
	"--allow-host", "--deny-host", "--apply",    "--timeout",
};

int moat_oci_confine(void)
{
	/* nobody, where this user namespace has it (rootless: it may not) */
	if (geteuid() == 0 && setgroups(0, NULL) == 0)
		if (setresgid(65534, 65534, 65534) == 0)
			(void)!setresuid(65534, 65534, 65534);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return -errno;
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ERRNO(EPERM));
	if (!ctx)
		return -ENOMEM;
	static const char *const ok[] = {"read",    "write",	    "exit",   "exit_group",
					 "brk",	    "mmap",	    "munmap", "mremap",
					 "madvise", "rt_sigreturn", "futex",  "sigaltstack"};
	int k = 0;
	for (size_t i = 0; i < ELEMENTSOF(ok) && k >= 0; i++) {
		int nr = seccomp_syscall_resolve_name(ok[i]);
		if (nr != __NR_SCMP_ERROR)
			k = seccomp_rule_add(ctx, SCMP_ACT_ALLOW, nr, 0);
	}
	if (k >= 0)
		k = seccomp_load(ctx);
	seccomp_release(ctx);
	return k;
}

/* The child: translate, send the records, exit. */
_Noreturn static void parser_child(const char *json, size_t len, const char *bundle, int out)
{
	struct moat_oci_recs r;
	if (moat_oci_confine() < 0)
		_exit(3);
	int k = bundle ? moat_oci_parse(json, len, bundle, &r)
		       : moat_oci_parse_process(json, len, &r);
	if (k < 0 && !r.failed)
		_exit(4);
	if (moat_write_all(out, r.buf, r.len) < 0)
		_exit(5);
	_exit(0);
}

static int run_parser(const char *json, size_t len, const char *bundle, struct moat_oci_recs *ret,
		      struct moat_error *err)
{
	int pp[2];
	memset(ret, 0, sizeof(*ret));
	if (pipe2(pp, O_CLOEXEC) < 0)
		return moat_error_set(err, "oci", errno, "pipe: %s", strerror(errno));
	pid_t pid = fork();
	if (pid < 0) {
		close(pp[0]);
		close(pp[1]);
		return moat_error_set(err, "oci", errno, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		close(pp[0]);
		int w = pp[1];
		if (w != 3 && (w = dup3(w, 3, O_CLOEXEC)) < 0)
			_exit(2);
		int null = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int i = 0; null >= 0 && i < 3; i++)
			dup2(null, i);
		close_range(4, ~0U, 0);
		parser_child(json, len, bundle, 3);
	}
	close(pp[1]);
	size_t cap = MOAT_OCI_RECS_MAX + 1, n = 0;
	char *buf = malloc(cap);
	ssize_t m = 0;
	while (buf && n < cap && (m = read(pp[0], buf + n, cap - n)) != 0) {
		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0)
			break;
		n += (size_t)m;
	}
	close(pp[0]);
	int st = 0;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	if (!buf)
		return moat_error_set(err, "oci", ENOMEM, "out of memory");
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || n > MOAT_OCI_RECS_MAX ||
	    (n && buf[n - 1] != 0)) {
		free(buf);
		return moat_error_set(err, "oci", EPROTO,
				      "config.json: the confined parser failed (status %d)", st);
	}
	ret->buf = buf;
	ret->len = ret->cap = n;
	return 0;
}

static int strv_push(char ***v, size_t *n, const char *s, size_t max)
{
	if (*n >= max)
		return -E2BIG;
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(s)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

/* The policy file run.moat.policy names: NAME in root's /etc/moat/oci, or
 * the user's $XDG_CONFIG_HOME/moat/oci (~/.config/moat/oci): whoever writes
 * a container's annotations picks one of the administrator's files, never a
 * path. */
static int policy_file(struct moat_policy *p, const char *field, const char *name,
		       struct moat_error *err)
{
	char path[PATH_MAX];
	size_t n = strlen(name);
	if (!n || n > 64 || name[0] == '.')
		goto bad;
	for (const char *c = name; *c; c++)
		if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
		      (*c >= '0' && *c <= '9') || *c == '-' || *c == '_' || *c == '.'))
			goto bad;
	const char *x = getenv("XDG_CONFIG_HOME"), *h = getenv("HOME");
	if (moat_host_root() && (!x || x[0] != '/'))
		snprintf(path, sizeof(path), "/etc/moat/oci/%s.json", name);
	else if (x && x[0] == '/')
		snprintf(path, sizeof(path), "%s/moat/oci/%s.json", x, name);
	else if (h && h[0] == '/')
		snprintf(path, sizeof(path), "%s/.config/moat/oci/%s.json", h, name);
	else
		return moat_error_set(err, "oci", ENOENT, "%s: no configuration directory", field);
	int k = moat_policy_load_file(p, path, err);
	if (k < 0 && err) {
		char msg[400];
		snprintf(msg, sizeof(msg), "%.399s", err->message);
		snprintf(err->message, sizeof(err->message), "%.100s: %s", field, msg);
	}
	return k;
bad:
	return moat_error_set(err, "oci", EINVAL,
			      "%s: a policy's name ([A-Za-z0-9_.-], at most 64), not a path",
			      field);
}

/* The bytes of a regular file (at most MOAT_OCI_CONFIG_MAX) opened
 * without following a symlink in its last component. */
static int read_small(int dfd, const char *name, const char *shown, char **ret, size_t *ret_len,
		      struct moat_error *err)
{
	_cleanup_close_ int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0)
		return moat_error_set(err, "oci", errno, "%s: %s", shown, strerror(errno));
	if (!S_ISREG(st.st_mode) || st.st_size > (off_t)MOAT_OCI_CONFIG_MAX)
		return moat_error_set(err, "oci", EFBIG,
				      "%s: not a regular file of at most %u bytes", shown,
				      MOAT_OCI_CONFIG_MAX);
	size_t cap = (size_t)st.st_size + 1, len = 0;
	char *json = malloc(cap);
	ssize_t n;
	while (json && len < cap && (n = read(fd, json + len, cap - len)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(json);
			return moat_error_set(err, "oci", errno, "%s: %s", shown, strerror(errno));
		}
		len += (size_t)n;
	}
	if (!json || len > MOAT_OCI_CONFIG_MAX) {
		free(json);
		return moat_error_set(err, "oci", EFBIG, "%s: too large", shown);
	}
	*ret = json;
	*ret_len = len;
	return 0;
}

static int apply_records(struct moat_policy *p, struct moat_oci_recs *r, const char *log_dir,
			 struct moat_oci_process *ret, const char *what, struct moat_error *err);

/* run.moat.log NAME: LOG_DIR/NAME (LOG_DIR created 0700 if missing). */
static int log_file(struct moat_policy *p, const char *field, const char *name, const char *log_dir,
		    struct moat_error *err)
{
	char path[PATH_MAX];
	if (!log_dir || log_dir[0] != '/')
		return moat_error_set(err, "oci", EINVAL, "%s: no log directory", field);
	if (mkdir(log_dir, 0700) < 0 && errno != EEXIST)
		return moat_error_set(err, "oci", errno, "%s: %s: %s", field, log_dir,
				      strerror(errno));
	if (snprintf(path, sizeof(path), "%s/%s", log_dir, name) >= (int)sizeof(path))
		return moat_error_set(err, "oci", ENAMETOOLONG, "%s: too long", field);
	struct moat_error e = {0};
	int k = moat_policy_set_option(p, "--log", path, &e);
	if (k < 0)
		return moat_error_set(err, "oci", e.err ? e.err : EINVAL, "%s: %s", field,
				      e.message);
	return 0;
}

int moat_oci_process_load(const char *file, struct moat_oci_process *ret, struct moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	_cleanup_free_ char *json = NULL;
	size_t len;
	int k = read_small(AT_FDCWD, file, file, &json, &len, err);
	if (k < 0)
		return k;
	struct moat_oci_recs r;
	if ((k = run_parser(json, len, NULL, &r, err)) < 0)
		return k;
	return apply_records(NULL, &r, NULL, ret, "--process", err);
}

/* The top of root.path that moat's own layout does not already give: its
 * system directories (plan.c), /opt, and what moat makes itself (/etc,
 * /proc, /dev, /tmp, /var, /home; no /sys). */
static bool root_top_own(const char *name)
{
	static const char *const own[] = {"usr",   "bin",    "sbin", "lib",  "lib32",
					  "lib64", "libx32", "opt",  "etc",  "proc",
					  "dev",   "tmp",    "var",  "home", "sys"};
	for (size_t i = 0; i < ELEMENTSOF(own); i++)
		if (streq(name, own[i]))
			return true;
	return false;
}

/* The bundle's whole root in the container (docs/OCI.md "root.path"): every
 * other name at the top of root.path, read-only. Only the names are read
 * here (the bundle is the user's bytes); each is opened again beneath the
 * root, with no symlink followed, when it is mounted (sandbox.c), and a
 * symlink is made again, not followed. A name that could not be shown or
 * mounted as it is fails create (never dropped in silence). */
static int root_top(struct moat_policy *p, struct moat_error *err)
{
	if (!p->rootfs)
		return 0;
	int fd = moat_path_open(p->rootfs, MOAT_PATH_DIR | MOAT_PATH_NO_LINKS, 0, NULL);
	if (fd < 0)
		return moat_error_set(err, "oci", -fd, "root.path %s: %s", p->rootfs,
				      strerror(-fd));
	int rfd = openat(fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	close(fd);
	DIR *d = rfd >= 0 ? fdopendir(rfd) : NULL;
	if (!d) {
		int e = errno;
		if (rfd >= 0)
			close(rfd);
		return moat_error_set(err, "oci", e, "root.path %s: %s", p->rootfs, strerror(e));
	}
	size_t n = p->n_rootfs_top;
	int k = 0;
	struct dirent *de;
	while (k >= 0 && (errno = 0, de = readdir(d))) {
		const char *c = de->d_name;
		if (streq(c, ".") || streq(c, "..") || root_top_own(c))
			continue;
		for (; *c; c++)
			if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
			      (*c >= '0' && *c <= '9') || strchr("._+-@", *c)))
				break;
		if (*c || strlen(de->d_name) > 64) {
			k = moat_error_set(err, "oci", EINVAL,
					   "root.path: a name at its top is not 1-64 of "
					   "[A-Za-z0-9._+-@]: refused");
			break;
		}
		if ((k = strv_push(&p->rootfs_top, &n, de->d_name, MOAT_OCI_ROOT_TOP_MAX)) < 0)
			k = k == -E2BIG ? moat_error_set(err, "oci", E2BIG,
							 "root.path: more than %u names at its top",
							 MOAT_OCI_ROOT_TOP_MAX)
					: moat_error_set(err, "oci", ENOMEM, "out of memory");
	}
	if (k >= 0 && errno)
		k = moat_error_set(err, "oci", errno, "root.path %s: %s", p->rootfs,
				   strerror(errno));
	p->n_rootfs_top = (unsigned)n;
	closedir(d);
	return k < 0 ? k : 0;
}

int moat_oci_config_load(struct moat_policy *p, const char *bundle, const char *log_dir,
			 struct moat_oci_process *ret, struct moat_error *err)
{
	memset(ret, 0, sizeof(*ret));
	char dir[PATH_MAX];
	if (!realpath(bundle, dir))
		return moat_error_set(err, "oci", errno, "--bundle %s: %s", bundle,
				      strerror(errno));
	_cleanup_close_ int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return moat_error_set(err, "oci", errno, "--bundle %s: %s", dir, strerror(errno));
	_cleanup_free_ char *json = NULL;
	size_t len;
	int k = read_small(dfd, "config.json", "config.json", &json, &len, err);
	if (k < 0)
		return k;
	struct moat_oci_recs r;
	if ((k = run_parser(json, len, dir, &r, err)) < 0)
		return k;
	if ((k = apply_records(p, &r, log_dir, ret, "config.json", err)) < 0)
		return k;
	return root_top(p, err);
}

/* root.readonly false (docs/OCI.md): the size was checked by the parser
 * and is checked again here (the records are the child's bytes). */
static int root_rw(struct moat_policy *p, const char *f, const char *size, const char *what,
		   struct moat_error *err)
{
	uint64_t n = 0;
	if (*size && (moat_parse_size(size, &n) < 0 || n < (1u << 20) || n > (16ull << 40)))
		return moat_error_set(err, "oci", EPROTO,
				      "%s: %s: a size the parser cannot produce", what, f);
	p->rootfs_rw = true;
	p->rootfs_rw_size = n;
	return 0;
}

/* A linux.namespaces path (an "nspath" record of an ipc or uts kind, which
 * is not joined, or the "netns" of the network kind, which may be unused):
 * whether moat uses it or not, it must be a namespace of the kind given,
 * as the spec asks (a path of another kind is an error). The parser's kind
 * is checked again (it is the untrusted side). */
static int nspath_check(const char *f, const char *path, const char *kind, const char *what,
			struct moat_error *err)
{
	int type = streq(kind, "ipc")	 ? CLONE_NEWIPC
		: streq(kind, "uts")	 ? CLONE_NEWUTS
		: streq(kind, "network") ? CLONE_NEWNET
					 : 0;
	if (!type || path[0] != '/')
		return moat_error_set(err, "oci", EPROTO, "%s: a malformed namespace record", what);
	int fd = moat_nsfile_open(path, type);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -EPROTOTYPE)
		return moat_error_set(err, "oci", EINVAL, "%s: %s: path %s: not a%s %s namespace",
				      what, f, path, streq(kind, "ipc") ? "n" : "", kind);
	return moat_error_set(err, "oci", fd == -EINVAL ? EINVAL : -fd, "%s: %s: path %s: %s", what,
			      f, path, fd == -EINVAL ? "not a namespace" : strerror(-fd));
}

/* An "rlim" record (field, RLIMIT_* name, "SOFT HARD") into ret: the
 * parser's strings are checked again (it is the untrusted side). */
static int rlimit_record(struct moat_oci_process *ret, const char *f, const char *type,
			 const char *v, const char *what, struct moat_error *err)
{
	unsigned long long soft, hard;
	unsigned idx;
	char tail;
	int end = 0, res = moat_oci_rlimit_resource(type);
	if (res < 0 || sscanf(v, "%llu %llu%c", &soft, &hard, &tail) != 2 || soft > hard ||
	    sscanf(f, "process.rlimits[%u]%n", &idx, &end) != 1 || !end || f[end] ||
	    ret->n_rlimits >= MOAT_OCI_RLIMITS_MAX)
		return moat_error_set(err, "oci", EPROTO, "%s: a malformed rlimit record", what);
	for (unsigned i = 0; i < ret->n_rlimits; i++)
		if (ret->rlimits[i].resource == res)
			return moat_error_set(err, "oci", EPROTO, "%s: %s: %s given twice", what, f,
					      type);
	ret->rlimits[ret->n_rlimits++] =
		(struct moat_oci_rlimit){.resource = res, .index = idx, .soft = soft, .hard = hard};
	return 0;
}

/* The records into p (NULL: a process only: its options are the
 * container's, fixed at create, and only uid/gid are kept to compare). */
static int apply_records(struct moat_policy *p, struct moat_oci_recs *rr, const char *log_dir,
			 struct moat_oci_process *ret, const char *what, struct moat_error *err)
{
	struct moat_oci_recs r = *rr;
	int k = 0;
	size_t pos = 0, n_args = 0, n_env = 0, n_notes = 0;
	char netns[4096] = "", netns_field[64] = "";
	json_t *ann = json_object();
	const char *t;
	/* an error, and the policy file first (run.moat.policy): the other
	 * records on top */
	while (k >= 0 && (t = moat_oci_recs_next(&r, &pos))) {
		const char *f = moat_oci_recs_next(&r, &pos);
		const char *a = f ? moat_oci_recs_next(&r, &pos) : NULL;
		const char *b = a ? moat_oci_recs_next(&r, &pos) : NULL;
		if (!b) {
			k = moat_error_set(err, "oci", EPROTO, "config.json: malformed records");
			break;
		}
		if (streq(t, "err"))
			k = moat_error_set(err, "oci", EINVAL, "%s: %s: %s", what, f, a);
		else if (streq(t, "pol") && p)
			k = policy_file(p, f, a, err);
		else if (streq(t, "log") && p)
			k = log_file(p, f, a, log_dir, err);
	}
	pos = 0;
	while (k >= 0 && (t = moat_oci_recs_next(&r, &pos))) {
		const char *f = moat_oci_recs_next(&r, &pos);
		const char *a = moat_oci_recs_next(&r, &pos);
		const char *b = moat_oci_recs_next(&r, &pos);
		if (streq(t, "opt")) {
			bool known = false;
			for (size_t i = 0; i < ELEMENTSOF(allowed_opts) && !known; i++)
				known = streq(a, allowed_opts[i]);
			if (!known || (streq(a, "--net") && !streq(b, "allow"))) {
				k = moat_error_set(err, "oci", EPROTO,
						   "%s: the parser named an option it cannot "
						   "produce",
						   what);
				break;
			}
			if (streq(a, "--uid") || streq(a, "--gid"))
				*(streq(a, "--uid") ? &ret->uid : &ret->gid) =
					(unsigned)strtoul(b, NULL, 10);
			if (!p)
				continue;
			struct moat_error e = {0};
			k = moat_policy_set_option(
				p, a, moat_policy_option_takes_value(a) ? b : NULL, &e);
			if (k < 0)
				k = moat_error_set(err, "oci", e.err ? e.err : EINVAL, "%s: %s: %s",
						   what, f, e.message);
		} else if (streq(t, "arg"))
			k = strv_push(&ret->argv, &n_args, a, 1024);
		else if (streq(t, "env"))
			k = strv_push(&ret->env, &n_env, a, MOAT_MAX_ENV);
		else if (streq(t, "cwd")) {
			free(ret->cwd);
			k = (ret->cwd = strdup(a)) ? 0 : -ENOMEM;
		} else if (streq(t, "tty"))
			ret->terminal = true;
		else if (streq(t, "oom")) {
			char *end;
			long v = strtol(a, &end, 10);
			if (*end || v < -1000 || v > 1000)
				k = moat_error_set(err, "oci", EPROTO, "%s: %s: out of range", what,
						   f);
			ret->has_oom = true;
			ret->oom_score_adj = (int)v;
		} else if (streq(t, "note")) {
			char line[1024];
			snprintf(line, sizeof(line), "%s: %s", f, a);
			k = strv_push(&ret->notes, &n_notes, line, 4096);
		} else if (streq(t, "nooom"))
			ret->disable_oom_killer = true;
		else if (streq(t, "rlim"))
			k = rlimit_record(ret, f, a, b, what, err);
		else if (streq(t, "cgp")) {
			free(ret->cgroups_path);
			k = (ret->cgroups_path = strdup(a)) ? 0 : -ENOMEM;
		} else if (streq(t, "nspath")) {
			k = nspath_check(f, a, b, what, err);
		} else if (streq(t, "netns")) {
			snprintf(netns, sizeof(netns), "%s", a);
			snprintf(netns_field, sizeof(netns_field), "%s", f);
			k = nspath_check(f, a, "network", what, err);
		} else if (streq(t, "rrw") && p)
			k = root_rw(p, f, a, what, err);
		else if (streq(t, "ann"))
			k = json_object_set_new(ann, a, json_string(b)) < 0 ? -ENOMEM : 0;
	}
	moat_oci_recs_done(&r);
	/* An engine's network namespace is never the container's: with egress
	 * (allow-hosts, or the policy file's net allow) the proxy dials from it
	 * and the container's processes stay behind moat's capture rules; else
	 * the container has moat's own namespace (lo only) and it is unused. */
	if (k >= 0 && p && netns[0]) {
		char line[4400];
		bool up = p->net == MOAT_NET_ALLOW;
		snprintf(
			line, sizeof(line),
			up ? "%s: %s: moat's egress proxy dials from this network namespace; the "
			     "container's processes are in moat's own, whose only way out is the "
			     "proxy"
			   : "%s: %s: not used (no run.moat.allow-hosts): the container has moat's "
			     "own network namespace with only lo",
			netns_field, netns);
		k = strv_push(&ret->notes, &n_notes, line, 4096);
		if (k >= 0 && up) {
			free(p->upstream_netns);
			k = (p->upstream_netns = strdup(netns)) ? 0 : -ENOMEM;
		}
	}
	/* the notes into the container's audit stream too (`config` events) */
	for (size_t i = 0; k >= 0 && p && ret->notes && ret->notes[i]; i++) {
		size_t nn = p->n_config_notes;
		k = strv_push(&p->config_notes, &nn, ret->notes[i], 4096);
		p->n_config_notes = (unsigned)nn;
	}
	if (k >= 0 && !ret->argv)
		k = moat_error_set(err, "oci", EINVAL, "%s: process.args: required", what);
	/* no record and no policy file may weaken a layer (docs/OCI.md) */
	if (k >= 0 && p && (p->net == MOAT_NET_HOST || p->n_allow_syscalls || p->allow_degraded))
		k = moat_error_set(err, "oci", EPERM,
				   "annotations.run.moat.policy: the policy weakens a layer "
				   "(net host, allow_syscalls or allow_degraded): refused for a "
				   "container");
	/* the writable root's overlays are the namespace backend's steps */
	if (k >= 0 && p && p->rootfs_rw && p->isolation != MOAT_ISO_PROCESS)
		k = moat_error_set(err, "oci", EINVAL,
				   "root.readonly: false (a writable root) only with the process "
				   "isolation: set root.readonly or run.moat.root-readonly=true");
	if (k >= 0) {
		ret->annotations_json = json_dumps(ann, JSON_COMPACT | JSON_SORT_KEYS);
		if (!ret->annotations_json)
			k = -ENOMEM;
	}
	json_decref(ann);
	if (k < 0)
		moat_oci_process_done(ret);
	return k < 0 ? k : 0;
}

int moat_oci_cgroup_place(struct moat_policy *p, const char *path)
{
	char *c = strdup(path);
	if (!c)
		return -ENOMEM;
	free(p->cgroup_path);
	p->cgroup_path = c;
	return 0;
}

void moat_oci_process_done(struct moat_oci_process *x)
{
	for (size_t i = 0; x->argv && x->argv[i]; i++)
		free(x->argv[i]);
	for (size_t i = 0; x->env && x->env[i]; i++)
		free(x->env[i]);
	for (size_t i = 0; x->notes && x->notes[i]; i++)
		free(x->notes[i]);
	free(x->argv);
	free(x->env);
	free(x->notes);
	free(x->cwd);
	free(x->annotations_json);
	free(x->cgroups_path);
	memset(x, 0, sizeof(*x));
}
