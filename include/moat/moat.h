/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libmoat — the public API. The CLI uses only this header. It compiles with
 * -std=c11 -pedantic. The library never prints and never exits: every
 * function returns >= 0 on success or -errno on failure, and fills the
 * optional struct moat_error only on failure.
 */
#ifndef MOAT_MOAT_H
#define MOAT_MOAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MOAT_VERSION "0.1.0"
#define MOAT_POLICY_VERSION 1

/* Exit codes of `moat run` (besides the command's own status). */
enum moat_exit {
	MOAT_EXIT_USAGE = 2, /* bad flag, bad policy */
	MOAT_EXIT_TIMEOUT = 124, /* wall-clock limit */
	MOAT_EXIT_SETUP = 125, /* the sandbox could not be set up: nothing ran */
	MOAT_EXIT_CANNOT_EXEC = 126, /* the command exists but could not be executed */
	MOAT_EXIT_NOT_FOUND = 127, /* the command was not found inside the sandbox */
};

/* An error: which stage failed, the errno, a message, and for parse errors the
 * position in the policy file. Filled only on failure. */
struct moat_error {
	char stage[32]; /* "policy", "plan", "mount", "seccomp", … */
	int err; /* positive errno, 0 if none applies */
	unsigned line, column; /* 1-based; 0 when not a parse error */
	char message[512]; /* human readable, names the step and path */
};

/* ---- policy ---------------------------------------------------------------- */

struct moat_policy;

/* A new policy with the safe defaults. Caller owns it; free with moat_policy_free(). */
struct moat_policy *moat_policy_new(void);
struct moat_policy *moat_policy_free(struct moat_policy *p);

/* Merge a JSON policy file into p. Unknown keys, wrong types and bad values
 * are errors with line:column. */
int moat_policy_load_file(struct moat_policy *p, const char *path, struct moat_error *ret_err);
int moat_policy_load_string(struct moat_policy *p, const char *json, size_t len, const char *name,
			    struct moat_error *ret_err);

/* Apply one command-line option (e.g. "--ro", "/srv/data:/data") on top of the
 * policy. `value` is NULL for options that take none. Returns -ENOENT for an
 * option that is not a policy option. moat_policy_option_takes_value() tells
 * whether an option needs a value: 1 yes, 0 no, -ENOENT unknown. */
int moat_policy_set_option(struct moat_policy *p, const char *option, const char *value,
			   struct moat_error *ret_err);
int moat_policy_option_takes_value(const char *option);
/* 1 if the option holds one value (--workspace, --memory...), so that giving it
 * twice on one command line is a mistake; 0 if it adds to a list (--ro,
 * --allow-host...) or is a switch; -ENOENT unknown. */
int moat_policy_option_single(const char *option);

/* One help line per policy option, "--flag VALUE\tdescription", NULL-terminated.
 * Static storage. */
const char *const *moat_policy_option_help(void);

/* A policy option as the option table has it. */
struct moat_option_info {
	const char *flag; /* "--workspace" */
	const char *arg; /* the value's name ("DIR[:MODE]"), NULL: a switch */
	const char *help;
};
/* The i-th policy option, in help order, into *ret (static strings);
 * -ENOENT past the last. Reentrant. */
int moat_policy_option_info(size_t i, struct moat_option_info *ret);

/* Validate the merged policy (cross-key rules, paths exist). */
int moat_policy_validate(const struct moat_policy *p, struct moat_error *ret_err);

/* The effective policy as pretty JSON. Caller frees *ret_json. */
int moat_policy_to_json(const struct moat_policy *p, char **ret_json);

/* The status record's file of `moat run --json-status FILE` (a CLI knob,
 * not part of the policy): FILE relative to the working directory (or with
 * "~/"), which the invoking user may create or replace (the same rules as
 * --log: paths.h). *ret_path gets the absolute path (caller frees). */
int moat_status_path_check(const char *path, char **ret_path, struct moat_error *ret_err);

/* What --workspace DIR:rw|ro would expose (wscheck.c): a bounded walk of DIR
 * that never follows symlinks, and git's upward discovery above it. */
struct moat_workspace_check {
	unsigned long long entries; /* walked */
	unsigned long long hardlinks; /* non-directories with names outside DIR (links) */
	bool truncated; /* the walk hit a bound or an unreadable directory */
	bool repo_above; /* repo is above DIR */
	char repo[1024]; /* the first git repository found by structure, "" if none */
	char hardlink_example[1024];
};
/* Fills *ret for an rw/ro workspace (zeroes it otherwise). */
int moat_workspace_check(const struct moat_policy *p, struct moat_workspace_check *ret,
			 struct moat_error *ret_err);
/* A line to print before the run (rw: review does not apply), or NULL. */
const char *moat_workspace_note(const struct moat_policy *p);

/* The setup plan (ordered steps) as text, one step a line. Caller frees. */
int moat_policy_plan_text(const struct moat_policy *p, char **ret_text);

/* ---- run ------------------------------------------------------------------- */

enum moat_reason {
	MOAT_REASON_EXITED,
	MOAT_REASON_SIGNALED,
	MOAT_REASON_TIMEOUT,
	MOAT_REASON_MEMORY,
	MOAT_REASON_PIDS,
	MOAT_REASON_SETUP_FAILED,
	MOAT_REASON_NOT_FOUND,
	MOAT_REASON_CANNOT_EXEC,
	MOAT_REASON_INTERRUPTED,
};

/* The summary's data is structured: the library fills these, the caller
 * formats them. Names and paths are raw bytes as the sandbox chose them:
 * escape them before they reach a terminal (moat_escape). */

/* A workspace change the summary lists (observe.c): one the run did not
 * apply, in the order of the change manifest. */
enum moat_review_state {
	MOAT_REVIEW_HELD, /* held back: `moat apply` can apply it */
	MOAT_REVIEW_REFUSED, /* a kind that is never applied (devices, set-id, ...) */
	MOAT_REVIEW_FAILED, /* applying it failed */
	MOAT_REVIEW_CONFLICT, /* the target changed on the host during the run */
};
#define MOAT_REVIEW_MAX 12
struct moat_review_entry {
	enum moat_review_state state;
	char path[1024]; /* relative to the workspace, raw */
	char reason[256]; /* why it was held, refused or failed */
};
/* "held", "refused", "failed", "conflict" ("?" for anything else). */
const char *moat_review_state_name(enum moat_review_state s);

