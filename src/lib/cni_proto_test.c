/*
 * cni_proto_test.c — frames over socketpairs: round trips (empty, small,
 * the maximum), fd passing, oversize refused on both sides, short reads,
 * byte-at-a-time writers, EINTR storms, receive timeouts; and the CNI
 * facts (versions, container IDs, interface names, the error JSON).
 */
#include "lib/cni_proto.h"
#include "test.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

static int pair(int sv[2])
{
	return socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv);
}

static int open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	if (!d)
		return -1;
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

TEST(proto_round_trip)
{
	static const char *msgs[] = { "", "x", "{\"command\":\"ADD\"}" };
	int sv[2], fd;
	char *buf;
	size_t len;

	CHECK(pair(sv) == 0);
	for (size_t i = 0; i < sizeof(msgs) / sizeof(msgs[0]); i++) {
		CHECK_EQ(cni_proto_send(sv[0], msgs[i], strlen(msgs[i]), -1), 0);
		CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, &fd), 0);
		CHECK_EQ(len, strlen(msgs[i]));
		CHECK_STR(buf, msgs[i]);
		CHECK_EQ(fd, -1);
		free(buf);
	}
	/* a frame carries its bytes exactly, NULs too */
	CHECK_EQ(cni_proto_send(sv[0], "a\0b", 3, -1), 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), 0);
	CHECK_EQ(len, 3);
	CHECK(memcmp(buf, "a\0b", 4) == 0);
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

struct sender {
	int sock;
	const char *buf;
	size_t len;
	int fd;
	int result;
	bool bytewise;		/* write the frame by hand, one byte per write */
	pthread_t interrupt;	/* when set: signalled before the frame goes */
};

static void *send_thread(void *p)
{
	struct sender *s = p;

	if (s->interrupt) {
		for (int i = 0; i < 20; i++) {
			pthread_kill(s->interrupt, SIGUSR1);
			sleep_ms(2);
		}
	}
	if (s->bytewise) {
		unsigned char hdr[4] = { (unsigned char)(s->len >> 24), (unsigned char)(s->len >> 16),
					 (unsigned char)(s->len >> 8), (unsigned char)s->len };

		s->result = 0;
		for (size_t i = 0; i < 4 + s->len; i++) {
			const void *b = i < 4 ? (const void *)&hdr[i] : (const void *)&s->buf[i - 4];

			if (write(s->sock, b, 1) != 1)
				s->result = -errno;
			if (i % 16 == 0)
				sleep_ms(1);
		}
		return NULL;
	}
	s->result = cni_proto_send(s->sock, s->buf, s->len, s->fd);
	return NULL;
}

TEST(proto_max_frame_through_small_buffers)
{
	size_t n = CNI_PROTO_MAX;
	char *big = malloc(n), *buf = NULL;
	struct sender s = { .len = n, .fd = -1 };
	int sv[2], bufsize = 4096;
	pthread_t t;
	size_t len;

	CHECK(big != NULL);
	for (size_t i = 0; i < n; i++)
		big[i] = (char)('a' + i % 26);
	CHECK(pair(sv) == 0);
	/* small socket buffers: the sender's writes are cut in many pieces */
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &bufsize, sizeof(bufsize));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &bufsize, sizeof(bufsize));
	s.sock = sv[0];
	s.buf = big;
	CHECK(pthread_create(&t, NULL, send_thread, &s) == 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), 0);
	pthread_join(t, NULL);
	CHECK_EQ(s.result, 0);
	CHECK_EQ(len, n);
	CHECK(memcmp(buf, big, n) == 0);
	free(buf);
	free(big);
	close(sv[0]);
	close(sv[1]);
}

TEST(proto_passes_fd)
{
	char path[512], *buf;
	struct stat a, b;
	int sv[2], fd, got, before;
	size_t len;

	snprintf(path, sizeof(path), "%s/netns", test_tmpdir());
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK(pair(sv) == 0);
	before = open_fds();
	CHECK_EQ(cni_proto_send(sv[0], "{}", 2, fd), 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, &got), 0);
	CHECK_STR(buf, "{}");
	free(buf);
	CHECK(got >= 0 && got != fd);
	CHECK(fstat(fd, &a) == 0 && fstat(got, &b) == 0);
	CHECK(a.st_ino == b.st_ino && a.st_dev == b.st_dev);
	CHECK(fcntl(got, F_GETFD) & FD_CLOEXEC);
	close(got);

	/* an fd nobody asked for is closed, not leaked */
	CHECK_EQ(cni_proto_send(sv[0], "x", 1, fd), 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), 0);
	free(buf);
	CHECK_EQ(open_fds(), before);

	/* an fd on an empty frame still arrives (it rides on the header) */
	CHECK_EQ(cni_proto_send(sv[0], "", 0, fd), 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, &got), 0);
	CHECK_EQ(len, 0);
	CHECK(got >= 0);
	free(buf);
	close(got);
	close(fd);
	close(sv[0]);
	close(sv[1]);
}

