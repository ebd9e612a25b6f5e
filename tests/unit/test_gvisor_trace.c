/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Exec records under gVisor (sandbox/gvisor_trace.c, backend_gvisor_trace.c):
 * messages recorded from the real runsc 0.0~20221219 (fuzz/corpus/
 * gvisor_trace/) decode to the right fields; hostile messages and frames are
 * refused or cut at the caps; and the confined receiver, driven by a fake
 * runsc over its socket, sends the supervisor checked frames, refuses a peer
 * of another uid, and holds only its socket, its pipe and /dev/null. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/tap.h"
#include "sandbox/backend_gvisor.h"
#include "sandbox/gvisor_trace.h"
#include "shared/macro.h"

static uint8_t msg[MOAT_GVT_MSG_MAX + 16];
static struct moat_gvt_point pt;
static struct moat_seccomp_event ev;
static uint8_t frame[MOAT_GVT_FRAME_MAX];

static size_t corpus(const char *name, uint8_t *buf, size_t cap)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/../fuzz/corpus/gvisor_trace/%s.bin", moat_tap_dir(), name);
	FILE *f = fopen(path, "rb");
	if (!f)
		return 0;
	size_t n = fread(buf, 1, cap, f);
	fclose(f);
	return n;
}

static bool str_is(const struct moat_gvt_str *s, const char *want)
{
	return s->len == strlen(want) && !memcmp(s->p, want, s->len);
}

TEST(gvisor_trace_recorded_messages_decode)
{
	size_t n = corpus("execve_sh", msg, sizeof(msg));
	ASSERT_TRUE(n > 0);
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_EQ(pt.type, MOAT_GVT_MSG_SYSCALL_EXECVE);
	ASSERT_EQ(pt.tgid, 1);
	ASSERT_TRUE(str_is(&pt.cwd, "/tmp/gvt"));
	ASSERT_TRUE(str_is(&pt.path, "/usr/bin/sh"));
	ASSERT_EQ(pt.argc, 3u);
	ASSERT_TRUE(str_is(&pt.argv[0], "sh") && str_is(&pt.argv[1], "-c"));
	ASSERT_EQ(pt.sysno, (uint64_t)SYS_execve);
	ASSERT_EQ(pt.errorno, 0);
	ASSERT_TRUE(!pt.truncated);
	ASSERT_TRUE(moat_gvt_exec_recorded(&pt));

	/* one step of a PATH search that found nothing: not recorded */
	n = corpus("execve_enoent", msg, sizeof(msg));
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_EQ(pt.errorno, ENOENT);
	ASSERT_TRUE(str_is(&pt.path, "/nonexist/sh"));
	ASSERT_TRUE(!moat_gvt_exec_recorded(&pt));

	/* fexecve: execveat(fd, "", AT_EMPTY_PATH), an empty argument kept */
	n = corpus("execveat_fexecve", msg, sizeof(msg));
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_EQ(pt.sysno, (uint64_t)SYS_execveat);
	ASSERT_EQ(pt.path.len, 0u);
	ASSERT_EQ(pt.fd, 3);
	ASSERT_EQ(pt.flags, (uint32_t)AT_EMPTY_PATH);
	ASSERT_EQ(pt.argc, 3u);
	ASSERT_TRUE(str_is(&pt.argv[1], "a b") && pt.argv[2].len == 0);
	ASSERT_TRUE(moat_gvt_exec_recorded(&pt));

	/* clones: a process (its parent known) and a thread (not a process) */
	n = corpus("clone_sh", msg, sizeof(msg));
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_EQ(pt.type, MOAT_GVT_MSG_SENTRY_CLONE);
	ASSERT_EQ(pt.tgid, 1);
	ASSERT_EQ(pt.child_tgid, 2);
	ASSERT_TRUE(!(pt.clone_flags & CLONE_THREAD));
	n = corpus("clone_thread", msg, sizeof(msg));
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_TRUE(pt.clone_flags & CLONE_THREAD);

	n = corpus("handshake", msg, sizeof(msg));
	ASSERT_TRUE(moat_gvt_handshake_ok(msg, n));
	static const uint8_t v2[] = {0x08, 0x02}, junk[] = {0x0b};
	ASSERT_TRUE(!moat_gvt_handshake_ok(v2, sizeof(v2)));
	ASSERT_TRUE(!moat_gvt_handshake_ok(junk, sizeof(junk)));
}

