/* SPDX-License-Identifier: MIT */
/* tests/lib/hold.c - see hold.h. */
#include "hold.h"

#include <errno.h>
#include <semaphore.h>

static sem_t held, released;
static __thread int armed; /* the hold point this thread stops at, 0: none */

static void wait_for(sem_t *s)
{
	while (sem_wait(s) != 0 && errno == EINTR)
		;
}

void vct_hold_init(void)
{
	sem_init(&held, 0, 0);
	sem_init(&released, 0, 0);
}

void vct_hold_arm(int where)
{
	armed = where;
}

void vct_hold_point(int where)
{
	if (armed != where)
		return;
	armed = 0;
	sem_post(&held);
	wait_for(&released);
}

void vct_hold_wait(void)
{
	wait_for(&held);
}

void vct_hold_release(void)
{
	sem_post(&released);
}
