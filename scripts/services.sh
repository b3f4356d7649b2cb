#!/usr/bin/env bash
# scripts/services.sh up|down|status|restart|fetch   (fetch: fill the caches, start nothing)
#
# Starts, on loopback only, every real server the tests need:
#   Redis 7 standalone   127.0.0.1:6379
#   Redis Cluster        127.0.0.1:7001-7003 (3 masters, no replicas)
#   MariaDB              127.0.0.1:3306  database seckill, user seckill/seckill
#   RocketMQ 5.3.3       name server 127.0.0.1:9876, broker 127.0.0.1:10911
#   Nacos (r-nacos)      HTTP 127.0.0.1:8848, gRPC 9848, console 10848
#
# Runtime data and logs live in <repo>/.infra (git-ignored); downloads and builds are cached in
# ${SECKILL_CACHE_DIR:-~/.cache/seckill}. Idempotent: a service that already answers is left
# alone. `down` stops only the processes this script started (pid files under .infra).
# Works from nothing on a fresh Debian 12 machine as root (installs the Debian packages it needs).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
INFRA="${SECKILL_INFRA_DIR:-$ROOT/.infra}"
CACHE="${SECKILL_CACHE_DIR:-$HOME/.cache/seckill}"
RMQ_VER="${SECKILL_ROCKETMQ_VERSION:-5.3.3}"
RNACOS_VER="${SECKILL_RNACOS_VERSION:-0.8.8}"
RMQ_CACHE="$CACHE/rocketmq-$RMQ_VER"
RNACOS_BIN="$CACHE/rnacos/bin/rnacos"
CLUSTER_PORTS=(7001 7002 7003)
export PATH="$HOME/.cargo/bin:$PATH:/usr/sbin:/sbin"

# ---------------------------------------------------------------------------- helpers

log() { printf '[services %s] %s\n' "$(date +%H:%M:%S)" "$*"; }
die() { printf '[services %s] ERROR: %s\n' "$(date +%H:%M:%S)" "$*" >&2; exit 1; }

# fail_with_log MESSAGE FILE...: prints the tail of each log, then exits non-zero.
fail_with_log() {
	local msg=$1
	shift
	local f
	for f in "$@"; do
		if [ -f "$f" ]; then
			printf '\n----- last 40 lines of %s -----\n' "$f" >&2
			tail -n 40 "$f" >&2 || true
		fi
	done
	die "$msg"
}

PHASE_NAME=""
PHASE_START=0
phase() { # phase NAME: ends the previous phase (printing its time) and starts a new one
	local now ms
	now=$(date +%s%N)
	if [ -n "$PHASE_NAME" ]; then
		ms=$(((now - PHASE_START) / 1000000))
		printf '[services] phase %-14s %4d.%01ds\n' "$PHASE_NAME" $((ms / 1000)) $((ms % 1000 / 100))
	fi
	PHASE_NAME=$1
	PHASE_START=$now
}

