/* tests/lib/test_env.h - the environment knobs shared by every test program
 * (VCTEST_TIME_SCALE, VCTEST_WORK_DIVISOR; see tests/README.md). Header only: the
 * rseq tests and the api tests link different helper libraries. */
#ifndef VCMALLOC_TESTS_TEST_ENV_H
#define VCMALLOC_TESTS_TEST_ENV_H

#include <stdlib.h>

/* The integer in environment variable `name`, clamped to [lo, hi]; lo when unset
 * or not a number. */
static inline unsigned test_env_clamped(const char *name, unsigned lo, unsigned hi)
{
	const char *s = getenv(name);
	long v = s ? strtol(s, NULL, 10) : (long)lo;
	return v < (long)lo ? lo : v > (long)hi ? hi : (unsigned)v;
}

/* VCTEST_TIME_SCALE=K (1-1000): multiplies every hang guard. */
static inline unsigned test_time_scale(void)
{
	return test_env_clamped("VCTEST_TIME_SCALE", 1, 1000);
}

/* VCTEST_WORK_DIVISOR=D (1-100): divides the rounds of the long stress programs. */
static inline unsigned test_work_divisor(void)
{
	return test_env_clamped("VCTEST_WORK_DIVISOR", 1, 100);
}

#endif
