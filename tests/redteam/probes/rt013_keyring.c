/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* RT-013 kernel keyring (not namespaced): keyctl, add_key, request_key. */
#include <linux/keyctl.h>

#include "probe.h"

int main(int argc, char **argv)
{
	probe_init(argc, argv);
	TRY("RT-013/keyctl-badop", syscall(SYS_keyctl, 0x7fff, 0, 0, 0, 0), EPERM, ENOSYS);
	TRY("RT-013/keyctl-describe-badbuf",
	    syscall(SYS_keyctl, KEYCTL_DESCRIBE, KEY_SPEC_USER_KEYRING, (void *)1, 256, 0), EPERM,
	    ENOSYS);
	TRY("RT-013/keyctl-read-session",
	    syscall(SYS_keyctl, KEYCTL_READ, KEY_SPEC_SESSION_KEYRING, (void *)1, 256, 0), EPERM,
	    ENOSYS);
	TRY("RT-013/add_key-badptr",
	    syscall(SYS_add_key, (void *)1, (void *)1, NULL, 0, KEY_SPEC_SESSION_KEYRING), EPERM,
	    ENOSYS);
	TRY("RT-013/request_key-badptr", syscall(SYS_request_key, (void *)1, (void *)1, NULL, 0),
	    EPERM, ENOSYS);
	return probe_done();
}
