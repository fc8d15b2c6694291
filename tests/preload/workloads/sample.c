/* Compiled by the gcc preload test: a little of everything the compiler has to
 * chew on (structs, recursion, function pointers, loops it can unroll). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct node {
	struct node *left, *right;
	int key;
};

static struct node *insert(struct node *t, int key)
{
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t)
			exit(1);
		t->key = key;
	} else if (key < t->key) {
		t->left = insert(t->left, key);
	} else if (key > t->key) {
		t->right = insert(t->right, key);
	}
	return t;
}

static int depth(const struct node *t)
{
	if (!t)
		return 0;
	int l = depth(t->left), r = depth(t->right);
	return 1 + (l > r ? l : r);
}

static long sum(const struct node *t)
{
	return t ? t->key + sum(t->left) + sum(t->right) : 0;
}

static void release(struct node *t)
{
	if (t) {
		release(t->left);
		release(t->right);
		free(t);
	}
}

static int compare_ints(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	return (x > y) - (x < y);
}

int main(void)
{
	struct node *root = NULL;
	unsigned x = 1;
	int values[5000];
	for (int i = 0; i < 5000; i++) {
		x = x * 1664525u + 1013904223u;
		values[i] = (int)(x >> 8) % 100000;
		root = insert(root, values[i]);
	}
	qsort(values, 5000, sizeof(values[0]), compare_ints);
	char text[64];
	snprintf(text, sizeof(text), "%d..%d", values[0], values[4999]);
	printf("tree depth %d, sum %ld, range %s (%zu chars)\n", depth(root), sum(root), text,
	       strlen(text));
	release(root);
	return 0;
}
