# SPDX-License-Identifier: MIT
"""dict.py N - Python workload of bench/run-speed: a dict of N entries built and
dropped.  Each entry holds a key string and a tuple of an int and a value string,
so N = 1M makes 2M strings and 1M tuples.  With PYTHONMALLOC=malloc every object
comes from malloc; by default small objects come from Python's own pool allocator
and only its arenas and larger blocks (the dict's table) from malloc."""
import sys

count = int(sys.argv[1])
table = {f"key-{i}": (i, f"value-{i * 7}") for i in range(count)}
total = sum(len(v[1]) for v in table.values())
del table
print(total)
