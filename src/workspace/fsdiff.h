/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/workspace/: the workspace layer: the change manifest (fsdiff*), its review and apply,
 * the workspace checks, the copy of --input trees
 */
/*
 * Workspace change manifest and safe apply for `--workspace DIR:overlay`.
 *
 * The sandbox writes into an overlayfs upper layer; after it is gone the
 * supervisor computes the manifest from (upper dir fd, lower dir fd = the
 * real workspace), flags the changes that would run code later on the host
 * (rules are data: moat_flag_builtin[] + the policy's flag_patterns; see
 * docs/FLAGGED.md), and applies it into the real directory:
 *   - every access is relative to a directory fd; parents are opened with
 *     openat2(RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS), final
 *     components with O_NOFOLLOW / AT_SYMLINK_NOFOLLOW; a symlink is never
 *     followed on either side;
 *   - files are written to a fresh O_EXCL temporary name and renamed over;
 *   - devices, FIFOs, sockets and set-id files are refused (never applied);
 *   - under MOAT_FSAPPLY_SAFE flagged entries are held back.
 * Held-back files can be saved into a run directory (content-addressed by
 * SHA-256 under held/) with the manifest, and applied later (`moat apply`).
 *
 * Overlay requirements: mount with redirect_dir=off and metacopy=off (the
 * defaults for unprivileged mounts); an upper entry carrying an overlay
 * redirect or metacopy xattr is refused rather than misread.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct moat_audit;
struct moat_fs_entry;
struct moat_manifest;

/* ---- flag rules (data) ---------------------------------------------------- */

enum moat_flag_rule_flags {
	MOAT_FLAG_SUBTREE = 1u << 0, /* the path and everything below it ("dir/" in patterns) */
	MOAT_FLAG_ANCHORED = 1u << 1, /* only at the workspace root ("/x" in patterns) */
	MOAT_FLAG_NOT_DIR = 1u << 2, /* only for non-directories (e.g. a `.git` file) */
};

/* Risk classes of a flagged change (docs/FLAGGED.md). The "automatic" ones
 * run code on the host without the user asking (a git command, a CI push, a
 * shell or editor start, an agent start, a package manager or build tool):
 * held by default, accepted only with accept_automatic. The others (new
 * executables, dependency trees) run only when the user runs them: applied
 * and listed by default. Names are stable (manifest JSON "class", policy
 * audit.accept / audit.hold, --accept / --hold). */
enum moat_risk_class {
	MOAT_RISK_NONE,
	MOAT_RISK_HOOKS, /* git hooks and configuration, husky, pre-commit */
	MOAT_RISK_CI, /* CI definitions */
	MOAT_RISK_STARTUP, /* shell, direnv, editor/IDE start-up files */
	MOAT_RISK_AGENT, /* agent configuration and instructions */
	MOAT_RISK_MANIFEST, /* lifecycle scripts, registry settings, build hooks */
	MOAT_RISK_SYMLINK_OUT, /* symlinks leaving the workspace */
	MOAT_RISK_PATTERN, /* the policy's flag_patterns */
	MOAT_RISK_REPO, /* inside a git repository created in the run: all or nothing */
	MOAT_RISK_EXECUTABLE, /* newly executable files (build outputs, scripts) */
	MOAT_RISK_DEPS, /* inside a dependency tree (node_modules/, .venv/, ...) */
	MOAT_RISK_COUNT,
};

/* "hooks", "ci", ... ("" for NONE, NULL past the end). */
const char *moat_risk_class_name(enum moat_risk_class c);
/* The class of a name, or -ENOENT. */
int moat_risk_class_from_name(const char *s);
/* Does the class run code automatically (held unless accept_automatic)? */
bool moat_risk_class_automatic(enum moat_risk_class c);
/* Is path (relative, '/'-separated, of type S_IFMT bits) inside a dependency
 * tree: a component node_modules, .venv, ... that is a directory, and no
 * ".git" component anywhere (a nested repository is never a dependency)? */
bool moat_risk_in_deps(const char *path, mode_t type);
/* The length of path up to and including its first dependency directory
 * component ("a/node_modules" of "a/node_modules/x/y"), 0 if none. */
size_t moat_risk_deps_prefix(const char *path);

/* Glob match of a whole relative path: '*', '?', '[...]' within one
 * component (fnmatch, case-insensitive), '**' as a whole component matches
 * zero or more components; a last "**" component also matches its parent. A glob without '/'
 * matches the last component at any depth ("*.sh" = "**" "/" "*.sh"). */
bool moat_glob_match(const char *glob, const char *path);

struct moat_flag_rule {
	const char *pattern; /* fnmatch(3) glob, case-insensitive, '*' does not match '/' */
	const char *reason;
	unsigned flags;
	enum moat_risk_class cls;
};

extern const struct moat_flag_rule moat_flag_builtin[];
extern const size_t moat_flag_builtin_count;