/* A network destination the run was denied, with how often (the most
 * frequent first). */
#define MOAT_TOP_DENIED_MAX 5
struct moat_denied {
	uint64_t count;
	/* "HOST:PORT", "dns NAME" (--net allow); "ADDR:PORT/PROTO",
	 * "[ADDR6]:PORT/PROTO", "NAME (dns)" (--net none); raw. Kept for the
	 * status record's net_top_denied; a caller formats the fields below. */
	char destination[300];
	char rule[300]; /* the flag that would allow it, "" if none */
	/* the same destination as fields (raw: from the sandbox) */
	bool dns; /* a DNS query: host is the name asked for, port 0 */
	char host[256]; /* the name asked for, "" for a bare address */
	char addr[48]; /* numeric: the address asked for, or the refused
			* answer of a name (reason "resolved-*"); "" if none */
	uint16_t port; /* 0 if none (DNS) or unknown */
	char proto[16]; /* "http", "socks", "transparent", "dns", "tcp", "udp", ... */
	char reason[48]; /* "not-allowed", "resolved-reserved", "network-none", ... */
};

/* A writable tmpfs of the sandbox (--disk: /tmp, /dev/shm, home, /output,
 * the workspace overlay's upper layer; --tmpfs) found full during the run:
 * no free block (or no free inode) was left, so a write there failed or
 * would fail with ENOSPC. Seen by sampling (docs/LIMITS.md, "Disk"). */
#define MOAT_DISK_FULL_MAX 8
struct moat_disk_full {
	char path[1024]; /* its mount point inside the sandbox (the workspace's path for
			  * the overlay), raw */
	uint64_t limit; /* its size in bytes */
	bool inodes; /* its inodes ran out (not its blocks) */
	bool tmpfs_size; /* sized by a --tmpfs DEST:SIZE of its own, not --disk */
};

struct moat_status {
	enum moat_reason reason;
	int exit_code; /* what `moat run` exits with */
	int status; /* the command's exit status, when it exited */
	int signal; /* the signal that killed it, when signaled */
	uint64_t wall_us; /* wall-clock time of the run */
	uint64_t cpu_user_us, cpu_sys_us;
	uint64_t mem_peak; /* bytes, 0 if not measured */
	uint64_t pids_peak; /* 0 if not measured */
	uint64_t denied_syscalls;
	uint64_t net_allowed, net_denied; /* connections (and requests) */
	uint64_t dns_allowed, dns_denied; /* DNS queries moat's resolver answered, refused */
	uint64_t execs;
	char run_id[40];
	char degraded[128]; /* comma-separated layers the user let go, "" if none */

	/* audit and review (observe.c) */
	char log_path[1024]; /* the audit log of the run, "" if none */
	uint64_t files_changed; /* entries of the workspace change manifest */
	uint64_t files_applied, files_held, files_flagged, files_refused;
	/* flagged changes applied because their class runs only when the user
	 * runs it (dependency trees, new executables) or the user accepted it:
	 * how many, and "dependency trees: node_modules/ 300; new executables:
	 * build/app" (escaped, cut) */
	uint64_t files_listed;
	char listed[512];
	/* of them, accepted although their class runs code automatically
	 * (--accept-automatic) */
	uint64_t files_accepted_automatic;
	uint64_t output_files, output_skipped; /* /output: copied, skipped (links, specials) */
	char output_error[256]; /* "" or why /output was not fully collected */
	char stdio_error[256]; /* "" or why the command's stdout/stderr was not all written */
	/* the entries of the change manifest that were not applied, at most
	 * MOAT_REVIEW_MAX in manifest order; review_more: how many more there
	 * are (`moat diff RUN` lists them all) */
	struct moat_review_entry review[MOAT_REVIEW_MAX];
	unsigned n_review;
	uint64_t review_more;
	int review_errno; /* the change manifest could not be computed (nothing
			   * was applied): why, as an errno; 0 otherwise */
	/* the held-back changes needed more than the cap left (--held-max,
	 * --runs-max): none of them was kept for `moat apply` */
	bool held_not_kept;
	uint64_t held_dropped, held_needed, held_cap; /* entries, bytes, bytes */
	/* --workspace DIR:rw: a git repository the run created there (its
	 * config and hooks were not reviewed), raw; "" if none */
	char rw_new_repo[1024];
	/* the most denied network destinations, at most MOAT_TOP_DENIED_MAX */
	struct moat_denied top_denied[MOAT_TOP_DENIED_MAX];
	unsigned n_top_denied;
	/* --net none: network attempts the kernel refused, as recorded by the
	 * seccomp listener (also counted in net_denied) */
	uint64_t net_none_attempts;
	/* cgroup limits that were hit (0 when not hit or not measured): forks
	 * refused at the pids limit, processes killed at the memory limit, with
	 * the limits (pids, bytes) */
	uint64_t pids_limit_hits, pids_limit;
	/* the command failed (not exit 0, or killed, timed out, interrupted):
	 * no workspace change was applied (--apply-on-failure applies them) */
	bool held_failed;
	uint64_t oom_kills, memory_limit;
	/* the writable tmpfs areas found full, in plan order (at most
	 * MOAT_DISK_FULL_MAX; disk_full_more: how many more) */
	struct moat_disk_full disk_full[MOAT_DISK_FULL_MAX];
	unsigned n_disk_full;
	unsigned disk_full_more;
};

const char *moat_reason_name(enum moat_reason r);

/* Escapes in[0..len) for a terminal or a JSON string by the audit stream's
 * rules (docs/AUDIT.md, "Escaping": quotes and backslashes, control bytes,
 * C1 and bidi controls, line separators, invalid UTF-8) into out, always
 * NUL-terminated when outlen > 0, never splitting an escape or a character.
 * Returns the length the whole escaping needs, like snprintf. */
size_t moat_escape(const char *in, size_t len, char *out, size_t outlen);

/* True when this process is the host's root: euid 0 in the initial user
 * namespace (or in one whose uid 0 and gid are the parent's 0). uid 0 of a
 * user namespace an unprivileged user made (rootless podman runs its
 * runtime so) is false: moat then works as that user does, unprivileged.
 * Where the maps cannot be read it is true (the privileged path, which
 * never maps host uid 0 into a sandbox, fails where it lacks privilege). */
bool moat_host_root(void);

