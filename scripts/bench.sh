#!/usr/bin/env bash
# bench.sh: reproduces every figure of docs/BENCHMARKS.md on this machine, loopback only.
#
#   bash scripts/services.sh up          # Redis, MariaDB, RocketMQ, Nacos (once)
#   bash scripts/bench.sh [step...]      # steps: ratios ceilings gin redis mysql rush counts scaling gotest queue durability cmdstats
#                                        # (default: ratios ceilings rush counts scaling gotest)
#
# "ratios" is the table of docs/BENCHMARKS.md, "Ratios against the ceilings" (formerly section 0): the ceiling routes of internal/ginhello
# (hello, hello with a JSON body decoded, one EVALSHA, the two-call design) and the service's
# 410, 429 and 202 paths (roles api, then all roles in one process), each without a body and
# with the JSON body clients send, one wrk run each, in one go, with the ratios, the Redis time
# per reservation and the heap allocations per request. BENCH_PROFILE=1 also takes a CPU profile
# of the service during each 202 run (it costs the run a few percent).
#
# Every step prints the load average next to its figures (the machine is shared) and writes
# its raw output under $BENCH_OUT (default /tmp/seckill-bench-<time>). Runs are bounded in
# time and requests. Needs wrk and redis-benchmark (Debian packages wrk, redis-tools; installed
# when missing and run as root).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
RUN=$(date +%s)
OUT=${BENCH_OUT:-/tmp/seckill-bench-$RUN}
BIN=$OUT/bin
mkdir -p "$OUT" "$BIN"

