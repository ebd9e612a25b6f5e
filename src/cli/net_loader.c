/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The moat executable's side of its network plugin.
 *
 * Everything --net allow needs beyond checking its rules lives in two
 * plugins (net_plugin.h): moat-net.so (the egress proxy, TLS interception
 * and the credential proxy; the only part of moat linked with OpenSSL) and
 * moat-nft.so (the nftables capture rules; libnftables). Loading those
 * libraries costs ~1-2 ms of relocation and start-up each per process on the
 * machines we measure (issue 9): a run without network access never loads
 * them, and a run with --net allow loads them after clone, in parallel with
 * the sandbox's root assembly: the supervisor moat-net.so for the proxy, the
 * init's network child (hook_net.c) moat-nft.so for the capture rules. Only
 * a run with credentials loads moat-net.so before clone: the per-run CA and
 * the placeholders go into the sandbox's environment.
 * libmoat.a (the library API, the unit tests) links the same code directly;
 * these wrappers exist only in the executable.
 *
 * Where: next to the executable (the build tree), or ../lib/moat/ from it
 * (an installed tree). Each file must be a regular file owned by root or by
 * the owner of the executable and writable by nobody else; it is opened once
 * and loaded through /proc/self/fd, so what was checked is what is loaded.
 * A plugin from another build is refused. Its presence is checked before
 * clone, so a missing plugin fails --net allow closed (exit 125) with a
 * message; every other run is unaffected.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "lib/errors.h"
#include "lib/hooks.h"
#include "lib/net_env.h"
#include "lib/net_plugin.h"
#include "lib/netns.h"
#include "lib/policy.h"
#include "lib/run.h"
#include "lib/sandbox.h"
#include "lib/supervise_net.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

static const struct moat_net_plugin *plugin; /* moat-net.so */
static const struct moat_nft_plugin *nft_plugin; /* moat-nft.so */

static int plugin_open(const char *dir, const char *name, const char *prefix,
		       const struct stat *exe, int *ret_fd)
{
	char path[PATH_MAX];
	struct stat st;
	int fd;

	if (snprintf(path, sizeof(path), "%s/%s%s", dir, prefix, name) >= (int)sizeof(path))
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

/* The plugin file @name, checked, as an open fd. */
static int plugin_find(const char *name, struct moat_error *err, int *ret_fd)
{
	static const char *const prefixes[] = {"", "../lib/moat/"};
	char exe[PATH_MAX];
	struct stat exe_st;
	ssize_t n;
	int fd = -1, k = -ENOENT;

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n < 0 || stat("/proc/self/exe", &exe_st) < 0)
		return moat_error_set(err, "network", errno, "cannot find moat's own executable");
	exe[n] = '\0';
	char *slash = strrchr(exe, '/');
	if (!slash)
		return moat_error_set(err, "network", ENOENT, "cannot find moat's own executable");
	*slash = '\0';
	for (size_t i = 0; i < ELEMENTSOF(prefixes) && fd < 0; i++) {
		int r = plugin_open(exe, name, prefixes[i], &exe_st, &fd);
		if (r != -ENOENT)
			k = r;
	}
	if (fd < 0)
		return moat_error_set(err, "network", -k,
				      k == -EPERM
					      ? "the network plugin %s next to %s is not owned by "
						"root or moat's owner, or others can write it"
					      : "the network plugin %s is not installed next to %s "
						"(or in ../lib/moat/)",
				      name, exe);
	*ret_fd = fd;
	return 0;
}

/* Both plugin files are there and acceptable (before clone: a clear error). */
static int plugins_present(struct moat_error *err)
{
	int fd, k;

	if ((k = plugin_find("moat-net.so", err, &fd)) < 0)
		return k;
	close(fd);
	if ((k = plugin_find("moat-nft.so", err, &fd)) < 0)
		return k;
	close(fd);
	return 0;
}