/* A message: the header, then the bytes given. */
static size_t mk(uint16_t type, const void *body, size_t len)
{
	msg[0] = MOAT_GVT_HEADER;
	msg[1] = 0;
	msg[2] = (uint8_t)type;
	msg[3] = (uint8_t)(type >> 8);
	memset(msg + 4, 0, 4);
	memcpy(msg + MOAT_GVT_HEADER, body, len);
	return MOAT_GVT_HEADER + len;
}

TEST(gvisor_trace_hostile_messages_refused)
{
	static const struct {
		const char *what;
		const char *body;
		size_t len;
	} bad[] = {
		{"length past the end", "\x32\x10/bin", 6},
		{"varint of 11 bytes", "\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12},
		{"varint over 64 bits", "\x18\xff\xff\xff\xff\xff\xff\xff\xff\xff\x02", 11},
		{"a group", "\x1b\x00", 2},
		{"field number 0", "\x00\x01", 2},
		{"a NUL in the path", "\x32\x03/\x00x", 5},
		{"a NUL in an argument", "\x3a\x02\x61\x00", 4},
		{"a NUL in cwd", "\x0a\x04\x42\x02\x00x", 6},
		{"a bad context", "\x0a\x02\x42\x05", 4},
		{"fixed64 cut", "\x19\x01\x02", 3},
	};
	for (unsigned i = 0; i < ELEMENTSOF(bad); i++) {
		size_t n = mk(MOAT_GVT_MSG_SYSCALL_EXECVE, bad[i].body, bad[i].len);
		int k = moat_gvt_decode(msg, n, &pt);
		if (k != -EBADMSG)
			printf("# %s: %d\n", bad[i].what, k);
		ASSERT_EQ(k, -EBADMSG);
	}
	/* control: the same shapes, well formed, decode */
	size_t n = mk(MOAT_GVT_MSG_SYSCALL_EXECVE,
		      "\x32\x04/bin\x19\x01\x02\x03\x04\x05\x06\x07\x08", 15);
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_TRUE(str_is(&pt.path, "/bin"));
	/* the header: too short, its size below 8 or past the message */
	ASSERT_EQ(moat_gvt_decode(msg, 7, &pt), -EBADMSG);
	msg[0] = 4;
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), -EBADMSG);
	msg[0] = 200;
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), -EBADMSG);
	/* a larger header (a later version) is skipped by its size */
	memmove(msg + 12, msg + 8, n - 8);
	msg[0] = 12;
	ASSERT_EQ(moat_gvt_decode(msg, n + 4, &pt), 0);
	ASSERT_TRUE(str_is(&pt.path, "/bin"));
	ASSERT_EQ(moat_gvt_decode(msg, MOAT_GVT_MSG_MAX + 1, &pt), -EMSGSIZE);
	/* every prefix of a real message: refused or decoded, never past its end */
	size_t full = corpus("execve_python", msg, sizeof(msg));
	ASSERT_TRUE(full > 0);
	unsigned refused = 0;
	for (size_t cut = 0; cut < full; cut++) {
		int k = moat_gvt_decode(msg, cut, &pt);
		ASSERT_TRUE(k == 0 || k == -EBADMSG);
		refused += k < 0;
		if (k == 0 && pt.path.len)
			ASSERT_TRUE(pt.path.p + pt.path.len <= msg + cut);
	}
	ASSERT_TRUE(refused > full / 2);
	/* other message types: the header only */
	n = mk(MOAT_GVT_MSG_SYSCALL_EXECVE + 1, "\x1b", 1);
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	ASSERT_TRUE(!moat_gvt_exec_recorded(&pt));
}

