/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * README src/audit/: the audit layer: the event stream and its sinks (log, --on-alert), the
 * start/limit/exit records, the observation of a run (observe.c)
 */
/*
 * The audit stream: one JSON object per line (docs/AUDIT.md). The supervisor
 * owns one struct moat_audit per run; everything recorded about the sandbox
 * goes through moat_audit_event(), which escapes and caps every string, caps
 * the number of events and bytes (recording the cap once), counts events per
 * type for the end-of-run summary and calls the alert hook for `alert` events.
 *
 * Call sites stay short with the MOAT_AUDIT() macro:
 *
 *   MOAT_AUDIT(a, MOAT_EV_EXEC, MOAT_F_INT("pid", pid), MOAT_F_STR("path", path),
 *              MOAT_F_STRV("argv", argv));
 *
 * A NULL struct moat_audit is accepted everywhere and records nothing.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MOAT_AUDIT_SCHEMA 1

enum moat_audit_type {
	MOAT_EV_START,
	MOAT_EV_EXEC,
	MOAT_EV_NET,
	MOAT_EV_DNS,
	MOAT_EV_SYSCALL,
	MOAT_EV_LIMIT,
	MOAT_EV_FILE,
	MOAT_EV_ALERT,
	MOAT_EV_EXIT,
	MOAT_EV_HELPER, /* a helper process and the descriptors it holds */
	MOAT_EV_PROCESS, /* a process the sandbox was asked to run: its start and exit */
	MOAT_EV_SNAPSHOT, /* a snapshot taken, restored, deleted; a reset (snapshot.c) */
	MOAT_EV_CONFIG, /* the OCI runtime: a spec field moat satisfied itself or ignored */
	MOAT_EV_MAX_,
};

enum moat_audit_kind {
	MOAT_AK_STR, /* untrusted string: escaped, capped; NULL -> null */
	MOAT_AK_INT,
	MOAT_AK_UINT,
	MOAT_AK_BOOL,
	MOAT_AK_JSON, /* JSON text built by moat itself: validated, re-serialised compact */
	MOAT_AK_STRV, /* list of untrusted strings: each capped, list capped */
};

struct moat_audit_field {
	const char *key; /* a constant from moat's code: [a-z0-9_]+, not a common key */
	enum moat_audit_kind kind;
	union {
		const char *str;
		int64_t i;
		uint64_t u;
		bool b;
		const char *json;
		const char *const *strv;
	};
	size_t len; /* STR: bytes (SIZE_MAX = strlen); STRV: entries (SIZE_MAX = NULL-terminated) */
};

#define MOAT_F_STR(k, v) \
	{ \
		.key = (k), .kind = MOAT_AK_STR, .str = (v), .len = SIZE_MAX \
	}
#define MOAT_F_STRN(k, v, n) \
	{ \
		.key = (k), .kind = MOAT_AK_STR, .str = (v), .len = (n) \
	}
#define MOAT_F_INT(k, v) \
	{ \
		.key = (k), .kind = MOAT_AK_INT, .i = (int64_t)(v) \
	}
#define MOAT_F_UINT(k, v) \
	{ \
		.key = (k), .kind = MOAT_AK_UINT, .u = (uint64_t)(v) \
	}
#define MOAT_F_BOOL(k, v) \
	{ \
		.key = (k), .kind = MOAT_AK_BOOL, .b = (v) \
	}
#define MOAT_F_JSON(k, v) \
	{ \
		.key = (k), .kind = MOAT_AK_JSON, .json = (v) \
	}
#define MOAT_F_STRV(k, v) \
	{ \
		.key = (k), .kind = MOAT_AK_STRV, .strv = (const char *const *)(v), \
		.len = SIZE_MAX \
	}
#define MOAT_F_STRVN(k, v, n) \
	{ \
		.key = (k), .kind = MOAT_AK_STRV, .strv = (const char *const *)(v), .len = (n) \
	}
/* The conventional refusal marker: `moat log --denied` and the counters use it. */
#define MOAT_F_DENIED MOAT_F_BOOL("denied", true)

#define MOAT_AUDIT(a, type, ...) \
	moat_audit_event((a), (type), (const struct moat_audit_field[]){__VA_ARGS__}, \
			 sizeof((const struct moat_audit_field[]){__VA_ARGS__}) / \
				 sizeof(struct moat_audit_field))

/* Hard limits; moat_audit_open() sets the defaults below. */
struct moat_audit_limits {
	size_t max_field; /* bytes of one string (before escaping), default 4 KiB */
	size_t max_strv; /* entries of one list, default 64 */
	size_t max_strv_bytes; /* bytes of all strings of one list, default 16 KiB */
	size_t max_json; /* bytes of one JSON field, default 256 KiB */
	size_t max_line; /* bytes of one event line, default 1 MiB */
	uint64_t max_events; /* events written before the cap, default 100000 */
	uint64_t max_bytes; /* bytes written before the cap (from moat_audit_open) */
	uint64_t max_alert_hooks; /* alert hook calls per run, default 100 */
};

#define MOAT_AUDIT_DEFAULT_MAX_BYTES (64ull << 20)
/* Space kept back for the cap record and the exit event. */
#define MOAT_AUDIT_RESERVE (64u << 10)