struct moat_flag_rules;

/* Built-in rules plus extra patterns from the policy (flag_patterns): a
 * trailing '/' means the subtree, a leading '/' anchors at the workspace
 * root. Caller frees with moat_flag_rules_free(). */
int moat_flag_rules_new(const char *const *extra, size_t n_extra, struct moat_flag_rules **ret);
struct moat_flag_rules *moat_flag_rules_free(struct moat_flag_rules *r);
/* The reason of the first path rule matching path (relative, '/'-separated)
 * for an entry of type (S_IFMT bits), or NULL. rules NULL = built-in only.
 * ret_cls (may be NULL) gets the rule's class. */
const char *moat_flag_match(const struct moat_flag_rules *rules, const char *path, mode_t type);
const char *moat_flag_match_class(const struct moat_flag_rules *rules, const char *path,
				  mode_t type, enum moat_risk_class *ret_cls);

/* ---- review decisions (accept / hold) --------------------------------------- */

/* What the user asked: items are class names or path globs (moat_glob_match).
 * Precedence (docs/FLAGGED.md): refused stays refused; entries of class repo
 * follow class items only (a repository is applied or held whole); a hold
 * glob, then an accept glob (for an automatic class only with
 * accept_automatic); then a hold class, then an accept class; then the
 * class's default (automatic: held, others: applied and listed). */
struct moat_review_rules {
	const char *const *accept;
	size_t n_accept;
	const char *const *hold;
	size_t n_hold;
	bool accept_automatic;
};

/* Check one accept or hold item: a class name or a glob (no NUL, control
 * bytes, leading '/', "..", at most 1024 bytes). For accept without
 * accept_automatic, an automatic class or a glob that covers a path of an
 * automatic class (.git/hooks/x, .git/config, .github/workflows/x, ...) is
 * refused: -EPERM, why says which. Other errors -EINVAL. */
int moat_review_item_check(const char *item, bool accept, bool accept_automatic, char *why,
			   size_t whylen);
/* Does an accept item reach an automatic class (for the loud warning)? */
bool moat_review_item_automatic(const char *item);
/* Is the entry held under the rules (NULL = defaults)? Refused entries: false. */
bool moat_review_holds(const struct moat_review_rules *rr, const struct moat_fs_entry *e);
/* Set every entry's accepted from the rules. */
void moat_review_decide(const struct moat_review_rules *rr, struct moat_manifest *m);
/* Does item (class name or glob) select the entry (for `moat apply --accept`)? */
bool moat_review_item_selects(const char *item, const struct moat_fs_entry *e);

/* ---- manifest ------------------------------------------------------------- */

enum moat_fs_change {
	MOAT_FS_CREATED,
	MOAT_FS_MODIFIED, /* content or type changed */
	MOAT_FS_DELETED, /* for a directory: the whole subtree */
	MOAT_FS_MODE, /* same content, permission bits changed */
	MOAT_FS_XATTR, /* same content and mode, extended attributes changed */
};

enum moat_fs_state {
	MOAT_FS_PENDING,
	MOAT_FS_APPLIED,
	MOAT_FS_HELD, /* flagged, held back under safe */
	MOAT_FS_REFUSED, /* never applied */
	MOAT_FS_FAILED, /* err says why */
	MOAT_FS_CONFLICT, /* the target changed since the manifest was computed */
	MOAT_FS_DROPPED, /* not applied and not kept: over the held-data cap */
};

struct moat_fs_entry {
	char *path; /* relative to the workspace, raw bytes; escape before printing */
	enum moat_fs_change change;
	mode_t type, old_type; /* S_IFMT bits; old_type 0 = did not exist */
	mode_t mode, old_mode; /* 07777 bits */
	uint64_t size, old_size;
	int64_t mtime_ns;
	uint8_t sha256[32], old_sha256[32];
	bool has_sha, has_old_sha;
	bool opaque; /* directory whose old contents were replaced */
	char *target; /* symlink target (raw bytes) */
	/* extended attributes after the run (user.*, trusted.* but overlay's own,
	 * security.capability, system.posix_acl_*): "name=hexvalue\n" lines,
	 * names sorted; NULL = none. xattr_diff: "+name ~name -name" against
	 * before, NULL = unchanged. */
	char *xattrs, *xattr_diff;
	char *flagged; /* why it is flagged, or NULL */
	enum moat_risk_class cls; /* the class of flagged (NONE if not flagged) */
	bool accepted; /* flagged but applied under safe (listed): moat_review_decide() */
	char *refused; /* why it is never applied, or NULL */
	enum moat_fs_state state;
	int err; /* positive errno for MOAT_FS_FAILED */
	/* the host changed this path during the run (limits.since_ns): the
	 * apply that ends the run leaves it as a conflict; `moat apply` may
	 * still apply it (not stored) */
	bool host_changed;
};