/* An exec message: a path of plen bytes, n arguments of alen bytes. */
static size_t mk_big(size_t plen, unsigned n, size_t alen)
{
	size_t o = MOAT_GVT_HEADER;
	memcpy(msg, "\x08\x00\x0b\x00\x05\x00\x00\x00", 8);
	msg[o++] = 0x32;
	msg[o++] = (uint8_t)(0x80 | (plen & 0x7f));
	msg[o++] = (uint8_t)(plen >> 7);
	memset(msg + o, 'p', plen);
	o += plen;
	for (unsigned i = 0; i < n && o + alen + 3 <= MOAT_GVT_MSG_MAX; i++) {
		msg[o++] = 0x3a;
		msg[o++] = (uint8_t)(0x80 | (alen & 0x7f));
		msg[o++] = (uint8_t)(alen >> 7);
		memset(msg + o, 'a', alen);
		o += alen;
	}
	return o;
}

TEST(gvisor_trace_caps)
{
	/* a 5000-byte path, 300 arguments: cut at 4095 bytes and 256 entries */
	size_t o = mk_big(5000, 300, 100);
	ASSERT_EQ(moat_gvt_decode(msg, o, &pt), 0);
	ASSERT_EQ(pt.dropped, 5u);
	ASSERT_EQ(pt.path.len, (size_t)MOAT_GVT_PATH_MAX);
	ASSERT_TRUE(pt.truncated);
	ASSERT_EQ(pt.argc, (unsigned)MOAT_GVT_ARGC);
	size_t len = moat_gvt_frame_exec(&pt, 1, frame);
	ASSERT_TRUE(len <= sizeof(frame));
	struct moat_gvt_frame h;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_TRUE(ev.truncated);
	ASSERT_EQ(strlen(ev.path), (size_t)MOAT_GVT_PATH_MAX);
	/* 200 arguments of 300 bytes: cut at 32 KiB */
	o = mk_big(200, 200, 300);
	ASSERT_EQ(moat_gvt_decode(msg, o, &pt), 0);
	ASSERT_EQ(pt.argc, (unsigned)(MOAT_GVT_ARGV_BYTES / 301));
	ASSERT_TRUE(pt.truncated && pt.argv_bytes <= MOAT_GVT_ARGV_BYTES);
	/* control: within the caps nothing is cut */
	o = mk_big(200, 20, 130);
	ASSERT_EQ(moat_gvt_decode(msg, o, &pt), 0);
	ASSERT_EQ(pt.argc, 20u);
	ASSERT_TRUE(!pt.truncated);
}

TEST(gvisor_trace_frames_checked)
{
	size_t n = corpus("execve_python", msg, sizeof(msg));
	ASSERT_EQ(moat_gvt_decode(msg, n, &pt), 0);
	size_t len = moat_gvt_frame_exec(&pt, 1, frame);
	struct moat_gvt_frame h, *fh = (struct moat_gvt_frame *)(void *)frame;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(ev.type, MOAT_SECCOMP_EVENT_EXEC);
	ASSERT_EQ(ev.pid, 3);
	ASSERT_EQ(ev.ppid, 1);
	ASSERT_STREQ(ev.path, "/usr/bin/python3");
	ASSERT_STREQ(ev.cwd, "/tmp");
	ASSERT_STREQ(ev.syscall, "execve");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 0), "python3");
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 1), "-c");
	ASSERT_TRUE(moat_seccomp_event_arg(&ev, 3) == NULL);
	/* not complete yet: 0 */
	ASSERT_EQ(moat_gvt_frame_parse(frame, len - 1, &h, &ev), 0);
	ASSERT_EQ(moat_gvt_frame_parse(frame, 3, &h, &ev), 0);
	/* lies of a compromised receiver */
	fh->argc++;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), -EBADMSG);
	fh->argc--;
	fh->path_len++;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), -EBADMSG);
	fh->path_len--;
	frame[sizeof(*fh) + 2] = 0; /* a NUL inside the path */
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), -EBADMSG);
	frame[sizeof(*fh) + 2] = 's';
	fh->len = (uint32_t)MOAT_GVT_FRAME_MAX + 1;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), -EBADMSG);
	fh->len = (uint32_t)len;
	fh->kind = 9;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), -EBADMSG);
	fh->kind = MOAT_GVT_FRAME_EXEC;
	/* control: repaired, it passes again */
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
}

/* The vm level's guest: a listener's exec event as a frame, and back. */
static struct moat_seccomp_event ev2;

