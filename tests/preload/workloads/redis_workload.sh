#!/bin/bash
# Workload for the redis preload test: start redis-server on loopback port $1
# (no persistence), run redis-benchmark, check DBSIZE, shut the server down and
# require it to exit with status 0. Every program here runs under the same
# LD_PRELOAD as this script.
set -euo pipefail
port=$1
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
	--daemonize no --logfile server.log &
server=$!
for ((i = 0; i < 200; i++)); do
	if [ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ]; then
		break
	fi
	sleep 0.1
done
echo "ping: $(redis-cli -p "$port" ping)"
redis-benchmark -p "$port" -q -n 20000 -c 50 -P 4 -t set,get,lpush,lpop
echo "dbsize: $(redis-cli -p "$port" dbsize)"
echo "llen: $(redis-cli -p "$port" llen mylist)"
redis-cli -p "$port" shutdown nosave || true
wait "$server"
echo "server exit status: $?"