REDIS_ADDR=${REDIS_ADDR:-127.0.0.1:6379}
REDIS_HOST=${REDIS_ADDR%:*}
REDIS_PORT=${REDIS_ADDR##*:}
MYSQL_DSN=${MYSQL_DSN:-seckill:seckill@tcp(127.0.0.1:3306)/seckill?parseTime=true&loc=UTC}
NAMESRV=${NAMESRV:-127.0.0.1:9876}
CONNS=${CONNS:-64}
WRK_SECONDS=${WRK_SECONDS:-10}
USERS=${USERS:-10000}
STOCK=${STOCK:-1000}
BASE_PORT=${BASE_PORT:-18100}
ADMIN_TOKEN=bench-admin-token-0123456789abcdef0123 # at least 32 bytes outside embedded mode

# The load generator and redis-benchmark, from Debian, installed when missing (as root).
for need in wrk:wrk redis-benchmark:redis-tools; do
  if ! command -v "${need%%:*}" >/dev/null 2>&1; then
    [ "$(id -u)" = 0 ] || { echo "bench.sh: ${need%%:*} is missing: apt-get install ${need##*:}" >&2; exit 2; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need##*:}" >/dev/null ||
      { apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need##*:}" >/dev/null; }
  fi
done

PIDS=()
cleanup() {
  local p
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && kill "$p" 2>/dev/null || true
  done
  for p in "${PIDS[@]:-}"; do
    [ -n "$p" ] && wait "$p" 2>/dev/null || true
  done
  PIDS=()
}
trap cleanup EXIT

say() { printf '\n=== %s   [%s]\n' "$*" "$(uptime | sed 's/.*load average/load average/')"; }
rcli() { redis-cli -h "$REDIS_HOST" -p "$REDIS_PORT" "$@"; }
mysqlq() { mysql -useckill -pseckill -h127.0.0.1 -P3306 seckill -N -B -e "$1"; }

build() {
  say "build"
  go build -o "$BIN/seckill" ./cmd/seckill
  go build -o "$BIN/seckill-load" ./cmd/seckill-load
  go build -o "$BIN/ginhello" ./internal/ginhello
}

wait_http() { # url
  local i
  for i in $(seq 1 300); do
    curl -fs -o /dev/null "$1" && return 0
    sleep 0.1
  done
  echo "not ready: $1" >&2
  return 1
}

# ---- ceiling 1: Gin hello-world with wrk at $CONNS connections ------------------------------
step_gin() {
  say "ceiling: Gin hello-world, wrk -t2 -c$CONNS -d${WRK_SECONDS}s"
  "$BIN/ginhello" --addr 127.0.0.1:$((BASE_PORT + 90)) 2>"$OUT/ginhello.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$((BASE_PORT + 90))/hello"
  wrk -t2 -c"$CONNS" -d"${WRK_SECONDS}s" --latency "http://127.0.0.1:$((BASE_PORT + 90))/hello" | tee "$OUT/gin-wrk.txt"
  cleanup
}

# ---- ceiling 2: redis-benchmark EVALSHA of the reservation script ---------------------------
# The script text is lua.Source("inventory_reserve.lua"): the --#include lines replaced by the
# library files, recursively, as package lua does.
expand_lua() { # name
  local line
  while IFS= read -r line || [ -n "$line" ]; do
    case "$line" in
      --#include\ *) expand_lua "${line#--#include }"; printf '\n' ;;
      *) printf '%s\n' "$line" ;;
    esac
  done <"lua/$1"
}

cmdstat() { # command -> "calls usec"
  rcli info commandstats | tr -d '\r' | awk -F'[:=,]' -v c="cmdstat_$1" '$1==c {print $3, $5}'
}

# evalsha_run <label> <stock> <requests>: one activity shard {A:0:0} with <stock> units, every
# request a new random user (user hash, so its bucket and window fields, differ), per-user
# limit 1, bucket 1000/s, window 60 s / 1000 (both on, so both are paid for), no idempotency
# key, no IP bucket, no generation, one issuer and call number for all (the ids still differ:
# each has its number). KEYS and ARGV as documented at the top of lua/inventory_reserve.lua.
evalsha_run() {
  local label=$1 stock=$2 n=$3 sha=$4
  local A="bench-$RUN-$label" t="{bench-$RUN-$label:0:0}"
  rcli set "sk:$t:stock" "$stock" >/dev/null
  local before after
  before=$(cmdstat evalsha)
  redis-benchmark -h "$REDIS_HOST" -p "$REDIS_PORT" -c "$CONNS" -n "$n" -r 100000000 -q \
    evalsha "$sha" 6 "sk:$t:stock" "sk:$t:users" "sk:$t:seq" "sk:$t:journal" "sk:$t:stats" "sk:$t:gen" \
    "$A" "u-__rand_int__" "__rand_int__" 1 1 0 0 1000 1000 60000 1000 "" 0 0 \
    "" 0 0123456789abcdef- 1 | tr '\r' '\n' | grep -a 'requests per second' | tail -1 \
    | sed "s/.*: \([0-9.]* requests per second\)/$label: EVALSHA \1/" | tee -a "$OUT/redis-evalsha.txt"
  after=$(cmdstat evalsha)
  echo "$label: stock before $stock, after $(rcli get "sk:$t:stock"), journal length $(rcli xlen "sk:$t:journal")" | tee -a "$OUT/redis-evalsha.txt"
  awk -v b="$before" -v a="$after" -v n="$n" -v l="$label" 'BEGIN {
    split(b, x, " "); split(a, y, " "); c = y[1] - x[1]; u = y[2] - x[2];
    printf "%s: EVALSHA calls counted by the server %d (sent %d), server time %.1f us/call\n", l, c, n, u / c }' | tee -a "$OUT/redis-evalsha.txt"
  RESERVE_US=$(awk -v b="$before" -v a="$after" 'BEGIN { split(b, x, " "); split(a, y, " "); printf "%.1f", (y[2] - x[2]) / (y[1] - x[1]) }')
  # clean up: the shard's keys (the records are fields of its users hash)
  rcli unlink "sk:$t:stock" "sk:$t:users" "sk:$t:seq" "sk:$t:journal" "sk:$t:stats" >/dev/null
}

# ceiling_run <label> <requests> <sha>: internal/ginhello/min_reserve.lua (DECRBY + TIME + an
# XADD of the journal entry's size), the one-round-trip ceiling, every call a new user; sets CEIL_US.
ceiling_run() {
  local label=$1 n=$2 sha=$3
  local A="bench-$RUN-$label" t="{bench-$RUN-$label}"
  rcli set "sk:$t:stock" "$((n * 2))" >/dev/null
  local before after
  before=$(cmdstat evalsha)
  redis-benchmark -h "$REDIS_HOST" -p "$REDIS_PORT" -c "$CONNS" -n "$n" -r 100000000 -q \
    evalsha "$sha" 2 "sk:$t:stock" "sk:$t:journal" \
    "$A.0.0.__rand_int__" "$A" "u-__rand_int__" "__rand_int__" 1 0 0 | tr '\r' '\n' | grep -a 'requests per second' | tail -1 \
    | sed "s/.*: \([0-9.]* requests per second\)/$label: EVALSHA \1/" | tee -a "$OUT/redis-evalsha.txt"
  after=$(cmdstat evalsha)
  CEIL_US=$(awk -v b="$before" -v a="$after" 'BEGIN { split(b, x, " "); split(a, y, " "); printf "%.1f", (y[2] - x[2]) / (y[1] - x[1]) }')
  echo "$label: server time $CEIL_US us/call (min_reserve.lua, the one-round-trip ceiling)" | tee -a "$OUT/redis-evalsha.txt"
  rcli unlink "sk:$t:stock" "sk:$t:journal" >/dev/null
}

step_redis() {
  say "ceiling: redis-benchmark EVALSHA inventory_reserve.lua, -c $CONNS"
  expand_lua inventory_reserve.lua >"$OUT/inventory_reserve.expanded.lua"
  local sha csha c1 c2
  sha=$(rcli -x script load <"$OUT/inventory_reserve.expanded.lua")
  csha=$(rcli -x script load <internal/ginhello/min_reserve.lua)
  echo "script sha1 $sha ($(wc -l <"$OUT/inventory_reserve.expanded.lua") lines expanded)" | tee "$OUT/redis-evalsha.txt"
  # the ceiling before and after the reserve path, so the load of a shared machine cancels out
  ceiling_run ceiling-before 100000 "$csha"
  c1=$CEIL_US
  # reserve path: stock for every request (each one a new user who buys 1 unit)
  evalsha_run reserve 100000 100000 "$sha"
  ceiling_run ceiling-after 100000 "$csha"
  c2=$CEIL_US
  awk -v r="$RESERVE_US" -v a="$c1" -v b="$c2" 'BEGIN { c = (a + b) / 2;
    printf "reserve: %.1f us/call against the ceiling %.1f us/call (mean of %.1f and %.1f): %.2f x the ceiling\n", r, c, a, b, r / c }' \
    | tee -a "$OUT/redis-evalsha.txt"
  # sold-out path: stock 1000, then EMPTY for the rest (what a shard answers once it is dry)
  evalsha_run soldout 1000 100000 "$sha"
  # the per-IP bucket (limiter_bucket.lua), one call per request that passes the leased budgets:
  # every call a new IP, rate and burst 1,000,000, take 1, Redis TIME
  expand_lua limiter_bucket.lua >"$OUT/limiter_bucket.expanded.lua"
  local bsha before after
  bsha=$(rcli -x script load <"$OUT/limiter_bucket.expanded.lua")
  before=$(cmdstat evalsha)
  redis-benchmark -h "$REDIS_HOST" -p "$REDIS_PORT" -c "$CONNS" -n 100000 -r 100000000 -q \
    evalsha "$bsha" 1 "sk:{ip:bench-$RUN-__rand_int__}:tk" 1000000 1000000 1 0 \
    | tr '\r' '\n' | grep -a 'requests per second' | tail -1 \
    | sed "s/.*: \([0-9.]* requests per second\)/ip-bucket: EVALSHA \1/" | tee -a "$OUT/redis-evalsha.txt"
  after=$(cmdstat evalsha)
  awk -v b="$before" -v a="$after" 'BEGIN { split(b, x, " "); split(a, y, " "); c = y[1] - x[1]; u = y[2] - x[2];
    printf "ip-bucket: EVALSHA calls counted by the server %d (sent 100000), server time %.1f us/call\n", c, u / c }' | tee -a "$OUT/redis-evalsha.txt"
  # (the bucket keys carry a TTL set by the script and expire by themselves)
  # the plain-command ceiling of the same server, for scale
  redis-benchmark -h "$REDIS_HOST" -p "$REDIS_PORT" -c "$CONNS" -n 200000 -q -t get,incr | tr '\r' '\n' | grep -a 'requests per second' | tee -a "$OUT/redis-evalsha.txt"
}

# ---- ceiling 3: MySQL, batched pipeline vs plain INSERT loop (order package test) -----------
step_mysql() {
  say "ceiling: MySQL INSERT loop vs batched writer (order.TestThroughputReport)"
  SECKILL_ORDER_BENCH=1 go test -tags integration -count=1 -run TestThroughputReport -v ./order/ 2>&1 | tee "$OUT/mysql-order.txt" | grep -v '^=== RUN'
}

# ---- the service in production mode ---------------------------------------------------------
# write_cfg: the generous limits; $EXTRA_CFG (YAML, top-level keys) is appended.
write_cfg() {
  cat >"$OUT/seckill.yaml" <<'YAML'
auth: {mode: header, trustedGateway: true}
limits:
  global:   {rate: 1000000, burst: 1000000}
  campaign: {rate: 1000000, burst: 1000000}
  activity: {rate: 1000000, burst: 1000000}
  user:     {rate: 1000, burst: 1000}
  ip:       {rate: 1000000, burst: 1000000}
  userWindow: {window: 60s, max: 1000}
YAML
  printf '%s\n' "${EXTRA_LIMITS:-}" "${EXTRA_CFG:-}" >>"$OUT/seckill.yaml"
}