/* dlopen @name and return its table @sym, after the same-build check. */
static const void *plugin_dlopen(const char *name, const char *sym, struct moat_error *err)
{
	const struct moat_plugin_head *head;
	char proc[64];
	int fd;
	void *h;

	if (plugin_find(name, err, &fd) < 0)
		return NULL;
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	h = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
	close(fd);
	if (!h) {
		moat_error_set(err, "network", ELIBBAD, "cannot load the network plugin %s: %s",
			       name, dlerror());
		return NULL;
	}
	head = dlsym(h, sym);
	if (!head || !streq(head->abi, MOAT_NET_PLUGIN_ABI) ||
	    head->run_size != sizeof(struct moat_run) ||
	    head->policy_size != sizeof(struct moat_policy) ||
	    head->sandbox_size != sizeof(struct moat_init)) {
		dlclose(h);
		moat_error_set(err, "network", ELIBBAD,
			       "the network plugin %s is from another build of moat (want %s)",
			       name, MOAT_NET_PLUGIN_ABI);
		return NULL;
	}
	return head;
}

static int plugin_load(struct moat_error *err)
{
	if (!plugin)
		plugin = plugin_dlopen("moat-net.so", "moat_net_plugin", err);
	return plugin ? 0 : -ELIBBAD;
}

/* Before clone: the plugin must be there (a clear error now, not after
 * clone); it is loaded now only for the credential proxy. */
int moat_net_env(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *))
{
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	if (moat_net_needs_credentials(r->p)) {
		if ((k = plugins_present(r->err)) < 0)
			return k;
		if ((k = plugin_load(r->err)) < 0)
			return k;
		return plugin->env(r, push);
	}
	if ((k = plugins_present(r->err)) < 0)
		return k;
	return moat_net_proxy_env(r, push);
}

int moat_net_prepare(struct moat_run *r)
{
	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	return plugin ? plugin->prepare(r) : moat_net_check_rules(r);
}

/* After clone, while the sandbox builds its root. */
int moat_net_started(struct moat_run *r)
{
	int k;

	if (r->p->net != MOAT_NET_ALLOW)
		return 0;
	if ((k = plugin_load(r->err)) < 0)
		return k;
	return plugin->started(r);
}

int moat_net_take_fd(struct moat_run *r, int kind, int fd)
{
	return plugin ? plugin->take_fd(r, kind, fd) : 0;
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

/* "moat __proxy": the proxy helper moat_net_start() execs (supervise_net.c)
 * with its descriptors at fixed numbers (3: events, 4: a sealed memfd with its
 * configuration, 5...: the listeners). It loads moat-net.so through the same
 * checks as the supervisor and hands over to it; it serves only what it was
 * given, so running it by hand grants nothing. */
int moat_cli_proxy_helper(int argc, char **argv)
{
	struct moat_error e = {0};

	if (argc != 1 || fcntl(4, F_GET_SEALS) < 0) {
		fputs("moat: __proxy is internal to moat run --net allow\n", stderr);
		return MOAT_EXIT_USAGE;
	}
	if (plugin_load(&e) < 0) {
		char esc[600], line[700];
		moat_json_escape(e.message, strlen(e.message), esc, sizeof(esc));
		int w = snprintf(line, sizeof(line), "{\"proto\":\"helper\",\"error\":\"%s\"}\n",
				 esc);
		if (w > 0 && (size_t)w < sizeof(line))
			(void)!write(3, line, (size_t)w);
		return MOAT_EXIT_SETUP;
	}
	return plugin->helper_main();
}

/* In the init's network child (hook_net.c), in its own copy of the host's
 * mount table: only the nftables plugin. */
int moat_net_sandbox_setup(struct moat_init *sb)
{
	struct moat_error e = {0};

	if (!nft_plugin)
		nft_plugin = plugin_dlopen("moat-nft.so", "moat_nft_plugin", &e);
	if (!nft_plugin)
		return e.err ? -e.err : -ELIBBAD;
	return nft_plugin->sandbox_setup(sb);
}
