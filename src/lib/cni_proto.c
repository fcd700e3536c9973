/*
 * cni_proto.c — frames on the CNI socket (cni_proto.h), and the small CNI
 * facts both ends of it check.
 *
 * A frame goes out as one logical write of header + payload:
 *
 *   cni_proto_send:  sendmsg(iov = [4-byte length, payload], SCM_RIGHTS on
 *                    the call that sends the first byte) until all is sent
 *   cni_proto_recv:  read_full(4) -> length checked -> malloc -> read_full(n)
 *                    (every read is a recvmsg, so a passed fd is collected
 *                    whichever read its control message arrives with)
 *
 * Invariants
 *  1. A passed fd is attached to exactly one sendmsg: the first that sends
 *     at least one byte (a call interrupted before sending sent nothing).
 *  2. The receiver holds at most one passed fd; extra ones are closed, and
 *     on any failure the one it holds is closed too.
 *  3. No allocation is sized from the wire before the length is checked
 *     against CNI_PROTO_MAX.
 */
#include "lib/cni_proto.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <jansson.h>

#define MAX_FDS_SEEN 4	/* control space for a misbehaving peer's extra fds */

int cni_proto_send(int sock, const char *buf, size_t len, int fd_to_pass)
{
	unsigned char hdr[4];
	size_t total = sizeof(hdr) + len, sent = 0;

	if (len > CNI_PROTO_MAX)
		return -EMSGSIZE;
	hdr[0] = (unsigned char)(len >> 24);
	hdr[1] = (unsigned char)(len >> 16);
	hdr[2] = (unsigned char)(len >> 8);
	hdr[3] = (unsigned char)len;

	while (sent < total) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} control;
		struct iovec iov[2];
		struct msghdr msg = { .msg_iov = iov };
		ssize_t n;

		if (sent < sizeof(hdr)) {
			iov[0].iov_base = hdr + sent;
			iov[0].iov_len = sizeof(hdr) - sent;
			iov[1].iov_base = (void *)buf;
			iov[1].iov_len = len;
			msg.msg_iovlen = len ? 2 : 1;
		} else {
			iov[0].iov_base = (void *)(buf + (sent - sizeof(hdr)));
			iov[0].iov_len = total - sent;
			msg.msg_iovlen = 1;
		}
		if (fd_to_pass >= 0 && sent == 0) {
			struct cmsghdr *c;

			memset(&control, 0, sizeof(control));
			msg.msg_control = control.buf;
			msg.msg_controllen = sizeof(control.buf);
			c = CMSG_FIRSTHDR(&msg);
			c->cmsg_level = SOL_SOCKET;
			c->cmsg_type = SCM_RIGHTS;
			c->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(c), &fd_to_pass, sizeof(int));
		}
		n = sendmsg(sock, &msg, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		sent += (size_t)n;
	}
	return 0;
}

/* Keeps the first fd of every SCM_RIGHTS message in *fd (if it has none
 * yet) and closes the rest. */
static void collect_fds(struct msghdr *msg, int *fd)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(msg); c; c = CMSG_NXTHDR(msg, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS ||
		    c->cmsg_len < CMSG_LEN(0))
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (*fd < 0)
				*fd = got;
			else
				close(got);
		}
	}
}

/* Reads exactly len bytes (recvmsg, collecting fds into *fd). */
static int read_full(int sock, void *dst, size_t len, int *fd)
{
	size_t got = 0;

	while (got < len) {
		union {
			char buf[CMSG_SPACE(MAX_FDS_SEEN * sizeof(int))];
			struct cmsghdr align;
		} control;
		struct iovec iov = { .iov_base = (char *)dst + got, .iov_len = len - got };
		struct msghdr msg = {
			.msg_iov = &iov,
			.msg_iovlen = 1,
			.msg_control = control.buf,
			.msg_controllen = sizeof(control.buf),
		};
		ssize_t n = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN || errno == EWOULDBLOCK)
				return -ETIMEDOUT;
			return -errno;
		}
		collect_fds(&msg, fd);
		if (n == 0)
			return -ECONNRESET;
		got += (size_t)n;
	}
	return 0;
}