# start_instances <n> <tag>: n processes sharing one Redis/MariaDB/RocketMQ, one namespace and topic
start_instances() {
  local n=$1 tag=$2 i
  write_cfg
  TARGETS=()
  ADMINS=()
  for ((i = 0; i < n; i++)); do
    local port=$((BASE_PORT + i))
    SECKILL_REDIS_ADDR=$REDIS_ADDR SECKILL_REDIS_DURABILITY="${REDIS_DURABILITY:-none}" SECKILL_MYSQL_DSN=$MYSQL_DSN SECKILL_ROCKETMQ_NAMESRV=$NAMESRV \
      SECKILL_ROCKETMQ_TOPIC="bench-$RUN-$tag" SECKILL_NAMESPACE="bench$RUN$tag" \
      SECKILL_ADMIN_TOKEN=$ADMIN_TOKEN SECKILL_HTTP_ADDR=127.0.0.1:$port SECKILL_ADMIN_ADDR=127.0.0.1:$((port + 50)) \
      SECKILL_CONFIG_FILE=$OUT/seckill.yaml SECKILL_INSTANCE_ID="bench-$RUN-$tag-$i" \
      SECKILL_DATA_DIR="$OUT/data-$tag-$i" SECKILL_ROLES="${ROLES:-api,relay,writer,reconciler}" \
      "$BIN/seckill" >"$OUT/seckill-$tag-$i.log" 2>&1 &
    PIDS+=($!)
    TARGETS+=("http://127.0.0.1:$port")
    ADMINS+=("http://127.0.0.1:$((port + 50))")
  done
  for t in "${TARGETS[@]}"; do wait_http "$t/readyz"; done
}

# rush <tag> <activity> [extra seckill-load flags]: the 10,000-user rush on stock 1,000
rush() {
  local tag=$1 act=$2
  shift 2
  local targ=() t
  for t in "${TARGETS[@]}"; do targ+=(--target "$t"); done
  "$BIN/seckill-load" "${targ[@]}" --admin "${ADMINS[0]}" --activity "$act" --create --admin-token $ADMIN_TOKEN \
    --stock "$STOCK" --per-user-limit 1 --users "$USERS" --connections "$CONNS" \
    --duration 60s --max-requests 200000 --progress 0 \
    --mysql-dsn "$MYSQL_DSN" --redis-addr "$REDIS_ADDR" --json "$OUT/rush-$tag.json" "$@" \
    | tee "$OUT/rush-$tag.txt"
}

step_rush() {
  say "rush: $USERS users, stock $STOCK, $CONNS connections, 1 instance (Redis + RocketMQ + MariaDB)"
  start_instances 1 r1
  rush r1 "rush-$RUN-1"
  cleanup
}