TEST(proto_refuses_oversize)
{
	unsigned char hdr[4] = { 0x00, 0x10, 0x00, 0x01 };	/* CNI_PROTO_MAX + 1 */
	char *buf = (char *)1;
	int sv[2], fd = 7;
	size_t len = 9;

	CHECK(pair(sv) == 0);
	CHECK_EQ(cni_proto_send(sv[0], "x", (size_t)CNI_PROTO_MAX + 1, -1), -EMSGSIZE);
	CHECK(write(sv[0], hdr, 4) == 4);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, &fd), -EMSGSIZE);
	CHECK(buf == NULL);
	CHECK_EQ(len, 0);
	CHECK_EQ(fd, -1);
	hdr[0] = 0xff;	/* 4 GiB: refused before any allocation */
	CHECK(write(sv[0], hdr, 4) == 4);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), -EMSGSIZE);
	close(sv[0]);
	close(sv[1]);
}

TEST(proto_short_reads)
{
	unsigned char hdr[4] = { 0, 0, 0, 10 };
	char path[512], *buf = (char *)1;
	int sv[2], fd, got = 5, before;
	size_t len;

	/* nothing at all */
	CHECK(pair(sv) == 0);
	close(sv[0]);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), -ECONNRESET);
	CHECK(buf == NULL);
	close(sv[1]);

	/* half a header */
	CHECK(pair(sv) == 0);
	CHECK(write(sv[0], hdr, 2) == 2);
	close(sv[0]);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), -ECONNRESET);
	close(sv[1]);

	/* a body cut short, with an fd: the fd is closed, not leaked */
	snprintf(path, sizeof(path), "%s/f", test_tmpdir());
	fd = open(path, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	CHECK(fd >= 0);
	CHECK(pair(sv) == 0);
	before = open_fds();
	{
		char control[CMSG_SPACE(sizeof(int))] = { 0 };
		struct iovec iov = { .iov_base = hdr, .iov_len = 4 };
		struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
				      .msg_controllen = sizeof(control) };
		struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
		CHECK(sendmsg(sv[0], &msg, 0) == 4);
	}
	CHECK(write(sv[0], "12345", 5) == 5);
	close(sv[0]);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, &got), -ECONNRESET);
	CHECK_EQ(got, -1);
	CHECK(buf == NULL);
	close(sv[1]);
	CHECK_EQ(open_fds(), before - 2);	/* the pair, and nothing received */
	close(fd);
}

TEST(proto_byte_at_a_time)
{
	static const char msg[] = "{\"command\":\"DEL\",\"containerID\":\"c1\",\"ifname\":\"eth0\"}";
	struct sender s = { .buf = msg, .len = sizeof(msg) - 1, .fd = -1, .bytewise = true };
	int sv[2];
	pthread_t t;
	char *buf;
	size_t len;

	CHECK(pair(sv) == 0);
	s.sock = sv[0];
	CHECK(pthread_create(&t, NULL, send_thread, &s) == 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), 0);
	pthread_join(t, NULL);
	CHECK_EQ(s.result, 0);
	CHECK_STR(buf, msg);
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

static volatile sig_atomic_t interrupts;
static void on_usr1(int sig)
{
	(void)sig;
	interrupts++;
}

TEST(proto_survives_eintr)
{
	static const char msg[] = "interrupted but whole";
	struct sigaction sa = { .sa_handler = on_usr1 }, old;	/* no SA_RESTART */
	struct sender s = { .buf = msg, .len = sizeof(msg) - 1, .fd = -1 };
	int sv[2];
	pthread_t t;
	char *buf;
	size_t len;

	CHECK(sigaction(SIGUSR1, &sa, &old) == 0);
	CHECK(pair(sv) == 0);
	s.sock = sv[0];
	s.interrupt = pthread_self();
	interrupts = 0;
	CHECK(pthread_create(&t, NULL, send_thread, &s) == 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), 0);
	pthread_join(t, NULL);
	sigaction(SIGUSR1, &old, NULL);
	CHECK(interrupts > 0);
	CHECK_STR(buf, msg);
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

