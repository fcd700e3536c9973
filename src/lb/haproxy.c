/*
 * haproxy.c — starting, adopting, reloading and stopping HAProxy, and
 * applying runtime API ops (haproxy.h).
 *
 * Reload, as the master socket shows it ("show proc"):
 *
 *   master  <pid> master <reloads> [failed: <n>] ...
 *   workers <pid> worker <reloads> ...   the current worker has 0 reloads
 *
 *   before -> "reload" -> master re-executes (its socket is briefly
 *   gone) -> reloads + 1, failed unchanged -> the worker with 0 reloads is
 *   new -> the stats socket answers "show info" with that Pid: done.
 */
#include "lb/haproxy.h"

#include "lb/render.h"
#include "lb/runtime.h"
#include "lib/errmsg.h"
#include "lib/monotime.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define ANSWER_MAX (64 * 1024)
#define CALL_MS	   5000
#define START_MS   15000
#define MAP_CHUNK  8000		/* bytes of map lines per "add map" payload */

static void pause_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static int call(const struct lb_haproxy *h, const char *sock, const char *command, const char *payload,
		char *answer)
{
	char path[LB_PATH_BUF];

	lb_render_path(path, h->dir, NULL, sock);
	return lb_runtime_call(path, command, payload, answer, ANSWER_MAX, CALL_MS);
}

/* run argv, its output (cut) into out; its exit status, or -errno */
static int run_capture(char *const argv[], char *out, size_t cap)
{
	int pipefd[2] = { -1, -1 }, status = 0;
	size_t got = 0;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) != 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0) {
		sigset_t none;

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		dup2(pipefd[1], 1);
		dup2(pipefd[1], 2);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pipefd[1]);
	for (;;) {
		char sink[256];
		ssize_t n = got + 1 < cap ? read(pipefd[0], out + got, cap - 1 - got) : read(pipefd[0], sink, sizeof(sink));

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		if (got + 1 < cap)
			got += (size_t)n;
	}
	out[got] = '\0';
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

int lb_haproxy_check(const char *bin, const char *dir, char *err, size_t errlen)
{
	char cfg[LB_PATH_BUF], out[4096];
	char *argv[] = { (char *)bin, "-c", "-q", "-f", cfg, NULL };
	int r;

	lb_render_path(cfg, dir, NULL, "haproxy.cfg");
	r = run_capture(argv, out, sizeof(out));
	if (r == 0)
		return 0;
	errmsg(err, errlen, "%s -c -f %s failed (%d): %.3000s", bin, cfg, r, out);
	return -EINVAL;
}

/* "show proc": the master's reload and failure counts, the current
 * worker (0 reloads) */
