/*
 * secret_file.c — read a small file that may hold a secret, with a bound
 * (secret_file.h).  The buffer is sized for the bound from the start, so
 * no realloc ever leaves a copy of the secret behind in freed memory.
 */
#include "lib/secret_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void secret_free(void *data, size_t len)
{
	if (data) {
		explicit_bzero(data, len);
		free(data);
	}
}

int secret_file_read(const char *path, size_t max, char **out, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;
	char *buf = NULL;
	size_t n = 0;

	*out = NULL;
	*len = 0;
	if (fd < 0)
		return -errno;
	buf = malloc(max + 1);
	if (!buf) {
		rc = -ENOMEM;
		goto out;
	}
	for (;;) {
		ssize_t r = read(fd, buf + n, max + 1 - n);

		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0) {
			rc = -errno;
			goto out;
		}
		if (r == 0)
			break;
		n += (size_t)r;
		if (n > max) {
			rc = -EFBIG;
			goto out;
		}
	}
	buf[n] = 0;
	*out = buf;
	*len = n;
	buf = NULL;
out:
	secret_free(buf, max + 1);
	close(fd);
	return rc;
}