# ---- Redis calls and MySQL statements per request -------------------------------------------
redis_total_calls() { rcli info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ {s += $3} END {print s}'; }
redis_calls_by_cmd() { rcli info commandstats | tr -d '\r' | awk -F'[:=,]' '/^cmdstat_/ {print $1, $3}'; }
mysql_status() { mysqlq "SHOW GLOBAL STATUS WHERE Variable_name IN ('Questions','Com_select','Com_insert','Com_update','Com_delete','Com_commit','Com_begin')"; }
metric_sum() { # url name -> sum of the series of that metric
  curl -fs "$1/metrics" | awk -v m="$2" '$1 ~ "^"m"([{]|$)" {s += $2} END {printf "%d\n", s}'
}
diff_kv() { # before after: "name value" lines -> deltas
  join <(sort "$1") <(sort "$2") | awk '{d = $3 - $2; if (d != 0) printf "  %-28s %d\n", $1, d}'
}

step_counts() {
  say "counts: Redis commands and MySQL statements around one rush and a sold-out phase"
  start_instances 1 c1
  local u=${TARGETS[0]} adm=${ADMINS[0]} act="count-$RUN"
  redis_calls_by_cmd >"$OUT/redis-before.txt"
  mysql_status >"$OUT/mysql-before.txt"
  curl -fs "$adm/metrics" | grep -E '^(seckill_redis_script_calls_total|seckill_rate_limiter_redis_calls_total|seckill_order_writer_batches_total|seckill_order_writer_commits_total|seckill_order_relay_sent_total)' >"$OUT/metrics-before.txt" || true
  # the rush itself, without the load tool's own MySQL/Redis checks (they would be counted)
  "$BIN/seckill-load" --target "$u" --admin "$adm" --activity "$act" --create --admin-token $ADMIN_TOKEN \
    --stock "$STOCK" --per-user-limit 1 --users "$USERS" --connections "$CONNS" --poll -1s \
    --duration 60s --max-requests 200000 --progress 0 --drain-timeout 0s --json "$OUT/counts-rush.json" \
    | tee "$OUT/counts-rush.txt" | grep -E '^(requests|throughput|  [0-9])' || true
  sleep 3 # let the writer drain the orders
  redis_calls_by_cmd >"$OUT/redis-mid.txt"
  mysql_status >"$OUT/mysql-mid.txt"
  curl -fs "$adm/metrics" | grep -E '^(seckill_redis_script_calls_total|seckill_rate_limiter_redis_calls_total|seckill_order_writer_batches_total|seckill_order_writer_commits_total|seckill_order_relay_sent_total)' >"$OUT/metrics-mid.txt" || true
  # after sell-out: wrk with a new user every request, $WRK_SECONDS seconds, all 410 SOLD_OUT
  cat >"$OUT/soldout.lua" <<'LUA'
local n = 0
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("tid", threads) end
request = function()
  n = n + 1
  return wrk.format("POST", nil, {["X-User-Id"] = "late-" .. tid .. "-" .. n}, nil)
end
LUA
  wrk -t2 -c"$CONNS" -d"${WRK_SECONDS}s" --latency -s "$OUT/soldout.lua" "$u/api/v1/activities/$act/reservations" | tee "$OUT/soldout-wrk.txt"
  redis_calls_by_cmd >"$OUT/redis-after.txt"
  mysql_status >"$OUT/mysql-after.txt"
  curl -fs "$adm/metrics" | grep -E '^(seckill_redis_script_calls_total|seckill_rate_limiter_redis_calls_total|seckill_order_writer_batches_total|seckill_order_writer_commits_total|seckill_order_relay_sent_total)' >"$OUT/metrics-after.txt" || true
  curl -s -X POST -H "X-User-Id: probe-$RUN" "$u/api/v1/activities/$act/reservations" | tee "$OUT/soldout-probe.txt"
  echo
  local req
  req=$(grep -o '"requests": *[0-9]*' "$OUT/counts-rush.json" | head -1 | grep -o '[0-9]*$')
  echo "rush: $req requests"
  echo "Redis commands during the rush (+3 s drain), all clients of the shared server:"
  diff_kv "$OUT/redis-before.txt" "$OUT/redis-mid.txt"
  echo "MariaDB statements during the rush (+3 s drain), all clients:"
  diff_kv "$OUT/mysql-before.txt" "$OUT/mysql-mid.txt"
  echo "service metrics during the rush:"
  diff_kv <(awk '{print $1, $2}' "$OUT/metrics-before.txt") <(awk '{print $1, $2}' "$OUT/metrics-mid.txt")
  echo "sold-out phase ($(grep -o '[0-9]* requests in' "$OUT/soldout-wrk.txt")):"
  echo " Redis:"
  diff_kv "$OUT/redis-mid.txt" "$OUT/redis-after.txt"
  echo " MariaDB:"
  diff_kv "$OUT/mysql-mid.txt" "$OUT/mysql-after.txt"
  echo " service metrics:"
  diff_kv <(awk '{print $1, $2}' "$OUT/metrics-mid.txt") <(awk '{print $1, $2}' "$OUT/metrics-after.txt")
  cleanup
}

# ---- scaling: 1, 2, 3 instances sharing one Redis/MariaDB/RocketMQ --------------------------
# The load tool's --connections workers are spread over the targets, so the total stays $CONNS
# connections whatever the instance count; the crowd is $SCALE_USERS users so each run lasts several seconds (most answers are then the
# local 410 SOLD_OUT, as in a real sale).
SCALE_USERS=${SCALE_USERS:-50000}
step_scaling() {
  local n
  for n in 1 2 3; do
    say "scaling: $n instance(s), $SCALE_USERS users, stock $STOCK, $CONNS connections in all"
    start_instances "$n" "s$n"
    USERS=$SCALE_USERS rush "s$n" "scale-$RUN-$n"
    cleanup
  done
}

# ---- go test -bench: in-process HTTP path vs Gin hello-world --------------------------------
step_gotest() {
  say "go test -bench ./app/ (in-process, loopback)"
  go test -tags integration -run XXX -bench 'HTTP' -benchtime 3s ./app/ 2>&1 | tee "$OUT/gotest-app.txt"
}

# ---- ratios: ceilings and the service's paths in one run (docs/BENCHMARKS.md, "Ratios against the ceilings") ----
# Every row is one wrk -t2 -c$CONNS -d${WRK_SECONDS}s run. POST rows send a new X-User-Id on every
# request (newuser.lua); the "JSON body" rows send what clients send, Content-Type:
# application/json and {"quantity":1} (newuser-body.lua), and their rejections are measured
# against ginhello's /hello-body, which reads and decodes the same body with encoding/json. Heap allocations per request are server-side: the delta of
# runtime.MemStats.Mallocs (ginhello /debug/mallocs, the service's go_memstats_mallocs_total) over
# the run divided by its requests, background work of the process included. The Redis time per
# reservation is the delta of INFO commandstats cmdstat_evalsha usec over the 202 run divided by
# the 202s: every EVALSHA on the server counts (other clients' too, and with all roles the
# relay's and writer's scripts), so it is an upper bound of the reservation script's own cost.
ROWS=()
row() { # label req/s reference-label allocs/req extra
  ROWS+=("$1|$2|$3|$4|$5|$(cut -d' ' -f1 /proc/loadavg)")
}
wrk_run() { # label url [lua]: sets RPS REQS NON2XX
  local label=$1 url=$2 lua=${3:-}
  local args=(-t"$((CONNS < 2 ? 1 : 2))" -c"$CONNS" -d"${WRK_SECONDS}s" --latency)
  [ -n "$lua" ] && args+=(-s "$lua")
  wrk "${args[@]}" "$url" >"$OUT/wrk-$label.txt" 2>&1
  RPS=$(awk '/^Requests\/sec/ {print $2}' "$OUT/wrk-$label.txt")
  REQS=$(grep -o '[0-9]* requests in' "$OUT/wrk-$label.txt" | awk '{print $1}')
  NON2XX=$(awk '/Non-2xx or 3xx responses/ {print $NF}' "$OUT/wrk-$label.txt")
  NON2XX=${NON2XX:-0}
  printf '  %-28s %10s req/s  %9s requests  %9s non-2xx   [load %s]\n' "$label" "$RPS" "$REQS" "$NON2XX" \
    "$(cut -d' ' -f1-3 /proc/loadavg)"
}
per() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.1f", a / b; else print "-" }'; }
create_activity() { # base id stock shards
  curl -fs -X POST -H "Authorization: Bearer $ADMIN_TOKEN" -H 'Content-Type: application/json' \
    -d "{\"activityId\":\"$2\",\"stock\":$3,\"perUserLimit\":1,\"shards\":$4}" "$1/admin/v1/activities" >/dev/null
}
svc_mallocs() { metric_sum "$1" go_memstats_mallocs_total; }
# CPU time of processes, in clock ticks (utime + stime of /proc/<pid>/stat), to split a run's
# CPU per request between the HTTP server and Redis.
ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
redis_pid() { rcli info server | tr -d '\r' | awk -F: '$1 == "process_id" {print $2}'; }
TICK_US=$((1000000 / $(getconf CLK_TCK)))
cpu_note() { # server-ticks-delta redis-ticks-delta requests
  awk -v s="$1" -v r="$2" -v n="$3" -v t="$TICK_US" 'BEGIN { if (n > 0)
    printf "CPU per request: server %.0f us, Redis %.0f us", s * t / n, r * t / n }'
}

# newuser_script FILE PREFIX [json]: a wrk script that POSTs with a new X-User-Id (PREFIX, the
# run's start, the thread, a counter) on every request; with json, as clients send it:
# Content-Type: application/json and the body {"quantity":1} (wrk.format adds its
# Content-Length). tid is a global: setup runs in the main Lua state and thread:set sets a
# global of the thread (a "local tid" would shadow it and give both threads the same users).
newuser_script() {
  local headers='' body=nil
  if [ "${3:-}" = json ]; then
    headers=', ["Content-Type"] = "application/json"'
    body="'{\"quantity\":1}'"
  fi
  sed -e "s|@PREFIX@|$2|" -e "s|@HEADERS@|$headers|" -e "s|@BODY@|$body|" >"$1" <<'LUA'
local n = 0
local run = os.time()
local threads = 0
setup = function(thread) threads = threads + 1; thread:set("tid", threads) end
request = function()
  n = n + 1
  return wrk.format("POST", nil, {["X-User-Id"] = "@PREFIX@" .. run .. "-" .. tid .. "-" .. n@HEADERS@}, @BODY@)
end
LUA
}

