/* tests/rseq/crowd.c - see crowd.h. */
#include "crowd.h"

#include "cpus.h"
#include "vctest.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

struct crowd {
	const struct crowd_config *cfg;
	struct cpu_list allowed;
	pthread_t *thread;
	int *index;
	pthread_barrier_t prepared;
	pthread_mutex_t lock;
	pthread_cond_t released_cond;
	bool released;
	int finished; /* workers whose body returned; atomic */
	int running;  /* bodies loop while set; atomic */
	int stop;     /* disturbers stop when set; atomic */
	long signals_sent, affinity_moves;
};

static struct crowd crowd;
static void (*signal_body)(void);

static void on_sigusr1(int sig)
{
	(void)sig;
	signal_body();
}

bool crowd_running(void)
{
	return __atomic_load_n(&crowd.running, __ATOMIC_RELAXED);
}

void crowd_quiesce(void)
{
	sigset_t s;
	sigemptyset(&s);
	sigaddset(&s, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

static void *worker_main(void *p)
{
	int i = *(int *)p;
	const struct crowd_config *cfg = crowd.cfg;
	if (setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), 10) != 0)
		VCT_FATAL("setpriority: %s", strerror(errno));
	if (cfg->prepare)
		cfg->prepare(i, cfg->ctx);
	pthread_barrier_wait(&crowd.prepared);
	cfg->body(i, cfg->ctx);
	crowd_quiesce();
	__atomic_add_fetch(&crowd.finished, 1, __ATOMIC_RELEASE);
	pthread_mutex_lock(&crowd.lock);
	while (!crowd.released)
		pthread_cond_wait(&crowd.released_cond, &crowd.lock);
	pthread_mutex_unlock(&crowd.lock);
	return NULL;
}

static bool stopping(void)
{
	return __atomic_load_n(&crowd.stop, __ATOMIC_ACQUIRE);
}

static void *shuffler_main(void *p)
{
	(void)p;
	uint64_t seed = 0x9E3779B97F4A7C15ULL;
	int n = crowd.cfg->threads;
	for (; !stopping(); vct_sleep_us(200)) {
		int i = (int)(vct_rand(&seed) % (uint64_t)n);
		if (role_of(i) != ROLE_HOPPER)
			continue;
		uint64_t r = vct_rand(&seed);
		if (r % 4 == 0) {
			int e = pthread_setaffinity_np(crowd.thread[i], sizeof crowd.allowed.mask,
						       &crowd.allowed.mask);
			if (e)
				VCT_FATAL("pthread_setaffinity_np: %s", strerror(e));
		} else {
			pin_thread(crowd.thread[i],
				   crowd.allowed.cpu[(r >> 8) % (uint64_t)crowd.allowed.n]);
		}
		crowd.affinity_moves++;
	}
	return NULL;
}

static void *signaller_main(void *p)
{
	(void)p;
	int n = crowd.cfg->threads;
	for (int k = 0; !stopping(); k++) {
		int e = pthread_kill(crowd.thread[k % n], SIGUSR1);
		if (e)
			VCT_FATAL("pthread_kill: %s", strerror(e));
		crowd.signals_sent++;
		if (k % 4 == 3)
			vct_sleep_us(50);
	}
	return NULL;
}

void crowd_run(const struct crowd_config *cfg, struct crowd_report *report)
{
	int n = cfg->threads;
	memset(&crowd, 0, sizeof crowd);
	crowd.cfg = cfg;
	cpu_list_allowed(&crowd.allowed);
	crowd.thread = calloc((size_t)n, sizeof *crowd.thread);
	crowd.index = calloc((size_t)n, sizeof *crowd.index);
	if (!crowd.thread || !crowd.index)
		VCT_FATAL("out of memory");
	crowd.running = 1;
	pthread_barrier_init(&crowd.prepared, NULL, (unsigned)n + 1); /* workers + main */
	pthread_mutex_init(&crowd.lock, NULL);
	pthread_cond_init(&crowd.released_cond, NULL);

	if (cfg->signals) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_sigusr1;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		signal_body = cfg->on_signal;
		if (sigaction(SIGUSR1, &sa, NULL) != 0)
			VCT_FATAL("sigaction: %s", strerror(errno));
	}

	for (int i = 0; i < n; i++) {
		pthread_attr_t attr;
		pthread_attr_init(&attr);
		if (role_of(i) == ROLE_PINNED) {
			cpu_set_t s;
			CPU_ZERO(&s);
			CPU_SET(crowd.allowed.cpu[i % crowd.allowed.n], &s);
			pthread_attr_setaffinity_np(&attr, sizeof s, &s);
		}
		crowd.index[i] = i;
		if (pthread_create(&crowd.thread[i], &attr, worker_main, &crowd.index[i]) != 0)
			VCT_FATAL("pthread_create (thread %d)", i);
		pthread_attr_destroy(&attr);
	}

	pthread_barrier_wait(&crowd.prepared);
	pthread_t shuffler, signaller;
	if (pthread_create(&shuffler, NULL, shuffler_main, NULL) != 0)
		VCT_FATAL("pthread_create (shuffler)");
	if (cfg->signals && pthread_create(&signaller, NULL, signaller_main, NULL) != 0)
		VCT_FATAL("pthread_create (signaller)");

	long t0 = vct_now_us(), deadline = t0 + (long)cfg->run_ms * 1000, k = 0;
	for (long now = t0; now < deadline; now = vct_now_us(), k++) {
		if (cfg->tick)
			cfg->tick(k);
		long left = deadline - now;
		vct_sleep_us(left < cfg->tick_us ? left : cfg->tick_us);
	}
	if (cfg->before_stop)
		cfg->before_stop();
	__atomic_store_n(&crowd.running, 0, __ATOMIC_RELAXED);
	while (__atomic_load_n(&crowd.finished, __ATOMIC_ACQUIRE) < n)
		vct_sleep_us(1000);
	long t1 = vct_now_us();

	__atomic_store_n(&crowd.stop, 1, __ATOMIC_RELEASE);
	pthread_join(shuffler, NULL);
	if (cfg->signals)
		pthread_join(signaller, NULL);
	pthread_mutex_lock(&crowd.lock);
	crowd.released = true;
	pthread_cond_broadcast(&crowd.released_cond);
	pthread_mutex_unlock(&crowd.lock);
	for (int i = 0; i < n; i++)
		pthread_join(crowd.thread[i], NULL);

	if (cfg->signals) {
		struct sigaction sa;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = SIG_IGN;
		sigaction(SIGUSR1, &sa, NULL);
	}
	report->signals_sent = crowd.signals_sent;
	report->affinity_moves = crowd.affinity_moves;
	report->ticks = k;
	report->seconds = (double)(t1 - t0) * 1e-6;
	pthread_barrier_destroy(&crowd.prepared);
	free(crowd.thread);
	free(crowd.index);
}
