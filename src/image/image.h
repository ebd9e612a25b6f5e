/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/image/: --image: an OCI image (layout directory, oci-archive or docker-archive) read,
 * its blobs verified by sha256, its layers unpacked by a confined child into a per-user cache
 */
/*
 * Images (docs/IMAGES.md). The pieces:
 *   image_json.c    pure: index.json, a manifest, an image config and a
 *                   docker-archive manifest.json into the structures below
 *                   (fuzzed: fuzz/fuzz_image.c)
 *   image_entry.c   pure: one tar entry's name, type, mode and link checked
 *                   and classified (fuzzed too)
 *   image_unpack.c  a child that holds no capability and no descriptor but
 *                   the blob and a pipe, chrooted into the staging tree,
 *                   under seccomp, reads a tar with libarchive and applies it
 *                   (whiteouts first, then the entries) beneath the tree
 *                   without following any symlink
 *   image_read.c    the reader: a child confined like the unpacker,
 *                   chrooted into the layout, read-only, that parses the
 *                   JSON and sends the parent a fixed-format plan
 *   image_cache.c   the cache: one directory per image digest, unpacked in
 *                   a private staging directory and renamed into place; a
 *                   shared lock on it while a sandbox uses it; moat_image_open()
 *   image_gc.c      moat gc: the cached images no run holds, removed
 *   image_apply.c   the config's defaults into a policy (moat.h)
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MOAT_IMAGE_JSON_MAX (4u << 20) /* index, manifest, config bytes */
#define MOAT_IMAGE_LAYERS_MAX 128u
#define MOAT_IMAGE_MANIFESTS_MAX 64u /* descriptors in an index */
#define MOAT_IMAGE_ENV_MAX 1024u
#define MOAT_IMAGE_ARGS_MAX 1024u
#define MOAT_IMAGE_STR_MAX 4096u /* one string of a config */
#define MOAT_IMAGE_BLOB_MAX (8ull << 30) /* one blob */
#define MOAT_IMAGE_UNPACKED_MAX (16ull << 30) /* the bytes of every file unpacked */
#define MOAT_IMAGE_ENTRIES_MAX (1u << 20) /* entries of every layer */
#define MOAT_IMAGE_PATH_MAX 4095u
#define MOAT_IMAGE_NAME_MAX 255u

/* "sha256:" and 64 lower-case hex digits */
#define MOAT_IMAGE_DIGEST_LEN 71

enum moat_image_comp {
	MOAT_IMAGE_COMP_NONE,
	MOAT_IMAGE_COMP_GZIP,
	MOAT_IMAGE_COMP_ZSTD,
};

struct moat_image_desc {
	char digest[MOAT_IMAGE_DIGEST_LEN + 1];
	uint64_t size;
	enum moat_image_comp comp; /* layers */
	bool is_index; /* a nested index in an index */
};

/* One media type (NULL: absent) of a layer: 0 and *ret, or -EPROTONOSUPPORT. */
int moat_image_layer_type(const char *media_type, enum moat_image_comp *ret);
/* "sha256:<64 hex>" only: 0, or -EINVAL. */
int moat_image_digest_check(const char *d);

/* index.json: the one manifest for linux/amd64 (or the only one; a nested
 * index is returned with is_index set, for the caller to read one level
 * down). 0, or -errno with why filled. */
int moat_image_parse_index(const char *json, size_t len, struct moat_image_desc *ret, char *why,
			   size_t whylen);

struct moat_image_manifest {
	struct moat_image_desc config;
	struct moat_image_desc layers[MOAT_IMAGE_LAYERS_MAX];
	unsigned n_layers;
};
int moat_image_parse_manifest(const char *json, size_t len, struct moat_image_manifest *ret,
			      char *why, size_t whylen);

/* docker-archive's manifest.json: the config's and the layers' names in the
 * archive (relative, checked by moat_image_rel_check). */
struct moat_image_docker {
	char *config;
	char *layers[MOAT_IMAGE_LAYERS_MAX];
	unsigned n_layers;
};
int moat_image_parse_docker(const char *json, size_t len, struct moat_image_docker *ret, char *why,
			    size_t whylen);
void moat_image_docker_done(struct moat_image_docker *d);

