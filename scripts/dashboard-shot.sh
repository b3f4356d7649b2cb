#!/usr/bin/env bash
# dashboard-shot.sh: renders docs/dashboard-funnel.png, panels of docs/grafana-dashboard.json over
# a real sale that sells out. Loopback only, temporary files under /tmp, every step bounded in
# time; the processes it starts are stopped on exit.
#
#   bash scripts/dashboard-shot.sh          # about a minute once the Go build cache is warm
#
# 1. builds cmd/seckill and cmd/seckill-load and starts an embedded instance (in-process Redis,
#    SQLite, queue) on free loopback ports, with config/loadtest.yaml (per-IP limit 200,000/s,
#    so that the load tool's users, who all come from 127.0.0.1, get through) plus a budget of
#    ACTIVITY_RATE reservations/s for the sale's activity, so that the sale lasts about
#    STOCK/ACTIVITY_RATE seconds, many scrapes, instead of half a second;
# 2. starts a private Prometheus (Debian's /usr/bin/prometheus) scraping the admin /metrics every
#    1 s, with deploy/prometheus/seckill-rules.yml loaded;
# 3. creates the activity, waits for a scrape of its series at 0, then runs
#    `seckill-load --create --stock STOCK --users USERS --connections CONNECTIONS` and fails
#    unless the sale sold out (units sold == stock, checks passed);
# 4. waits for the last scrape and for the 10 s rate windows to empty, then has headless
#    Chromium draw scripts/dashboard-shot.html (served by that Prometheus, which answers its
#    /api/v1/query_range calls) and screenshot it into OUT.
#
# Environment: STOCK (500), USERS (3000), CONNECTIONS (32), ACTIVITY_RATE (50), PANELS (dashboard
# panel ids, display order), OUT (docs/dashboard-funnel.png), PROMETHEUS, CHROMIUM, KEEP=1 keeps
# the temporary directory (logs, Prometheus data, the load report).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"

STOCK=${STOCK:-500}
USERS=${USERS:-3000}
CONNECTIONS=${CONNECTIONS:-32}
ACTIVITY_RATE=${ACTIVITY_RATE:-50}
PANELS=${PANELS:-1,2,10,3,8,9,5,16}
OUT=${OUT:-docs/dashboard-funnel.png}
PROMETHEUS=${PROMETHEUS:-/usr/bin/prometheus}
CHROMIUM=${CHROMIUM:-/usr/bin/chromium}
WIDTH=1600

for need in "$PROMETHEUS" "$CHROMIUM" go jq curl timeout; do
	command -v "$need" >/dev/null || { echo "dashboard-shot: $need not found" >&2; exit 2; }
done
# The instance must run embedded, whatever this shell has set.
unset "${!SECKILL_@}"

TMP=$(mktemp -d /tmp/dashboard-shot.XXXXXX)
PIDS=()