/* Run argv[0] with argv inside a fresh sandbox described by p. Blocks until the
 * sandbox is gone (every process dead, every temporary removed). On success
 * fills *ret_status (including a failed or killed command). Returns < 0 only
 * when the sandbox could not be set up; then *ret_status has
 * MOAT_REASON_SETUP_FAILED and ret_err says which step failed. */
int moat_run(const struct moat_policy *p, char *const argv[], struct moat_status *ret_status,
	     struct moat_error *ret_err);

/* ---- sandboxes with a lifecycle ------------------------------------------- */

/* A sandbox that outlives one command: moat_sandbox_create() brings up the
 * namespaces, the root, the limits, the network and its helpers, with
 * nothing of the caller's running; moat_sandbox_exec() starts processes in
 * it (any number, concurrently, each recorded); moat_sandbox_destroy() kills
 * everything, collects /output, computes the change manifest, writes the
 * exit record and removes every temporary. moat_run() is create + exec +
 * wait + destroy.
 *
 * Driving: every sandbox has one descriptor (moat_sandbox_fd) that becomes
 * readable when something is to be done; moat_sandbox_dispatch() does it
 * without blocking, so one thread can supervise many sandboxes with poll().
 * moat_proc_wait() blocks (dispatching that sandbox) until a process ended.
 * The caller must block or ignore SIGPIPE (moat writes to pipes whose
 * reader may be gone). If the thread that created a sandbox dies, even by
 * SIGKILL, every process of that sandbox dies with it.
 * Reentrant: sandboxes share no state; each is used by one thread at a time.
 * --net allow needs the process to be the `moat` executable: the egress
 * proxy is exec'd as /proc/self/exe __proxy and the network plugins are
 * found next to it (moat run, moat create and moat mcp are). */
struct moat_sandbox;
struct moat_proc;

int moat_sandbox_create(const struct moat_policy *p, struct moat_sandbox **ret,
			struct moat_error *ret_err);

/* The same create without its wait, for an event loop that serves other
 * sandboxes meanwhile (moat_sandbox_create() is this start and the steps
 * until done): returns once the sandbox's init was cloned and released to
 * assemble the sandbox, with *ret being created, or < 0 as
 * moat_sandbox_create() (ret_err names the step and why). Then, when
 * moat_sandbox_fd() is readable, and at the latest
 * moat_sandbox_create_due_ms() later, moat_sandbox_create_poll(): 1 once it
 * is ready (as moat_sandbox_create() returns it), 0 while it is still being
 * set up, < 0 when its set-up failed (ret_err says at which step and why,
 * as moat_sandbox_create() does; *sb is gone then). A set-up that is not
 * ready within the bound (30 s: it stalled) fails and the sandbox is ended.
 * Until it is ready only these, moat_sandbox_id(), moat_sandbox_fd() and
 * moat_sandbox_destroy() apply (a destroy abandons it: nothing is left of
 * it, and no exit record is written, as for a failed set-up). */
int moat_sandbox_create_start(const struct moat_policy *p, struct moat_sandbox **ret,
			      struct moat_error *ret_err);
int moat_sandbox_create_poll(struct moat_sandbox *sb, struct moat_error *ret_err);
/* ms until moat_sandbox_create_poll() must be called again; -1 once ready */
int moat_sandbox_create_due_ms(const struct moat_sandbox *sb);
/* The run id (also the audit log's name). */
const char *moat_sandbox_id(const struct moat_sandbox *sb);
int moat_sandbox_fd(const struct moat_sandbox *sb);
/* Handles what is ready; returns >= 0, or < 0 if the sandbox failed (its
 * init died: every process is gone). */
int moat_sandbox_dispatch(struct moat_sandbox *sb);
/* Sends sig to every process of the sandbox. */
int moat_sandbox_signal(struct moat_sandbox *sb, int sig);

struct moat_exec {
	char *const *argv; /* argv[0] is looked up in the sandbox's PATH */
	char *const *env; /* "NAME=VALUE" set over the sandbox's environment, or NULL */
	const char *cwd; /* NULL: the sandbox's working directory */
	int fd[3]; /* the caller's fds relayed to the process's 0..2; -1: closed */
	unsigned tty_mask; /* bits 0..2: these streams are on a new terminal of the
			    * sandbox instead (relayed from fd[0], to fd[1] or else fd[2]) */
	uint64_t timeout_ms; /* 0: the policy's --timeout (0 there: none) */
};

/* Starts a process. Returns when it was executed, or < 0 when it could not
 * be (-ENOENT: not found, ...; ret_err says why; nothing is left of it). */
int moat_sandbox_exec(struct moat_sandbox *sb, const struct moat_exec *x, struct moat_proc **ret,
		      struct moat_error *ret_err);

/* The same start without its wait, for an event loop that serves other
 * sandboxes meanwhile: returns with *ret starting (the request is with the
 * sandbox), or < 0 as moat_sandbox_exec(). Then, after each
 * moat_sandbox_dispatch() of the sandbox, when moat_proc_start_fd() is
 * readable, and at the latest moat_proc_start_due_ms() later,
 * moat_proc_start_poll(): 1 once it executed its command (the process is
 * then as moat_sandbox_exec() returns it), 0 while still starting, < 0 when
 * it could not start (ret_err says why; *pr is gone then). A start that
 * takes longer than the bound (15 s: a process of the sandbox stopped the
 * new one) fails: the process is killed, or the sandbox ended if its init
 * is held. moat_proc_release() abandons a starting process. */
int moat_sandbox_exec_start_async(struct moat_sandbox *sb, const struct moat_exec *x,
				  struct moat_proc **ret, struct moat_error *ret_err);
int moat_proc_start_poll(struct moat_proc *pr, struct moat_error *ret_err);
/* The fd to watch (POLLIN) while starting, -1 when there is none */
int moat_proc_start_fd(const struct moat_proc *pr);
/* ms until moat_proc_start_poll() must be called again; -1: no bound */
int moat_proc_start_due_ms(const struct moat_proc *pr);

struct moat_proc_status {
	enum moat_reason reason; /* EXITED, SIGNALED or TIMEOUT */
	int exit_code; /* as `moat run` would exit */
	int status, signal;
	uint32_t id; /* the process's number in the sandbox's audit stream */
	int pid; /* in the sandbox */
	uint64_t wall_us, cpu_user_us, cpu_sys_us, mem_peak;
	char stdio_error[256];
};

