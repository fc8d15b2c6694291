/* tests/unit/options_table.c - the README's options table, from allocator/options.def.
 *
 *   options-table             print the table's rows (to paste into README.md)
 *   options-table README.md   fail unless README.md holds exactly these rows: every
 *                             option documented as the table says, none missing,
 *                             none that the table does not have. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const rows[] = {
#define VC_OPTION(field, name, kind, def, doc_default, doc_values)                          \
	"| `" name "` | " doc_values " | " doc_default " |",
#define VC_CHOICE(field, word, value)
#include "options.def"
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

int main(int argc, char **argv)
{
	if (argc < 2) {
		for (size_t i = 0; i < NROWS; i++)
			puts(rows[i]);
		return 0;
	}
	FILE *f = fopen(argv[1], "r");
	if (!f) {
		perror(argv[1]);
		return 1;
	}
	int found[NROWS] = {0}, bad = 0;
	char line[4096];
	while (fgets(line, sizeof line, f)) {
		line[strcspn(line, "\n")] = 0;
		if (strncmp(line, "| `VCMALLOC_", 12) != 0)
			continue;
		size_t i = 0;
		while (i < NROWS && strcmp(line, rows[i]) != 0)
			i++;
		if (i == NROWS) {
			printf("README row not in allocator/options.def:\n  %s\n", line);
			bad = 1;
		} else {
			found[i]++;
		}
	}
	fclose(f);
	for (size_t i = 0; i < NROWS; i++)
		if (found[i] != 1) {
			printf("options.def row found %d times in README (want 1):\n  %s\n", found[i],
			       rows[i]);
			bad = 1;
		}
	if (!bad)
		printf("README options table matches allocator/options.def (%zu options)\n", NROWS);
	return bad;
}