stop() {
	local pid=$1 i
	kill "$pid" 2>/dev/null || return 0
	for ((i = 0; i < 50; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.2
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	local rc=$? pid
	for pid in "${PIDS[@]}"; do
		stop "$pid"
	done
	if [[ $rc -ne 0 ]]; then
		echo "dashboard-shot: failed ($rc); last lines of the logs:" >&2
		tail -n 5 "$TMP"/*.log >&2 2>/dev/null || true
	fi
	if [[ ${KEEP:-} == 1 ]]; then
		echo "dashboard-shot: kept $TMP" >&2
	else
		rm -rf "$TMP"
	fi
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' INT TERM HUP

# free_port sets PORT to a loopback port nothing listens on and no earlier call chose.
USED_PORTS=" "
free_port() {
	local i
	for ((i = 0; i < 100; i++)); do
		PORT=$((20000 + RANDOM % 12000))
		if [[ $USED_PORTS != *" $PORT "* ]] && ! (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
			USED_PORTS+="$PORT "
			return 0
		fi
	done
	echo "dashboard-shot: no free port" >&2
	return 1
}

# wait_for runs "$@" every 0.5 s until it succeeds, at most $1 seconds.
wait_for() {
	local secs=$1 i
	shift
	for ((i = 0; i < secs * 2; i++)); do
		if "$@" >/dev/null 2>&1; then
			return 0
		fi
		sleep 0.5
	done
	echo "dashboard-shot: gave up after ${secs}s waiting for: $*" >&2
	return 1
}

# promql prints the first value of an instant query (empty when there is none).
promql() {
	curl -fsS --max-time 5 "http://$PROM/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty'
}

# prom_is succeeds when the instant query $1 returns the value $2.
prom_is() {
	[[ $(promql "$1") == "$2" ]]
}

echo "dashboard-shot: building into $TMP"
timeout 900 go build -o "$TMP/seckill" ./cmd/seckill
timeout 900 go build -o "$TMP/seckill-load" ./cmd/seckill-load

free_port
HTTP=127.0.0.1:$PORT
free_port
ADMIN=127.0.0.1:$PORT
free_port
PROM=127.0.0.1:$PORT
ACTIVITY=shot-$(date +%s)
TOKEN=$(od -An -tx1 -N32 /dev/urandom | tr -d ' \n')

# The generous limits of config/loadtest.yaml, and this sale's own budget.
cp config/loadtest.yaml "$TMP/seckill.yaml"
printf 'activities:\n  %s: {limits: {rate: %d, burst: %d}}\n' "$ACTIVITY" "$ACTIVITY_RATE" "$ACTIVITY_RATE" >>"$TMP/seckill.yaml"
mkdir -p "$TMP/data"
SECKILL_ADMIN_TOKEN=$TOKEN "$TMP/seckill" --http-addr "$HTTP" --admin-addr "$ADMIN" \
	--config-file "$TMP/seckill.yaml" --data-dir "$TMP/data" --demo=false \
	--instance-id dashboard-shot >"$TMP/seckill.out" 2>"$TMP/seckill.log" &
PIDS+=("$!")
wait_for 120 curl -fsS --max-time 2 "http://$HTTP/readyz"
echo "dashboard-shot: seckill ready on $HTTP (admin $ADMIN)"

mkdir -p "$TMP/assets" "$TMP/prom"
cp scripts/dashboard-shot.html docs/grafana-dashboard.json "$TMP/assets/"
cat >"$TMP/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files:
  - $ROOT/deploy/prometheus/seckill-rules.yml
scrape_configs:
  - job_name: seckill
    static_configs:
      - targets: ['$ADMIN']
EOF
"$PROMETHEUS" --config.file="$TMP/prometheus.yml" --storage.tsdb.path="$TMP/prom" \
	--web.listen-address="$PROM" --web.user-assets="$TMP/assets" --log.level=warn \
	>"$TMP/prometheus.out" 2>"$TMP/prometheus.log" &
PIDS+=("$!")
wait_for 60 curl -fsS --max-time 2 "http://$PROM/-/ready"
wait_for 30 prom_is 'up{job="seckill"}' 1
echo "dashboard-shot: prometheus on $PROM scraping $ADMIN every 1 s"

# The activity exists, and its funnel series are scraped at 0, before the first request; the
# load tool's --create is then an identical retry (answered 200).
curl -fsS --max-time 10 -H "Authorization: Bearer $TOKEN" -H 'Content-Type: application/json' \
	-d "{\"activityId\":\"$ACTIVITY\",\"stock\":$STOCK,\"perUserLimit\":1,\"shards\":16}" \
	"http://$ADMIN/admin/v1/activities" >/dev/null
wait_for 30 prom_is "sum(seckill_funnel_attempts_total{activity=\"$ACTIVITY\"})" 0
sleep 3
FROM=$(($(date +%s) - 3))

echo "dashboard-shot: the sale: $ACTIVITY, $STOCK units, $USERS users, $CONNECTIONS connections, budget $ACTIVITY_RATE/s"
if ! timeout 300 "$TMP/seckill-load" --target "http://$HTTP" --admin "http://$ADMIN" --admin-token "$TOKEN" \
	--activity "$ACTIVITY" --create --stock "$STOCK" --per-user-limit 1 \
	--users "$USERS" --connections "$CONNECTIONS" --duration 120s --progress 0 \
	--json "$TMP/load.json" >"$TMP/load.out" 2>&1; then
	tail -n 20 "$TMP/load.out" >&2
	KEEP=1
	exit 1
fi
sed -n '/^seckill-load run/,/^checks:/p' "$TMP/load.out" | sed '$d'
SOLD=$(jq -r '.sale.orders.units // empty' "$TMP/load.json")
if [[ $(jq -r '.passed' "$TMP/load.json") != true || $(jq -r '.reservations.units' "$TMP/load.json") != "$STOCK" ||
	$SOLD != "$STOCK" || $(jq -r '.sale.soldOut' "$TMP/load.json") != true ]]; then
	echo "dashboard-shot: the sale did not sell out cleanly (orders ${SOLD:-?} of $STOCK units); see $TMP/load.out" >&2
	KEEP=1
	exit 1
fi
LOAD_END=$(date +%s)

# The last counts scraped, then the 10 s windows of the panels emptied.
wait_for 30 prom_is "sum(seckill_order_orders_written_total{activity=\"$ACTIVITY\"})" "$STOCK"
wait_for 30 prom_is "min(seckill_stock_remaining_units{activity=\"$ACTIVITY\"})" 0
sleep $((LOAD_END + 12 - $(date +%s) > 0 ? LOAD_END + 12 - $(date +%s) : 0))
TO=$(date +%s)

# Times of the service's report ("2026-12-07T03:05:57.516Z") in Unix ms; the marker is the last
# unit sold.
MS='def ms: capture("^(?<s>[^.]+)(\\.(?<ms>[0-9]{3}))?Z$") | (.s + "Z" | fromdate) * 1000 + ((.ms // "0") | tonumber);'
SOLD_OUT_MS=$(jq -r "$MS"' .sale.lastAccepted | ms' "$TMP/load.json")
CAPTION=$(jq -r --arg rate "$ACTIVITY_RATE" "$MS"'
	"seckill-load --create --stock \(.config.stock) --users \(.users.total) --connections \(.config.connections)" +
	" against an embedded instance (config/loadtest.yaml, activity budget \($rate)/s), scraped every 1 s." +
	" Sold out: \(.sale.orders.units) of \(.sale.stock) units to \(.sale.orders.distinctBuyers) buyers," +
	" the first to the last in \((.sale.lastAccepted | ms) - (.sale.firstAccepted | ms) | ./100 | round / 10) s;" +
	" \(.sale.attempts) attempts (" +
	([.sale.answers | to_entries[] | select(.value > 0) | "\(.key) \(.value)"] | join(", ")) + ")."' "$TMP/load.json")
echo "dashboard-shot: $CAPTION"

QS=$(jq -rn --arg from "$FROM" --arg to "$TO" --arg activity "$ACTIVITY" --arg panels "$PANELS" \
	--arg soldout "$SOLD_OUT_MS" --arg caption "$CAPTION" \
	'{"start": $from, "end": $to, "step": "1", "activity": $activity, "instance": ".*", "rate": "5s",
	  "panels": $panels, "soldout": $soldout, "caption": $caption} | to_entries | map("\(.key)=\(.value | @uri)") | join("&")')
URL="http://$PROM/user/dashboard-shot.html?$QS"
# The page is drawn once to read its height, then again at that height for the screenshot.
CHROME=(timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --hide-scrollbars
	--user-data-dir="$TMP/chromium" --virtual-time-budget=20000)
"${CHROME[@]}" --window-size="$WIDTH,1000" --dump-dom "$URL" >"$TMP/page.html" 2>"$TMP/chromium.log"
if ! grep -q 'data-state="done"' "$TMP/page.html"; then
	echo "dashboard-shot: the page did not render; its state and errors:" >&2
	grep -o 'data-state="[a-z]*"' "$TMP/page.html" >&2 || true
	sed -n 's/.*<div id="errors">\([^<]*\)<.*/\1/p' "$TMP/page.html" >&2
	KEEP=1
	exit 1
fi
HEIGHT=$(sed -n 's/.*data-height="\([0-9]*\)".*/\1/p' "$TMP/page.html")
"${CHROME[@]}" --window-size="$WIDTH,${HEIGHT:-1300}" --screenshot="$TMP/shot.png" "$URL" >>"$TMP/chromium.log" 2>&1
cp "$TMP/shot.png" "$OUT"
echo "dashboard-shot: wrote $OUT (${WIDTH}x${HEIGHT:-1300}), $(date -u -d "@$FROM" +%T) to $(date -u -d "@$TO" +%T) UTC"