/* 1 when the process ended and its output was relayed, else 0. */
int moat_proc_done(const struct moat_proc *pr);
/* Blocks until the process ended and its output was relayed; fills *ret. */
int moat_proc_wait(struct moat_proc *pr, struct moat_proc_status *ret);
/* The status of a process that is done (-EBUSY before). */
int moat_proc_status(const struct moat_proc *pr, struct moat_proc_status *ret);
/* Sends sig to the process's group (its session: each process has its own). */
int moat_proc_signal(struct moat_proc *pr, int sig);
/* The terminal's size (tty_mask processes). */
int moat_proc_resize(struct moat_proc *pr, unsigned rows, unsigned cols);
/* Forgets a process: one that still runs is killed first. */
void moat_proc_release(struct moat_proc *pr);

/* Files of a ready sandbox. Each is done by a process of the sandbox (with
 * its user, mounts, seccomp and Landlock: what its own processes could do,
 * recorded like them). Paths are absolute paths inside the sandbox. */
enum moat_file_type {
	MOAT_FILE_REG,
	MOAT_FILE_DIR,
	MOAT_FILE_SYMLINK,
	MOAT_FILE_OTHER
};
struct moat_file_info {
	enum moat_file_type type;
	uint64_t size;
	unsigned mode; /* permission bits */
	uint64_t mtime_s;
	char name[256]; /* the last component */
};
/* At most max bytes; *ret_truncated (may be NULL) if there was more.
 * -ENOENT if it cannot be read. Caller frees *ret_data. */
int moat_sandbox_read_file(struct moat_sandbox *sb, const char *path, uint64_t max, char **ret_data,
			   size_t *ret_len, bool *ret_truncated, struct moat_error *ret_err);
/* Creates or replaces the file (the directory must exist). */
int moat_sandbox_write_file(struct moat_sandbox *sb, const char *path, const void *data, size_t len,
			    struct moat_error *ret_err);
/* Creates a new directory (its parent must exist) with mode's permission
 * bits (the sandbox's umask applies); one that exists is an error (-EIO,
 * ret_err has mkdir's message), never reused. */
int moat_sandbox_mkdir(struct moat_sandbox *sb, const char *path, unsigned mode,
		       struct moat_error *ret_err);
/* The entries of a directory (not . and ..); 1 if the listing was cut at
 * 16 MiB. Caller frees *ret. */
int moat_sandbox_list_dir(struct moat_sandbox *sb, const char *path, struct moat_file_info **ret,
			  size_t *ret_n, struct moat_error *ret_err);
int moat_sandbox_stat(struct moat_sandbox *sb, const char *path, struct moat_file_info *ret,
		      struct moat_error *ret_err);
int moat_sandbox_remove(struct moat_sandbox *sb, const char *path, bool recursive,
			struct moat_error *ret_err);

/* Snapshots of a sandbox's writable state: the workspace overlay's upper
 * layer, /tmp and the home directory (docs/SESSIONS.md, "Snapshots").
 * moat_sandbox_snapshot() freezes what was written so far as a read-only
 * layer (no copy: the layer the sandbox wrote into is kept, and new writes go
 * to a new empty one); moat_sandbox_restore() brings the files back to a
 * snapshot, moat_sandbox_reset() to the sandbox's start. Files only, never
 * process state. Each of the three replaces the sandbox's writable mounts,
 * so it is refused (-EBUSY) while a process of the sandbox runs, unless
 * force (which kills every process first). Names: NULL (snapshot: one is
 * chosen, "snap-N") or [A-Za-z0-9][A-Za-z0-9_.-]*, at most
 * MOAT_SNAPSHOT_NAME_MAX bytes, unique per sandbox (-EEXIST); at most
 * MOAT_SNAPSHOTS_MAX snapshots (-ENOSPC), and their layers count against the
 * policy's disk limit. ret_name (may be NULL) receives the name. -ENOTSUP
 * (ret_err says why) when the sandbox has no layered writable state (a
 * workspace mounted read-write or read-only is the host's, not the
 * sandbox's). */
#define MOAT_SNAPSHOT_NAME_MAX 64
#define MOAT_SNAPSHOTS_MAX 32
struct moat_snapshot_info {
	char name[MOAT_SNAPSHOT_NAME_MAX + 1];
	uint64_t created_us; /* wall clock */
	uint64_t bytes; /* of the files the snapshot holds (what the sandbox had written) */
	bool current; /* the last snapshot taken or restored (none after a reset) */
};
int moat_sandbox_snapshot(struct moat_sandbox *sb, const char *name, bool force,
			  char ret_name[MOAT_SNAPSHOT_NAME_MAX + 1], struct moat_error *ret_err);
int moat_sandbox_restore(struct moat_sandbox *sb, const char *name, bool force,
			 struct moat_error *ret_err);
int moat_sandbox_reset(struct moat_sandbox *sb, bool force, struct moat_error *ret_err);
/* Oldest first. Caller frees *ret. */
int moat_sandbox_snapshot_list(struct moat_sandbox *sb, struct moat_snapshot_info **ret,
			       size_t *ret_n, struct moat_error *ret_err);
/* Forgets a snapshot; its layers are freed once no other snapshot and not the
 * sandbox's current files stack on them. -ENOENT if there is none. */
int moat_sandbox_snapshot_delete(struct moat_sandbox *sb, const char *name,
				 struct moat_error *ret_err);

/* Kills every process, then does what a run's end does. ret_status may be
 * NULL; the sandbox (and every moat_proc of it) is freed. */
int moat_sandbox_destroy(struct moat_sandbox *sb, struct moat_status *ret_status,
			 struct moat_error *ret_err);
/* ---- OCI runtime (docs/OCI.md) ---------------------------------------------- */

/* One entry of process.rlimits (not RLIMIT_CORE: moat keeps it 0). */
#define MOAT_OCI_RLIMITS_MAX 16
struct moat_oci_rlimit {
	int resource; /* RLIMIT_* of <sys/resource.h> */
	unsigned index; /* i of process.rlimits[i], for messages */
	unsigned long long soft, hard;
};

