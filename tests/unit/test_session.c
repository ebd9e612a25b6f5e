/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sessions' wire format (supervisor/session_proto.c) and names (session_dir.c): a
 * message and its descriptors round-trip; a wrong magic or version, a
 * length that disagrees, bad JSON, too many descriptors or a truncated
 * datagram are refused with every received descriptor closed. Each test runs
 * in its own forked child. */
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "harness/tap.h"
#include "supervisor/session.h"
#include "shared/macro.h"

static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv);
}

/* How many descriptors are open in 3..255. */
static int open_fds(void)
{
	int n = 0;
	for (int fd = 3; fd < 256; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

TEST(session_msg_roundtrip_with_fds)
{
	int sv[2], p[2];
	ASSERT_EQ(pair(sv), 0);
	ASSERT_EQ(pipe2(p, O_CLOEXEC), 0);
	json_t *b = json_pack("{s:s,s:i}", "path", "/tmp/x", "max", 5);
	ASSERT_EQ(moat_sess_send(sv[0], MOAT_SESS_COPY_IN, b, &p[1], 1), 0);
	json_decref(b);
	struct moat_sess_msg m;
	ASSERT_EQ(moat_sess_recv(sv[1], false, &m), 1);
	ASSERT_EQ(m.type, (unsigned)MOAT_SESS_COPY_IN);
	ASSERT_STREQ(json_string_value(json_object_get(m.body, "path")), "/tmp/x");
	ASSERT_EQ(m.n_fds, 1u);
	/* the received fd is the pipe's write end, close-on-exec */
	ASSERT_TRUE(fcntl(m.fds[0], F_GETFD) & FD_CLOEXEC);
	ASSERT_EQ(write(m.fds[0], "k", 1), 1);
	char c = 0;
	ASSERT_EQ(read(p[0], &c, 1), 1);
	ASSERT_EQ(c, 'k');
	moat_sess_msg_done(&m);
	ASSERT_EQ(m.n_fds, 0u);
	/* EOF */
	close(sv[0]);
	ASSERT_EQ(moat_sess_recv(sv[1], false, &m), 0);
}

/* Sends raw bytes (and fds) as one datagram. */
static void raw(int sock, const void *buf, size_t len, const int *fds, unsigned n)
{
	union {
		char b[CMSG_SPACE(sizeof(int) * 8)];
		struct cmsghdr align;
	} u;
	struct iovec iov = {.iov_base = (void *)(uintptr_t)buf, .iov_len = len};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};
	memset(&u, 0, sizeof(u));
	if (n) {
		msg.msg_control = u.b;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n);
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * n);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * n);
	}
	(void)!sendmsg(sock, &msg, 0);
}

struct hdr {
	uint32_t magic;
	uint16_t version, type;
	uint32_t len;
};

static void frame(char *buf, uint32_t magic, uint16_t version, uint32_t len, const char *body)
{
	struct hdr h = {magic, version, MOAT_SESS_INFO, len};
	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, strlen(body));
}

TEST(session_msg_control_well_formed_raw)
{
	/* positive control for the refusals below: the same raw framing with
	 * the right fields is accepted */
	int sv[2];
	char buf[64];
	ASSERT_EQ(pair(sv), 0);
	frame(buf, MOAT_SESS_MAGIC, MOAT_SESS_VERSION, 2, "{}");
	raw(sv[0], buf, sizeof(struct hdr) + 2, NULL, 0);
	struct moat_sess_msg m;
	ASSERT_EQ(moat_sess_recv(sv[1], false, &m), 1);
	ASSERT_EQ(m.type, (unsigned)MOAT_SESS_INFO);
	moat_sess_msg_done(&m);
}

TEST(session_msg_refused_and_fds_closed)
{
	int sv[2], nul = open("/dev/null", O_RDONLY | O_CLOEXEC);
	char buf[64];
	struct moat_sess_msg m;
	ASSERT_EQ(pair(sv), 0);
	int base = open_fds();
	const int four[4] = {nul, nul, nul, nul};
	struct {
		uint32_t magic;
		uint16_t version;
		uint32_t len;
		const char *body;
		unsigned nfds;
	} cases[] = {
		{0x12345678u, MOAT_SESS_VERSION, 2, "{}", 1}, /* magic */
		{MOAT_SESS_MAGIC, MOAT_SESS_VERSION + 1, 2, "{}", 1}, /* version */
		{MOAT_SESS_MAGIC, MOAT_SESS_VERSION, 9, "{}", 1}, /* length */
		{MOAT_SESS_MAGIC, MOAT_SESS_VERSION, 2, "[]", 1}, /* not an object */
		{MOAT_SESS_MAGIC, MOAT_SESS_VERSION, 3, "{\"", 2}, /* bad JSON */
		{MOAT_SESS_MAGIC, MOAT_SESS_VERSION, 2, "{}", 4}, /* too many fds */
	};
	for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
		frame(buf, cases[i].magic, cases[i].version, cases[i].len, cases[i].body);
		raw(sv[0], buf, sizeof(struct hdr) + strlen(cases[i].body), four, cases[i].nfds);
		ASSERT_EQ(moat_sess_recv(sv[1], false, &m), -EBADMSG);
		ASSERT_EQ(m.n_fds, 0u);
		ASSERT_EQ(open_fds(), base); /* nothing received is left open */
	}
	/* shorter than a header */
	raw(sv[0], "abc", 3, NULL, 0);
	ASSERT_EQ(moat_sess_recv(sv[1], false, &m), -EBADMSG);
}

TEST(session_msg_too_big_is_not_sent)
{
	int sv[2];
	ASSERT_EQ(pair(sv), 0);
	char *big = malloc(MOAT_SESS_MSG_MAX + 1);
	ASSERT_TRUE(big != NULL);
	memset(big, 'a', MOAT_SESS_MSG_MAX);
	big[MOAT_SESS_MSG_MAX] = 0;
	json_t *b = json_pack("{s:s}", "x", big);
	ASSERT_EQ(moat_sess_send(sv[0], MOAT_SESS_INFO, b, NULL, 0), -EMSGSIZE);
	json_decref(b);
	free(big);
}

TEST(session_names_and_ids)
{
	ASSERT_TRUE(moat_sess_name_valid("task1"));
	ASSERT_TRUE(moat_sess_name_valid("a.b-c_d"));
	ASSERT_TRUE(!moat_sess_name_valid(""));
	ASSERT_TRUE(!moat_sess_name_valid(".hidden"));
	ASSERT_TRUE(!moat_sess_name_valid("-x"));
	ASSERT_TRUE(!moat_sess_name_valid("a/b"));
	ASSERT_TRUE(!moat_sess_name_valid(".."));
	ASSERT_TRUE(!moat_sess_name_valid("a b"));
	char longname[80];
	memset(longname, 'a', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = 0;
	ASSERT_TRUE(!moat_sess_name_valid(longname));
	ASSERT_TRUE(moat_sess_id_valid("0123456789abcdef"));
	ASSERT_TRUE(!moat_sess_id_valid("0123456789ABCDEF"));
	ASSERT_TRUE(!moat_sess_id_valid("0123"));
	ASSERT_TRUE(!moat_sess_id_valid("../../../etc/pass"));
}
