/* kernel/tests/switchbench.c - a hackbench-like context-switch benchmark.
 *
 * usage: switchbench thread|process GROUPS LOOPS [REPEATS]
 *
 * Each group has 10 senders and 10 receivers, each receiver reading its own pipe.
 * Every sender writes LOOPS 100-byte messages to every receiver of its group, so
 * the run is dominated by blocking pipe reads and writes, i.e. by wakeups and
 * context switches. In "thread" mode all tasks are threads of one process (the
 * mm_cid handoff and shared-bitmap paths); in "process" mode each is its own
 * process (single-user memory spaces). Prints the wall time of each repeat and
 * their median; a benchmark, it asserts only that every message arrived.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define PER_GROUP 10
#define MSG_BYTES 100

struct task {
	int fd;		/* receiver: read end; unused for senders */
	int *out;	/* sender: the group's PER_GROUP write ends */
	long loops;
	int ready_fd;	/* write one byte when set up */
	int go_fd;	/* read one byte to start */
};

static int die(const char *what)
{
	perror(what);
	exit(2);
}

static void wait_go(struct task *t)
{
	char c;

	if (write(t->ready_fd, "r", 1) != 1)
		die("ready");
	if (read(t->go_fd, &c, 1) != 1)
		die("go");
}

static void *sender(void *arg)
{
	struct task *t = arg;
	char msg[MSG_BYTES] = { 0 };

	wait_go(t);
	for (long i = 0; i < t->loops; i++)
		for (int r = 0; r < PER_GROUP; r++)
			if (write(t->out[r], msg, sizeof msg) != sizeof msg)
				die("write");
	return NULL;
}

static void *receiver(void *arg)
{
	struct task *t = arg;
	char msg[MSG_BYTES];
	long want = t->loops * PER_GROUP * MSG_BYTES, got = 0;

	wait_go(t);
	while (got < want) {
		ssize_t n = read(t->fd, msg, sizeof msg);

		if (n <= 0)
			die("read");
		got += n;
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static double run_once(int threads, int groups, long loops)
{
	int ntasks = groups * 2 * PER_GROUP;
	struct task *tasks = calloc(ntasks, sizeof *tasks);
	pthread_t *tids = calloc(ntasks, sizeof *tids);
	pid_t *pids = calloc(ntasks, sizeof *pids);
	int ready[2], go[2];

	if (!tasks || !tids || !pids || pipe(ready) || pipe(go))
		die("setup");
	for (int g = 0; g < groups; g++) {
		int *wr = calloc(PER_GROUP, sizeof *wr);

		for (int r = 0; r < PER_GROUP; r++) {
			int p[2];

			if (!wr || pipe(p))
				die("pipe");
			tasks[g * 2 * PER_GROUP + r].fd = p[0];
			wr[r] = p[1];
		}
		for (int s = 0; s < PER_GROUP; s++)
			tasks[g * 2 * PER_GROUP + PER_GROUP + s].out = wr;
	}
	for (int i = 0; i < ntasks; i++) {
		struct task *t = &tasks[i];
		void *(*fn)(void *) = (i % (2 * PER_GROUP)) < PER_GROUP ? receiver : sender;

		t->loops = loops;
		t->ready_fd = ready[1];
		t->go_fd = go[0];
		if (threads) {
			if (pthread_create(&tids[i], NULL, fn, t))
				die("pthread_create");
		} else {
			pids[i] = fork();
			if (pids[i] < 0)
				die("fork");
			if (pids[i] == 0) {
				fn(t);
				_exit(0);
			}
		}
	}
	char c;
	for (int i = 0; i < ntasks; i++)
		if (read(ready[0], &c, 1) != 1)
			die("ready");
	double start = now();
	char *gobuf = calloc(ntasks, 1);
	if (write(go[1], gobuf, ntasks) != ntasks)
		die("go");
	for (int i = 0; i < ntasks; i++) {
		if (threads) {
			pthread_join(tids[i], NULL);
		} else {
			int status;

			if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
			    WEXITSTATUS(status) != 0) {
				fprintf(stderr, "switchbench: task %d failed\n", i);
				exit(1);
			}
		}
	}
	double elapsed = now() - start;

	for (int g = 0; g < groups; g++) {
		for (int r = 0; r < PER_GROUP; r++) {
			close(tasks[g * 2 * PER_GROUP + r].fd);
			close(tasks[g * 2 * PER_GROUP + PER_GROUP].out[r]);
		}
		free(tasks[g * 2 * PER_GROUP + PER_GROUP].out);
	}
	close(ready[0]);
	close(ready[1]);
	close(go[0]);
	close(go[1]);
	free(gobuf);
	free(tasks);
	free(tids);
	free(pids);
	return elapsed;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc < 4 || argc > 5 ||
	    (strcmp(argv[1], "thread") != 0 && strcmp(argv[1], "process") != 0)) {
		fprintf(stderr, "usage: switchbench thread|process GROUPS LOOPS [REPEATS]\n");
		return 2;
	}
	int threads = strcmp(argv[1], "thread") == 0;
	int groups = atoi(argv[2]);
	long loops = atol(argv[3]);
	int repeats = argc == 5 ? atoi(argv[4]) : 5;
	double t[64];

	if (groups < 1 || loops < 1 || repeats < 1 || repeats > 64)
		return 2;
	for (int i = 0; i < repeats; i++) {
		t[i] = run_once(threads, groups, loops);
		printf("switchbench: %s groups %d loops %ld run %d: %.4f s\n", argv[1], groups,
		       loops, i, t[i]);
	}
	qsort(t, repeats, sizeof t[0], cmp_double);
	printf("switchbench: %s groups %d loops %ld median %.4f s\n", argv[1], groups, loops,
	       t[repeats / 2]);
	return 0;
}
