/* tests/unit/layer_env.h - what a layer under test finds of the rest of the allocator
 * (layer_env.c): the global state vc_g, which each test fills in, and misuse reports
 * and assertion failures, which abort unless a test is waiting for a report. */
#ifndef LAYER_ENV_H
#define LAYER_ENV_H

#include <setjmp.h>

/* A test that provokes a misuse report points this at a jmp_buf set with setjmp:
 * vc_report then records the report's text in layer_env_report and longjmps there
 * (and clears the pointer). The layer is left as it was at the report (a lock it
 * held stays held: the test re-initialises what it uses next). */
extern jmp_buf *layer_env_catch_report;
extern const char *layer_env_report;

#endif
