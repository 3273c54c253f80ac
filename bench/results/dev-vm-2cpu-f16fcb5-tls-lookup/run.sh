#!/bin/bash
# How runs.tgz was made: the bench binaries of the tree before (9b051d3, copied to $OLD) and after
# (this tree, copied to $NEW) run alternately, 3 rounds, each with 8 interleaved repetitions,
# against the servers of ci/lib.sh's start_redis_fleet (plain and TLS redis-server on loopback).
# Summary: python3 table.py DIR (medians and minima of real time, client CPU).
set -e
OLD=${OLD:?the before tree's cubby_bench and cubby_remote_lookup_bench} NEW=${NEW:?this tree's}
source ci/lib.sh && start_redis_fleet /tmp/rf   # exports CUBBY_BENCH_BACKENDS, CUBBY_REMOTE_CA_FILE
export CUBBY_BENCH_DIR=/tmp/rf-bench
export CUBBY_BENCH_BACKENDS="$(echo "$CUBBY_BENCH_BACKENDS" | tr , '\n' | grep -E '^rediss?=' | paste -sd,)"
mkdir -p runs
for round in 1 2 3; do
  for v in old new; do
    dir=$OLD; [ $v = new ] && dir=$NEW
    $dir/cubby_bench --benchmark_filter='BM_RemoteGet/(mdspan50|tiny)/(raw|lz4)/(redis|rediss)/' \
      --benchmark_repetitions=8 --benchmark_enable_random_interleaving=true --benchmark_min_time=0.2 \
      --benchmark_out=runs/get-$v-$round.json --benchmark_out_format=json >/dev/null 2>&1
    $dir/cubby_remote_lookup_bench --benchmark_filter='BM_RemoteLookup' --benchmark_repetitions=8 \
      --benchmark_enable_random_interleaving=true \
      --benchmark_out=runs/lookup-$v-$round.json --benchmark_out_format=json >/dev/null 2>&1
  done
done
$NEW/cubby_remote_lookup_bench --benchmark_filter='BM_Tls' --benchmark_repetitions=5 \
  --benchmark_enable_random_interleaving=true --benchmark_out=runs/tls-setup.json --benchmark_out_format=json
stop_redis_fleet /tmp/rf
