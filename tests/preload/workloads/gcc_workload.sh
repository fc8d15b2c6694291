#!/bin/bash
# Workload for the gcc preload test: compile a C file (driver, cc1, as, collect2, ld
# all run preloaded), then run the result.
set -euo pipefail
gcc -O2 -Wall -Wextra -o sample "$(dirname "$0")/sample.c"
gcc -O0 -g -c -o sample0.o "$(dirname "$0")/sample.c"
./sample
