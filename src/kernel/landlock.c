/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Landlock ruleset construction and enforcement (see landlock.h). */
#include "kernel/landlock.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat/landlock.h"
#include "shared/macro.h"

/* Rights that make sense on a non-directory; the kernel rejects the others
 * (EINVAL) in a rule whose parent_fd is a file. */
#define FS_FILE_RIGHTS \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
	 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
	 LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define FS_READ_RIGHTS \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)

static long ll_create(const void *attr, size_t size, uint32_t flags)
{
	return syscall(__NR_landlock_create_ruleset, attr, size, flags);
}

static long ll_add_rule(int fd, int type, const void *attr)
{
	return syscall(__NR_landlock_add_rule, fd, type, attr, 0);
}

static long ll_restrict(int fd, uint32_t flags)
{
	return syscall(__NR_landlock_restrict_self, fd, flags);
}

int moat_landlock_abi(void)
{
	long abi = ll_create(NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 0)
		/* ENOSYS: not built in; EOPNOTSUPP: built in but disabled at boot. */
		return (errno == ENOSYS || errno == EOPNOTSUPP) ? -EOPNOTSUPP : negerrno();
	return abi > 0 ? (int)abi : -EOPNOTSUPP;
}

uint64_t moat_landlock_fs_rights(int abi)
{
	uint64_t r = 0;
	if (abi >= 1)
		r |= (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* bits 0..12 */
	if (abi >= 2)
		r |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		r |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		r |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	return r;
}

uint64_t moat_landlock_net_rights(int abi)
{
	return abi >= 4 ? LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP : 0;
}

uint64_t moat_landlock_scope_rights(int abi)
{
	return abi >= 6 ? LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL : 0;
}

static int validate(const struct moat_landlock_opts *o)
{
	if (!o || o->n_paths > MOAT_LANDLOCK_MAX_PATHS || (o->n_paths && !o->paths))
		return -EINVAL;
	if (o->n_connect_ports > MOAT_LANDLOCK_MAX_PORTS ||
	    o->n_bind_ports > MOAT_LANDLOCK_MAX_PORTS ||
	    (o->n_connect_ports && !o->connect_ports) || (o->n_bind_ports && !o->bind_ports))
		return -EINVAL;
	if (o->min_abi < 0)
		return -EINVAL;
	for (unsigned i = 0; i < o->n_paths; i++)
		if (o->paths[i].fd < 0 && !o->paths[i].path)
			return -EINVAL;
	return 0;
}

static void fill_report(const struct moat_landlock_opts *o, int abi, bool errata,
			struct moat_landlock_report *r)
{
	*r = (struct moat_landlock_report){.abi = abi > 0 ? abi : 0};
	if (abi <= 0)
		return;
	r->handled_fs = moat_landlock_fs_rights(abi);
	if (!o || o->net_none)
		r->handled_net = moat_landlock_net_rights(abi);
	if (!o || o->scope)
		r->scoped = moat_landlock_scope_rights(abi);
	if (abi >= 7 && errata) {
		long e = ll_create(NULL, 0, LANDLOCK_CREATE_RULESET_ERRATA);
		r->errata = e > 0 ? (int)e : 0;
	}
}

int moat_landlock_probe(const struct moat_landlock_opts *o, struct moat_landlock_report *ret)
{
	if (!ret)
		return -EINVAL;
	fill_report(o, moat_landlock_abi(), true, ret);
	return 0;
}

static int add_path_rule(int ruleset, const struct moat_landlock_path *p, uint64_t handled)
{
	_cleanup_close_ int own = -1;
	int fd = p->fd;
	bool dir = p->kind == MOAT_LANDLOCK_KIND_DIR;

	if (fd < 0) {
		own = open(p->path, O_PATH | O_CLOEXEC);
		if (own < 0)
			return negerrno();
		fd = own;
	}
	if (p->kind == MOAT_LANDLOCK_KIND_UNKNOWN) {
		struct stat st;
		if (fstat(fd, &st) < 0)
			return negerrno();
		dir = S_ISDIR(st.st_mode);
	}

	uint64_t allowed = p->writable ? handled : (handled & FS_READ_RIGHTS);
	if (!dir)
		allowed &= FS_FILE_RIGHTS;
	if (!allowed)
		return 0;
	struct moat_compat_path_beneath_attr a = {.allowed_access = allowed, .parent_fd = fd};
	if (ll_add_rule(ruleset, MOAT_COMPAT_LANDLOCK_RULE_PATH_BENEATH, &a) < 0)
		return negerrno();
	return 1;
}

static int add_port_rule(int ruleset, uint64_t access, uint16_t port)
{
	struct moat_compat_net_port_attr a = {.allowed_access = access, .port = port};
	if (ll_add_rule(ruleset, MOAT_COMPAT_LANDLOCK_RULE_NET_PORT, &a) < 0)
		return negerrno();
	return 1;
}

/* The ruleset for o with every rule added, in *ret_ruleset (-1 when best
 * effort found no Landlock). *rep is filled once the ABI is known, so also
 * on -EOPNOTSUPP. */
static int build(const struct moat_landlock_opts *o, bool errata, int *ret_ruleset,
		 struct moat_landlock_report *rep)
{
	*ret_ruleset = -1;
	int r = validate(o);
	if (r < 0)
		return r;

	int abi = moat_landlock_abi();
	if (abi < 0 && abi != -EOPNOTSUPP)
		return abi;
	fill_report(o, abi, errata, rep);
	if (abi < o->min_abi || (abi < 0 && o->min_abi > 0))
		return -EOPNOTSUPP;
	if (abi < 0) /* best effort and no Landlock: nothing to do, report says so */
		return 0;

	struct moat_compat_ruleset_attr attr = {
		.handled_access_fs = rep->handled_fs,
		.handled_access_net = rep->handled_net,
		.scoped = rep->scoped,
	};
	/* An older kernel rejects a larger struct with non-zero unknown fields
	 * (E2BIG); pass exactly the fields its ABI knows. */
	size_t size = abi >= 6 ? sizeof(attr)
		: abi >= 4     ? offsetof(struct moat_compat_ruleset_attr, scoped)
			       : offsetof(struct moat_compat_ruleset_attr, handled_access_net);
	_cleanup_close_ int ruleset = (int)ll_create(&attr, size, 0);
	if (ruleset < 0)
		return negerrno();

	for (unsigned i = 0; i < o->n_paths; i++) {
		r = add_path_rule(ruleset, &o->paths[i], rep->handled_fs);
		if (r < 0)
			return r;
		rep->n_rules += (unsigned)r;
	}
	if (rep->handled_net) {
		for (unsigned i = 0; i < o->n_connect_ports; i++) {
			r = add_port_rule(ruleset, LANDLOCK_ACCESS_NET_CONNECT_TCP,
					  o->connect_ports[i]);
			if (r < 0)
				return r;
			rep->n_rules++;
		}
		for (unsigned i = 0; i < o->n_bind_ports; i++) {
			r = add_port_rule(ruleset, LANDLOCK_ACCESS_NET_BIND_TCP, o->bind_ports[i]);
			if (r < 0)
				return r;
			rep->n_rules++;
		}
	}
	*ret_ruleset = TAKE_FD(ruleset);
	return 0;
}

int moat_landlock_prepare(const struct moat_landlock_opts *o, int *ret_ruleset,
			  struct moat_landlock_report *ret)
{
	struct moat_landlock_report rep = {0};
	int r = build(o, ret != NULL, ret_ruleset, &rep);
	if (ret && (r >= 0 || r == -EOPNOTSUPP))
		*ret = rep;
	return r;
}

int moat_landlock_enforce(int ruleset, bool no_new_privs_set)
{
	if (ruleset < 0)
		return 0; /* prepared best effort without Landlock */
	/* Landlock needs no_new_privs (or CAP_SYS_ADMIN); the sandbox wants it anyway. */
	if (!no_new_privs_set && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return negerrno();
	/* No ABI 7 logging flags: denials are logged by the kernel's audit (if
	 * enabled) for moat's own init only, not after exec, which is the default. */
	if (ll_restrict(ruleset, 0) < 0)
		return negerrno();
	return 0;
}

int moat_landlock_apply(const struct moat_landlock_opts *o, struct moat_landlock_report *ret)
{
	struct moat_landlock_report rep = {0};
	_cleanup_close_ int ruleset = -1;
	/* the errata are only reported: not asked for without a report */
	int r = build(o, ret != NULL, &ruleset, &rep);
	if (r == -EOPNOTSUPP && ret)
		*ret = rep;
	if (r < 0)
		return r;
	r = moat_landlock_enforce(ruleset, o->no_new_privs_set);
	if (r < 0)
		return r;
	rep.restrict_flags = 0;
	rep.enforced = ruleset >= 0;
	if (ret)
		*ret = rep;
	return 0;
}

static const char *const fs_names[] = {
	"execute",   "write_file", "read_file", "read_dir",  "remove_dir", "remove_file",
	"make_char", "make_dir",   "make_reg",	"make_sock", "make_fifo",  "make_block",
	"make_sym",  "refer",	   "truncate",	"ioctl_dev",
};
static const char *const net_names[] = {"bind_tcp", "connect_tcp"};
static const char *const scope_names[] = {"abstract_unix_socket", "signal"};

const char *moat_landlock_rights_str(char kind, uint64_t mask, char *buf, unsigned len)
{
	const char *const *names = kind == 'f' ? fs_names : kind == 'n' ? net_names : scope_names;
	size_t n = kind == 'f' ? ELEMENTSOF(fs_names)
		: kind == 'n'  ? ELEMENTSOF(net_names)
			       : ELEMENTSOF(scope_names);
	size_t off = 0;

	if (!buf || len == 0)
		return "";
	buf[0] = 0;
	for (size_t i = 0; i < n && off + 1 < len; i++) {
		if (!(mask & (1ULL << i)))
			continue;
		int w = snprintf(buf + off, len - off, "%s%s", off ? "," : "", names[i]);
		if (w < 0)
			break;
		off += (size_t)w;
	}
	if (off >= len)
		buf[len - 1] = 0;
	if (!buf[0])
		snprintf(buf, len, "none");
	return buf;
}
