/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Finding, checking and loading the network plugins (net_plugin.h).
 *
 * Everything --net allow needs that links OpenSSL or libnftables lives in
 * two plugins: moat-net.so (the credential proxy's CA and secrets, the proxy
 * helper) and moat-nft.so (the capture rules). Loading those libraries costs
 * ~1-2 ms of relocation and start-up each per process on the machines we
 * measure (issue 9): a run without network access never loads them; a run
 * with --net allow loads moat-nft.so in the init's network child (hook_net.c,
 * netns_send.c), and moat-net.so in the supervisor after clone (so that a
 * plugin that cannot load fails the run before its command runs) and in the
 * exec'd proxy helper, all in parallel with the sandbox's root assembly. A
 * run with credentials loads moat-net.so in the supervisor before clone: the
 * per-run CA and the placeholders go into the sandbox's environment.
 *
 * Where: next to the executable (the build tree), or ../lib/moat/ from it
 * (an installed tree). Each file must be a regular file owned by root or by
 * the owner of the executable and writable by nobody else; it is opened once
 * and loaded through /proc/self/fd, so what was checked is what is loaded.
 * A plugin from another build (its section .moat_abi, read before clone
 * without loading it, and its ops table once loaded) is refused. Both are
 * checked before clone, so a missing or foreign plugin fails --net allow
 * closed (exit 125) with a message; every other run is unaffected.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "policy/errors.h"
#include "network/net_plugin.h"
#include "shared/jsonesc.h"
#include "shared/macro.h"

#define NET_PLUGIN "moat-net.so"
#define NFT_PLUGIN "moat-nft.so"
#define ABI_SECTION ".moat_abi"
/* Section headers and bytes of section names read to find ABI_SECTION:
 * more means not a plugin (ours have ~40 sections, ~400 bytes of names). */
#define MAX_SECTIONS 128u
#define MAX_NAMES 4096u

/* Loaded once per process, like the library itself (dlopen is per process). */
static const struct moat_net_plugin_ops *net_ops;
static const struct moat_nft_plugin_ops *nft_ops;
/* The /proc/self/fd/N names already given to dlopen in this process (or the
 * one it was forked from): the dynamic loader takes a name it has loaded
 * before for that object, so each load needs an N of its own. */
static int loaded_names[2] = {-1, -1};

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

static int pread_exact(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t k;

	while ((k = pread(fd, buf, len, (off_t)off)) < 0 && errno == EINTR)
		;
	return k == (ssize_t)len ? 0 : -ENOEXEC;
}

/* The contents of the plugin's section ABI_SECTION (its ABI string), read
 * from the ELF file without loading it: three bounded reads (the header, the
 * section headers, the section names) and the section itself. */
static int plugin_abi_of_fd(int fd, char *buf, size_t len)
{
	Elf64_Ehdr eh;
	Elf64_Shdr sh[MAX_SECTIONS];
	char names[MAX_NAMES];
	const Elf64_Shdr *strtab;
	size_t names_len;

	if (pread_exact(fd, &eh, sizeof(eh), 0) < 0 || memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr) ||
	    eh.e_shnum == 0 || eh.e_shnum > MAX_SECTIONS || eh.e_shstrndx >= eh.e_shnum)
		return -ENOEXEC;
	if (pread_exact(fd, sh, eh.e_shnum * sizeof(Elf64_Shdr), eh.e_shoff) < 0)
		return -ENOEXEC;
	strtab = &sh[eh.e_shstrndx];
	names_len = strtab->sh_size < sizeof(names) ? (size_t)strtab->sh_size : sizeof(names);
	if (names_len == 0 || pread_exact(fd, names, names_len, strtab->sh_offset) < 0)
		return -ENOEXEC;
	names[names_len - 1] = '\0';
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		if (sh[i].sh_name >= names_len || !streq(names + sh[i].sh_name, ABI_SECTION))
			continue;
		if (sh[i].sh_size == 0 || sh[i].sh_size >= len ||
		    pread_exact(fd, buf, sh[i].sh_size, sh[i].sh_offset) < 0)
			return -ENOEXEC;
		buf[sh[i].sh_size] = '\0';
		return 0;
	}
	return -ENOEXEC;
}

static int foreign(const char *name, struct moat_error *err)
{
	return moat_error_set(err, "network", ELIBBAD,
			      "the network plugin %s is from another build of moat (want %s)", name,
			      MOAT_NET_PLUGIN_ABI);
}

/* @name is there, acceptable, and of this build; *ret_fd is open on it. */
static int plugin_check(const char *name, struct moat_error *err, int *ret_fd)
{
	char abi[96];
	int fd, k;

	if ((k = plugin_find(name, err, &fd)) < 0)
		return k;
	if (plugin_abi_of_fd(fd, abi, sizeof(abi)) < 0 || !streq(abi, MOAT_NET_PLUGIN_ABI)) {
		close(fd);
		return foreign(name, err);
	}
	*ret_fd = fd;
	return 0;
}