static void put_args(struct moat_seccomp_event *e, unsigned n, size_t each)
{
	uint32_t off = 0;
	e->argc = 0;
	for (unsigned i = 0; i < n && off + each + 1 <= sizeof(e->argv_buf); i++) {
		e->argv_off[e->argc++] = off;
		memset(e->argv_buf + off, 'a' + (int)(i % 26), each);
		off += (uint32_t)each;
		e->argv_buf[off++] = '\0';
	}
}

TEST(gvisor_trace_frame_of_listener_event)
{
	memset(&ev2, 0, sizeof(ev2));
	ev2.type = MOAT_SECCOMP_EVENT_EXEC;
	ev2.pid = 81;
	ev2.ppid = 1;
	ev2.nr = SYS_execve;
	snprintf(ev2.path, sizeof(ev2.path), "/bin/sh");
	snprintf(ev2.cwd, sizeof(ev2.cwd), "/workspace");
	memcpy(ev2.argv_buf, "sh\0-c\0true; /bin/true\0", 22);
	ev2.argv_off[0] = 0;
	ev2.argv_off[1] = 3;
	ev2.argv_off[2] = 6;
	ev2.argc = 3;
	size_t len = moat_gvt_frame_event(&ev2, frame);
	struct moat_gvt_frame h;
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(ev.pid, 81);
	ASSERT_EQ(ev.ppid, 1);
	ASSERT_STREQ(ev.path, "/bin/sh");
	ASSERT_STREQ(ev.cwd, "/workspace");
	ASSERT_STREQ(ev.syscall, "execve");
	ASSERT_EQ(ev.argc, 3u);
	ASSERT_STREQ(moat_seccomp_event_arg(&ev, 2), "true; /bin/true");
	ASSERT_TRUE(!ev.truncated);
	ev2.nr = SYS_execveat;
	len = moat_gvt_frame_event(&ev2, frame);
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_STREQ(ev.syscall, "execveat");
	/* a path without its NUL (the listener's buffer full): cut, flagged */
	memset(ev2.path, 'p', sizeof(ev2.path));
	len = moat_gvt_frame_event(&ev2, frame);
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(strlen(ev.path), (size_t)MOAT_GVT_PATH_MAX);
	ASSERT_TRUE(ev.truncated);
	snprintf(ev2.path, sizeof(ev2.path), "/bin/x");
	/* argv filling the whole buffer: all of it, not cut */
	put_args(&ev2, 256, 127);
	ASSERT_EQ(ev2.argc, 256u);
	len = moat_gvt_frame_event(&ev2, frame);
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(ev.argc, 256u);
	ASSERT_TRUE(!ev.truncated);
	/* its last entry without a NUL at the buffer's end: cut there */
	ev2.argv_buf[sizeof(ev2.argv_buf) - 1] = 'z';
	len = moat_gvt_frame_event(&ev2, frame);
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(ev.argc, 255u);
	ASSERT_TRUE(ev.truncated);
	/* an offset out of the buffer: stops there */
	put_args(&ev2, 3, 4);
	ev2.argv_off[1] = 1u << 30;
	len = moat_gvt_frame_event(&ev2, frame);
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(ev.argc, 1u);
	ASSERT_TRUE(ev.truncated);
	/* control: within the caps nothing is cut */
	put_args(&ev2, 20, 100);
	len = moat_gvt_frame_event(&ev2, frame);
	ASSERT_EQ(moat_gvt_frame_parse(frame, len, &h, &ev), (ssize_t)len);
	ASSERT_EQ(ev.argc, 20u);
	ASSERT_TRUE(!ev.truncated);
}

TEST(gvisor_trace_parents_bounded)
{
	static struct moat_gvt_parents t;
	memset(&t, 0, sizeof(t));
	ASSERT_EQ(moat_gvt_parent_of(&t, 2), 0);
	moat_gvt_parent_add(&t, 2, 1);
	moat_gvt_parent_add(&t, 3, 2);
	ASSERT_EQ(moat_gvt_parent_of(&t, 3), 2);
	moat_gvt_parent_add(&t, 3, 1); /* the pid reused: the latest clone counts */
	ASSERT_EQ(moat_gvt_parent_of(&t, 3), 1);
	for (int i = 0; i < MOAT_GVT_PARENTS; i++)
		moat_gvt_parent_add(&t, 1000 + i, 7);
	ASSERT_EQ(moat_gvt_parent_of(&t, 2), 0); /* forgotten, oldest first */
	ASSERT_EQ(moat_gvt_parent_of(&t, 1000 + MOAT_GVT_PARENTS - 1), 7);
}

