#!/bin/bash
# Workload for the git preload test: init, several commits, branch and merge, log,
# gc. Identity and dates are fixed so that commit ids are the same on every run.
set -euo pipefail
export GIT_CONFIG_NOSYSTEM=1 GIT_AUTHOR_NAME=Tester GIT_AUTHOR_EMAIL=tester@example.org
export GIT_COMMITTER_NAME=Tester GIT_COMMITTER_EMAIL=tester@example.org
export GIT_AUTHOR_DATE='2026-01-01T00:00:00Z' GIT_COMMITTER_DATE='2026-01-01T00:00:00Z'
git init -q -b main repo
cd repo
for i in $(seq 1 12); do
	for f in $(seq 1 10); do
		seq "$i" $((i * 50 + f)) > "file$f.txt"
	done
	mkdir -p "dir$((i % 4))"
	printf 'change %d\n' "$i" >> "dir$((i % 4))/log.txt"
	git add -A
	git commit -q -m "commit $i"
done
git checkout -q -b side HEAD~5
echo side > side.txt
git add side.txt
git commit -q -m "side work"
git checkout -q main
git merge -q --no-edit side
git log --format="%H %s" -30
git log --stat --format='%h %s' -3
git gc -q --aggressive
git count-objects -v | grep -E '^(count|in-pack|packs)'
git fsck --no-progress
git rev-parse HEAD
