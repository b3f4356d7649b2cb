#!/usr/bin/env bash
# scripts/test.sh: every test of the module (-tags integration: the server tests too), with
# -race, against the servers scripts/services.sh started. `make test` runs it after
# `scripts/services.sh up`; it prints each package's result and exits non-zero if any failed.
#
# Packages run one at a time (-p 1), in three phases, except in phase 1:
#   1. config (mostly waiting for private Nacos servers to boot and restart, about 45 s)
#      and internal/sim run beside the other Redis and MySQL packages (inventory, order and
#      the small ones), and these run two at a time (-p 2): they mostly wait too (inventory
#      used 28 s of CPU in a 147 s run), each on its own keys, and their parallel tests three
#      at a time (-parallel 3): inventory's TestTwelveReshardsCostOne runs its three backends
#      side by side (each about 32 s, mostly waiting for layouts to retire), where two at a
#      time took 64 s of inventory's 102 (the bound applies to the group's other packages
#      too: order's pipeline and fault tests, which mostly wait on MySQL and Redis).
#      internal/sim's seeds mostly
#      wait (the loss simulation: 5.8 s of CPU in 58 s), so its parallel seeds run 8 at a time
#      (-parallel 8) instead of GOMAXPROCS (2): 35 s instead of 58 for the loss seeds. The
#      fleet simulation's standalone seeds run on redis-servers of their own
#      (testsvc.PrivateRedis): their check scans the whole server after every step. Config's
#      timing checks (a Nacos publish reaches three instances within 1 s) kept p99 at
#      120-370 ms with the machine loaded.
#   2. app alone: the fault drills, the acceptance rushes and the browser test, whose
#      1 s bounds want the machine to themselves. The drills, the acceptance rushes, the
#      MySQL guard and the lifecycle drill (t.Parallel) assert exact counts and mostly wait
#      (a ramp, an outage, a JVM boot, orders landing), so four run at once (-parallel 4):
#      the app phase took 260 s at -parallel 3 where it took 326 s at 2 with the guard and
#      the lifecycle drill sequential (2026-12-07, the same machine, nothing else running).
#   3. limiter alone: its CPU-saturation test saturates both cores on purpose.
# Extra arguments go to every `go test` (e.g. -run TestX). TEST_FLAGS replaces the defaults.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

GO=${GO:-go}
# The defaults are the Makefile's TEST_FLAGS (-vet=off: make lint runs go vet in full).
read -r -a flags <<<"${TEST_FLAGS:--race -trimpath -vet=off -count=1 -p 1 -timeout 75m}"
export GORACE=${GORACE:-atexit_sleep_ms=0}
export SECKILL_LIMITER_SATURATION=${SECKILL_LIMITER_SATURATION:-15s}
module=$($GO list -m)

mapfile -t all < <($GO list -tags integration ./...)
rest=()
for p in "${all[@]}"; do
	case "${p#"$module"}" in
	/app | /config | /limiter | /internal/sim) ;;
	/cmd/seckill) commands=$p ;;
	*) rest+=("$p") ;;
	esac
done
# cmd/seckill's tests build the commands without -race, the one compile of the dependency tree
# without it (the app's drills link that build later): last in phase 1, so that on a cold
# cache .ci/run's build of them at nice 19 (make test-build-commands) has had what CPU the
# other packages leave idle, and the test compiles only what that build has not.
if [ -n "${commands-}" ]; then
	rest+=("$commands")
fi

status=0
log=$(mktemp)
simlog=$(mktemp)
trap 'rm -f "$log" "$simlog"' EXIT

start=$SECONDS
$GO test -tags integration "${flags[@]}" "$@" ./config/ >"$log" 2>&1 &
cfg=$!
$GO test -tags integration "${flags[@]}" -parallel 8 "$@" ./internal/sim/ >"$simlog" 2>&1 &
sim=$!
$GO test -tags integration "${flags[@]}" -p 2 -parallel 3 "$@" "${rest[@]}" || status=1
wait "$sim" || status=1
wait "$cfg" || status=1
cat "$simlog" "$log"
echo "[test] phase 1 (config and internal/sim beside the Redis and MySQL packages, two at a time): $((SECONDS - start))s"

start=$SECONDS
$GO test -tags integration "${flags[@]}" -parallel 4 "$@" ./app/ || status=1
echo "[test] phase 2 (app): $((SECONDS - start))s"

start=$SECONDS
$GO test -tags integration "${flags[@]}" "$@" ./limiter/ || status=1
echo "[test] phase 3 (limiter): $((SECONDS - start))s"

exit $status
