/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The moat executable's side of its network plugin.
 *
 * Everything --net allow needs (the egress proxy, TLS interception and the
 * credential proxy, the nftables capture rules) lives in moat-net.so, the
 * only part of moat linked with OpenSSL and libnftables. Loading those
 * libraries costs ~2 ms of relocation and start-up per process on the
 * machines we measure (issue 9), which a run without network access should
 * not pay: the executable loads the plugin only when a policy asks for
 * --net allow, before clone, so the sandbox's init (a copy of this process)
 * has it too. libmoat.a (the library API, the unit tests) links the same code
 * directly; these wrappers exist only in the executable.
 *
 * Where: next to the executable (the build tree), or ../lib/moat/ from it
 * (an installed tree). The file must be a regular file owned by root or by
 * the owner of the executable and writable by nobody else; it is opened once
 * and loaded through /proc/self/fd, so what was checked is what is loaded.
 * A plugin from another build is refused. Without the plugin, --net allow
 * fails closed (exit 125) and every other run is unaffected.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/errors.h"
#include "lib/hooks.h"
#include "lib/net_plugin.h"
#include "lib/policy.h"
#include "lib/run.h"
#include "lib/sandbox.h"
#include "lib/supervise_net.h"
#include "shared/macro.h"

static const struct moat_net_plugin *plugin;

static int plugin_open(const char *dir, const char *rel, const struct stat *exe, int *ret_fd)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s", dir, rel) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return negerrno();
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (st.st_uid != 0 && st.st_uid != exe->st_uid) || (st.st_mode & 022)) {
		close(fd);
		return -EPERM;
	}
	*ret_fd = fd;
	return 0;
}

static int plugin_load(struct moat_error *err)
{
	static const char *const rels[] = {"moat-net.so", "../lib/moat/moat-net.so"};
	char exe[PATH_MAX], proc[64];
	struct stat exe_st;
	ssize_t n;
	int fd = -1, k = -ENOENT;
	void *h;

	if (plugin)
		return 0;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0 || stat("/proc/self/exe", &exe_st) < 0)
		return moat_error_set(err, "network", errno, "cannot find moat's own executable");
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return moat_error_set(err, "network", ENOENT, "cannot find moat's own executable");
	*slash = '\0';
	for (size_t i = 0; i < ELEMENTSOF(rels) && fd < 0; i++) {
		int r = plugin_open(exe, rels[i], &exe_st, &fd);
		if (r != -ENOENT)
			k = r;
	}
	if (fd < 0)
		return moat_error_set(
			err, "network", -k,
			k == -EPERM ? "the network plugin moat-net.so next to %s is not "
				      "owned by root or moat's owner, or others can write it"
				    : "the network plugin moat-net.so is not installed next to %s "
				      "(or in ../lib/moat/)",
			exe);
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	h = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
	close(fd);
	if (!h)
		return moat_error_set(err, "network", ELIBBAD, "cannot load the network plugin: %s",
				      dlerror());
	const struct moat_net_plugin *p = dlsym(h, "moat_net_plugin");
	if (!p || !streq(p->abi, MOAT_NET_PLUGIN_ABI) || p->run_size != sizeof(struct moat_run) ||
	    p->policy_size != sizeof(struct moat_policy) ||
	    p->sandbox_size != sizeof(struct moat_sandbox)) {
		dlclose(h);
		return moat_error_set(err, "network", ELIBBAD,
				      "the network plugin is from another build of moat (want %s)",
				      MOAT_NET_PLUGIN_ABI);
	}
	plugin = p;
	return 0;
}

/* The first call for a run with --net allow loads the plugin (the sandbox's
 * environment is built before moat_net_prepare). */
int moat_net_env(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *))
{
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	if ((k = plugin_load(r->err)) < 0)
		return k;
	return plugin->env(r, push);
}

int moat_net_prepare(struct moat_run *r)
{
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	if ((k = plugin_load(r->err)) < 0)
		return k;
	return plugin->prepare(r);
}

int moat_net_take_fd(struct moat_run *r, int kind, int fd)
{
	return plugin ? plugin->take_fd(r, kind, fd) : 0;
}

int moat_net_started(struct moat_run *r)
{
	return plugin ? plugin->started(r) : 0;
}

int moat_net_start(struct moat_run *r, int epfd, uint32_t tag)
{
	return plugin ? plugin->start(r, epfd, tag) : 0;
}

void moat_net_dispatch(struct moat_run *r)
{
	if (plugin)
		plugin->dispatch(r);
}

void moat_net_finish(struct moat_run *r)
{
	if (plugin)
		plugin->finish(r);
}

void moat_net_teardown(struct moat_run *r)
{
	if (plugin)
		plugin->teardown(r);
}

/* In the sandbox's init, a copy of the supervisor made after moat_net_prepare:
 * a policy with --net allow always has the plugin here. */
int moat_hook_network(struct moat_sandbox *sb)
{
	if (sb->p->net != MOAT_NET_ALLOW)
		return 0;
	if (!plugin) {
		errno = ELIBACC;
		return -1;
	}
	return plugin->hook_network(sb);
}