struct moat_audit;

/* Called after an `alert` event was written, with the event line (no newline,
 * NUL-terminated; valid only during the call). */
typedef void (*moat_audit_alert_fn)(const char *line, size_t len, void *userdata);

/* Open (create 0600, O_NOFOLLOW, append) the log at path, creating missing
 * parent directories 0700. run_id is copied. max_bytes 0 = the default. The
 * caller owns *ret and frees it with moat_audit_free(). */
int moat_audit_open(const char *path, const char *run_id, uint64_t max_bytes,
		    struct moat_audit **ret);
/* Same on an fd the caller opened (ownership of fd passes to the writer). */
int moat_audit_open_fd(int fd, const char *run_id, uint64_t max_bytes, struct moat_audit **ret);
/* Closes and frees; accepts NULL, returns NULL. Starts the write-back of the
 * stream (sync_file_range) without waiting for it, or, after
 * moat_audit_set_sync(a, true), waits until it is on stable storage
 * (fdatasync). Either way every event was write()n before: what a crash of
 * moat or the sandbox cannot lose; only a host crash or power loss in the
 * seconds after could (docs/AUDIT.md, "Durability"). */
struct moat_audit *moat_audit_free(struct moat_audit *a);

void moat_audit_set_limits(struct moat_audit *a, const struct moat_audit_limits *l);
/* true: moat_audit_free() waits for the disk (fdatasync). */
void moat_audit_set_sync(struct moat_audit *a, bool sync);
void moat_audit_get_limits(const struct moat_audit *a, struct moat_audit_limits *ret);
void moat_audit_set_alert_hook(struct moat_audit *a, moat_audit_alert_fn fn, void *userdata);

/* Record one event. Returns 0 when written, 1 when dropped because the stream
 * is capped (counted), -EINVAL for a bad key/type, -errno on write failure.
 * A `limit` event with "what":"audit" is written once when the cap is hit;
 * `exit` events use the reserve and are written even after the cap, and carry
 * "dropped_events" when anything was dropped. */
int moat_audit_event(struct moat_audit *a, enum moat_audit_type type,
		     const struct moat_audit_field *fields, size_t n_fields);

/* Counters for the summary: events submitted (written or dropped), the ones
 * carrying "denied":true, and the ones dropped by the cap. */
uint64_t moat_audit_count(const struct moat_audit *a, enum moat_audit_type type);
uint64_t moat_audit_count_denied(const struct moat_audit *a, enum moat_audit_type type);
uint64_t moat_audit_dropped(const struct moat_audit *a);
uint64_t moat_audit_bytes(const struct moat_audit *a);

const char *moat_audit_type_name(enum moat_audit_type t);
int moat_audit_type_from_name(const char *name, size_t len); /* type or -EINVAL */
/* "exec,net" -> bit mask (1u << type). Returns 0 or -EINVAL. */
int moat_audit_parse_types(const char *csv, unsigned *ret_mask);

/* RFC 3339 UTC with microseconds: "2026-11-29T15:39:22.123456Z" (28 bytes + NUL). */
void moat_audit_timestamp(char buf[32]);

/* A run id is [A-Za-z0-9_.-]{1,64}, not starting with '.' or '-'. */
bool moat_run_id_valid(const char *id);
/* Prunes @runs_dir as `moat gc` does (the live runs are kept) unless it was
 * pruned less than an hour ago (a tenth of @retention_ms if shorter); the
 * stamp is the file .pruned in it. *ret_pruned: it was pruned now. */
int moat_runs_autoprune(const char *runs_dir, unsigned long long retention_ms,
			unsigned long long max_total, bool *ret_pruned);
/* The directory of the runs' kept records (audit log, manifest, held files):
 * $XDG_STATE_HOME/moat/runs, else $HOME/.local/state/moat/runs, for root
 * /var/lib/moat/runs. Not moat/live: that holds the live-run records of
 * state.c, whose cleanup removes a run's whole entry. Caller frees. */
int moat_runs_dir(char **ret);

/* ---- reading (moat log) ------------------------------------------------- */

struct moat_audit_filter {
	unsigned types; /* bit mask of (1u << type); 0 = every type */
	bool denied_only; /* only events with "denied":true */
};

struct moat_audit_reader;

#define MOAT_AUDIT_MAX_READ_LINE (4u << 20)

int moat_audit_reader_open(const char *path, struct moat_audit_reader **ret);
struct moat_audit_reader *moat_audit_reader_free(struct moat_audit_reader *r);
/* The next event matching f (NULL = all). Returns 1 with the raw line in
 * *ret_line and a one-line readable rendering (control bytes escaped) in
 * *ret_text (either may be NULL if not wanted; caller frees), 0 at the end,
 * -errno on a read error. Lines that are not valid events (bad JSON, wrong
 * schema version, over MOAT_AUDIT_MAX_READ_LINE) are skipped and counted. */
int moat_audit_reader_next(struct moat_audit_reader *r, const struct moat_audit_filter *f,
			   char **ret_line, char **ret_text);
uint64_t moat_audit_reader_bad_lines(const struct moat_audit_reader *r);
