/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The layers' one interface. Each layer (mount, identity, limits, Landlock,
 * seccomp, network, credentials, workspace, audit) is one module, layer_*.c,
 * exporting one struct moat_layer_ops; supervise.c holds the table of them
 * (the supervisor side) and sandbox.c the ordered table of the steps the
 * layers take inside the sandbox (struct moat_init_step).
 *
 * The supervisor walks the table down at prepare, child and started and up
 * at finish and teardown; every operation is optional. `derive` is pure: it
 * states, as lines of text, what the layer takes from the plan (what it will
 * apply), so each layer can be unit-tested without privileges.
 */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "shared/macro.h"

struct moat_plan;
struct moat_run;
struct moat_init;

/* What a layer takes from the plan: "key value" lines, bounded. */
struct moat_layer_view {
	char text[16384];
	size_t len;
	unsigned n_lines;
	bool truncated; /* a line did not fit: derive returns -ENOBUFS */
};

/* Appends one line (a newline is added). -ENOBUFS when it does not fit. */
_printf_(2, 3) int moat_layer_view_add(struct moat_layer_view *v, const char *fmt, ...);
/* Whether a line equal to `line` is in the view. */
bool moat_layer_view_has(const struct moat_layer_view *v, const char *line);
/* How many lines start with `prefix`. */
unsigned moat_layer_view_count(const struct moat_layer_view *v, const char *prefix);

struct moat_layer_ops {
	const char *name;
	/* Pure: what the layer takes from the plan, into v (cleared first by
	 * moat_layer_derive). >= 0, or -errno. */
	int (*derive)(const struct moat_plan *pl, struct moat_layer_view *v);
	/* Before clone: variables of the sandbox's environment. */
	int (*env)(struct moat_run *r, int (*push)(struct moat_run *, const char *, const char *));
	/* Before the backend starts (after its prepare). */
	int (*prepare)(struct moat_run *r);
	/* The sandbox exists, not yet released. */
	int (*child)(struct moat_run *r);
	/* Released: overlaps the sandbox's own set-up. */
	int (*started)(struct moat_run *r);
	/* An fd the sandbox handed over: 1 taken (now owned), 0 not this layer's. */
	int (*take_fd)(struct moat_run *r, int kind, int fd);
	/* Its fds on the sandbox's epoll set, with tag; then its events. */
	int (*watch)(struct moat_run *r, int epfd, uint32_t tag);
	void (*dispatch)(struct moat_run *r, uint32_t sub, uint32_t events);
	/* Serve what is pending now, without waiting (the sandbox may be
	 * blocked on it while the supervisor waits for something else). */
	void (*pending)(struct moat_run *r);
	/* Everything of the sandbox is gone: statistics, records. `k` is the
	 * run's result so far; returns the (possibly changed) result. */
	int (*finish)(struct moat_run *r, int k);
	/* Remove what it made; safe at any point, and twice. */
	void (*teardown)(struct moat_run *r);
};

extern const struct moat_layer_ops moat_layer_mount, moat_layer_identity, moat_layer_limits,
	moat_layer_landlock, moat_layer_seccomp, moat_layer_network, moat_layer_credentials,
	moat_layer_workspace, moat_layer_audit;

/* The table, in its order (supervise.c). */
const struct moat_layer_ops *const *moat_layers(size_t *ret_n);
const struct moat_layer_ops *moat_layer_find(const char *name);
/* Clears v and runs the layer's derive. */
int moat_layer_derive(const struct moat_layer_ops *l, const struct moat_plan *pl,
		      struct moat_layer_view *v);

/*
 * One step a layer takes inside the sandbox, in the init (sandbox.c), between
 * clone and exec: no allocation, no stdio. `apply` returns 0, or -1 with
 * errno set: the init then reports {stage, errno, fail} and exits (a step
 * with a more precise message reports it itself and does not return).
 */
struct moat_init_step {
	const char *layer; /* a layer's name, or "init" for the init's own steps */
	const char *name;
	int stage; /* enum moat_setup_stage */
	int (*apply)(struct moat_init *sb);
	const char *fail;
};

/* The ordered table (sandbox.c). */
const struct moat_init_step *moat_init_steps(size_t *ret_n);
/* Runs one step of the table by layer and name, as the init would (tests).
 * Returns what apply returned, or -1 with errno ENOENT for no such step. */
int moat_init_step_run(struct moat_init *sb, const char *layer, const char *name);