static int show_proc(const struct lb_haproxy *h, long *reloads, long *failed, pid_t *worker)
{
	char *answer = malloc(ANSWER_MAX), *line, *save = NULL;
	int r;

	if (!answer)
		return -ENOMEM;
	*reloads = *failed = -1;
	*worker = 0;
	if ((r = call(h, "master.sock", "show proc", NULL, answer)))
		goto out;
	for (line = strtok_r(answer, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		long pid, n, f;
		char type[16];

		if (sscanf(line, "%ld %15s %ld [failed: %ld]", &pid, type, &n, &f) == 4 && strcmp(type, "master") == 0) {
			*reloads = n;
			*failed = f;
		} else if (sscanf(line, "%ld %15s %ld", &pid, type, &n) == 3 && strcmp(type, "worker") == 0 && n == 0) {
			*worker = (pid_t)pid;
		}
	}
	r = *reloads < 0 ? -EPROTO : 0;
out:
	free(answer);
	return r;
}

/* the stats socket answers, from worker (0: any) */
static bool worker_answers(const struct lb_haproxy *h, pid_t worker)
{
	char *answer = malloc(ANSWER_MAX), want[32];
	bool ok;

	if (!answer)
		return false;
	snprintf(want, sizeof(want), "\nPid: %d\n", (int)worker);
	ok = call(h, "haproxy.sock", "show info", NULL, answer) == 0 && strstr(answer, "\nPid: ") &&
	     (worker == 0 || strstr(answer, want));
	free(answer);
	return ok;
}

static pid_t read_pidfile(const char *dir)
{
	char path[LB_PATH_BUF];
	long pid = 0;
	FILE *f;

	lb_render_path(path, dir, NULL, "haproxy.pid");
	f = fopen(path, "re");
	if (!f)
		return 0;
	if (fscanf(f, "%ld", &pid) != 1 || pid <= 1 || pid > 4194304)
		pid = 0;
	fclose(f);
	return (pid_t)pid;
}

/* is pid a haproxy master of ours: its command line has -S DIR/master.sock */
static bool ours(const char *dir, pid_t pid)
{
	char path[64], want[LB_PATH_BUF], buf[8192];
	ssize_t n;
	bool found = false;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	lb_render_path(want, dir, NULL, "master.sock");
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	for (ssize_t i = 0; n > 0 && i < n; i += (ssize_t)strlen(buf + i) + 1) {
		buf[n] = '\0';
		if (strcmp(buf + i, "-S") == 0 && i + 3 < n && strcmp(buf + i + 3, want) == 0)
			found = true;
	}
	return found;
}

static int spawn(struct lb_haproxy *h, char *err, size_t errlen)
{
	char master[LB_PATH_BUF], cfg[LB_PATH_BUF], pidfile[LB_PATH_BUF], log[LB_PATH_BUF];
	char *argv[] = { (char *)h->bin, "-W", "-S", master, "-f", cfg, "-p", pidfile, NULL };
	pid_t pid;

	lb_render_path(master, h->dir, NULL, "master.sock");
	lb_render_path(cfg, h->dir, NULL, "haproxy.cfg");
	lb_render_path(pidfile, h->dir, NULL, "haproxy.pid");
	lb_render_path(log, h->dir, NULL, "haproxy.log");
	pid = fork();
	if (pid < 0) {
		errmsg(err, errlen, "fork: %s", strerror(errno));
		return -errno;
	}
	if (pid == 0) {
		sigset_t none;
		int fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execv(argv[0], argv);
		_exit(127);
	}
	h->master = pid;
	h->child = true;
	return 0;
}

int lb_haproxy_start(struct lb_haproxy *h, bool *adopted, char *err, size_t errlen)
{
	pid_t pid = read_pidfile(h->dir);
	long reloads, failed;
	int64_t deadline;
	int r;

	*adopted = false;
	if (pid && ours(h->dir, pid) && show_proc(h, &reloads, &failed, &h->worker) == 0) {
		h->master = pid;
		h->child = false;
		*adopted = true;
		return 0;
	}
	if ((r = spawn(h, err, errlen)))
		return r;
	deadline = monotime_ms() + START_MS;
	while (monotime_ms() < deadline) {
		int status;

		if (waitpid(h->master, &status, WNOHANG) == h->master) {
			h->master = 0;
			errmsg(err, errlen, "%s exited at start (status %d); see %s/haproxy.log", h->bin, status,
			       h->dir);
			return -ECHILD;
		}
		if (show_proc(h, &reloads, &failed, &h->worker) == 0 && h->worker && worker_answers(h, h->worker))
			return 0;
		pause_ms(50);
	}
	errmsg(err, errlen, "%s did not answer on %s/haproxy.sock within %d ms", h->bin, h->dir, START_MS);
	lb_haproxy_stop(h);
	return -ETIMEDOUT;
}

int lb_haproxy_reload(struct lb_haproxy *h, char *err, size_t errlen)
{
	long reloads, failed, now_reloads = -1, now_failed = -1;
	int64_t deadline;
	char answer[256], path[LB_PATH_BUF];
	pid_t worker = 0;
	int r;

	if ((r = show_proc(h, &reloads, &failed, &worker))) {
		errmsg(err, errlen, "master socket %s/master.sock: %s", h->dir, strerror(-r));
		return r;
	}
	/* the master may close the connection as it re-executes */
	lb_render_path(path, h->dir, NULL, "master.sock");
	r = lb_runtime_call(path, "reload", NULL, answer, sizeof(answer), CALL_MS);
	if (r && r != -ECONNRESET && r != -EPIPE) {
		errmsg(err, errlen, "reload on %s: %s", path, strerror(-r));
		return r;
	}
	deadline = monotime_ms() + START_MS;
	while (monotime_ms() < deadline) {
		if (show_proc(h, &now_reloads, &now_failed, &worker) == 0 && now_reloads > reloads) {
			if (now_failed > failed) {
				errmsg(err, errlen, "haproxy refused the new configuration (see %s/haproxy.log)",
				       h->dir);
				return -EINVAL;
			}
			if (worker && worker_answers(h, worker)) {
				h->worker = worker;
				return 0;
			}
		}
		pause_ms(50);
	}
	errmsg(err, errlen, "reload: no new worker within %d ms (reloads %ld -> %ld)", START_MS, reloads,
	       now_reloads);
	return -ETIMEDOUT;
}

static int map_replace(struct lb_haproxy *h, const struct lb_op *op, char *answer, char *err, size_t errlen)
{
	char command[LB_PATH_BUF + 64];
	const char *text = op->payload;
	unsigned version;
	int r;

	snprintf(command, sizeof(command), "prepare map %s", op->command);
	if ((r = call(h, "haproxy.sock", command, NULL, answer)) ||
	    sscanf(answer, "New version created: %u", &version) != 1)
		goto bad;
	while (*text) {
		size_t n = 0;
		char *chunk;

		/* whole lines, up to MAP_CHUNK bytes (a longer line alone) */
		while (text[n] && (n == 0 || n < MAP_CHUNK)) {
			size_t line = strcspn(text + n, "\n") + 1;

			if (n && n + line > MAP_CHUNK)
				break;
			n += text[n + line - 1] ? line : line - 1;
		}
		chunk = strndup(text, n);
		if (!chunk)
			return -ENOMEM;
		snprintf(command, sizeof(command), "add map @%u %s", version, op->command);
		r = call(h, "haproxy.sock", command, chunk, answer);
		free(chunk);
		if (r || !lb_plan_answer_ok(NULL, answer))
			goto bad;
		text += n;
	}
	snprintf(command, sizeof(command), "commit map @%u %s", version, op->command);
	if ((r = call(h, "haproxy.sock", command, NULL, answer)) || !lb_plan_answer_ok(NULL, answer))
		goto bad;
	return 0;
bad:
	errmsg(err, errlen, "%s: %s", command, r ? strerror(-r) : answer);
	return r ? r : -EPROTO;
}

int lb_haproxy_apply(struct lb_haproxy *h, const struct lb_op *op, char *err, size_t errlen)
{
	char *answer = malloc(ANSWER_MAX);
	int r;

	if (!answer)
		return -ENOMEM;
	if (op->kind == LB_OP_MAP_REPLACE) {
		r = map_replace(h, op, answer, err, errlen);
		goto out;
	}
	r = call(h, "haproxy.sock", op->command, op->payload, answer);
	if (r)
		errmsg(err, errlen, "%s: %s", op->command, strerror(-r));
	else if (!lb_plan_answer_ok(op->expect, answer)) {
		answer[strcspn(answer, "\n")] = '\0';
		errmsg(err, errlen, "%s: %.300s", op->command, answer);
		r = -EPROTO;
	}
out:
	free(answer);
	return r;
}

bool lb_haproxy_alive(struct lb_haproxy *h)
{
	int status;

	if (!h->master)
		return false;
	if (h->child && waitpid(h->master, &status, WNOHANG) == h->master) {
		h->master = 0;
		return false;
	}
	if (!h->child && kill(h->master, 0) != 0) {
		h->master = 0;
		return false;
	}
	return true;
}

void lb_haproxy_stop(struct lb_haproxy *h)
{
	int64_t deadline = monotime_ms() + 5000;

	if (!h->master)
		return;
	kill(h->master, SIGTERM);
	while (lb_haproxy_alive(h) && monotime_ms() < deadline)
		pause_ms(20);
	if (h->master) {
		kill(h->master, SIGKILL);
		if (h->child)
			waitpid(h->master, NULL, 0);
	}
	h->master = 0;
}