/* The container's process of a bundle. */
struct moat_oci_process {
	char **argv, **env; /* NULL-terminated */
	char *cwd;
	bool terminal;
	unsigned uid, gid; /* process.user */
	bool has_oom; /* process.oomScoreAdj given: */
	int oom_score_adj; /* -1000..1000 (the runtime refuses one below its own) */
	char **notes; /* "FIELD: what moat does instead", NULL-terminated, or NULL */
	char *annotations_json; /* the bundle's annotations as a JSON object */
	char *cgroups_path; /* linux.cgroupsPath, or NULL */
	struct moat_oci_rlimit rlimits[MOAT_OCI_RLIMITS_MAX]; /* process.rlimits */
	unsigned n_rlimits;
	bool disable_oom_killer; /* linux.resources.memory.disableOOMKiller: true */
};
/* Reads BUNDLE/config.json (runtime-spec 1.0-1.2) into p (policy options,
 * on top of what p holds) and *ret; a field moat cannot honour is an error
 * naming it (ret_err). The JSON is parsed by a confined child process.
 * Free *ret with moat_oci_process_done() (also after a failure). */
/* log_dir: where the annotation run.moat.log NAME puts the audit stream
 * (LOG_DIR/NAME; created 0700). */
int moat_oci_config_load(struct moat_policy *p, const char *bundle, const char *log_dir,
			 struct moat_oci_process *ret, struct moat_error *ret_err);
/* A runtime-spec Process file (`exec --process FILE`) into *ret. */
int moat_oci_process_load(const char *file, struct moat_oci_process *ret,
			  struct moat_error *ret_err);
void moat_oci_process_done(struct moat_oci_process *x);
/* The container's cgroup at path (linux.cgroupsPath) instead of moat's own
 * place: the sandbox's create fails where moat may not make it there. */
int moat_oci_cgroup_place(struct moat_policy *p, const char *path);
/* process.rlimits into p: each hard value checked against what moat itself
 * may set (the calling runtime's hard limit, which the container inherits;
 * NOFILE/FSIZE: also p's --nofile/--fsize, set from the hard value), above
 * it an error naming process.rlimits[i]; RLIMIT_NPROC lowered to p's pids
 * limit and the runtime's hard limit. The values the container gets are
 * written back to pr->rlimits (state records them for exec). */
int moat_oci_rlimits_place(struct moat_policy *p, struct moat_oci_process *pr,
			   struct moat_error *ret_err);
/* `pause`: the container's cgroups (and so a freezer, v1 or v2) are made
 * even when only moat's defaults are in play (as root moat makes none for
 * those in `moat run`). */
void moat_oci_freezer_place(struct moat_policy *p);
/* linux.resources.memory.disableOOMKiller into p: the run's memory cgroup
 * gets the switch (cgroup v1; create fails on v2, naming the field); an
 * error where moat's cgroup layer is not used (no_cgroup: the engine's
 * --cgroup-manager disabled). */
int moat_oci_oom_killer_place(struct moat_policy *p, const struct moat_oci_process *pr,
			      bool no_cgroup, struct moat_error *ret_err);
/* The name of an RLIMIT_* resource ("RLIMIT_NOFILE"), NULL if none. */
const char *moat_oci_rlimit_name(int resource);
/* RLIMIT_* name -> resource, -1 if not one. */
int moat_oci_rlimit_resource(const char *name);

/* The egress proxy helper of a --net allow run: moat_run() execs moat's own
 * executable as `moat __proxy` with its descriptors at fixed numbers (its
 * event pipe, a sealed memfd with its configuration, a control socket for
 * its listeners); that command calls this, which loads the network plugin
 * moat-net.so (with the checks of every plugin load) and serves until the
 * run ends. Returns the helper's exit status (>= 0), or -EINVAL with ret_err
 * set when this process was not started as such a helper. */
int moat_proxy_helper_main(struct moat_error *ret_err);

/* The init of a sandbox at the gvisor isolation level (docs/ISOLATION.md):
 * runsc starts moat's own executable inside gVisor as `moat __gvisor-init`,
 * with the control channel to the supervisor as its stdin. This serves it
 * and does not return; -EINVAL with ret_err set when fd 0 is not such a
 * channel (the command was not started by moat). */
int moat_gvisor_init_main(struct moat_error *ret_err);

/* The init of a guest at the vm isolation level: PID 1 of the initramfs
 * moat builds, started by the guest kernel as `/init __vm-init`. Does not
 * return (exits with a usage error when not PID 1). */
_Noreturn void moat_vm_init_main(void);

/* ---- sessions: sandboxes served by their own supervisor ------------------- */

/* moat_session_create() forks a supervisor process (setsid, detached from the
 * caller) that creates the sandbox and serves it on a unix socket in the
 * user's sessions directory (root: /run/moat/sessions; else
 * $XDG_RUNTIME_DIR/moat/sessions or $XDG_STATE_HOME/moat/sessions, or
 * ~/.local/state/moat/sessions; 0700, the caller's own). It returns only when
 * the sandbox is ready (or could not be set up: ret_err names the step). If
 * the supervisor dies, every process of the sandbox dies. Only the user that
 * created a session can reach it (directory mode, SO_PEERCRED). The caller
 * must block or ignore SIGPIPE. The other functions take the session's id
 * or its name. */
#define MOAT_SESSION_NAME_MAX 64
struct moat_session_opts {
	const char *name; /* NULL or [A-Za-z0-9][A-Za-z0-9_.-]*, unique per user */
	uint64_t idle_timeout_ms; /* destroyed after this long without a process: 0 none */
	uint64_t lifetime_ms; /* destroyed this long after creation: 0 none */
};
int moat_session_create(const struct moat_policy *p, const struct moat_session_opts *o,
			char ret_id[40], struct moat_error *ret_err);

struct moat_session_info {
	char id[40];
	char name[MOAT_SESSION_NAME_MAX + 1];
	char state[16]; /* "idle", "running" (processes run), "ended" (its init is
			 * gone: nothing runs in it, see reason), "gone" (supervisor died),
			 * "busy" (moat_session_list: it did not answer within 2 s) */
	char reason[160]; /* "ended": why, e.g. the exec bound ended it */
	int pid; /* the supervisor */
	uint64_t created_us; /* wall clock */
	uint64_t execs; /* processes started */
	unsigned running; /* processes running */
	uint64_t mem_current; /* bytes, 0 if not measured */
	uint64_t idle_timeout_ms, lifetime_ms;
	char policy_sha256[65]; /* of the effective policy's JSON */
	/* the limits as set in the effective policy (0: none) */
	uint64_t memory_max, cpus_milli, pids_max, disk_max, timeout_ms;
};
/* Every session of this user; those whose supervisor died are listed as
 * "gone" once and their socket is removed. Caller frees *ret. */
