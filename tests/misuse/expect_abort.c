/* expect_abort: run a misuse program and check that vcmalloc caught the misuse.
 *
 * usage: expect_abort <expected text> <program> [args...]
 *        expect_abort --segv <program> [args...]
 *
 * The program is run with its stderr captured (and echoed to ours for the log). The
 * run passes only when all of these hold:
 *   - the program was killed by SIGABRT (not a segfault, not an exit);
 *   - its stderr has the marker line "misuse: committing <case>", printed just
 *     before the misuse, so that an earlier failure cannot pass for the right one;
 *   - a later stderr line starts with "vcmalloc: error: " and contains the
 *     expected text (e.g. "double free", "invalid pointer", "size mismatch").
 * With --segv the program must instead die of SIGSEGV after the marker (a guard
 * page hit), and no report is required.
 * Core dumps are disabled for the child: an abort is the expected outcome. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

enum { CAPTURE_MAX = 1 << 16 };

static char captured[CAPTURE_MAX + 1];

static size_t run_capturing_stderr(char **argv, int *status)
{
	int fds[2];
	if (pipe(fds) != 0) {
		perror("expect_abort: pipe");
		exit(2);
	}
	pid_t pid = fork();
	if (pid < 0) {
		perror("expect_abort: fork");
		exit(2);
	}
	if (pid == 0) {
		struct rlimit no_core = {0, 0};
		setrlimit(RLIMIT_CORE, &no_core);
		dup2(fds[1], 2);
		close(fds[0]);
		close(fds[1]);
		execv(argv[0], argv);
		perror("expect_abort: execv");
		_exit(127);
	}
	close(fds[1]);
	size_t len = 0;
	for (;;) {
		char chunk[4096];
		ssize_t r = read(fds[0], chunk, sizeof(chunk));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		size_t keep = (size_t)r;
		if (keep > CAPTURE_MAX - len)
			keep = CAPTURE_MAX - len;
		memcpy(captured + len, chunk, keep);
		len += keep;
	}
	close(fds[0]);
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			perror("expect_abort: waitpid");
			exit(2);
		}
	}
	captured[len] = '\0';
	return len;
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: expect_abort <expected text> <program> [args...]\n");
		return 2;
	}
	const char *expected = argv[1];
	const bool segv = strcmp(expected, "--segv") == 0;
	const int want = segv ? SIGSEGV : SIGABRT;
	int status;
	run_capturing_stderr(argv + 2, &status);
	fputs(captured, stderr);

	bool ok = true;
	if (!WIFSIGNALED(status) || WTERMSIG(status) != want) {
		if (WIFSIGNALED(status))
			fprintf(stderr, "expect_abort: FAIL: killed by signal %d (%s), not %s\n",
				WTERMSIG(status), strsignal(WTERMSIG(status)), strsignal(want));
		else
			fprintf(stderr, "expect_abort: FAIL: exited with status %d, not %s\n",
				WEXITSTATUS(status), strsignal(want));
		ok = false;
	}
	/* The report must come after the marker. */
	const char *marker = strstr(captured, "misuse: committing ");
	if (!marker) {
		fprintf(stderr, "expect_abort: FAIL: the program never reached its misuse\n");
		return 1;
	}
	if (segv) {
		if (ok)
			fprintf(stderr, "expect_abort: ok (SIGSEGV after the marker)\n");
		return ok ? 0 : 1;
	}
	bool reported = false;
	for (const char *line = marker; line && *line; line = strchr(line, '\n')) {
		if (*line == '\n')
			line++;
		if (strncmp(line, "vcmalloc: error: ", 17) != 0)
			continue;
		const char *end = strchr(line, '\n');
		size_t n = end ? (size_t)(end - line) : strlen(line);
		char one[1024];
		if (n >= sizeof(one))
			n = sizeof(one) - 1;
		memcpy(one, line, n);
		one[n] = '\0';
		if (strstr(one, expected)) {
			reported = true;
			break;
		}
	}
	if (!reported) {
		fprintf(
		    stderr,
		    "expect_abort: FAIL: no line \"vcmalloc: error: ...%s...\" after the marker\n",
		    expected);
		ok = false;
	}
	if (ok)
		fprintf(stderr, "expect_abort: ok (SIGABRT with \"%s\")\n", expected);
	return ok ? 0 : 1;
}
