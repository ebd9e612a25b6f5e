/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Host-side listener oracle (not a probe): listens on one address and rewrites
 * COUNTFILE with the number of accepted connections after each accept.
 * Usage: rt_listen COUNTFILE abstract NAME | unix PATH | tcp PORT | tcp6 PORT
 * Prints "READY" once listening. Runs until killed.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "probe.h"

static void write_count(const char *file, unsigned long n)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof tmp, "%s.tmp", file);
	f = fopen(tmp, "w");
	if (!f)
		return;
	fprintf(f, "%lu\n", n);
	fclose(f);
	rename(tmp, file);
}

int main(int argc, char **argv)
{
	struct sockaddr_storage ss = {0};
	socklen_t len;
	int fd, one = 1;
	unsigned long n = 0;

	if (argc != 4)
		return fprintf(stderr, "usage: rt_listen COUNTFILE KIND ADDR\n"), 2;
	if (strcmp(argv[2], "abstract") == 0 || strcmp(argv[2], "unix") == 0) {
		struct sockaddr_un *a = (struct sockaddr_un *)&ss;
		bool abs = argv[2][0] == 'a';
		a->sun_family = AF_UNIX;
		strncpy(a->sun_path + abs, argv[3], sizeof a->sun_path - 2);
		len = abs
			? (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(argv[3]))
			: (socklen_t)sizeof *a;
		if (!abs)
			unlink(argv[3]);
	} else if (strcmp(argv[2], "tcp") == 0) {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)atoi(argv[3]));
		a->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		len = sizeof *a;
	} else if (strcmp(argv[2], "tcp6") == 0) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)atoi(argv[3]));
		a->sin6_addr = in6addr_loopback;
		len = sizeof *a;
	} else {
		return fprintf(stderr, "rt_listen: unknown kind %s\n", argv[2]), 2;
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return perror("socket"), 1;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, len) < 0 || listen(fd, 64) < 0)
		return perror("bind/listen"), 1;
	if (ss.ss_family == AF_UNIX && argv[2][0] == 'u')
		chmod(argv[3], 0777); /* reachable by any uid: only the sandbox may stop it */
	write_count(argv[1], 0);
	printf("READY\n");
	fflush(stdout);
	for (;;) {
		int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		write_count(argv[1], ++n);
		close(c);
	}
}
