/*
 * token.c — the admin bearer token.
 *
 * At first start the controller creates DATA_DIR/admin.token (O_EXCL, mode
 * 0600) holding 32 random bytes as 64 hex characters; later starts read it.
 * Comparison takes the same time wherever the first difference is.
 */
#include "controller/controller.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define TOKEN_BYTES 32

static int read_token(const char *path, char *token, size_t len, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat sb;
	ssize_t n;

	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (fstat(fd, &sb) == 0 && (sb.st_mode & 077)) {
		close(fd);
		snprintf(err, errlen, "%s: readable by others (mode %03o); it must be 0600", path,
			 sb.st_mode & 0777);
		return -EPERM;
	}
	n = read(fd, token, len - 1);
	close(fd);
	if (n < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	token[n] = 0;
	while (n && (token[n - 1] == '\n' || token[n - 1] == '\r' || token[n - 1] == ' '))
		token[--n] = 0;
	if (n < 16) {
		snprintf(err, errlen, "%s: the token is too short (%zd characters, want >= 16)", path, n);
		return -EINVAL;
	}
	return 0;
}

int token_load_or_create(const char *dir, char *token, size_t len, char *err, size_t errlen)
{
	char path[4096];
	unsigned char raw[TOKEN_BYTES];
	int fd;

	snprintf(path, sizeof(path), "%s/admin.token", dir);
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0) {
		if (errno == EEXIST)
			return read_token(path, token, len, err, errlen);
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -errno;
	}
	if (len < 2 * TOKEN_BYTES + 1 || getrandom(raw, sizeof(raw), 0) != sizeof(raw)) {
		close(fd);
		unlink(path);
		snprintf(err, errlen, "%s: cannot make a random token", path);
		return -EIO;
	}
	for (int i = 0; i < TOKEN_BYTES; i++)
		snprintf(token + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero(raw, sizeof(raw));
	if (write(fd, token, 2 * TOKEN_BYTES) != 2 * TOKEN_BYTES || write(fd, "\n", 1) != 1 ||
	    fsync(fd) != 0) {
		close(fd);
		unlink(path);
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -EIO;
	}
	close(fd);
	return 0;
}

bool token_equal(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned char diff = (unsigned char)(la != lb);

	for (size_t i = 0; i < lb; i++)
		diff |= (unsigned char)(a[i < la ? i : 0] ^ b[i]);
	return diff == 0;
}
