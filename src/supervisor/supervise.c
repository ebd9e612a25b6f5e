/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The supervisor side of the layers: one table of modules, each a struct
 * moat_layer_ops (layer.h, layer_*.c), called at fixed points of a
 * sandbox's life (supervise.h). The layers' steps inside the sandbox are the
 * init's ordered table (sandbox.c, moat_init_steps).
 *
 *   layer       | prepare            | started         | events           | finish / teardown
 *   workspace   | -                  | -               | -                | /output, changes, review
 *   mount       | (backend: paths)   | -               | -                | -
 *   identity    | (create: host uid) | -               | -                | -
 *   limits      | cgroups, state     | (child: attach) | -                | accounting, removal
 *   landlock    | kernel check       | -               | -                | -
 *   seccomp     | kernel check, map  | BPF compiled    | seccomp listener | counters, net top list
 *   network     | rules; env: proxy  | proxy helper    | proxy events     | counters, helper gone
 *   credentials | env: CA, placehold.| (network's)     | -                | -
 *               | prep: CA bundle dir|                 |                  |
 *   audit       | log, /output, ws   | start record    | -                | exit record
 */
#include <errno.h>
#include <string.h>

#include "supervisor/layer.h"
#include "audit/observe.h"
#include "supervisor/supervise.h"
#include "limits/supervise_limits.h"

/* Order matters. env, prepare, child and started go down the table, finish
 * and teardown up it, the audit layer last of all.
 * - workspace first: going up, it finishes after every other layer (their
 *   counters and events are in before the change manifest and review), just
 *   before the audit layer's exit record.
 * - mount, identity: their supervisor work is the backend's and the
 *   create's; in the table for derive and for a backend that needs more.
 * - limits before the kernel layers: they record degraded layers for the
 *   start event, and the init is attached to its cgroup first (child).
 * - landlock, then seccomp: the kernel checks in this order (the first
 *   missing layer is the error); seccomp's program is compiled first at
 *   started, as the sandbox waits for it.
 * - network before credentials: the plugins are checked and the proxy's
 *   variables set before the per-run CA and the placeholders are made.
 * - limits before every layer or backend start that makes a host temporary
 *   (the credentials' CA bundle directory, gVisor's bundle, the VM's tree):
 *   its prepare makes the run's state record, which names each one before
 *   it is made (moat_supervise_state_mkdtemp).
 * - audit last: it opens (prepare) even when a layer before it failed, so
 *   that the failure is recorded, and writes the exit record at finish. */
static const struct moat_layer_ops *const layers[] = {
	&moat_layer_workspace, &moat_layer_mount,	&moat_layer_identity,
	&moat_layer_limits,    &moat_layer_landlock,	&moat_layer_seccomp,
	&moat_layer_network,   &moat_layer_credentials, &moat_layer_audit,
};
#define N_LAYERS ELEMENTSOF(layers)
#define TAGS_PER_LAYER 4u

const struct moat_layer_ops *const *moat_layers(size_t *ret_n)
{
	*ret_n = N_LAYERS;
	return layers;
}

const struct moat_layer_ops *moat_layer_find(const char *name)
{
	size_t n;
	const struct moat_layer_ops *const *t = moat_layers(&n);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(t[i]->name, name))
			return t[i];
	return NULL;
}

int moat_layer_derive(const struct moat_layer_ops *l, const struct moat_plan *pl,
		      struct moat_layer_view *v)
{
	v->len = 0;
	v->n_lines = 0;
	v->truncated = false;
	v->text[0] = 0;
	if (!l->derive)
		return 0;
	int k = l->derive(pl, v);
	return k < 0 ? k : v->truncated ? -ENOBUFS : 0;
}

int moat_supervise_env(struct moat_run *r,
		       int (*push)(struct moat_run *, const char *, const char *))
{
	int k = 0;
	for (unsigned i = 0; i < N_LAYERS && k >= 0; i++)
		k = layers[i]->env ? layers[i]->env(r, push) : 0;
	return k;
}

int moat_supervise_prepare(struct moat_run *r)
{
	int k = 0;
	for (unsigned i = 0; i + 1 < N_LAYERS && k >= 0; i++)
		k = layers[i]->prepare ? layers[i]->prepare(r) : 0;
	struct moat_error saved = {0};
	if (k < 0 && r->err)
		saved = *r->err;
	int k2 = layers[N_LAYERS - 1]->prepare(r); /* the audit log, always */
	if (k < 0 && r->err)
		*r->err = saved;
	return k < 0 ? k : k2;
}

void moat_supervise_clone_args(struct moat_run *r, struct clone_args *ca)
{
	moat_supervise_limits_clone_args(r, ca);
}

int moat_supervise_child(struct moat_run *r)
{
	for (unsigned i = 0; i < N_LAYERS; i++) {
		int k = layers[i]->child ? layers[i]->child(r) : 0;
		if (k < 0)
			return k;
	}
	return 0;
}

int moat_supervise_started(struct moat_run *r)
{
	int k = 0;
	for (unsigned i = 0; i < N_LAYERS && k >= 0; i++)
		k = layers[i]->started ? layers[i]->started(r) : 0;
	return k;
}

int moat_supervise_take_fd(struct moat_run *r, int kind, int fd)
{
	for (unsigned i = 0; i < N_LAYERS; i++) {
		int k = layers[i]->take_fd ? layers[i]->take_fd(r, kind, fd) : 0;
		if (k != 0)
			return k;
	}
	return 0;
}

int moat_supervise_register(struct moat_run *r, int epfd, uint32_t base)
{
	r->tag_base = base;
	for (unsigned i = 0; i < N_LAYERS; i++) {
		int k = layers[i]->watch ? layers[i]->watch(r, epfd, base + i * TAGS_PER_LAYER) : 0;
		if (k < 0)
			return k;
	}
	return 0;
}

void moat_supervise_dispatch(struct moat_run *r, uint32_t tag, uint32_t events)
{
	uint32_t i = (tag - r->tag_base) / TAGS_PER_LAYER;
	if (tag >= r->tag_base && i < N_LAYERS && layers[i]->dispatch)
		layers[i]->dispatch(r, (tag - r->tag_base) % TAGS_PER_LAYER, events);
}

void moat_supervise_pending(struct moat_run *r)
{
	for (unsigned i = 0; i < N_LAYERS; i++)
		if (layers[i]->pending)
			layers[i]->pending(r);
}

void moat_supervise_event_limit(struct moat_run *r, const char *what)
{
	moat_observe_limit(r, what, NULL, 0, NULL);
}

void moat_supervise_kill_all(struct moat_run *r)
{
	moat_supervise_limits_kill(r);
}

int moat_supervise_finish(struct moat_run *r, int k)
{
	for (unsigned i = N_LAYERS; i-- > 0;)
		if (layers[i]->finish && i != N_LAYERS - 1)
			k = layers[i]->finish(r, k);
	return layers[N_LAYERS - 1]->finish(r, k);
}

void moat_supervise_teardown(struct moat_run *r)
{
	for (unsigned i = N_LAYERS - 1; i-- > 0;)
		if (layers[i]->teardown)
			layers[i]->teardown(r);
	layers[N_LAYERS - 1]->teardown(r);
}

void moat_supervise_released(struct moat_run *r)
{
	moat_supervise_limits_state_end(r);
}
