/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshots of a sandbox's writable state (moat.h): not implemented yet. */
#include <errno.h>

#include "lib/errors.h"
#include "moat/moat.h"

int moat_sandbox_snapshot(struct moat_sandbox *sb, const char *name, bool force,
			  char ret_name[MOAT_SNAPSHOT_NAME_MAX + 1], struct moat_error *ret_err)
{
	(void)sb, (void)name, (void)force, (void)ret_name;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_sandbox_restore(struct moat_sandbox *sb, const char *name, bool force,
			 struct moat_error *ret_err)
{
	(void)sb, (void)name, (void)force;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_sandbox_reset(struct moat_sandbox *sb, bool force, struct moat_error *ret_err)
{
	(void)sb, (void)force;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_sandbox_snapshot_list(struct moat_sandbox *sb, struct moat_snapshot_info **ret,
			       size_t *ret_n, struct moat_error *ret_err)
{
	(void)sb, (void)ret, (void)ret_n;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_sandbox_snapshot_delete(struct moat_sandbox *sb, const char *name,
				 struct moat_error *ret_err)
{
	(void)sb, (void)name;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_session_snapshot(const char *id, const char *name, bool force,
			  char ret_name[MOAT_SNAPSHOT_NAME_MAX + 1], struct moat_error *ret_err)
{
	(void)id, (void)name, (void)force, (void)ret_name;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_session_restore(const char *id, const char *name, bool force, struct moat_error *ret_err)
{
	(void)id, (void)name, (void)force;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_session_reset(const char *id, bool force, struct moat_error *ret_err)
{
	(void)id, (void)force;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_session_snapshot_list(const char *id, struct moat_snapshot_info **ret, size_t *ret_n,
			       struct moat_error *ret_err)
{
	(void)id, (void)ret, (void)ret_n;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}

int moat_session_snapshot_delete(const char *id, const char *name, struct moat_error *ret_err)
{
	(void)id, (void)name;
	return moat_error_set(ret_err, "snapshot", ENOSYS, "snapshots are not implemented yet");
}
