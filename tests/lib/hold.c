/* SPDX-License-Identifier: MIT */
/* tests/lib/hold.c - see hold.h. */
#include "hold.h"
#include "vctest.h"

#include <semaphore.h>

static sem_t held, released;
static __thread int armed; /* the hold point this thread stops at, 0: none */

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
	vct_sem_wait(&released);
}

void vct_hold_wait(void)
{
	vct_sem_wait(&held);
}

void vct_hold_release(void)
{
	sem_post(&released);
}
