/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The vm level's pure parts: the initramfs's newc writer (vm_initramfs.c),
 * read back by libarchive (an independent reader); names that could leave
 * the archive's root are refused; the isolation table's vm column. */
#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "harness/tap.h"
#include "policy/policy.h"
#include "sandbox/backend_vm.h"
#include "sandbox/isolation.h"
#include "shared/macro.h"

TEST(vm_cpio_reads_back)
{
	int fd = memfd_create("cpio", MFD_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	struct moat_cpio c = {.fd = fd};
	static const char data[] = "hello, guest";
	ASSERT_EQ(0, moat_cpio_add(&c, "dev", S_IFDIR | 0755, 0, NULL, 0));
	ASSERT_EQ(0, moat_cpio_add(&c, "dev/console", S_IFCHR | 0600, makedev(5, 1), NULL, 0));
	ASSERT_EQ(0, moat_cpio_add(&c, "init", S_IFREG | 0755, 0, data, sizeof(data) - 1));
	ASSERT_EQ(0, moat_cpio_add(&c, "modules/00-a.ko", S_IFREG | 0644, 0, "abc", 3));
	ASSERT_EQ(0, moat_cpio_finish(&c));
	ASSERT_EQ(0, (int)(c.off % 4));
	size_t len = (size_t)c.off;
	char *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
	ASSERT_TRUE(m != MAP_FAILED);
	struct archive *a = archive_read_new();
	archive_read_support_format_cpio(a);
	ASSERT_EQ(ARCHIVE_OK, archive_read_open_memory(a, m, len));
	struct archive_entry *e;
	const char *want[] = {"dev", "dev/console", "init", "modules/00-a.ko"};
	unsigned n = 0;
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		ASSERT_TRUE(n < ELEMENTSOF(want));
		ASSERT_STREQ(want[n], archive_entry_pathname(e));
		if (n == 1) {
			ASSERT_TRUE(S_ISCHR(archive_entry_mode(e)));
			ASSERT_EQ(5, (int)archive_entry_rdevmajor(e));
			ASSERT_EQ(1, (int)archive_entry_rdevminor(e));
		}
		if (n == 2) {
			char buf[64] = "";
			ASSERT_EQ(0755, (int)(archive_entry_mode(e) & 07777));
			ASSERT_EQ((int)sizeof(data) - 1,
				  (int)archive_read_data(a, buf, sizeof(buf)));
			ASSERT_STREQ(data, buf);
		}
		n++;
	}
	ASSERT_EQ(4, (int)n);
	ASSERT_CONTAINS(archive_format_name(a), "SVR4 with no CRC");
	archive_read_free(a);
	munmap(m, len);
	close(fd);
}

TEST(vm_cpio_refuses_escaping_names)
{
	int fd = memfd_create("cpio", MFD_CLOEXEC);
	ASSERT_TRUE(fd >= 0);
	struct moat_cpio c = {.fd = fd};
	ASSERT_EQ(-EINVAL, moat_cpio_add(&c, "/etc/passwd", S_IFREG | 0644, 0, "x", 1));
	ASSERT_EQ(-EINVAL, moat_cpio_add(&c, "a/../../b", S_IFREG | 0644, 0, "x", 1));
	/* control: a plain name is written */
	ASSERT_EQ(0, moat_cpio_add(&c, "a/b", S_IFREG | 0644, 0, "x", 1));
	ASSERT_TRUE(c.off > 110);
	close(fd);
}

TEST(vm_isolation_net_allow_host_refused)
{
	/* --net allow is honoured (the guest's tap, docs/ISOLATION.md); --net
	 * host is refused, named */
	struct moat_policy p = {
		.isolation = MOAT_ISO_VM, .net = MOAT_NET_ALLOW, .uid = 1000, .gid = 1000};
	struct moat_error err = {0};
	ASSERT_EQ(0, moat_isolation_check(&p, &err));
	p.net = MOAT_NET_HOST;
	ASSERT_EQ(-EOPNOTSUPP, moat_isolation_check(&p, &err));
	ASSERT_CONTAINS(err.message, "network.mode host");
	/* control: --net none starts at the vm level, host at the process level */
	p.net = MOAT_NET_NONE;
	ASSERT_EQ(0, moat_isolation_check(&p, &err));
	p.isolation = MOAT_ISO_PROCESS;
	p.net = MOAT_NET_HOST;
	ASSERT_EQ(0, moat_isolation_check(&p, &err));
}
