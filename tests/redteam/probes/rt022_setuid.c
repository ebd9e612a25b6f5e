/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-022 setuid binaries do not gain privilege.
 * --report-euid: just report whether this (setuid) copy runs with a gained euid
 * (the runner installs a setuid-root copy of this probe when it runs as root).
 * Otherwise: NoNewPrivs, whether any setuid/setgid file sits on a mount that
 * honours it, and chmod 6755 of a file of our own.
 */
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include "probe.h"

int main(int argc, char **argv)
{
	static const char *const dirs[] = {"/usr/bin", "/usr/sbin",	    "/bin",
					   "/sbin",    "/usr/lib/dbus-1.0", "/usr/lib/openssh"};
	char st[8192], nnp[16] = "?", found[400] = "";
	int n_suid = 0;
	bool nnp_on;

	probe_init(argc, argv);
	if (probe_flag("--report-euid")) {
		if (geteuid() != getuid())
			FAILED("RT-022/setuid-exec", "euid %d gained over ruid %d", (int)geteuid(),
			       (int)getuid());
		else
			BLOCKED("RT-022/setuid-exec", "euid stays %d", (int)geteuid());
		return probe_done();
	}
	probe_read_file("/proc/self/status", st, sizeof st);
	probe_status_field(st, "NoNewPrivs", nnp, sizeof nnp);
	nnp_on = strcmp(nnp, "1") == 0;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0]; i++) {
		DIR *d = opendir(dirs[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			char p[300];
			struct stat s;
			struct statvfs v;
			snprintf(p, sizeof p, "%s/%s", dirs[i], e->d_name);
			if (lstat(p, &s) < 0 || !S_ISREG(s.st_mode) ||
			    !(s.st_mode & (S_ISUID | S_ISGID)))
				continue;
			if (statvfs(p, &v) == 0 && !(v.f_flag & ST_NOSUID)) {
				if (!n_suid++)
					snprintf(found, sizeof found, "%s (uid %d)", p,
						 (int)s.st_uid);
			}
		}
		if (d)
			closedir(d);
	}
	if (!nnp_on)
		FAILED("RT-022/no-new-privs", "NoNewPrivs=%s", nnp);
	else
		BLOCKED("RT-022/no-new-privs", "NoNewPrivs=1");
	if (n_suid && !nnp_on)
		FAILED("RT-022/setuid-files", "%d setuid/setgid files on suid mounts, e.g. %s",
		       n_suid, found);
	else
		BLOCKED("RT-022/setuid-files", "%d setuid files on suid mounts, NoNewPrivs=%s",
			n_suid, nnp);
	{
		char tmpl[] = "/tmp/rt022.XXXXXX";
		int fd = mkstemp(tmpl);
		struct statvfs v;
		if (fd < 0) {
			BLOCKED("RT-022/chmod-6755", "cannot create a file in /tmp: %s",
				probe_errname(errno));
		} else {
			int r = fchmod(fd, 06755);
			bool nosuid = fstatvfs(fd, &v) == 0 && (v.f_flag & ST_NOSUID);
			if (r < 0)
				BLOCKED("RT-022/chmod-6755", "errno=%s", probe_errname(errno));
			else if (nosuid || nnp_on)
				CONTAINED("RT-022/chmod-6755",
					  "bit set but inert (nosuid=%d nnp=%d)", nosuid, nnp_on);
			else
				FAILED("RT-022/chmod-6755",
				       "setuid bit set on a suid mount without NNP");
			close(fd);
			unlink(tmpl);
		}
	}
	return probe_done();
}
