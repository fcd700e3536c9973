/*
 * runtime.c — a command and its answer over HAProxy's CLI socket
 * (runtime.h).  poll() bounds every wait by what is left of the
 * exchange's deadline.
 */
#include "lb/runtime.h"
#include "lib/monotime.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

/* wait for events on fd until deadline (monotime_ms): 0, or -ETIMEDOUT / -errno */
static int wait_fd(int fd, short events, int64_t deadline)
{
	for (;;) {
		struct pollfd p = { .fd = fd, .events = events };
		int64_t left = deadline - monotime_ms();
		int n;

		if (left <= 0)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)left);
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return -errno;
	}
}

static int send_all(int fd, const char *buf, size_t len, int64_t deadline)
{
	while (len) {
		ssize_t n;
		int r = wait_fd(fd, POLLOUT, deadline);

		if (r)
			return r;
		n = send(fd, buf, len, MSG_NOSIGNAL);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int lb_runtime_call(const char *socket_path, const char *command, const char *payload, char *answer, size_t cap,
		    int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int64_t deadline = monotime_ms() + timeout_ms;
	size_t got = 0;
	int fd = -1, r = 0;

	if (cap)
		answer[0] = '\0';
	if (strlen(socket_path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, socket_path, strlen(socket_path) + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 && errno != EINPROGRESS) {
		r = -errno;
		goto out;
	}
	if ((r = send_all(fd, command, strlen(command), deadline)))
		goto out;
	if (payload) {
		size_t n = strlen(payload);

		if ((r = send_all(fd, " <<\n", 4, deadline)) || (r = send_all(fd, payload, n, deadline)) ||
		    (n && payload[n - 1] != '\n' && (r = send_all(fd, "\n", 1, deadline))))
			goto out;
	}
	if ((r = send_all(fd, "\n", 1, deadline)))
		goto out;
	/* the master socket answers and closes only once it sees our end */
	shutdown(fd, SHUT_WR);
	for (;;) {
		char sink[512];
		char *dst = got + 1 < cap ? answer + got : sink;
		size_t room = got + 1 < cap ? cap - 1 - got : sizeof(sink);
		ssize_t n;

		if ((r = wait_fd(fd, POLLIN, deadline)))
			goto out;
		n = recv(fd, dst, room, 0);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		if (dst == sink)
			r = -EMSGSIZE;
		else
			got += (size_t)n;
	}
out:
	if (cap)
		answer[got < cap ? got : cap - 1] = '\0';
	close(fd);
	return r;
}