# reject_row NAME LABEL URL WRK_SCRIPT REF: one wrk run of a rejection path of the service
# (its admin listener $adm, its pid last in PIDS, Redis's pid $rpid), with the service's heap
# allocations and CPU per request, and the row against the ceiling REF.
reject_row() {
  local m0 m1 s0 s1 r0 r1
  m0=$(svc_mallocs "$adm")
  s0=$(ticks "${PIDS[-1]}") r0=$(ticks "$rpid")
  wrk_run "$1" "$3" "$4"
  s1=$(ticks "${PIDS[-1]}") r1=$(ticks "$rpid")
  m1=$(svc_mallocs "$adm")
  row "$2" "$RPS" "$5" "$(per $((m1 - m0)) "$REQS")" "$(cpu_note $((s1 - s0)) $((r1 - r0)) "$REQS"); $NON2XX non-2xx of $REQS"
}

step_ratios() {
  newuser_script "$OUT/newuser.lua" b
  newuser_script "$OUT/newuser-body.lua" j json
  local nb=$OUT/newuser-body.lua
  local nu=$OUT/newuser.lua gport=$((BASE_PORT + 91)) before after m0 m1
  local g="http://127.0.0.1:$gport"
  say "ratios: ceilings (internal/ginhello), wrk -t2 -c$CONNS -d${WRK_SECONDS}s"
  "$BIN/ginhello" --addr 127.0.0.1:$gport --redis "$REDIS_ADDR" --ns "bench$RUN" 2>"$OUT/ginhello-ratios.log" &
  PIDS+=($!)
  wait_http "$g/hello"
  local gpid=${PIDS[-1]} rpid s0 s1 r0 r1
  rpid=$(redis_pid)
  m0=$(curl -fs "$g/debug/mallocs")
  s0=$(ticks "$gpid") r0=$(ticks "$rpid")
  wrk_run hello "$g/hello"
  s1=$(ticks "$gpid") r1=$(ticks "$rpid")
  m1=$(curl -fs "$g/debug/mallocs")
  row "Gin hello-world" "$RPS" hello "$(per $((m1 - m0)) "$REQS")" "$(cpu_note $((s1 - s0)) $((r1 - r0)) "$REQS")"
  m0=$(curl -fs "$g/debug/mallocs")
  s0=$(ticks "$gpid") r0=$(ticks "$rpid")
  wrk_run hello-body "$g/hello-body" "$nb"
  s1=$(ticks "$gpid") r1=$(ticks "$rpid")
  m1=$(curl -fs "$g/debug/mallocs")
  row "Gin hello-world, POST with the JSON body decoded" "$RPS" hellobody "$(per $((m1 - m0)) "$REQS")" "$(cpu_note $((s1 - s0)) $((r1 - r0)) "$REQS"); $NON2XX non-2xx"
  before=$(cmdstat evalsha)
  s0=$(ticks "$gpid") r0=$(ticks "$rpid")
  wrk_run one-evalsha "$g/one" "$nu"
  s1=$(ticks "$gpid") r1=$(ticks "$rpid")
  after=$(cmdstat evalsha)
  row "Gin + one EVALSHA (DECRBY + XADD)" "$RPS" one "" "$(awk -v b="$before" -v a="$after" -v n="$((REQS - NON2XX))" 'BEGIN {
    split(b, x, " "); split(a, y, " "); if (n > 0) printf "%.1f us/call", (y[2] - x[2]) / n }'); $(cpu_note $((s1 - s0)) $((r1 - r0)) "$REQS")"
  wrk_run two-call "$g/two" "$nu"
  row "Gin + bucket script + stock script" "$RPS" one "" ""
  cleanup

  local a410="r410-$RUN" a429="r429-$RUN" tag
  for tag in api all; do
    if [ $tag = api ]; then export ROLES=api; else export ROLES=api,relay,writer,reconciler; fi
    say "ratios: seckill, roles $ROLES"
    EXTRA_CFG="activities: {$a429-$tag: {limits: {rate: 1, burst: 1}}}" start_instances 1 "q$tag"
    local u=${TARGETS[0]} adm=${ADMINS[0]} a202="r202-$RUN-$tag"
    create_activity "$adm" "$a410-$tag" 1 1
    create_activity "$adm" "$a429-$tag" 1000000 1
    create_activity "$adm" "$a202" 100000000 16
    # sell the one unit of the 410 activity, then wait until the instance answers 410 itself
    local i code
    for i in $(seq 1 100); do
      code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H "X-User-Id: warm-$i" "$u/api/v1/activities/$a410-$tag/reservations")
      [ "$code" = 410 ] && break
      sleep 0.05
    done
    sleep 0.5
    reject_row "410-$tag" "seckill 410 sold out, roles $tag" "$u/api/v1/activities/$a410-$tag/reservations" "$nu" hello
    reject_row "429-$tag" "seckill 429 activity budget, roles $tag" "$u/api/v1/activities/$a429-$tag/reservations" "$nu" hello
    # the same two rejections as clients send them: Content-Type: application/json, a body
    reject_row "410-body-$tag" "seckill 410 sold out, JSON body, roles $tag" "$u/api/v1/activities/$a410-$tag/reservations" "$nb" hellobody
    reject_row "429-body-$tag" "seckill 429 activity budget, JSON body, roles $tag" "$u/api/v1/activities/$a429-$tag/reservations" "$nb" hellobody
    m0=$(svc_mallocs "$adm")
    before=$(cmdstat evalsha)
    local b0 n0 b1 n1
    b0=$(metric_sum "$adm" seckill_reserve_batch_size_sum) n0=$(metric_sum "$adm" seckill_reserve_batch_size_count)
    s0=$(ticks "${PIDS[-1]}") r0=$(ticks "$rpid")
    local prof=""
    if [ -n "${BENCH_PROFILE:-}" ]; then # a CPU profile of the service over most of the 202 run
      curl -fs -H "Authorization: Bearer $ADMIN_TOKEN" -o "$OUT/cpu-202-$tag.pprof" \
        "$adm/debug/pprof/profile?seconds=$((WRK_SECONDS > 3 ? WRK_SECONDS - 2 : 1))" &
      prof=$!
    fi
    wrk_run "202-$tag" "$u/api/v1/activities/$a202/reservations" "$nu"
    s1=$(ticks "${PIDS[-1]}") r1=$(ticks "$rpid")
    [ -z "$prof" ] || { wait "$prof" && echo "  CPU profile: $OUT/cpu-202-$tag.pprof (go tool pprof -top $BIN/seckill $OUT/cpu-202-$tag.pprof)"; }
    after=$(cmdstat evalsha)
    b1=$(metric_sum "$adm" seckill_reserve_batch_size_sum) n1=$(metric_sum "$adm" seckill_reserve_batch_size_count)
    echo "  reservations per reserve call (seckill_reserve_batch_size): $(per $((b1 - b0)) $((n1 - n0))) over $((n1 - n0)) calls"
    m1=$(svc_mallocs "$adm")
    row "seckill 202 admitted, roles $tag" "$RPS" one "$(per $((m1 - m0)) "$REQS")" "$(awk -v b="$before" -v a="$after" -v n="$((REQS - NON2XX))" 'BEGIN {
      split(b, x, " "); split(a, y, " "); if (n > 0) printf "%.1f us/reservation, %.2f EVALSHA/reservation", (y[2] - x[2]) / n, (y[1] - x[1]) / n }'); $(cpu_note $((s1 - s0)) $((r1 - r0)) "$REQS"), $NON2XX non-2xx"
    m0=$(svc_mallocs "$adm")
    before=$(cmdstat evalsha)
    s0=$(ticks "${PIDS[-1]}") r0=$(ticks "$rpid")
    wrk_run "202-body-$tag" "$u/api/v1/activities/$a202/reservations" "$nb"
    s1=$(ticks "${PIDS[-1]}") r1=$(ticks "$rpid")
    after=$(cmdstat evalsha)
    m1=$(svc_mallocs "$adm")
    row "seckill 202 admitted, JSON body, roles $tag" "$RPS" one "$(per $((m1 - m0)) "$REQS")" "$(awk -v b="$before" -v a="$after" -v n="$((REQS - NON2XX))" 'BEGIN {
      split(b, x, " "); split(a, y, " "); if (n > 0) printf "%.1f us/reservation, %.2f EVALSHA/reservation", (y[2] - x[2]) / n, (y[1] - x[1]) / n }'); $(cpu_note $((s1 - s0)) $((r1 - r0)) "$REQS"), $NON2XX non-2xx"
    echo "  limiter degrade events in this instance: $(grep -c 'degraded to local limiting' "$OUT/seckill-q$tag-0.log" || true)"
    cleanup
  done
  unset ROLES

  say "ratios: the table"
  printf '%s\n' "${ROWS[@]}" | awk -F'|' '
    { label[NR] = $1; rps[NR] = $2; ref[NR] = $3; alloc[NR] = $4; extra[NR] = $5; load[NR] = $6
      if ($1 == "Gin hello-world") hello = $2
      if ($3 == "hellobody" && body == "") body = $2
      if ($1 ~ /one EVALSHA/) one = $2 }
    END {
      printf "| route | req/s | ratio | heap allocs/req | notes | load avg |\n|---|---|---|---|---|---|\n"
      for (i = 1; i <= NR; i++) {
        if (ref[i] == "hello") r = hello > 0 ? sprintf("%.2f of hello", rps[i] / hello) : "-"
        else if (ref[i] == "hellobody") r = body > 0 ? sprintf("%.2f of hello with the body", rps[i] / body) : "-"
        else r = one > 0 ? sprintf("%.2f of one EVALSHA", rps[i] / one) : "-"
        printf "| %s | %.0f | %s | %s | %s | %s |\n", label[i], rps[i], r, alloc[i] == "" ? "" : alloc[i], extra[i], load[i]
      }
    }' | tee "$OUT/ratios.md"
  echo "allocations per request of the in-process benchmarks (client + server): bash scripts/bench.sh gotest"
}

