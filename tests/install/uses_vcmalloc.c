/* tests/install/uses_vcmalloc.c - allocates and checks that vcmalloc served it:
 * vcmalloc_stats() counts the bytes, and the program break never moves. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <vcmalloc.h>

int main(void)
{
	void *brk0 = sbrk(0);
	struct vcmalloc_stats before, after;
	vcmalloc_stats(&before);
	enum { N = 1000 };
	static void *blocks[N];
	for (int i = 0; i < N; i++) {
		blocks[i] = malloc(1000);
		if (!blocks[i])
			return 2;
		memset(blocks[i], i, 1000);
	}
	vcmalloc_stats(&after);
	void *brk1 = sbrk(0);
	printf("allocated %llu -> %llu bytes, break %s\n",
	       (unsigned long long)before.allocated_bytes,
	       (unsigned long long)after.allocated_bytes, brk0 == brk1 ? "unchanged" : "moved");
	for (int i = 0; i < N; i++)
		free(blocks[i]);
	if (after.allocated_bytes < before.allocated_bytes + N * 1000)
		return 1;
	return brk0 == brk1 ? 0 : 3;
}
