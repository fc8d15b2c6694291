/* allocator/override_thread.c - pthread_create, exported by the shared library only.
 *
 * Not part of the malloc API: every thread is started through vcmalloc so that the
 * crowd-exit rule counts it (init.c, vc_pthread_create), which finds the C
 * library's pthread_create with dlsym(RTLD_NEXT). That needs a dynamic linker:
 * in a fully static executable there is none, and the archive must not replace
 * pthread_create there, so libvcmalloc.a leaves this file out; its threads are
 * counted from their first slow path. */
#include "internal.h"

/* Tells init.c, through a weak reference, that pthread_create is ours (the shared
 * library): the C library's is then found with dlsym(RTLD_NEXT). */
const char vc_exports_pthread_create VC_HIDDEN = 1;

VC_EXPORT __attribute__((used)) int pthread_create(pthread_t *t, const pthread_attr_t *attr,
						   void *(*fn)(void *), void *arg)
{
	return vc_pthread_create(t, attr, fn, arg);
}