int moat_net_plugins_present(struct moat_error *err)
{
	int fd, k;

	if ((k = plugin_check(NET_PLUGIN, err, &fd)) < 0)
		return k;
	close(fd);
	if ((k = plugin_check(NFT_PLUGIN, err, &fd)) < 0)
		return k;
	close(fd);
	return 0;
}

/* dlopen @name and return what its entry @sym returns. */
static const void *plugin_dlopen(const char *name, const char *sym, struct moat_error *err)
{
	const void *(*entry)(void);
	char proc[64];
	int fd;
	void *h;

	if (plugin_check(name, err, &fd) < 0)
		return NULL;
	for (size_t i = 0; i < ELEMENTSOF(loaded_names); i++)
		if (fd == loaded_names[i]) {
			int other = fcntl(fd, F_DUPFD_CLOEXEC, fd + 1), e = errno;
			close(fd);
			if (other < 0) {
				moat_error_set(err, "network", e, "cannot load %s: %s", name,
					       strerror(e));
				return NULL;
			}
			fd = other;
			i = (size_t)-1; /* again, from the first */
		}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	h = dlopen(proc, RTLD_NOW | RTLD_LOCAL);
	for (size_t i = 0; h && i < ELEMENTSOF(loaded_names); i++)
		if (loaded_names[i] < 0) {
			loaded_names[i] = fd;
			break;
		}
	close(fd);
	if (!h) {
		moat_error_set(err, "network", ELIBBAD, "cannot load the network plugin %s: %s",
			       name, dlerror());
		return NULL;
	}
	*(void **)&entry = dlsym(h, sym);
	const void *ops = entry ? entry() : NULL;
	if (!ops) {
		dlclose(h);
		foreign(name, err);
		return NULL;
	}
	return ops;
}

/* The common head of both tables. */
struct ops_head {
	uint32_t abi_version;
	uint32_t size;
	const char *abi;
};

static bool ops_ok(const void *ops, size_t size)
{
	const struct ops_head *h = ops;
	return h && h->abi_version == MOAT_NET_PLUGIN_ABI_VERSION && h->size == size && h->abi &&
		streq(h->abi, MOAT_NET_PLUGIN_ABI);
}

const struct moat_net_plugin_ops *moat_net_plugin_load(struct moat_error *err)
{
	const struct moat_net_plugin_ops *ops;

	if (net_ops)
		return net_ops;
	ops = plugin_dlopen(NET_PLUGIN, "moat_net_plugin_v2", err);
	if (!ops)
		return NULL;
	/* a foreign table is not used, nor unloaded: its code may have run */
	if (!ops_ok(ops, sizeof(*ops)) || !ops->creds_new || !ops->creds_count ||
	    !ops->creds_name || !ops->creds_placeholder || !ops->creds_write_bundle ||
	    !ops->creds_load || !ops->creds_config || !ops->creds_drop || !ops->creds_free ||
	    !ops->helper_main) {
		foreign(NET_PLUGIN, err);
		return NULL;
	}
	return net_ops = ops;
}

const struct moat_nft_plugin_ops *moat_nft_plugin_load(struct moat_error *err)
{
	const struct moat_nft_plugin_ops *ops;

	if (nft_ops)
		return nft_ops;
	ops = plugin_dlopen(NFT_PLUGIN, "moat_nft_plugin_v2", err);
	if (!ops)
		return NULL;
	if (!ops_ok(ops, sizeof(*ops)) || !ops->netns_setup) {
		foreign(NFT_PLUGIN, err);
		return NULL;
	}
	return nft_ops = ops;
}

/* "moat __proxy" (moat.h): supervise_net.c execs it with its descriptors at
 * fixed numbers (net_config.h: 3 events, 4 a sealed memfd with its
 * configuration, 5 the control socket the listeners arrive on). */
int moat_proxy_helper_main(struct moat_error *err)
{
	const struct moat_net_plugin_ops *ops;
	struct moat_error e = {0};

	if (fcntl(4, F_GET_SEALS) < 0)
		return moat_error_set(err, "usage", EINVAL,
				      "__proxy is internal to moat run --net allow");
	ops = moat_net_plugin_load(&e);
	if (!ops) {
		/* why, on the event pipe: the supervisor logs it */
		char esc[600], line[700];
		moat_json_escape(e.message, strlen(e.message), esc, sizeof(esc));
		int w = snprintf(line, sizeof(line), "{\"proto\":\"helper\",\"error\":\"%s\"}\n",
				 esc);
		if (w > 0 && (size_t)w < sizeof(line))
			(void)!write(3, line, (size_t)w);
		return MOAT_EXIT_SETUP;
	}
	return ops->helper_main();
}