int cni_proto_recv(int sock, char **buf, size_t *len, int *fd_out)
{
	unsigned char hdr[4];
	char *data = NULL;
	int fd = -1, e;
	uint32_t n;

	*buf = NULL;
	*len = 0;
	if (fd_out)
		*fd_out = -1;
	e = read_full(sock, hdr, sizeof(hdr), &fd);
	if (e < 0)
		goto out;
	n = (uint32_t)hdr[0] << 24 | (uint32_t)hdr[1] << 16 | (uint32_t)hdr[2] << 8 | hdr[3];
	if (n > CNI_PROTO_MAX) {
		e = -EMSGSIZE;
		goto out;
	}
	data = malloc((size_t)n + 1);
	if (!data) {
		e = -ENOMEM;
		goto out;
	}
	e = read_full(sock, data, n, &fd);
	if (e < 0)
		goto out;
	data[n] = '\0';
	*buf = data;
	*len = n;
	data = NULL;
	if (fd_out) {
		*fd_out = fd;
		fd = -1;
	}
out:
	free(data);
	if (fd >= 0)
		close(fd);
	return e;
}

static const char *const versions[] = {
	"0.1.0", "0.2.0", "0.3.0", "0.3.1", "0.4.0", "1.0.0", "1.1.0",
};

bool cni_proto_version_supported(const char *version)
{
	if (!version)
		return false;
	for (size_t i = 0; i < sizeof(versions) / sizeof(versions[0]); i++)
		if (!strcmp(version, versions[i]))
			return true;
	return false;
}

static bool id_char(char c, bool first)
{
	if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
		return true;
	return !first && (c == '_' || c == '.' || c == '-');
}

int cni_proto_check_id(const char *id)
{
	size_t i;

	if (!id || !id[0])
		return -EINVAL;
	for (i = 0; id[i]; i++) {
		if (i == CNI_ID_MAX)
			return -ENAMETOOLONG;
		if (!id_char(id[i], i == 0))
			return -EINVAL;
	}
	return 0;
}

int cni_proto_check_ifname(const char *ifname, const char **why)
{
	const char *w = NULL;
	size_t len = ifname ? strlen(ifname) : 0;

	if (len == 0)
		w = "is empty";
	else if (len > CNI_IFNAME_MAX)
		w = "is longer than 15 bytes";
	else if (!strcmp(ifname, ".") || !strcmp(ifname, ".."))
		w = "is . or ..";
	else if (strpbrk(ifname, "/: \t\n\v\f\r"))
		w = "contains '/', ':' or whitespace";
	if (why)
		*why = w;
	return w ? -EINVAL : 0;
}

/* json_string, or when s is not valid UTF-8, a copy with every byte
 * outside ASCII (and every control character) replaced by '?'. */
static json_t *safe_string(const char *s)
{
	json_t *j;
	char *copy;

	if (!s)
		s = "";
	j = json_string(s);
	if (j)
		return j;
	copy = strdup(s);
	if (!copy)
		return NULL;
	for (char *p = copy; *p; p++)
		if ((unsigned char)*p >= 0x80 || (unsigned char)*p < 0x20)
			*p = '?';
	j = json_string(copy);
	free(copy);
	return j;
}

char *cni_proto_json_line(const json_t *o)
{
	char *text = json_dumps(o, JSON_COMPACT), *line = NULL;
	size_t n;

	if (!text)
		return NULL;
	n = strlen(text);
	line = malloc(n + 2);
	if (line) {
		memcpy(line, text, n);
		line[n] = '\n';
		line[n + 1] = '\0';
	}
	free(text);
	return line;
}

char *cni_proto_error_json(const char *cni_version, int code, const char *msg,
			   const char *details)
{
	json_t *o;
	char *line;

	if (!cni_proto_version_supported(cni_version))
		cni_version = CNI_PROTO_VERSION;
	o = json_pack("{s:s,s:i,s:o*,s:o*}", "cniVersion", cni_version, "code", code,
		      "msg", safe_string(msg), "details", safe_string(details));
	if (!o)
		return NULL;
	line = cni_proto_json_line(o);
	json_decref(o);
	return line;
}

int cni_err_set(struct cni_err *e, int code, const char *details, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	snprintf(e->details, sizeof(e->details), "%s", details ? details : "");
	return -1;
}