int moat_session_list(struct moat_session_info **ret, size_t *ret_n, struct moat_error *ret_err);
/* moat gc: what dead sessions of this user left in the sessions directory:
 * the socket of a session whose supervisor died (it refuses connections and
 * its id is not among live_ids, the runs moat_ps() lists as live: a
 * supervisor between bind() and listen() is live) and every name file no
 * supervisor holds locked. *ret_removed (may be NULL): how many went. */
int moat_session_gc(const char *const *live_ids, size_t n_live, unsigned *ret_removed,
		    struct moat_error *ret_err);
/* One session; -ENOENT (ret_err says so) if there is none of that id or name. */
int moat_session_info(const char *id, struct moat_session_info *ret, struct moat_error *ret_err);

/* A process started in a session: x->fd[] are passed to the supervisor
 * (SCM_RIGHTS) and relayed as moat_sandbox_exec() does. Returns when the
 * process was executed; on failure ret_err's stage is "command" when the
 * command could not be executed (err ENOENT: not found), "session" when the
 * session does not exist. Caller frees *ret with moat_session_exec_free()
 * (which kills a process that still runs). */
struct moat_session_exec;
int moat_session_exec(const char *id, const struct moat_exec *x, struct moat_session_exec **ret,
		      struct moat_error *ret_err);
/* Readable when the process ended (then moat_session_exec_wait() returns at once). */
int moat_session_exec_fd(const struct moat_session_exec *e);
int moat_session_exec_signal(struct moat_session_exec *e, int sig);
int moat_session_exec_resize(struct moat_session_exec *e, unsigned rows, unsigned cols);
/* Blocks until the process ended; -EPIPE if the session went away first. */
int moat_session_exec_wait(struct moat_session_exec *e, struct moat_proc_status *ret);
struct moat_session_exec *moat_session_exec_free(struct moat_session_exec *e);

/* The sessions directory of this thread's later moat_session_* calls (and
 * of the supervisors they fork): path (absolute; the caller's own, 0700,
 * created if missing) instead of the user's; NULL: the user's again. The OCI
 * runtime keeps each container's session in the container's state
 * directory. */
int moat_session_set_dir(const char *path, struct moat_error *ret_err);

/* OCI containers (docs/OCI.md): the session's container process, kept (with
 * x->fd[], passed to the supervisor) until moat_session_start() executes it.
 * When it ends, the session ends as moat_session_remove() ends it and the
 * supervisor exits as the process did (its exit status, or killed by the
 * same signal): an engine's subreaper that waits for the supervisor's pid
 * (*ret_pid) sees the container's status. Once per session; info's state is
 * then "created", "running" or "stopped". */
int moat_session_prepare(const char *id, const struct moat_exec *x, int *ret_pid,
			 struct moat_error *ret_err);
int moat_session_start(const char *id, struct moat_error *ret_err);
/* sig to the container's process group (all: to every process of the
 * sandbox); before start, any signal ends the container. */
int moat_session_kill(const char *id, int sig, bool all, struct moat_error *ret_err);
/* Freezes (on) or thaws every process of a running container (its cgroup's
 * freezer; -EOPNOTSUPP without one). Info's state is "paused" meanwhile. */
int moat_session_pause(const char *id, bool on, struct moat_error *ret_err);

/* Kills every process of the session (its files stay; new processes may be
 * started). */
int moat_session_stop(const char *id, struct moat_error *ret_err);
/* Destroys the session as a run ends (moat_sandbox_destroy(): /output,
 * manifest and review, exit record); refused (-EBUSY) while processes run
 * unless force. The supervisor then exits. ret_status may be NULL. */
int moat_session_remove(const char *id, bool force, struct moat_status *ret_status,
			struct moat_error *ret_err);
/* Regular files between the host and a session, at most max bytes (-EFBIG
 * beyond). copy_in reads host_path (never through a symlink; a regular file
 * only); copy_out writes host_path as moat writes files for the user (never
 * through a symlink, an existing non-regular file refused, truncated) only
 * once the sandbox's file was read. *ret_len (may be NULL): bytes copied. */
int moat_session_copy_in(const char *id, const char *host_path, const char *path, uint64_t max,
			 uint64_t *ret_len, struct moat_error *ret_err);
int moat_session_copy_out(const char *id, const char *path, const char *host_path, uint64_t max,
			  uint64_t *ret_len, struct moat_error *ret_err);

/* Snapshots of a session (moat_sandbox_snapshot() and the others, done by
 * its supervisor); the same rules and errors. */
int moat_session_snapshot(const char *id, const char *name, bool force,
			  char ret_name[MOAT_SNAPSHOT_NAME_MAX + 1], struct moat_error *ret_err);
int moat_session_restore(const char *id, const char *name, bool force, struct moat_error *ret_err);
int moat_session_reset(const char *id, bool force, struct moat_error *ret_err);
int moat_session_snapshot_list(const char *id, struct moat_snapshot_info **ret, size_t *ret_n,
			       struct moat_error *ret_err);
int moat_session_snapshot_delete(const char *id, const char *name, struct moat_error *ret_err);

/* Write the status record as one JSON object to path (mode 0600). */
int moat_status_write_json(const struct moat_status *st, const char *path,
			   struct moat_error *ret_err);

/* ---- MCP server ------------------------------------------------------------ */

/* `moat mcp`: a Model Context Protocol server on the caller's stdin and
 * stdout (one JSON-RPC message a line) whose tools run commands and edit
 * files in sandboxes of policy p, fixed here (no tool argument changes it).
 * The client's bytes are parsed by a separate process (moat_mcp_front_main,
 * exec'd from /proc/self/exe as "moat __mcp-front": exactly fds 0-2 and one
 * socket, nobody when started as root, no capabilities, no_new_privs, its
 * own seccomp filter); this process holds the sandboxes and puts /dev/null
 * on its own stdin and stdout. Returns when the client closes stdin (or on
 * SIGINT/SIGTERM/SIGHUP) after destroying every sandbox; < 0 if the server
 * could not start. Ignores SIGPIPE. */
int moat_mcp_serve(const struct moat_policy *p, struct moat_error *ret_err);
/* The front's main (the executable's "moat __mcp-front"); its exit status. */
int moat_mcp_front_main(void);

/* ---- HTTP API ---------------------------------------------------------------- */

