/* tests/api/early_ctor.c - allocations from another library's constructor, made
 * before vcmalloc has started up (see early_ctor_lib.c), are correct. */
#include "vctest.h"

const char *early_ctor_result(void);

int main(void)
{
	vct_start("early_ctor", 60);
	const char *failure = early_ctor_result();
	VCT_CHECK(failure == NULL, "in the library constructor: %s", failure);
	printf("early_ctor: ok\n");
	return 0;
}