/* ---- the receiver, driven by a fake runsc ---------------------------------- */

static int connect_to(const char *dir)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/trace.sock", dir);
	int s = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		return -1;
	return s;
}

/* Everything the receiver sends until EOF (at most 5 s). */
static size_t read_all(int fd, uint8_t *buf, size_t cap)
{
	size_t len = 0;
	for (;;) {
		struct pollfd pf = {.fd = fd, .events = POLLIN};
		if (poll(&pf, 1, 5000) <= 0)
			break;
		ssize_t n = read(fd, buf + len, cap - len);
		if (n < 0 && errno == EAGAIN)
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
	}
	return len;
}

static char dir[64];
static uint8_t out[4 * MOAT_GVT_FRAME_MAX];

static struct moat_gvt_sup *start_rx(void)
{
	char conf[160], why[256];
	struct moat_gvt_sup *t = NULL;
	snprintf(dir, sizeof(dir), "/tmp/moat-gvt-test-XXXXXX");
	if (!mkdtemp(dir))
		return NULL;
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int k = moat_gvt_start(dfd, dir, &t, conf, sizeof(conf), why, sizeof(why));
	close(dfd);
	if (k < 0)
		printf("# %s\n", why);
	return k < 0 ? NULL : t;
}

static void clean_dir(void)
{
	char p[128];
	snprintf(p, sizeof(p), "%s/trace.sock", dir);
	unlink(p);
	snprintf(p, sizeof(p), "%s/trace.json", dir);
	unlink(p);
	rmdir(dir);
}

/* The receiver: our only child. */
static pid_t child_pid(void)
{
	char p[64], buf[64] = "";
	snprintf(p, sizeof(p), "/proc/self/task/%d/children", (int)gettid());
	FILE *f = fopen(p, "r");
	if (!f)
		return -1;
	if (!fgets(buf, sizeof(buf), f))
		buf[0] = '\0';
	fclose(f);
	return (pid_t)atoi(buf);
}