/* `moat serve`: an HTTP/1.1 + JSON API (docs/API.md) over a unix socket
 * (mode 0600; socket_path NULL: moat_serve_socket_default()) and, with
 * listen ("ADDR:PORT"), over TCP, which needs token_file (bearer tokens,
 * tenants and quotas) and may use TLS (tls_cert and tls_key, PEM). The
 * policy p is the ceiling: a request narrows it, never widens it. HTTP is
 * parsed by a separate process (the executable moat-serve-front next to
 * moat: nobody when started as root, no capabilities, no_new_privs, its
 * own seccomp filter, only its listening sockets and one channel to this
 * process); this process holds the sandboxes. pools: "N" or "N:POLICY"
 * each (N sandboxes kept ready for the ceiling, or for it narrowed by the
 * policy file POLICY). on_ready (may be NULL) is called once it listens,
 * with the unix socket's path and the TCP address bound ("ADDR:PORT", NULL
 * without listen). Returns on SIGINT/SIGTERM/SIGHUP or when the front ends,
 * after destroying every sandbox; < 0 if it could not start. Ignores
 * SIGPIPE. */
struct moat_serve_opts {
	const char *socket_path;
	const char *listen;
	const char *token_file;
	const char *tls_cert, *tls_key;
	const char *const *pools;
	size_t n_pools;
	/* also speak E2B's protocol (docs/E2B.md): its REST lifecycle API and
	 * the in-sandbox process and filesystem services, for E2B's SDKs */
	bool e2b;
	void (*on_ready)(const char *socket_path, const char *tcp_addr, void *userdata);
	void *userdata;
};
int moat_serve(const struct moat_policy *p, const struct moat_serve_opts *o,
	       struct moat_error *ret_err);
/* The default socket: /run/moat/serve.sock for root, else
 * $XDG_RUNTIME_DIR/moat/serve.sock (the directory of the sessions
 * directory's rules, docs/SESSIONS.md). */
int moat_serve_socket_default(char *buf, size_t len);

/* ---- audit log and workspace review ----------------------------------------- */

/* The audit log of a run: run_or_file is a run id (its log is found under the
 * runs directory) or a path. types_csv ("exec,net") may be NULL for all types;
 * denied_only keeps events with "denied":true. Caller frees with moat_log_free(). */
struct moat_log;
int moat_log_open(const char *run_or_file, const char *types_csv, bool denied_only,
		  struct moat_log **ret, struct moat_error *ret_err);
/* The next event: 1 with the raw JSON line and a readable one-line rendering
 * (control bytes escaped; either pointer may be NULL), 0 at the end, < 0 on
 * error. Caller frees the strings. */
int moat_log_next(struct moat_log *l, char **ret_line, char **ret_text);
/* Lines skipped because they are not valid events. */
uint64_t moat_log_bad_lines(const struct moat_log *l);
struct moat_log *moat_log_free(struct moat_log *l);

/* The workspace change manifest of a run, as text (control bytes escaped) or
 * JSON. Caller frees *ret_text. */
int moat_review_diff(const char *run_id, bool json, char **ret_text, struct moat_error *ret_err);
/* Apply held-back (and not yet applied) changes of a run into its workspace:
 * only `paths` and what is below them if paths is non-NULL (NULL-terminated).
 * Refused entries are never applied. *ret_text (may be NULL) gets the
 * resulting manifest as text. Returns 0, or -EIO if some entries failed or
 * conflicted. */
/* The same for the held changes a class name or path glob of accept
 * (NULL-terminated, non-empty) selects (docs/FLAGGED.md); -ENOENT if none. */
int moat_review_apply_accept(const char *run_id, const char *const *accept, char **ret_text,
			     struct moat_error *ret_err);
int moat_review_apply(const char *run_id, const char *const *paths, char **ret_text,
		      struct moat_error *ret_err);
/* Removes the record of a finished run (its log and held-back changes) from
 * the runs directory; used by `moat selftest` for its own runs. */
int moat_run_forget(const char *run_id, struct moat_error *ret_err);

/* ---- doctor ---------------------------------------------------------------- */

/* Probe the running kernel. Caller frees *ret_json (a JSON object) and, if
 * asked, *ret_text (a readable report). */
int moat_doctor(char **ret_json, char **ret_text);
/* Proves isolation level "process", "gvisor" or "vm" by booting it: `moat
 * run --isolation LEVEL [--vm-accel VM_ACCEL] -- /bin/echo MARKER` of the
 * calling program (/proc/self/exe: it must be moat), killed after 180 s.
 * vm_accel: NULL (the policy's), "kvm" or "any". 0 booted (exit 0, the
 * marker came back), 1 not, -EINVAL for another level or accelerator,
 * -errno. Caller frees *ret_json and *ret_text (set unless < 0). */
int moat_doctor_boot(const char *level, const char *vm_accel, char **ret_json, char **ret_text);

/* ---- selftest: the red-team battery (moat selftest) ------------------------ */

/* Each probe of the battery runs as a positive control without moat (never as
 * host root) and then inside `moat run` with the given policy options; the
 * calling program must be moat itself (the probes run as `moat __probe NAME`
 * through /proc/self/exe). Nothing is printed. */
/* (MOAT_SELFTEST_* names are reserved for test-only switches, which the
 * shipped binary must not contain: tests/integration/shipped.sh.) */
enum moat_selftest_verdict {
	MOAT_PROBE_HELD, /* every attempt the control showed open was held */
	MOAT_PROBE_SKIPPED, /* the control showed nothing open (reason says why) */
	MOAT_PROBE_INCONCLUSIVE,
	MOAT_PROBE_ESCAPED /* an attempt succeeded inside */
};
#define MOAT_PROBE_MAX_ATTEMPTS 160
struct moat_selftest_attempt {
	char id[128]; /* "RT-005/unshare-user" */
	char ctl[16]; /* the control's class (FAIL = open), "" if it did not try */
	char in[16]; /* the class inside the sandbox */
	char detail[200];
	const char *verdict; /* this attempt's verdict (a static string) */
};
struct moat_selftest_result {
	const char *probe, *title; /* static strings */
	enum moat_selftest_verdict verdict;
	char reason[600]; /* why, unless held */
	unsigned n_attempts;
	struct moat_selftest_attempt attempts[MOAT_PROBE_MAX_ATTEMPTS];
};
struct moat_selftest;

/* "held", "skipped", "inconclusive", "escaped". */
const char *moat_selftest_verdict_name(enum moat_selftest_verdict v);
/* The probes of the battery, in order: i < moat_selftest_count(). */
unsigned moat_selftest_count(void);
const char *moat_selftest_probe(unsigned i); /* "rt005_userns" */
const char *moat_selftest_title(unsigned i); /* "RT-005 nested user namespace" */
/* A battery with its own temporary directory; run_opts (copied) are the
 * policy options given to every inner `moat run`, checked by the caller.
 * Caller owns *ret; moat_selftest_free() removes the directory. */