/* The image config's defaults and its layers' uncompressed digests. */
struct moat_image_config {
	char **env; /* NAME=VALUE, NULL-terminated */
	size_t n_env;
	char **entrypoint; /* NULL-terminated or NULL */
	size_t n_entrypoint;
	char **cmd;
	size_t n_cmd;
	char *workdir;
	char *user;
	char diff_ids[MOAT_IMAGE_LAYERS_MAX][MOAT_IMAGE_DIGEST_LEN + 1];
	unsigned n_diff_ids;
};
int moat_image_parse_config(const char *json, size_t len, struct moat_image_config *ret, char *why,
			    size_t whylen);
void moat_image_config_done(struct moat_image_config *c);

/* A relative name inside an archive or a layout (no "/" first, no "..",
 * no empty name): 0 or -EINVAL. */
int moat_image_rel_check(const char *name);

/* ---- tar entries (image_entry.c) ---- */
enum moat_image_kind {
	MOAT_IMAGE_ENT_SKIP, /* the root itself ("./") */
	MOAT_IMAGE_ENT_DIR,
	MOAT_IMAGE_ENT_FILE,
	MOAT_IMAGE_ENT_SYMLINK,
	MOAT_IMAGE_ENT_HARDLINK,
	MOAT_IMAGE_ENT_WHITEOUT, /* remove dir/name of the layers below */
	MOAT_IMAGE_ENT_OPAQUE, /* empty dir of what the layers below put there */
};

struct moat_image_entry {
	const char *path;
	mode_t type; /* S_IFREG, S_IFDIR, S_IFLNK, ... (0 with hardlink set) */
	mode_t mode; /* permission bits, set-id included */
	const char *symlink; /* target of a symlink */
	const char *hardlink; /* the earlier name of a hard link */
	int64_t size;
};

#define MOAT_IMAGE_F_SETID 1u /* set-id bits allowed (--image-allow-setid) */
#define MOAT_IMAGE_F_PLAIN 2u /* an archive's own tar: files and dirs only, no whiteout */

struct moat_image_checked {
	enum moat_image_kind kind;
	char path[MOAT_IMAGE_PATH_MAX + 1]; /* normalised: no "./", no "//", no "/" last */
	char link[MOAT_IMAGE_PATH_MAX + 1]; /* hard link: normalised; symlink: as given */
	/* whiteouts: the directory (path) and the name removed from it */
	char name[MOAT_IMAGE_NAME_MAX + 1];
	mode_t mode; /* the bits to set (07777 at most) */
};

/* 0 and *ret, or -errno with why naming the entry and the reason
 * (-EPERM: refused by rule, -EINVAL: malformed). Pure. */
int moat_image_entry_check(const struct moat_image_entry *e, unsigned flags,
			   struct moat_image_checked *ret, char *why, size_t whylen);

/* ---- the confined unpacker (image_unpack.c) ---- */
/* Applies the tar in blob_fd (read from its start; expect_digest NULL: not
 * checked, else the bytes read must hash to it and number expect_size) to
 * the tree of root_fd, in a forked child (see above). 0, or -errno with why.
 * *ret_bytes adds the bytes of the files written, *ret_entries the entries;
 * the child refuses past the caps given. */
int moat_image_unpack(int blob_fd, int root_fd, const char *expect_digest, uint64_t expect_size,
		      unsigned flags, uint64_t *bytes, uint64_t bytes_max, uint64_t *entries,
		      uint64_t entries_max, char *why, size_t whylen);

/* The first steps of a confined child of the image code (the unpacker, the
 * reader): parent-death SIGKILL; unprivileged, a user namespace mapping
 * only the caller; chroot into root_fd (closed); no capability in any set,
 * no_new_privs. The caller loads its seccomp filter next. 0 or -errno,
 * *ret_step naming the step that failed. Between fork and the child's work:
 * no allocation. */
int moat_image_confine_child(int root_fd, const char **ret_step);

/* The most descriptors moat_image_spawn_child hands a child, its pipe aside. */
#define MOAT_IMAGE_CHILD_FDS_MAX 4