TEST(gvisor_trace_receiver_end_to_end)
{
	struct moat_gvt_sup *t = start_rx();
	ASSERT_TRUE(t != NULL);
	int s = connect_to(dir);
	ASSERT_TRUE(s >= 0);
	ASSERT_EQ(send(s, "\x08\x01", 2, 0), 2);
	uint8_t reply[16];
	ASSERT_EQ(recv(s, reply, sizeof(reply), 0), 2);
	ASSERT_TRUE(moat_gvt_handshake_ok(reply, 2));
	/* then nothing more from the receiver: its side is shut for writing */
	ASSERT_EQ(recv(s, reply, sizeof(reply), 0), 0);

	/* confined: nobody as root, no_new_privs, seccomp, exactly its fds */
	pid_t rx = child_pid();
	ASSERT_TRUE(rx > 0);
	char p[64], line[256];
	snprintf(p, sizeof(p), "/proc/%d/status", (int)rx);
	FILE *f = fopen(p, "r");
	ASSERT_TRUE(f != NULL);
	bool nnp = false, filtered = false, nobody = geteuid() != 0;
	while (fgets(line, sizeof(line), f)) {
		nnp |= !strcmp(line, "NoNewPrivs:\t1\n");
		filtered |= !strcmp(line, "Seccomp:\t2\n");
		nobody |= !strncmp(line, "Uid:\t65534\t65534\t65534\t65534", 27);
	}
	fclose(f);
	ASSERT_TRUE(nnp && filtered && nobody);
	unsigned nfd = 0;
	for (int fd = 0; fd < 64; fd++) {
		char l[80], target[128];
		snprintf(l, sizeof(l), "/proc/%d/fd/%d", (int)rx, fd);
		ssize_t n = readlink(l, target, sizeof(target) - 1);
		if (n < 0)
			continue;
		nfd++;
		target[n] = '\0';
		if (fd < 3)
			ASSERT_STREQ(target, "/dev/null");
		else
			ASSERT_TRUE(!strncmp(target, "socket:", 7) || !strncmp(target, "pipe:", 5));
	}
	ASSERT_EQ(nfd, 5u); /* 0-2, the connection, the pipe (the listener closed) */

	static const char *const names[] = {"clone_sh",	       "execve_enoent", "execve_sh",
					    "clone_python",    "execve_python", "clone_thread",
					    "execveat_fexecve"};
	for (unsigned i = 0; i < ELEMENTSOF(names); i++) {
		size_t n = corpus(names[i], msg, sizeof(msg));
		ASSERT_TRUE(n > 0);
		ASSERT_EQ(send(s, msg, n, 0), (ssize_t)n);
	}
	/* hostile: a bad message, an oversized one, then a record after them */
	ASSERT_EQ(send(s, "\x08\x00\x0b\x00\x00\x00\x00\x00\x32\x40", 10, 0), 10);
	static uint8_t big[MOAT_GVT_MSG_MAX + 100];
	memcpy(big, "\x08\x00\x0b\x00\x03\x00\x00\x00", 8);
	ASSERT_EQ(send(s, big, sizeof(big), 0), (ssize_t)sizeof(big));
	size_t n = corpus("execve_ls", msg, sizeof(msg));
	ASSERT_EQ(send(s, msg, n, 0), (ssize_t)n);
	close(s);

	size_t len = read_all(moat_gvt_fd(t), out, sizeof(out));
	size_t at = 0;
	unsigned execs = 0;
	struct moat_gvt_frame h;
	const char *paths[4] = {"/usr/bin/sh", "/usr/bin/python3", "", "/usr/bin/ls"};
	int32_t ppids[4] = {0, 1, 1, 1};
	bool counts = false;
	while (at < len) {
		ssize_t k = moat_gvt_frame_parse(out + at, len - at, &h, &ev);
		ASSERT_TRUE(k > 0);
		at += (size_t)k;
		if (h.kind == MOAT_GVT_FRAME_COUNTS) {
			counts = true;
			ASSERT_EQ(h.malformed, 2u);
			continue;
		}
		ASSERT_TRUE(execs < 4);
		ASSERT_STREQ(ev.path, paths[execs]);
		ASSERT_EQ(ev.ppid, ppids[execs]);
		execs++;
	}
	ASSERT_EQ(execs, 4u); /* the ENOENT step is not one */
	ASSERT_TRUE(counts);
	ASSERT_STREQ(ev.syscall, "execve");
	moat_gvt_free(t);
	clean_dir();
}

TEST(gvisor_trace_receiver_refuses_other_uid)
{
	if (geteuid() != 0)
		SKIP("needs root: a peer of another uid");
	for (int other = 0; other < 2; other++) {
		struct moat_gvt_sup *t = start_rx();
		ASSERT_TRUE(t != NULL);
		chmod(dir, 0711);
		char p[128];
		snprintf(p, sizeof(p), "%s/trace.sock", dir);
		chmod(p, 0666);
		pid_t c = fork();
		if (c == 0) {
			if (other && setresuid(65534, 65534, 65534) < 0)
				_exit(1);
			int s = connect_to(dir);
			size_t n = corpus("execve_sh", msg, sizeof(msg));
			uint8_t r[8];
			if (s < 0)
				_exit(2);
			/* refused: the receiver closes without answering (maybe
			 * before the handshake is even sent) */
			if (send(s, "\x08\x01", 2, MSG_NOSIGNAL) != 2 ||
			    recv(s, r, sizeof(r), 0) != 2)
				_exit(3);
			_exit(send(s, msg, n, MSG_NOSIGNAL) == (ssize_t)n ? 0 : 4);
		}
		int st;
		ASSERT_EQ(waitpid(c, &st, 0), c);
		ASSERT_EQ(WEXITSTATUS(st), other ? 3 : 0);
		size_t len = read_all(moat_gvt_fd(t), out, sizeof(out));
		struct moat_gvt_frame h;
		if (other) {
			ASSERT_EQ(len, 0u); /* nothing, not even the counts */
		} else { /* control: our uid is served */
			ASSERT_TRUE(moat_gvt_frame_parse(out, len, &h, &ev) > 0);
			ASSERT_STREQ(ev.path, "/usr/bin/sh");
		}
		moat_gvt_free(t);
		clean_dir();
	}
}
