/* rseq/inject.c - knobs of the injection points (test builds only). */
#include "rseq.h"

#if defined(VC_RSEQ_INJECT) && VC_RSEQ_INJECT
volatile int vc_rseq_inject_delay;
volatile int vc_rseq_inject_yield;
volatile long vc_rseq_inject_aborts;
#endif
