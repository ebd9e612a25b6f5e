/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * RT-074/RT-075 credential leaks. --token T (repeatable): canary strings that
 * must not appear in our environment, any readable /proc/<pid>/environ, or the
 * files named with --file P (repeatable: the host's canary files, as seen from
 * wherever this runs) and under $HOME (~/.ssh/rt_canary, ~/.aws/credentials,
 * ~/.config/gh/hosts.yml, ~/.netrc, ~/rt-outside.txt).
 */
#include <dirent.h>

#include "probe.h"

static const char *tokens[16];
static int n_tokens;

static void add_token(const char *t)
{
	if (n_tokens < 16)
		tokens[n_tokens++] = t;
}

static const char *leaks(const char *buf, size_t n)
{
	for (int i = 0; i < n_tokens; i++)
		if (memmem(buf, n, tokens[i], strlen(tokens[i])))
			return tokens[i];
	return NULL;
}

static void check_file(const char *id, const char *path)
{
	static char buf[1 << 16];
	ssize_t n = probe_read_file(path, buf, sizeof buf);
	const char *t;
	if (n < 0)
		BLOCKED(id, "%s errno=%s", path, probe_errname((int)-n));
	else if ((t = leaks(buf, (size_t)n)))
		FAILED(id, "%s holds canary %s", path, t);
	else
		BLOCKED(id, "%s readable but no canary", path);
}

static void file_opt(const char *p)
{
	char id[300];
	snprintf(id, sizeof id, "RT-075/host-file:%s", p);
	check_file(id, p);
}

int main(int argc, char **argv)
{
	static const char *const home_files[] = {".ssh/rt_canary", ".aws/credentials",
						 ".config/gh/hosts.yml", ".netrc",
						 "rt-outside.txt"};
	extern char **environ;
	const char *home = getenv("HOME"), *t = NULL;
	DIR *d;
	struct dirent *e;
	int n_env = 0;
	char hit[300] = "";

	probe_init(argc, argv);
	probe_each_opt("--token", add_token);
	if (!n_tokens)
		return fprintf(stderr, "usage: rt074_creds --token T [--file P]...\n"), 2;
	for (char **v = environ; *v; v++)
		if ((t = leaks(*v, strlen(*v))))
			break;
	if (t)
		FAILED("RT-074/own-environ", "canary %s in the environment", t);
	else
		BLOCKED("RT-074/own-environ", "no canary in the environment");
	d = opendir("/proc");
	while (d && (e = readdir(d))) {
		static char buf[1 << 16];
		char p[300];
		ssize_t n;
		if (e->d_name[0] < '1' || e->d_name[0] > '9')
			continue;
		snprintf(p, sizeof p, "/proc/%s/environ", e->d_name);
		n = probe_read_file(p, buf, sizeof buf);
		if (n > 0 && leaks(buf, (size_t)n) && !hit[0])
			snprintf(hit, sizeof hit, "pid %s", e->d_name);
		n_env += n > 0;
	}
	if (d)
		closedir(d);
	if (hit[0])
		FAILED("RT-074/proc-environ", "canary in /proc/%s/environ", hit);
	else
		BLOCKED("RT-074/proc-environ", "no canary in %d readable environ files", n_env);
	for (size_t i = 0; i < sizeof home_files / sizeof home_files[0]; i++) {
		char p[4200], id[128];
		snprintf(p, sizeof p, "%s/%s", home ? home : "", home_files[i]);
		snprintf(id, sizeof id, "RT-075/home:%s", home_files[i]);
		check_file(id, p);
	}
	probe_each_opt("--file", file_opt);
	return probe_done();
}
