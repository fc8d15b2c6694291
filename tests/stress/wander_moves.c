/* wander_moves (white-box, linked with the allocator's test-hook build): a class
 * whose allocations and frees wander reaches central rarely, because a miss moves
 * half the class's capacity (vcpu_cache.c, move_count) and leaves the cache
 * halfway between empty and full.
 *
 * One pinned thread, blocks of 12 KiB (a class whose batch is 2 objects; the
 * default budget lets the cache hold about 88 of them). A set of live blocks does a
 * seeded random walk between 0 and 512: each step allocates a block into the set or
 * frees a random one of it, with even odds, so the cache's level walks the other
 * way. After 20 000 steps that let the capacity grow, the class's central lists
 * (every node) may see at most MOST_OPS removes and inserts together in 200 000
 * more steps. A refill or flush of one batch left the cache 2 objects from the end
 * it had just met, which the walk met again soon: the same steps then made 1 082
 * central operations in the vcpu, cpu and fallback modes; with half the capacity
 * moved, 104; 152 in each mode since a remove at a class's new high carves a
 * page's worth of objects, doubling while the class keeps carving (central.c's
 * carve_limit), so that the walk's new highs take a few more operations.
 */
#include "central_count.h"

enum {
	SIZE = 12 << 10,
	MAX_LIVE = 512,
	WARM_STEPS = 20000,
	WATCHED_STEPS = 200000,
	MOST_OPS = 300,
};

static unsigned char *live[MAX_LIVE];
static int nlive;
static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void step(void)
{
	uint64_t r = next_random();
	bool grow = (r & 1) ? nlive < MAX_LIVE : nlive == 0;
	if (grow) {
		unsigned char *p = malloc(vct_launder_size(SIZE));
		VCT_CHECK(p != NULL, "malloc(%d)", SIZE);
		p[0] = (unsigned char)nlive;
		p[SIZE - 1] = (unsigned char)nlive;
		live[nlive++] = p;
		return;
	}
	int i = (int)((r >> 1) % (uint64_t)nlive);
	unsigned char *p = live[i];
	VCT_CHECK(p[0] == p[SIZE - 1], "a block of %d bytes changed", SIZE);
	free(p);
	live[i] = live[--nlive];
}

int main(void)
{
	central_count_start("wander_moves");
	unsigned c = vc_class_of(SIZE);
	VCT_CHECK(vc_classes[c].size == SIZE && vc_classes[c].batch == 2,
		  "class of %d bytes: size %u, batch %u (expected a batch of 2)", SIZE,
		  vc_classes[c].size, vc_classes[c].batch);
	vct_vcmalloc()->reclaim(1);
	for (int s = 0; s < WARM_STEPS; s++)
		step();
	uint64_t before = central_ops(c);
	for (int s = 0; s < WATCHED_STEPS; s++)
		step();
	uint64_t ops = central_ops(c) - before;
	fprintf(stderr, "wander_moves: %llu central operations in %d steps (%d live at the end)\n",
		(unsigned long long)ops, WATCHED_STEPS, nlive);
	VCT_EXPECT(ops <= MOST_OPS,
		   "%llu central operations in %d steps of a wandering set of %d-byte blocks "
		   "(at most %d): misses move too little",
		   (unsigned long long)ops, WATCHED_STEPS, SIZE, MOST_OPS);
	while (nlive > 0)
		free(live[--nlive]);
	return vct_exit();
}
