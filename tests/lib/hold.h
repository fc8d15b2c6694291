/* SPDX-License-Identifier: MIT */
/*
 * tests/lib/hold.h - stopping a thread at a point inside the allocator (a test hook)
 * until the test lets it go, so that the test can check what other threads see
 * while that thread is there (white-box tests of the reclaim and release protocols).
 *
 *   vct_hold_arm(where)     this thread stops at the next hold point `where` (> 0)
 *                           it reaches (one stop per arming)
 *   vct_hold_point(where)   called by a hook: stops here if this thread armed `where`
 *   vct_hold_wait()         the test: until a thread has stopped
 *   vct_hold_release()      the test: the stopped thread goes on
 *
 * One thread is held at a time; every test using it calls vct_hold_init first.
 */
#ifndef VCT_HOLD_H
#define VCT_HOLD_H

void vct_hold_init(void);
void vct_hold_arm(int where);
void vct_hold_point(int where);
void vct_hold_wait(void);
void vct_hold_release(void);

#endif