struct moat_manifest {
	struct moat_fs_entry *entries;
	size_t n, cap;
	char *workspace; /* the host directory it applies to (informational, saved) */
	bool from_store; /* loaded from a run dir: sources are held/<sha256> */
	uint64_t total_bytes; /* of regular files created or modified */
};

struct moat_fsdiff_limits {
	size_t max_entries; /* default 100000: past it, compute fails with -E2BIG */
	unsigned max_depth; /* default 128: deeper directories are refused */
	uint64_t max_file_bytes; /* default 4 GiB: larger files are refused, never read */
	const char *workspace; /* host path of the lower dir: maps absolute references (git
				* include.path, gitdir:) into it; NULL = only relative ones */
	/* > 0: the time (ctime's clock) the run began; a lower entry (not a
	 * directory) whose ctime is later was changed on the host during the
	 * run: host_changed, applied as a conflict */
	int64_t since_ns;
};

/* Walk upper (and lower, -1 if none) and build the manifest. Both fds are
 * directories (O_PATH is fine). rules NULL = built-in rules; limits NULL =
 * defaults. Caller frees *ret with moat_manifest_free(). */
int moat_fsdiff_compute(int upper_dirfd, int lower_dirfd, const struct moat_flag_rules *rules,
			struct moat_manifest **ret);
int moat_fsdiff_compute_ex(int upper_dirfd, int lower_dirfd, const struct moat_flag_rules *rules,
			   const struct moat_fsdiff_limits *limits, struct moat_manifest **ret);
struct moat_manifest *moat_manifest_free(struct moat_manifest *m);

/* Exposed for tests: is (type, rdev) an overlay whiteout? */
bool moat_fsdiff_is_whiteout(mode_t mode, dev_t rdev);
/* Does a relative symlink target at path (or an absolute one) leave the tree? */
bool moat_fsdiff_link_escapes(const char *path, const char *target);

/* ---- apply ---------------------------------------------------------------- */

enum moat_fsapply_mode {
	MOAT_FSAPPLY_SAFE, /* hold back flagged entries not accepted */
	MOAT_FSAPPLY_ALL, /* apply flagged entries too (refused ones never) */
};

struct moat_fsapply_report {
	unsigned applied, held, refused, failed, conflicts, skipped;
};

/* Apply the pending entries of m (state PENDING, or HELD under ALL) into
 * target_dirfd. src_dirfd is the upper dir, or the run's held/ dir when
 * m->from_store. only_paths (NULL-terminated, may be NULL) limits it to those
 * paths and everything below them. Each entry's state is updated. Returns 0
 * if nothing failed, -EIO if some entries failed (see the states), other
 * -errno if nothing could be tried. */
int moat_fsdiff_apply(struct moat_manifest *m, int src_dirfd, int target_dirfd,
		      enum moat_fsapply_mode mode, const char *const *only_paths,
		      struct moat_fsapply_report *ret);

/* ---- output and persistence ----------------------------------------------- */

/* JSON (one object: {"v":1,"workspace":…,"entries":[…],"summary":{…}}).
 * Paths that are not clean UTF-8 also get "path_hex". Caller frees. */
int moat_manifest_to_json(const struct moat_manifest *m, char **ret);
/* Readable text, one change a line, control bytes escaped. Caller frees. */
int moat_manifest_to_text(const struct moat_manifest *m, char **ret);
/* One `file` event per entry and an `alert` per flagged or refused one. */
int moat_manifest_audit(const struct moat_manifest *m, struct moat_audit *a);

/* Save into run_dirfd: the content of every regular file not yet applied
 * (and not refused) copied from upper_dirfd into held/<sha256>, then
 * manifest.json (0600, atomically). upper_dirfd < 0: only rewrite
 * manifest.json (state update). All or nothing: when the content to keep is
 * over max_bytes (0 = no cap), none is kept, every entry not applied (and not
 * refused) becomes MOAT_FS_DROPPED, the manifest still lists them, and the
 * result is -EFBIG; *ret_need (may be NULL) gets the bytes it needed. */
int moat_fsdiff_save(struct moat_manifest *m, int upper_dirfd, int run_dirfd, uint64_t max_bytes);
int moat_fsdiff_save_ex(struct moat_manifest *m, int upper_dirfd, int run_dirfd, uint64_t max_bytes,
			uint64_t *ret_need);

/* Bytes under the runs directory (bounded walk: run dirs and their held/). */
int moat_runs_usage(const char *runs_dir, uint64_t *ret);
/* Load run_dirfd/manifest.json; the result has from_store set. */
int moat_fsdiff_load(int run_dirfd, struct moat_manifest **ret);
/* held/ of a run dir, for moat_fsdiff_apply() after load. */
int moat_fsdiff_open_store(int run_dirfd);

const char *moat_fs_change_name(enum moat_fs_change c);
const char *moat_fs_state_name(enum moat_fs_state s);
