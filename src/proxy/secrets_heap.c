/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Locked memory for secret values: OpenSSL's secure heap or a locked mapping
 * excluded from core dumps, always wiped; and hardening of the process. */
#include "proxy/secrets_int.h"

#include <openssl/crypto.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "shared/macro.h"

#define SECURE_HEAP (1u << 20)

/* Values live in OpenSSL's secure heap when it is set up (mlock'ed, excluded
 * from core dumps), else in their own mapping, locked when RLIMIT_MEMLOCK
 * allows and excluded from core dumps. Always wiped before release. */
static size_t map_size(size_t n)
{
	size_t pg = (size_t)sysconf(_SC_PAGESIZE);
	return (n + pg - 1) / pg * pg;
}

char *moat_secrets_secure_alloc(size_t n)
{
	if (CRYPTO_secure_malloc_initialized()) {
		char *p = OPENSSL_secure_zalloc(n);
		if (p && CRYPTO_secure_allocated(p))
			return p;
		OPENSSL_secure_clear_free(p, n);
	}
	void *m =
		mmap(NULL, map_size(n), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return NULL;
	(void)madvise(m, map_size(n), MADV_DONTDUMP);
	(void)mlock(m, map_size(n));
	return m;
}

void moat_secrets_secure_free(char *p, size_t n)
{
	if (!p)
		return;
	if (CRYPTO_secure_malloc_initialized() && CRYPTO_secure_allocated(p)) {
		OPENSSL_secure_clear_free(p, n);
		return;
	}
	OPENSSL_cleanse(p, n);
	(void)munlock(p, map_size(n));
	munmap(p, map_size(n));
}

void moat_secrets_value_free(char *value, size_t len)
{
	moat_secrets_secure_free(value, len + 1);
}

int moat_secrets_harden_process(void)
{
	struct rlimit rl = {0, 0};

	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		return negerrno();
	if (setrlimit(RLIMIT_CORE, &rl) < 0)
		return negerrno();
	/* Returns 2 when the heap works but could not be locked: still fine. */
	if (!CRYPTO_secure_malloc_initialized())
		(void)CRYPTO_secure_malloc_init(SECURE_HEAP, 32);
	return 0;
}