# ---- waiting room (issue 21): join p99 and poll throughput against the ceilings -------------
# One run: the ceilings of internal/ginhello (hello for the poll, one EVALSHA for the join,
# each with wrk --latency), then one instance (roles api) with a waiting room on: joins, every
# request a new user (201), then one user polling its ticket (200 WAITING: 50 places ahead of
# it and an inlet of 1 a second). Redis commands per poll: the instance's script
# calls (seckill_redis_script_calls_total) and the server's own count (total_commands_processed:
# it includes the instance's 10 follow reads a second and any other client of the shared
# server, so it is an upper bound).
step_queue() {
  newuser_script "$OUT/queue-newuser.lua" q
  printf 'wrk.headers["X-User-Id"] = "poller"\n' >"$OUT/queue-poller.lua"
  local gport=$((BASE_PORT + 92))
  ROWS=()
  local g="http://127.0.0.1:$gport"
  say "queue: ceilings (internal/ginhello), wrk -t2 -c$CONNS -d${WRK_SECONDS}s --latency"
  "$BIN/ginhello" --addr 127.0.0.1:$gport --redis "$REDIS_ADDR" --ns "benchq$RUN" 2>"$OUT/ginhello-queue.log" &
  PIDS+=($!)
  wait_http "$g/hello"
  wrk_run q-hello "$g/hello"
  echo "  p99 $(wrk_p99 q-hello)"
  row "Gin hello-world" "$RPS" hello "" "p99 $(wrk_p99 q-hello)"
  wrk_run q-one-evalsha "$g/one" "$OUT/queue-newuser.lua"
  row "Gin + one EVALSHA (DECRBY + XADD)" "$RPS" one "" "p99 $(wrk_p99 q-one-evalsha)"
  cleanup

  local act="q-$RUN" u adm ticket s0 s1 c0 c1 i
  export ROLES=api
  EXTRA_LIMITS="  tokens: {rate: 1000000, burst: 1000000}
  reads: {rate: 1000000, burst: 1000000}" \
    EXTRA_CFG="activities: {$act: {waitingRoom: {enabled: true, rate: 1, heartbeat: 10m, order: fifo}}}" start_instances 1 queue
  unset ROLES
  u=${TARGETS[0]} adm=${ADMINS[0]}
  create_activity "$adm" "$act" 100000000 16
  for i in $(seq 1 50); do curl -fs -o /dev/null -X POST -H "X-User-Id: ahead-$i" "$u/api/v1/activities/$act/queue"; done
  ticket=$(curl -fs -X POST -H "X-User-Id: poller" "$u/api/v1/activities/$act/queue" | sed 's/.*"ticket":"\([^"]*\)".*/\1/')
  say "queue: seckill join and poll, roles api"
  wrk_run q-join "$u/api/v1/activities/$act/queue" "$OUT/queue-newuser.lua"
  row "seckill join (201, a new user each)" "$RPS" one "" "p99 $(wrk_p99 q-join); $NON2XX non-2xx of $REQS"
  curl -fs "$u/api/v1/activities/$act/queue/$ticket" -H "X-User-Id: poller" >"$OUT/queue-poll-answer.json"
  s0=$(metric_sum "$adm" seckill_redis_script_calls_total)
  c0=$(rcli info stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" {print $2}')
  wrk_run q-poll "$u/api/v1/activities/$act/queue/$ticket" "$OUT/queue-poller.lua"
  c1=$(rcli info stats | tr -d '\r' | awk -F: '$1 == "total_commands_processed" {print $2}')
  s1=$(metric_sum "$adm" seckill_redis_script_calls_total)
  row "seckill poll (200 WAITING, from memory)" "$RPS" hello "" "p99 $(wrk_p99 q-poll); script calls of the instance $((s1 - s0)) over $REQS polls; Redis commands server-wide $((c1 - c0)); $NON2XX non-2xx; answer $(head -c 120 "$OUT/queue-poll-answer.json")"
  cleanup

  say "queue: the table"
  printf '%s\n' "${ROWS[@]}" | awk -F'|' '
    { label[NR] = $1; rps[NR] = $2; ref[NR] = $3; extra[NR] = $5; load[NR] = $6
      if ($1 == "Gin hello-world") hello = $2
      if ($1 ~ /one EVALSHA/) one = $2 }
    END {
      printf "| route | req/s | ratio | notes | load avg |\n|---|---|---|---|---|\n"
      for (i = 1; i <= NR; i++) {
        r = (ref[i] == "hello") ? (hello > 0 ? sprintf("%.2f of hello", rps[i] / hello) : "-") : (one > 0 ? sprintf("%.2f of one EVALSHA", rps[i] / one) : "-")
        printf "| %s | %.0f | %s | %s | %s |\n", label[i], rps[i], r, extra[i], load[i]
      }
    }' | tee "$OUT/queue.md"
}
# ---- durability (issue 18): the 202 path and the Redis time per reservation in each mode ----
# One run: the ceilings of internal/ginhello (hello; /one, one EVALSHA that takes stock and
# journals) on a private Redis without persistence, then, for each mode, a private redis-server
# on loopback started with that persistence (and for replicas:1 a private replica of it), one
# instance (roles api, SECKILL_REDIS_DURABILITY set to the mode) on it, one wrk run of 202s
# (a new user every request), and the servers stopped. Redis time per reservation: the delta of
# INFO commandstats cmdstat_evalsha usec over the run divided by the 202s (the instance is the
# only client of its Redis, so every EVALSHA counted is its own: the reserve script and the
# limiter's lease refills). Shared with other runs: MariaDB (the activity row) only.
DUR_PORT=${DUR_PORT:-18400}
start_redis() { # dir port args... (appends to PIDS)
  local dir=$1 port=$2
  shift 2
  mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --dir "$dir" --save "" --logfile "$dir/redis.log" "$@" &
  PIDS+=($!)
  local i
  for i in $(seq 1 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && return 0
    sleep 0.1
  done
  echo "private redis on $port did not start" >&2
  return 1
}
step_durability() {
  newuser_script "$OUT/dur-newuser.lua" d
  local nu=$OUT/dur-newuser.lua gport=$((BASE_PORT + 93)) cport=$DUR_PORT
  local g="http://127.0.0.1:$gport" saved_addr=$REDIS_ADDR
  ROWS=()
  say "durability: ceilings (internal/ginhello) on a private Redis without persistence, wrk -t2 -c$CONNS -d${WRK_SECONDS}s"
  start_redis "$OUT/redis-ceiling" "$cport" --appendonly no
  "$BIN/ginhello" --addr 127.0.0.1:$gport --redis "127.0.0.1:$cport" --ns "benchd$RUN" 2>"$OUT/ginhello-durability.log" &
  PIDS+=($!)
  wait_http "$g/hello"
  wrk_run d-hello "$g/hello"
  row "Gin hello-world" "$RPS" hello "" ""
  REDIS_PORT=$cport
  local before after
  before=$(cmdstat evalsha)
  wrk_run d-one-evalsha "$g/one" "$nu"
  after=$(cmdstat evalsha)
  row "Gin + one EVALSHA (DECRBY + XADD)" "$RPS" one "" "$(awk -v b="$before" -v a="$after" -v n="$((REQS - NON2XX))" 'BEGIN {
    split(b, x, " "); split(a, y, " "); if (n > 0) printf "%.1f us/call", (y[2] - x[2]) / n }')"
  cleanup

  local mode i=0
  for mode in ${DUR_MODES:-none aof-everysec aof-always replicas-1}; do
    local port=$((DUR_PORT + 1 + i * 2)) dur args=()
    i=$((i + 1))
    case $mode in
      none) dur=none args=(--appendonly no) ;;
      aof-everysec) dur=aof args=(--appendonly yes --appendfsync everysec) ;;
      aof-always) dur=aof args=(--appendonly yes --appendfsync always) ;;
      replicas-1) dur=replicas:1 args=(--appendonly no) ;;
    esac
    say "durability: mode $dur, private redis-server ${args[*]} on $port"
    start_redis "$OUT/redis-$mode" "$port" "${args[@]}"
    if [ $mode = replicas-1 ]; then
      start_redis "$OUT/redis-$mode-replica" "$((port + 1))" --appendonly no --replicaof 127.0.0.1 "$port"
      local k
      for k in $(seq 1 100); do
        redis-cli -p "$port" info replication | tr -d '\r' | grep -q '^slave0:.*state=online' && break
        sleep 0.1
      done
      redis-cli -p "$port" info replication | tr -d '\r' | grep '^slave0:' || { echo "replica not online" >&2; return 1; }
    fi
    REDIS_ADDR=127.0.0.1:$port REDIS_PORT=$port
    # The ceiling of this mode: the same one EVALSHA on this mode's Redis (its fsync included;
    # for replicas:1 without the WAIT, which ginhello does not send).
    "$BIN/ginhello" --addr 127.0.0.1:$gport --redis "127.0.0.1:$port" --ns "benchd$RUN$mode" 2>"$OUT/ginhello-d$mode.log" &
    PIDS+=($!)
    wait_http "$g/hello"
    wrk_run "d-one-$mode" "$g/one" "$nu"
    row "Gin + one EVALSHA on the mode's Redis ($mode)" "$RPS" one "" ""
    kill "${PIDS[-1]}" 2>/dev/null || true
    wait "${PIDS[-1]}" 2>/dev/null || true
    unset 'PIDS[-1]'
    REDIS_DURABILITY=$dur ROLES=api start_instances 1 "d$mode"
    local u=${TARGETS[0]} adm=${ADMINS[0]} a202="d202-$RUN-$mode" w0 w1
    create_activity "$adm" "$a202" 100000000 16
    curl -s -o /dev/null -X POST -H "X-User-Id: warm-$RUN" "$u/api/v1/activities/$a202/reservations" || true
    before=$(cmdstat evalsha)
    w0=$(cmdstat wait)
    wrk_run "d202-$mode" "$u/api/v1/activities/$a202/reservations" "$nu"
    after=$(cmdstat evalsha)
    w1=$(cmdstat wait)
    row "seckill 202 admitted, mode $dur (${args[*]})" "$RPS" one "" "$(awk -v b="$before" -v a="$after" -v w0="${w0:-0 0}" -v w1="${w1:-0 0}" -v n="$((REQS - NON2XX))" 'BEGIN {
      split(b, x, " "); split(a, y, " "); split(w0, p, " "); split(w1, q, " ")
      if (n > 0) printf "Redis %.1f us/reservation, %.2f EVALSHA/reservation, %.2f WAIT/reservation", (y[2] - x[2]) / n, (y[1] - x[1]) / n, (q[1] - p[1]) / n }'); $NON2XX non-2xx of $REQS"
    grep -i 'durab\|fsync' "$OUT/seckill-d$mode-0.log" | head -3 | cut -c1-300 || true
    cleanup
  done
  REDIS_ADDR=$saved_addr REDIS_PORT=${saved_addr##*:}

  say "durability: the table"
  printf '%s\n' "${ROWS[@]}" | awk -F'|' '
    { label[NR] = $1; rps[NR] = $2; ref[NR] = $3; extra[NR] = $5; load[NR] = $6
      if ($1 == "Gin hello-world") hello = $2
      if ($1 ~ /one EVALSHA \(DECRBY/) one = $2
      if ($1 ~ /on the mode.s Redis/) { same[NR] = ""; modeone = $2 } else if ($1 ~ /^seckill 202/) same[NR] = modeone }
    END {
      printf "| route | req/s | of hello | of one EVALSHA | of one EVALSHA on the same mode | notes | load avg |\n|---|---|---|---|---|---|---|\n"
      for (i = 1; i <= NR; i++)
        printf "| %s | %.0f | %s | %s | %s | %s | %s |\n", label[i], rps[i], (hello > 0 ? sprintf("%.2f", rps[i] / hello) : "-"),
          (one > 0 ? sprintf("%.2f", rps[i] / one) : "-"), (same[i] > 0 ? sprintf("%.2f", rps[i] / same[i]) : ""), extra[i], load[i]
    }' | tee "$OUT/durability.md"
}
wrk_p99() { awk '$1 == "99%" {print $2}' "$OUT/wrk-$1.txt"; }

# ---- cmdstats: where a 202's Redis time goes, command by command ---------------------------
# First the ceiling, in the same run on the same server: internal/ginhello's /one (one EVALSHA
# of min_reserve.lua: DECRBY + TIME + an XADD of the journal entry), wrk of new users, its
# EVALSHA time per call. Then one instance (roles api) on $REDIS_ADDR, an activity of $SHARDS
# shards (default 16), one wrk run of 202s (a new user per request), then INFO commandstats
# (reset before each run): per command its calls, its server time per call and per 202. Redis
# counts the commands a script runs beside the EVALSHA that ran them, so EVALSHA's time minus
# the commands' is the scripts' own time (Lua, arguments, reply; a lower bound: the instance's
# own reads outside scripts, the refresh's, count as commands too). Run it on a Redis of its
# own: every client of the server is counted. PPROF=1 also takes a CPU profile of the instance
# during its run; CMDSTATS_ROLES sets the instance's roles (default api; with the relay and the
# writer their Redis time counts too).
step_cmdstats() {
  local shards=${SHARDS:-16} gport=$((BASE_PORT + 92)) ceil
  newuser_script "$OUT/newuser.lua" c
  say "cmdstats: the ceiling, ginhello /one, wrk -t2 -c$CONNS -d${WRK_SECONDS}s on $REDIS_ADDR"
  "$BIN/ginhello" --addr 127.0.0.1:$gport --redis "$REDIS_ADDR" --ns "benchcs$RUN" 2>"$OUT/ginhello-cmdstats.log" &
  PIDS+=($!)
  wait_http "http://127.0.0.1:$gport/hello"
  rcli config resetstat >/dev/null
  wrk_run "one-cmdstats" "http://127.0.0.1:$gport/one" "$OUT/newuser.lua"
  ceil=$(cmdstat evalsha)
  ceil=$(awk -v c="$ceil" 'BEGIN { split(c, x, " "); if (x[1] > 0) printf "%.2f", x[2] / x[1] }')
  echo "  ceiling: $RPS req/s, min_reserve.lua $ceil us per EVALSHA" | tee "$OUT/cmdstats.txt"
  cleanup
  local roles=${CMDSTATS_ROLES:-api}
  say "cmdstats: one instance, roles $roles, $shards shards, wrk -t2 -c$CONNS -d${WRK_SECONDS}s of 202s on $REDIS_ADDR"
  ROLES=$roles start_instances 1 qcs
  local adm=${ADMINS[0]} u=${TARGETS[0]} a="cs-$RUN"
  create_activity "$adm" "$a" 100000000 "$shards"
  sleep 1
  rcli config resetstat >/dev/null
  local prof=
  if [ -n "${PPROF:-}" ]; then # a CPU profile of the instance over the run's middle
    curl -fs -H "Authorization: Bearer $ADMIN_TOKEN" -o "$OUT/cpu-202.pprof" \
      "$adm/debug/pprof/profile?seconds=$((WRK_SECONDS > 4 ? WRK_SECONDS - 2 : 1))" &
    prof=$!
  fi
  wrk_run "202-cmdstats" "$u/api/v1/activities/$a/reservations" "$OUT/newuser.lua"
  if [ -n "$prof" ]; then
    wait "$prof" && echo "  CPU profile: go tool pprof -top $BIN/seckill $OUT/cpu-202.pprof" | tee -a "$OUT/cmdstats.txt"
  fi
  echo "  $RPS req/s" | tee -a "$OUT/cmdstats.txt"
  rcli info commandstats | tr -d '\r' | awk -F'[:=,]' -v n="$((REQS - NON2XX))" -v ceil="$ceil" '
    /^cmdstat_/ { sub(/^cmdstat_/, "", $1); if ($3 + 0 >= n / 100) printf "  %-10s %9d calls %7.2f us/call %7.2f us per 202\n", $1, $3, $5 / $3, $5 / n
                  if ($1 == "evalsha") { e = $5; k = $3 } else if ($1 != "config|resetstat" && $1 != "info") c += $5 }
    END { if (n > 0 && k > 0) printf "  %d 202s, %.1f per script call; EVALSHA %.1f us per 202 (%.2f x the ceiling %s), of which the commands above and below 1 %% %.1f, the scripts own %.1f\n", n, n / k, e / n, e / n / ceil, ceil, c / n, (e - c) / n }' \
    | tee -a "$OUT/cmdstats.txt"
  cleanup
}

steps=("$@")
[ ${#steps[@]} -eq 0 ] && steps=(ratios ceilings rush counts scaling gotest)
build
for s in "${steps[@]}"; do
  case $s in
    ratios) step_ratios ;;
    ceilings) step_gin; step_redis; step_mysql ;;
    gin) step_gin ;;
    redis) step_redis ;;
    mysql) step_mysql ;;
    rush) step_rush ;;
    counts) step_counts ;;
    scaling) step_scaling ;;
    gotest) step_gotest ;;
    queue) step_queue ;;
    durability) step_durability ;;
    cmdstats) step_cmdstats ;;
    *) echo "unknown step $s" >&2; exit 2 ;;
  esac
done
echo
echo "raw output in $OUT"