/* Forks a confined child of the image code holding exactly: /dev/null on 0,
 * 1 and 2, fds[0..n_fds-1] at 3, 4, … in that order, the write end of a new
 * pipe after them (at 3 + n_fds), and no other descriptor; then calls
 * run(userdata) in it, which must end with _exit (the child exits 2 if it
 * returns, or if the descriptors cannot be so placed); run starts with
 * moat_image_confine_child, its seccomp filter next. The parent gets the
 * child's pid (the caller's to reap) and the pipe's read end (O_CLOEXEC,
 * the caller's to close). 0 or -errno (-EINVAL: n_fds above the maximum).
 * Between fork and run: no allocation. */
int moat_image_spawn_child(const int *fds, unsigned n_fds, void (*run)(void *userdata),
			   void *userdata, pid_t *ret_pid, int *ret_pipe);

/* ---- the confined reader (image_read.c) ---- */
/* Everything moat learns from an image's JSON (index.json, the manifest,
 * the config; a docker-archive's manifest.json), read and parsed by a
 * confined child (chrooted into the layout, read-only, no capability, under
 * seccomp) and handed to the parent in a fixed format the parent decodes
 * and checks again (moat_image_plan_decode: the only image bytes the parent
 * parses). */
#define MOAT_IMAGE_PLAN_MAX (MOAT_IMAGE_JSON_MAX + (1u << 20))
struct moat_image_plan {
	char digest[MOAT_IMAGE_DIGEST_LEN + 1]; /* the manifest's, or a docker config's */
	bool docker; /* layers by name (docker-archive), else by digest */
	char config_name[MOAT_IMAGE_PATH_MAX + 1]; /* in the layout */
	char config_digest[MOAT_IMAGE_DIGEST_LEN + 1];
	uint64_t config_size;
	unsigned n_layers;
	struct moat_image_desc layers[MOAT_IMAGE_LAYERS_MAX]; /* OCI */
	char *names[MOAT_IMAGE_LAYERS_MAX]; /* docker-archive */
	struct moat_image_config cfg;
};
void moat_image_plan_done(struct moat_image_plan *p);
/* The child's result (buf, len) into *ret: 0; a refusal the child sent:
 * its errno (negative) with why; a result that breaks a rule: -EBADMSG
 * with why. Pure (fuzzed). */
int moat_image_plan_decode(const char *buf, size_t len, struct moat_image_plan *ret, char *why,
			   size_t whylen);
/* Runs the reader on the layout directory layout_fd: 0 and *ret (to
 * moat_image_plan_done), or -errno with why. */
int moat_image_read(int layout_fd, struct moat_image_plan *ret, char *why, size_t whylen);
/* NAME=VALUE with a NAME of [A-Za-z_][A-Za-z0-9_]*: true. */
bool moat_image_env_ok(const char *e);

/* The sha256 of everything fd holds from offset 0 ("sha256:<hex>") and its
 * length; at most max bytes (-EFBIG past it). */
int moat_image_hash_fd(int fd, uint64_t max, char ret[MOAT_IMAGE_DIGEST_LEN + 1],
		       uint64_t *ret_len);

/* ---- the cache (image_cache.c) ---- */
struct moat_image;
const struct moat_image_config *moat_image_config_of(const struct moat_image *img);
char *const *moat_image_top_dirs(const struct moat_image *img, unsigned *ret_n);
/* A hold on the cached image whose tree is root (".../<hex>/rootfs", as
 * moat_image_root() gives it): its directory, locked shared (moat gc leaves
 * it), for a process that outlives the one that opened the image (the
 * session supervisor of moat create). Taken while the opener still holds
 * its own, so the tree cannot go in between. An fd, or -errno. */
int moat_image_hold(const char *root);
/* The opened image of src (its cached root, digest and top directories,
 * which a policy's JSON does not carry) into dst, for a copy of a policy
 * made through its JSON (moat serve). 0 or -ENOMEM. */
struct moat_policy;
int moat_policy_image_copy(struct moat_policy *dst, const struct moat_policy *src);
/* The cache directory: $XDG_CACHE_HOME/moat/images, else root's
 * /var/cache/moat/images, else ~/.cache/moat/images. Caller frees. */
int moat_image_cache_dir(char **ret);