port_open() { # port_open PORT: true when something accepts TCP on 127.0.0.1:PORT
	(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# pid_alive PIDFILE PATTERN: true when the pid file names a live process whose command line
# contains PATTERN (guards against a recycled pid).
pid_alive() {
	local pidfile=$1 pattern=$2 pid
	[ -s "$pidfile" ] || return 1
	pid=$(cat "$pidfile")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	tr '\0' ' ' <"/proc/$pid/cmdline" | grep -q -- "$pattern"
}

# stop_pid NAME PIDFILE PATTERN [SIGNAL]: SIGNAL (default TERM), wait up to 30 s, then KILL.
# Only our own pids.
stop_pid() {
	local name=$1 pidfile=$2 pattern=$3 sig=${4:-TERM} pid i
	if ! pid_alive "$pidfile" "$pattern"; then
		rm -f "$pidfile"
		return 0
	fi
	pid=$(cat "$pidfile")
	log "stopping $name (pid $pid)"
	kill -"$sig" "$pid" 2>/dev/null || true
	for i in $(seq 300); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		log "$name did not stop in 30 s; killing"
		kill -KILL "$pid" 2>/dev/null || true
		sleep 0.5
	fi
	rm -f "$pidfile"
}

# wait_for TIMEOUT_S DESCRIPTION COMMAND...: polls COMMAND every 0.25 s.
wait_for() {
	local timeout=$1 what=$2
	shift 2
	local deadline=$((SECONDS + timeout))
	until "$@" >/dev/null 2>&1; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			return 1
		fi
		sleep 0.25
	done
}

# start_bg PIDFILE LOGFILE COMMAND...: runs COMMAND detached in its own session.
start_bg() {
	local pidfile=$1 logfile=$2
	shift 2
	setsid nohup "$@" >>"$logfile" 2>&1 </dev/null &
	echo $! >"$pidfile"
}

apt_updated=0
need_pkgs() { # need_pkgs CMD PACKAGE...: installs the packages when CMD is missing
	local cmd=$1
	shift
	command -v "$cmd" >/dev/null 2>&1 && return 0
	[ "$(id -u)" = 0 ] || die "$cmd is missing and this is not root: apt-get install $*"
	log "installing $* (Debian packages)"
	export DEBIAN_FRONTEND=noninteractive
	if [ "$apt_updated" = 0 ]; then
		apt-get update -qq >/dev/null
		apt_updated=1
	fi
	apt-get install -y -qq --no-install-recommends "$@" >/dev/null
}

# ---------------------------------------------------------------------------- Redis

redis_pidfile() { echo "$INFRA/redis/$1/redis.pid"; }

redis_ping() { [ "$(redis-cli -h 127.0.0.1 -p "$1" ping 2>/dev/null)" = PONG ]; }

# redis_start PORT [EXTRA ARGS...]
redis_start() {
	local port=$1
	shift
	local dir="$INFRA/redis/$port"
	mkdir -p "$dir"
	redis-server --port "$port" --bind 127.0.0.1 --protected-mode yes \
		--daemonize yes --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --dir "$dir" \
		--save "" --appendonly no --maxclients 10000 "$@" >/dev/null ||
		fail_with_log "redis-server on $port did not start" "$dir/redis.log"
	wait_for 15 "redis $port" redis_ping "$port" ||
		fail_with_log "redis on $port does not answer PING" "$dir/redis.log"
}

redis_up() {
	if redis_ping 6379; then
		pid_alive "$(redis_pidfile 6379)" redis-server || log "note: 127.0.0.1:6379 answers but was not started by this script; reusing it"
		return 0
	fi
	port_open 6379 && die "127.0.0.1:6379 is taken by something that is not Redis"
	redis_start 6379
	log "redis standalone up on 127.0.0.1:6379"
}

cluster_ok() {
	local p
	for p in "${CLUSTER_PORTS[@]}"; do
		redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

cluster_up() {
	if cluster_ok; then
		return 0
	fi
	local p
	# A partial or broken cluster of ours: rebuild it from scratch (it holds no persistent data).
	for p in "${CLUSTER_PORTS[@]}"; do
		stop_pid "redis cluster node $p" "$(redis_pidfile "$p")" redis-server
		port_open "$p" && die "127.0.0.1:$p is in use by a process this script did not start; stop it first"
		rm -rf "$INFRA/redis/$p"
	done
	for p in "${CLUSTER_PORTS[@]}"; do
		redis_start "$p" --cluster-enabled yes --cluster-config-file "$INFRA/redis/$p/nodes.conf" \
			--cluster-node-timeout 5000
	done
	local addrs=()
	for p in "${CLUSTER_PORTS[@]}"; do addrs+=("127.0.0.1:$p"); done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas 0 --cluster-yes \
		>"$INFRA/redis/cluster-create.log" 2>&1 ||
		fail_with_log "redis-cli --cluster create failed" "$INFRA/redis/cluster-create.log"
	wait_for 30 "cluster_state:ok" cluster_ok ||
		fail_with_log "redis cluster did not reach cluster_state:ok" "$INFRA/redis/cluster-create.log" "$INFRA/redis/7001/redis.log"
	log "redis cluster up on 127.0.0.1:7001-7003"
}

redis_down() {
	local p
	for p in 6379 "${CLUSTER_PORTS[@]}"; do
		stop_pid "redis $p" "$(redis_pidfile "$p")" redis-server
	done
}

# ---------------------------------------------------------------------------- MariaDB

MY="$INFRA/mariadb"
MY_SOCK="$MY/mysqld.sock"

mariadb_root() { mariadb --no-defaults --protocol=socket --socket="$MY_SOCK" -uroot "$@"; }
mariadb_ready() { mariadb-admin --no-defaults --protocol=socket --socket="$MY_SOCK" -uroot ping; }
mariadb_app_ready() {
	mariadb --no-defaults --protocol=tcp -h127.0.0.1 -P3306 -useckill -pseckill seckill -e 'SELECT 1'
}

# mariadb_bootstrap: database, users and grants (idempotent). seckill is the service's user;
# seckill_observed has the same rights and is used by exactly one test instance, so MariaDB's
# per-user statement counters (information_schema.USER_STATISTICS, userstat=1) show only it.
mariadb_bootstrap() {
	mariadb_root <<-'SQL' >"$MY/bootstrap.log" 2>&1 || fail_with_log "MariaDB bootstrap SQL failed" "$MY/bootstrap.log"
		SET GLOBAL userstat = 1;
		CREATE DATABASE IF NOT EXISTS seckill CHARACTER SET utf8mb4 COLLATE utf8mb4_bin;
		CREATE USER IF NOT EXISTS 'seckill'@'127.0.0.1' IDENTIFIED BY 'seckill';
		CREATE USER IF NOT EXISTS 'seckill'@'localhost' IDENTIFIED BY 'seckill';
		CREATE USER IF NOT EXISTS 'seckill_observed'@'127.0.0.1' IDENTIFIED BY 'seckill';
		CREATE USER IF NOT EXISTS 'seckill_observed'@'localhost' IDENTIFIED BY 'seckill';
		GRANT ALL PRIVILEGES ON seckill.* TO 'seckill'@'127.0.0.1', 'seckill'@'localhost',
			'seckill_observed'@'127.0.0.1', 'seckill_observed'@'localhost';
		GRANT PROCESS ON *.* TO 'seckill'@'127.0.0.1', 'seckill'@'localhost',
			'seckill_observed'@'127.0.0.1', 'seckill_observed'@'localhost';
		GRANT SELECT ON performance_schema.* TO 'seckill'@'127.0.0.1', 'seckill'@'localhost',
			'seckill_observed'@'127.0.0.1', 'seckill_observed'@'localhost';
		FLUSH PRIVILEGES;
	SQL
}

mariadb_up() {
	if pid_alive "$MY/mysqld.pid" mariadbd && mariadb_app_ready >/dev/null 2>&1; then
		mariadb_bootstrap # idempotent; brings users and settings of an older run up to date
		return 0
	fi
	if ! pid_alive "$MY/mysqld.pid" mariadbd && port_open 3306; then
		if mariadb_app_ready >/dev/null 2>&1; then
			log "note: 127.0.0.1:3306 answers for seckill/seckill but was not started by this script; reusing it"
			return 0
		fi
		die "127.0.0.1:3306 is taken by a process this script did not start (and seckill/seckill cannot log in)"
	fi
	mkdir -p "$MY"
	local user
	user=$(id -un)
	if [ ! -d "$MY/data/mysql" ]; then
		log "initialising MariaDB datadir"
		rm -rf "$MY/data"
		mariadb-install-db --no-defaults --datadir="$MY/data" --user="$user" \
			--auth-root-authentication-method=normal --skip-test-db >"$MY/install.log" 2>&1 ||
			fail_with_log "mariadb-install-db failed" "$MY/install.log"
	fi
	if ! pid_alive "$MY/mysqld.pid" mariadbd; then
		# --no-defaults: ignore /etc/mysql so the server is self-contained.
		# mariadbd does not fork, so the launcher pid is the server pid (it also writes --pid-file).
		start_bg "$MY/mysqld.pid" "$MY/mariadbd.out" mariadbd --no-defaults \
			--user="$user" --datadir="$MY/data" --socket="$MY_SOCK" --pid-file="$MY/mysqld.pid" \
			--bind-address=127.0.0.1 --port=3306 --log-error="$MY/error.log" \
			--max-connections=500 --skip-name-resolve --userstat=1 \
			--character-set-server=utf8mb4 --collation-server=utf8mb4_bin \
			--innodb-buffer-pool-size=256M --innodb-log-file-size=128M \
			--innodb-flush-log-at-trx-commit=2 --sync-binlog=0 --skip-log-bin
		wait_for 60 "mariadb" mariadb_ready ||
			fail_with_log "MariaDB did not become ready in 60 s" "$MY/error.log" "$MY/mariadbd.out"
	fi
	mariadb_bootstrap
	wait_for 10 "mariadb tcp" mariadb_app_ready ||
		fail_with_log "user seckill cannot log in over TCP" "$MY/error.log"
	log "mariadb up on 127.0.0.1:3306 (socket $MY_SOCK)"
}

mariadb_down() {
	stop_pid "mariadb" "$MY/mysqld.pid" mariadbd
}

# ---------------------------------------------------------------------------- RocketMQ

RMQ="$INFRA/rocketmq"

# rocketmq_jars: resolves rocketmq-namesrv and rocketmq-broker with Maven into the cache.
rocketmq_jars() {
	if [ -f "$RMQ_CACHE/lib/.complete" ]; then
		return 0
	fi
	log "assembling RocketMQ $RMQ_VER jars with Maven (cold cache: a few minutes)"
	mkdir -p "$RMQ_CACHE"
	cat >"$RMQ_CACHE/pom.xml" <<-EOF
		<project xmlns="http://maven.apache.org/POM/4.0.0">
		  <modelVersion>4.0.0</modelVersion>
		  <groupId>local.seckill</groupId><artifactId>rocketmq-runtime</artifactId><version>0</version>
		  <packaging>pom</packaging>
		  <dependencies>
		    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>$RMQ_VER</version></dependency>
		    <dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>$RMQ_VER</version></dependency>
		  </dependencies>
		</project>
	EOF
	rm -rf "$RMQ_CACHE/lib"
	mvn -B -q -f "$RMQ_CACHE/pom.xml" -Dmaven.repo.local="$CACHE/m2" \
		org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
		-DoutputDirectory="$RMQ_CACHE/lib" -DincludeScope=runtime >"$RMQ_CACHE/maven.log" 2>&1 ||
		fail_with_log "Maven could not assemble RocketMQ $RMQ_VER" "$RMQ_CACHE/maven.log"
	[ -f "$RMQ_CACHE/lib/rocketmq-broker-$RMQ_VER.jar" ] ||
		fail_with_log "rocketmq-broker-$RMQ_VER.jar missing after Maven" "$RMQ_CACHE/maven.log"
	touch "$RMQ_CACHE/lib/.complete"
}

RMQ_NS_LOG="$RMQ/home/logs/rocketmqlogs/namesrv.log"

# broker_registered OFFSET: true once the name server logged, after byte OFFSET of its log, that
# our broker registered. (Asking with mqadmin clusterList works too but costs a JVM start:
# 3-25 s on 2 busy cores.)
broker_registered() {
	tail -c +"$(($1 + 1))" "$RMQ_NS_LOG" 2>/dev/null |
		grep -q "new broker registered, .*brokerAddr=127.0.0.1:10911"
}

# JVM flags: small heaps for a 2-core box; the opens keep JDK 17 quiet about Netty/mmap access.
RMQ_JDK_OPENS=(--add-opens=java.base/java.lang=ALL-UNNAMED --add-opens=java.base/java.nio=ALL-UNNAMED
	--add-exports=java.base/sun.nio.ch=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED)

RMQ_SYS=(-Duser.home="$RMQ/home" -Drocketmq.home.dir="$RMQ/home" -Djava.net.preferIPv4Stack=true)
RMQ_SKIP=0
RMQ_NS_OFFSET=0

# rocketmq_start: assembles the jars, writes the configs and launches the name server without
# waiting for it, so its JVM boots while Redis and MariaDB start. rocketmq_up finishes the job.
rocketmq_start() {
	if pid_alive "$RMQ/namesrv.pid" NamesrvStartup && pid_alive "$RMQ/broker.pid" BrokerStartup &&
		port_open 9876 && port_open 10911; then
		RMQ_SKIP=1
		return 0
	fi
	if ! pid_alive "$RMQ/namesrv.pid" NamesrvStartup && ! pid_alive "$RMQ/broker.pid" BrokerStartup &&
		port_open 9876 && port_open 10911; then
		log "note: 127.0.0.1:9876 and :10911 answer but were not started by this script; reusing them"
		RMQ_SKIP=1
		return 0
	fi
	rocketmq_jars
	mkdir -p "$RMQ/home" "$RMQ/store" "$RMQ/conf"
	cat >"$RMQ/conf/namesrv.conf" <<-EOF
		listenPort=9876
		bindAddress=127.0.0.1
	EOF
	cat >"$RMQ/conf/broker.conf" <<-EOF
		brokerClusterName=SeckillTest
		brokerName=broker-a
		brokerId=0
		brokerRole=ASYNC_MASTER
		flushDiskType=ASYNC_FLUSH
		namesrvAddr=127.0.0.1:9876
		brokerIP1=127.0.0.1
		brokerIP2=127.0.0.1
		bindAddress=127.0.0.1
		listenPort=10911
		storePathRootDir=$RMQ/store
		storePathCommitLog=$RMQ/store/commitlog
		mappedFileSizeCommitLog=134217728
		autoCreateTopicEnable=true
		autoCreateSubscriptionGroup=true
		defaultTopicQueueNums=4
		fileReservedTime=1
		diskMaxUsedSpaceRatio=90
		transactionTimeOut=3000
		transactionCheckInterval=5000
		messageDelayLevel=1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s
	EOF
	RMQ_NS_OFFSET=$(stat -c %s "$RMQ_NS_LOG" 2>/dev/null || echo 0)
	if ! pid_alive "$RMQ/namesrv.pid" NamesrvStartup; then
		port_open 9876 && die "127.0.0.1:9876 is in use by a process this script did not start"
		: >"$RMQ/namesrv.out"
		start_bg "$RMQ/namesrv.pid" "$RMQ/namesrv.out" java -Xms128m -Xmx256m -XX:+UseG1GC \
			-XX:-OmitStackTraceInFastThrow "${RMQ_JDK_OPENS[@]}" "${RMQ_SYS[@]}" \
			-Drmq.logback.configurationFile=rmq.namesrv.logback.xml \
			-cp "$RMQ_CACHE/lib/*" org.apache.rocketmq.namesrv.NamesrvStartup -c "$RMQ/conf/namesrv.conf"
	fi
}

rocketmq_up() {
	[ "$RMQ_SKIP" = 1 ] && return 0
	if ! grep -q "The Name Server boot success" "$RMQ/namesrv.out" 2>/dev/null || ! port_open 9876; then
		wait_for 90 "namesrv boot" grep -q "The Name Server boot success" "$RMQ/namesrv.out" ||
			fail_with_log "RocketMQ name server did not boot in 90 s" "$RMQ/namesrv.out"
		wait_for 10 "namesrv port" port_open 9876 ||
			fail_with_log "RocketMQ name server does not listen on 9876" "$RMQ/namesrv.out"
	fi
	log "rocketmq name server up on 127.0.0.1:9876"
	if ! pid_alive "$RMQ/broker.pid" BrokerStartup; then
		port_open 10911 && die "127.0.0.1:10911 is in use by a process this script did not start"
		: >"$RMQ/broker.out"
		start_bg "$RMQ/broker.pid" "$RMQ/broker.out" java -Xms512m -Xmx512m -XX:MaxDirectMemorySize=512m \
			-XX:+UseG1GC -XX:-OmitStackTraceInFastThrow "${RMQ_JDK_OPENS[@]}" "${RMQ_SYS[@]}" \
			-Drmq.logback.configurationFile=rmq.broker.logback.xml \
			-cp "$RMQ_CACHE/lib/*" org.apache.rocketmq.broker.BrokerStartup -c "$RMQ/conf/broker.conf"
		wait_for 120 "broker boot" grep -q "boot success" "$RMQ/broker.out" ||
			fail_with_log "RocketMQ broker did not boot in 120 s" "$RMQ/broker.out" \
				"$RMQ/home/logs/rocketmqlogs/broker.log"
	fi
	wait_for 60 "broker registration" broker_registered "$RMQ_NS_OFFSET" ||
		fail_with_log "RocketMQ broker did not register with the name server" "$RMQ/broker.out" \
			"$RMQ/home/logs/rocketmqlogs/namesrv.log" "$RMQ/home/logs/rocketmqlogs/broker.log"
	log "rocketmq broker up on 127.0.0.1:10911, registered with the name server"
}

rocketmq_down() {
	stop_pid "rocketmq broker" "$RMQ/broker.pid" BrokerStartup
	stop_pid "rocketmq name server" "$RMQ/namesrv.pid" NamesrvStartup
}

# ---------------------------------------------------------------------------- Nacos (r-nacos)

NACOS="$INFRA/rnacos"

RNACOS_BUILD_PID=""

# rnacos_build_start: when the r-nacos binary is missing, starts `cargo install rnacos` in the
# background (it takes the longest of all phases: ~28 min on 2 cores), so the other services
# start meanwhile. rnacos_build_wait waits for it.
rnacos_build_start() {
	if [ -x "$RNACOS_BIN" ] || nacos_ready; then
		return 0
	fi
	# Another build of the same root may be running (e.g. from an interrupted call): wait for it
	# in rnacos_build_wait instead of racing it.
	if pgrep -f "cargo install rnacos.*--root $CACHE/rnacos" >/dev/null 2>&1; then
		log "an rnacos build is already running (log: $CACHE/rnacos-build.log); will wait for it"
		return 0
	fi
	command -v cargo >/dev/null 2>&1 || die "cargo is missing: the Nacos server r-nacos is built with cargo install rnacos"
	need_pkgs cc gcc libc6-dev
	mkdir -p "$CACHE"
	log "building r-nacos $RNACOS_VER in the background with cargo install (cold cache: ~30 min on 2 cores; log $CACHE/rnacos-build.log)"
	cargo install rnacos --version "$RNACOS_VER" --locked --root "$CACHE/rnacos" \
		>"$CACHE/rnacos-build.log" 2>&1 </dev/null &
	RNACOS_BUILD_PID=$!
}

rnacos_build_wait() {
	if [ -x "$RNACOS_BIN" ]; then
		return 0
	fi
	if [ -n "$RNACOS_BUILD_PID" ]; then
		log "waiting for the r-nacos build (pid $RNACOS_BUILD_PID)"
		wait "$RNACOS_BUILD_PID" || fail_with_log "cargo install rnacos failed" "$CACHE/rnacos-build.log"
	elif pgrep -f "cargo install rnacos.*--root $CACHE/rnacos" >/dev/null 2>&1; then
		log "waiting for the running r-nacos build (log: $CACHE/rnacos-build.log)"
		wait_for 3600 "rnacos build" test -x "$RNACOS_BIN" ||
			fail_with_log "rnacos build did not finish in an hour" "$CACHE/rnacos-build.log"
	else
		rnacos_build_start
		rnacos_build_wait
		return
	fi
	[ -x "$RNACOS_BIN" ] || fail_with_log "no rnacos binary at $RNACOS_BIN after the build" "$CACHE/rnacos-build.log"
}

nacos_ready() {
	[ "$(curl -fsS -m 2 http://127.0.0.1:8848/nacos/v1/console/health/readiness 2>/dev/null)" = OK ]
}

# nacos_writable: true once a published config can be read back. Readiness "OK" is not enough:
# - after a restart on data from an unclean stop, r-nacos never elects a raft leader and every
#   publish fails with 500 "unknown the raft leader addr!";
# - under CPU contention r-nacos 0.8.8 can panic at start (raftapply.rs, an actor used before
#   its dependencies are injected); then publishes answer "true" but nothing is ever stored.
nacos_writable() {
	local v="up-$$-$RANDOM-$SECONDS" i
	[ "$(curl -sS -m 3 -X POST http://127.0.0.1:8848/nacos/v1/cs/configs \
		--data-urlencode dataId=services.probe --data-urlencode group=SECKILL_INFRA \
		--data-urlencode type=text --data-urlencode "content=$v" 2>/dev/null)" = true ] || return 1
	for i in $(seq 20); do
		[ "$(curl -sS -m 2 'http://127.0.0.1:8848/nacos/v1/cs/configs?dataId=services.probe&group=SECKILL_INFRA' 2>/dev/null)" = "$v" ] && return 0
		sleep 0.1
	done
	return 1
}

# rnacos_start: starts r-nacos from its own directory (it reads ./.env there). SIGINT is reset to
# its default action because background jobs of a script start with SIGINT ignored, and SIGINT
# is r-nacos's graceful stop: a SIGTERM stop loses the raft membership on disk (0.8.8), after
# which a restart never elects a leader and every publish fails.
rnacos_start() {
	: >"$NACOS/rnacos.out"
	(
		cd "$NACOS"
		set -a
		# shellcheck disable=SC1091
		. ./.env
		set +a
		start_bg "$NACOS/rnacos.pid" "$NACOS/rnacos.out" env --default-signal=INT "$RNACOS_BIN"
	)
	wait_for 60 "nacos readiness" nacos_ready ||
		fail_with_log "r-nacos did not become ready in 60 s" "$NACOS/rnacos.out"
	wait_for 10 "nacos grpc" port_open 9848 ||
		fail_with_log "r-nacos does not listen on gRPC 9848" "$NACOS/rnacos.out"
}

nacos_up() {
	if nacos_ready && nacos_writable; then
		pid_alive "$NACOS/rnacos.pid" rnacos || log "note: 127.0.0.1:8848 answers but was not started by this script; reusing it"
		return 0
	fi
	if pid_alive "$NACOS/rnacos.pid" rnacos; then
		stop_pid "nacos (r-nacos, not accepting publishes)" "$NACOS/rnacos.pid" rnacos INT
	fi
	port_open 8848 && die "127.0.0.1:8848 is taken by something that is not a working Nacos"
	rnacos_build_wait
	mkdir -p "$NACOS/data"
	cat >"$NACOS/.env" <<-EOF
		RNACOS_HTTP_PORT=8848
		RNACOS_GRPC_PORT=9848
		RNACOS_HTTP_CONSOLE_PORT=10848
		RNACOS_SDK_HOST=127.0.0.1
		RNACOS_CONSOLE_HOST=127.0.0.1
		RNACOS_DATA_DIR=$NACOS/data
		RNACOS_ENABLE_OPEN_API_AUTH=false
		RNACOS_RAFT_NODE_ADDR=127.0.0.1:9848
		RUST_LOG=warn
	EOF
	rnacos_start
	local t=$SECONDS attempt aside
	for attempt in 1 2 3; do
		if ! grep -q "panicked" "$NACOS/rnacos.out" && wait_for 20 "nacos publish" nacos_writable; then
			break
		fi
		[ "$attempt" = 3 ] &&
			fail_with_log "r-nacos answers readiness but does not store configs (3 attempts)" "$NACOS/rnacos.out"
		# Test data only: keep the broken data aside and start on an empty data dir.
		aside="$NACOS/data.broken-$(date +%Y%m%d%H%M%S)"
		log "r-nacos does not store configs (attempt $attempt: $(grep -m1 -o 'panicked at [^ ]*' "$NACOS/rnacos.out" || echo 'no raft leader')); moving its data to $aside and starting it again"
		cp "$NACOS/rnacos.out" "$aside.out" 2>/dev/null || true
		stop_pid "nacos (r-nacos)" "$NACOS/rnacos.pid" rnacos INT
		mv "$NACOS/data" "$aside"
		mkdir -p "$NACOS/data"
		rnacos_start
	done
	log "nacos (r-nacos) up on 127.0.0.1:8848 (gRPC 9848, console 10848); publishes accepted $((SECONDS - t))s after readiness"
}

# ---------------------------------------------------------------------------- commands

cmd_up() {
	local t0=$SECONDS
	mkdir -p "$INFRA" "$CACHE"
	phase packages
	need_pkgs redis-server redis-server redis-tools
	need_pkgs redis-cli redis-tools
	need_pkgs mariadbd mariadb-server mariadb-client
	need_pkgs mariadb mariadb-client
	need_pkgs java openjdk-17-jdk-headless
	need_pkgs mvn maven
	need_pkgs curl curl
	need_pkgs pgrep procps
	need_pkgs setsid util-linux
	rnacos_build_start
	phase rocketmq-start
	rocketmq_start
	phase redis
	redis_up
	phase redis-cluster
	cluster_up
	phase mariadb
	mariadb_up
	phase rocketmq
	rocketmq_up
	phase nacos
	nacos_up
	phase done
	log "all services up in $((SECONDS - t0))s (data and logs in $INFRA)"
}

cmd_down() {
	# TERM every process of ours at once, then wait for all of them (the broker alone may take
	# ~15 s to flush and stop); KILL whatever is left after 30 s.
	local entries=(
		"nacos (r-nacos)|$NACOS/rnacos.pid|rnacos|INT"
		"rocketmq broker|$RMQ/broker.pid|BrokerStartup|TERM"
		"rocketmq name server|$RMQ/namesrv.pid|NamesrvStartup|TERM"
		"mariadb|$MY/mysqld.pid|mariadbd|TERM"
	)
	local p e name pidfile pattern sig pids=() files=()
	for p in 6379 "${CLUSTER_PORTS[@]}"; do entries+=("redis $p|$(redis_pidfile "$p")|redis-server|TERM"); done
	for e in "${entries[@]}"; do
		IFS='|' read -r name pidfile pattern sig <<<"$e"
		if pid_alive "$pidfile" "$pattern"; then
			log "stopping $name (pid $(cat "$pidfile"), SIG$sig)"
			pids+=("$(cat "$pidfile")")
			kill -"$sig" "$(cat "$pidfile")" 2>/dev/null || true
		fi
		files+=("$pidfile")
	done
	local i alive
	for i in $(seq 300); do
		alive=0
		for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ "$alive" = 0 ] && break
		sleep 0.1
	done
	for p in "${pids[@]}"; do
		if kill -0 "$p" 2>/dev/null; then
			log "pid $p did not stop in 30 s; killing it"
			kill -KILL "$p" 2>/dev/null || true
		fi
	done
	rm -f "${files[@]}"
	log "all services started by this script are stopped"
}

# check NAME COMMAND...: prints one status line.
check() {
	local name=$1
	shift
	if "$@" >/dev/null 2>&1; then
		printf '  %-34s up\n' "$name"
	else
		printf '  %-34s DOWN\n' "$name"
		STATUS_RC=1
	fi
}

cmd_status() {
	STATUS_RC=0
	echo "services (data and logs in $INFRA):"
	check "redis        127.0.0.1:6379" redis_ping 6379
	check "redis cluster 127.0.0.1:7001-7003" cluster_ok
	check "mariadb      127.0.0.1:3306" mariadb_app_ready
	check "rocketmq ns  127.0.0.1:9876" port_open 9876
	check "rocketmq br  127.0.0.1:10911" port_open 10911
	check "nacos        127.0.0.1:8848" nacos_writable
	check "nacos grpc   127.0.0.1:9848" port_open 9848
	return "$STATUS_RC"
}

# cmd_fetch: fills the caches (RocketMQ jars, r-nacos binary) without starting anything.
cmd_fetch() {
	local t0=$SECONDS
	mkdir -p "$CACHE"
	need_pkgs java openjdk-17-jdk-headless
	need_pkgs mvn maven
	rnacos_build_start
	phase rocketmq-jars
	rocketmq_jars
	phase rnacos-build
	rnacos_build_wait
	phase done
	log "caches ready in $((SECONDS - t0))s ($CACHE)"
}

case "${1:-}" in
up) cmd_up ;;
fetch) cmd_fetch ;;
down) cmd_down ;;
status) cmd_status ;;
restart)
	cmd_down
	cmd_up
	;;
*)
	echo "usage: $0 up|down|status|restart|fetch" >&2
	exit 2
	;;
esac