TEST(proto_receive_timeout)
{
	struct timeval tv = { .tv_sec = 0, .tv_usec = 100 * 1000 };
	int sv[2];
	char *buf;
	size_t len;

	CHECK(pair(sv) == 0);
	CHECK(setsockopt(sv[1], SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) == 0);
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), -ETIMEDOUT);
	CHECK(write(sv[0], "\0\0\0\5ab", 6) == 6);	/* and in the middle of a frame */
	CHECK_EQ(cni_proto_recv(sv[1], &buf, &len, NULL), -ETIMEDOUT);
	close(sv[0]);
	close(sv[1]);
}

TEST(proto_send_to_closed_peer)
{
	int sv[2];

	CHECK(pair(sv) == 0);
	close(sv[1]);
	/* EPIPE, not SIGPIPE (which would end this test binary) */
	CHECK_EQ(cni_proto_send(sv[0], "x", 1, -1), -EPIPE);
	close(sv[0]);
}

TEST(proto_versions)
{
	static const char *good[] = { "0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0" };
	static const char *bad[] = { "", "1.1", "1.1.0 ", "v1.0.0", "1.2.0", "0.3.2", "2.0.0", "01.0.0" };
	json_t *reply = json_loads(CNI_PROTO_VERSION_REPLY, 0, NULL), *list;
	size_t i;

	for (i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK(cni_proto_version_supported(good[i]));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK(!cni_proto_version_supported(bad[i]));
	CHECK(!cni_proto_version_supported(NULL));
	/* the VERSION answer lists exactly the supported versions */
	CHECK(reply != NULL);
	CHECK_STR(json_string_value(json_object_get(reply, "cniVersion")), "1.1.0");
	list = json_object_get(reply, "supportedVersions");
	CHECK_EQ(json_array_size(list), sizeof(good) / sizeof(good[0]));
	for (i = 0; i < json_array_size(list); i++)
		CHECK_STR(json_string_value(json_array_get(list, i)), good[i]);
	json_decref(reply);
}

TEST(proto_container_ids)
{
	static const char *good[] = { "a", "0", "abc-def_1.2", "Z.", "0123456789abcdef" };
	static const char *bad[] = { "", "-a", "_a", ".a", "a b", "a/b", "a:b", "ä", "a\n" };
	char longest[CNI_ID_MAX + 2];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_EQ(cni_proto_check_id(good[i]), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		CHECK_EQ(cni_proto_check_id(bad[i]), -EINVAL);
	CHECK_EQ(cni_proto_check_id(NULL), -EINVAL);
	memset(longest, 'a', CNI_ID_MAX);
	longest[CNI_ID_MAX] = '\0';
	CHECK_EQ(cni_proto_check_id(longest), 0);
	longest[CNI_ID_MAX] = 'a';
	longest[CNI_ID_MAX + 1] = '\0';
	CHECK_EQ(cni_proto_check_id(longest), -ENAMETOOLONG);
}

TEST(proto_ifnames)
{
	static const char *good[] = { "eth0", "a", "net1", "...", "123456789012345", "e-t.h_0" };
	static const char *bad[] = { "", ".", "..", "1234567890123456", "a/b", "a:b",
				     "a b", "a\tb", "a\n" };
	const char *why = NULL;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		CHECK_EQ(cni_proto_check_ifname(good[i], &why), 0);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		why = NULL;
		CHECK_EQ(cni_proto_check_ifname(bad[i], &why), -EINVAL);
		CHECK(why != NULL);
	}
	CHECK_EQ(cni_proto_check_ifname(NULL, NULL), -EINVAL);
}

TEST(proto_error_json)
{
	char *text = cni_proto_error_json("0.4.0", 7, "bad \"name\"", "x\ny");
	json_t *o;

	CHECK(text != NULL);
	CHECK(text[strlen(text) - 1] == '\n');
	o = json_loads(text, 0, NULL);
	free(text);
	CHECK(o != NULL);
	CHECK_STR(json_string_value(json_object_get(o, "cniVersion")), "0.4.0");
	CHECK_EQ(json_integer_value(json_object_get(o, "code")), 7);
	CHECK_STR(json_string_value(json_object_get(o, "msg")), "bad \"name\"");
	CHECK_STR(json_string_value(json_object_get(o, "details")), "x\ny");
	json_decref(o);

	/* an unknown version is not echoed; invalid UTF-8 is made printable */
	text = cni_proto_error_json("9.9.9", 1, "bad \xff\xfe byte", NULL);
	CHECK(text != NULL);
	o = json_loads(text, 0, NULL);
	free(text);
	CHECK(o != NULL);
	CHECK_STR(json_string_value(json_object_get(o, "cniVersion")), "1.1.0");
	CHECK_STR(json_string_value(json_object_get(o, "msg")), "bad ?? byte");
	CHECK_STR(json_string_value(json_object_get(o, "details")), "");
	json_decref(o);
}