int moat_selftest_new(char *const *run_opts, int n_run_opts, struct moat_selftest **ret,
		      struct moat_error *ret_err);
struct moat_selftest *moat_selftest_free(struct moat_selftest *s);
bool moat_selftest_as_root(const struct moat_selftest *s);
unsigned moat_selftest_control_uid(const struct moat_selftest *s); /* never 0 */
const char *moat_selftest_workdir(const struct moat_selftest *s);
/* Probe i: its control, its run inside, the verdict into *ret. -EINVAL for
 * a bad i; a failure of the battery's own setup is an inconclusive result. */
int moat_selftest_run(struct moat_selftest *s, unsigned i, struct moat_selftest_result *ret);

/* ---- images: --image (docs/IMAGES.md) ---------------------------------------- */

/* An OCI image opened for use as a sandbox's root: every blob verified by
 * sha256, its layers unpacked (by a confined child) into the per-user cache
 * once, and a shared lock on the cached tree held until moat_image_free()
 * (moat gc leaves it alone meanwhile). path: an OCI image layout directory,
 * or an oci-archive or docker-archive tar. Caller owns *ret. */
struct moat_image;
#define MOAT_IMAGE_OPEN_SETID 1u /* allow set-user-ID / set-group-ID files */
int moat_image_open(const char *path, unsigned flags, struct moat_image **ret,
		    struct moat_error *ret_err);
void moat_image_free(struct moat_image *img);
const char *moat_image_digest(const struct moat_image *img); /* "sha256:..." */
const char *moat_image_root(const struct moat_image *img); /* the cached tree */
bool moat_image_was_unpacked(const struct moat_image *img); /* false: from the cache */
/* Entrypoint followed by Cmd (NULL-terminated; NULL when both are empty):
 * owned by img. */
char *const *moat_image_argv(const struct moat_image *img);
/* The policy's --image (NULL: none) and whether set-id files are allowed. */
const char *moat_policy_image(const struct moat_policy *p);
bool moat_policy_image_setid(const struct moat_policy *p);
/* The image's root, digest and config (Env, WorkingDir, User) into p.
 * Apply it to a fresh policy before the user's options: what they set
 * afterwards replaces the image's defaults. 0 or -errno. */
int moat_policy_image_defaults(struct moat_policy *p, const struct moat_image *img,
			       struct moat_error *ret_err);
/* moat gc: removes the cached images no sandbox holds, and what
 * interrupted unpacks left. */
struct moat_image_gc_result {
	unsigned removed, in_use, stale, failed;
};
int moat_image_gc(struct moat_image_gc_result *ret, struct moat_error *ret_err);
/* moat gc: the vm level's initramfs cache (docs/ISOLATION.md): removes each
 * cached initramfs not used for max_age_s seconds (a run that uses one
 * touches it; a run's QEMU holds its copy open) and what an interrupted
 * build left. No cache directory: 0, nothing counted. */
struct moat_vm_gc_result {
	unsigned removed, kept, failed;
};
int moat_vm_gc(unsigned max_age_s, struct moat_vm_gc_result *ret, struct moat_error *ret_err);

/* ---- state: moat gc / moat ps ----------------------------------------------- */

/* Each live run is recorded in a state directory (/run/moat/runs for root, else
 * $XDG_STATE_HOME/moat/runs or ~/.local/state/moat/runs) with a lock held for
 * the run's lifetime. */
struct moat_gc_result {
	unsigned live; /* runs still alive, left alone */
	unsigned removed; /* dead runs cleaned up */
	unsigned failed; /* dead runs that could not be cleaned completely */
	unsigned cgroups; /* cgroup directories removed (their processes killed) */
	unsigned tmpdirs; /* temporary directories removed */
};

/* Remove what crashed runs left behind. state_dir NULL = the default. */
int moat_gc(const char *state_dir, struct moat_gc_result *ret, struct moat_error *ret_err);

/* The runs directory (logs, manifests, held-back files of finished runs):
 * remove, oldest first, the runs older than retention_ms (0 = no age limit)
 * and then as many as needed to bring the total under max_total bytes (0 =
 * no cap). Runs named in live_ids (NULL-terminated, may be NULL) are kept.
 * runs_dir NULL = the default. */
struct moat_runs_gc_result {
	unsigned removed_age, removed_cap, failed;
	unsigned long long bytes_freed, total_before, total_after;
};
int moat_runs_gc(const char *runs_dir, unsigned long long retention_ms,
		 unsigned long long max_total, const char *const *live_ids,
		 struct moat_runs_gc_result *ret, struct moat_error *ret_err);
/* The defaults of a policy (retention, runs_max), for `moat gc`. */
unsigned long long moat_policy_retention_ms(const struct moat_policy *p);
unsigned long long moat_policy_runs_max(const struct moat_policy *p);

struct moat_run_info {
	char id[65];
	int pid; /* the supervisor */
	uint64_t start_us; /* wall clock, microseconds since the epoch */
};

/* The recorded runs under @runs_dir (NULL: the default), newest first, at
 * most @max (0: all): id, start time, exit status, held count, command; as
 * a table or a JSON array. Caller frees *ret_text. */
int moat_runs_list(const char *runs_dir, size_t max, bool json, char **ret_text,
		   struct moat_error *ret_err);
/* The live runs as a JSON array: id, pid, start_us, argv, command,
 * workspace, limits (from each run's start event). */
int moat_ps_json(const char *state_dir, char **ret_text, struct moat_error *ret_err);
/* Anthropic sandbox-runtime (or Claude Code "sandbox") settings in @path as a
 * moat policy (JSON text, never wider than the input), and what has no
 * equivalent (lines for stderr). Caller frees both. */
int moat_policy_import_srt(const char *path, char **ret_policy, char **ret_notes,
			   struct moat_error *ret_err);
/* The id of the newest run (a buffer of 65 bytes is enough). */
int moat_runs_latest(const char *runs_dir, char *ret_id, size_t len, struct moat_error *ret_err);

/* The live runs. Caller frees *ret with free(). */
int moat_ps(const char *state_dir, struct moat_run_info **ret, size_t *ret_n,
	    struct moat_error *ret_err);

#ifdef __cplusplus
}
#endif
#endif
