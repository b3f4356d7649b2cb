#!/usr/bin/env bash
# scripts/services.sh up|up-redis|down|status|restart|fetch   (fetch: fill the caches, start nothing;
#   up-redis: the Redis servers only)
# scripts/services.sh nacos-server DIR PORT CONSOLE_PORT   (a private Nacos in the foreground)
#
# Starts, on loopback only, every real server the tests need:
#   Redis 7 standalone   127.0.0.1:6379 (AOF, appendfsync everysec)
#   Redis Cluster        127.0.0.1:7001-7003 (3 masters, no replicas, AOF)
#   Redis Sentinel group master 127.0.0.1:6390, replica 6391 (AOF), sentinels 26390-26392,
#                        master name "seckill", quorum 2 (ports: SECKILL_SENTINEL_REDIS_PORTS,
#                        SECKILL_SENTINEL_PORTS)
#   Redis Cluster with replicas  127.0.0.1:7011-7016 (3 masters, a replica each, AOF;
#                        ports: SECKILL_HA_CLUSTER_PORTS)
#   MariaDB              127.0.0.1:3306  database seckill, user seckill/seckill
#   RocketMQ 5.3.3       name server 127.0.0.1:9876, broker 127.0.0.1:10911
#   Nacos 3.1 (Java)     HTTP 127.0.0.1:8848, gRPC 9848/9849, console 18080; auth on,
#                        administrator nacos / seckill-nacos (its raft port 7848 listens on
#                        all interfaces: JRaft's gRPC server takes no bind address)
# It also installs Debian's chromium, which the console test drives, and Debian's prometheus
# package for its promtool (deploy/validate checks and tests deploy/prometheus with it; the
# package's own server is not started by this script).
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
NACOS_VER="${SECKILL_NACOS_VERSION:-3.1.0-bugfix}"
RMQ_CACHE="$CACHE/rocketmq-$RMQ_VER"
NACOS_CACHE="$CACHE/nacos-$NACOS_VER"
CLUSTER_PORTS=(7001 7002 7003)
read -r -a SENT_REDIS_PORTS <<<"${SECKILL_SENTINEL_REDIS_PORTS:-6390 6391}"
read -r -a SENT_PORTS <<<"${SECKILL_SENTINEL_PORTS:-26390 26391 26392}"
read -r -a HA_CLUSTER_PORTS <<<"${SECKILL_HA_CLUSTER_PORTS:-7011 7012 7013 7014 7015 7016}"
SENT_MASTER=seckill
export PATH="$PATH:/usr/sbin:/sbin"

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
# contains PATTERN (guards against a recycled pid). A pid file left from an earlier boot may
# name what is now a thread of another process (/proc answers for a thread id too, with its
# process's command line, and a signal to it goes to the whole process): only a process's
# own id counts, so stopping a stale 6390 cannot stop the redis on 6379.
pid_alive() {
	local pidfile=$1 pattern=$2 pid
	[ -s "$pidfile" ] || return 1
	pid=$(cat "$pidfile")
	[ -n "$pid" ] && [ -r "/proc/$pid/cmdline" ] || return 1
	[ "$(awk '$1 == "Tgid:" { print $2 }' "/proc/$pid/status" 2>/dev/null)" = "$pid" ] || return 1
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
		--save "" --appendonly yes --appendfsync everysec --maxclients 10000 "$@" >/dev/null ||
		fail_with_log "redis-server on $port did not start" "$dir/redis.log"
	wait_for 15 "redis $port" redis_ping "$port" ||
		fail_with_log "redis on $port does not answer PING" "$dir/redis.log"
}

redis_up() {
	if redis_ping 6379; then
		pid_alive "$(redis_pidfile 6379)" "redis-server 127.0.0.1:6379" || log "note: 127.0.0.1:6379 answers but was not started by this script; reusing it"
		return 0
	fi
	port_open 6379 && die "127.0.0.1:6379 is taken by something that is not Redis"
	redis_start 6379
	log "redis standalone up on 127.0.0.1:6379"
}

# cluster_ok_on PORT...: every node answers cluster_state:ok.
cluster_ok_on() {
	local p
	for p in "$@"; do
		redis-cli -h 127.0.0.1 -p "$p" cluster info 2>/dev/null | grep -q '^cluster_state:ok' || return 1
	done
}

# cluster_ok: the 3-master cluster answers cluster_state:ok on every node.
cluster_ok() { cluster_ok_on "${CLUSTER_PORTS[@]}"; }

# cluster_create LOG REPLICAS PORT... -- REDIS_ARG...: builds a cluster from scratch on the
# PORTs (it holds test data only): stops our nodes on them, wipes their directories, starts
# each with the REDIS_ARGs and creates the cluster with REPLICAS replicas per master, its
# output in LOG.
cluster_create() {
	local log=$1 replicas=$2 p ports=() addrs=()
	shift 2
	while [ "$1" != -- ]; do
		ports+=("$1")
		shift
	done
	shift
	for p in "${ports[@]}"; do
		stop_pid "redis cluster node $p" "$(redis_pidfile "$p")" "redis-server 127.0.0.1:$p"
		port_open "$p" && die "127.0.0.1:$p is in use by a process this script did not start; stop it first"
		rm -rf "$INFRA/redis/$p"
	done
	for p in "${ports[@]}"; do
		redis_start "$p" --cluster-enabled yes --cluster-config-file "$INFRA/redis/$p/nodes.conf" "$@"
		addrs+=("127.0.0.1:$p")
	done
	redis-cli --cluster create "${addrs[@]}" --cluster-replicas "$replicas" --cluster-yes >"$log" 2>&1 ||
		fail_with_log "redis-cli --cluster create (replicas $replicas) failed" "$log"
}

cluster_up() {
	if cluster_ok; then
		return 0
	fi
	# A partial or broken cluster of ours: rebuild it from scratch (it holds no persistent data).
	cluster_create "$INFRA/redis/cluster-create.log" 0 "${CLUSTER_PORTS[@]}" -- --cluster-node-timeout 5000
	wait_for 30 "cluster_state:ok" cluster_ok ||
		fail_with_log "redis cluster did not reach cluster_state:ok" "$INFRA/redis/cluster-create.log" "$INFRA/redis/7001/redis.log"
	log "redis cluster up on 127.0.0.1:7001-7003"
}

# ha_cluster_ok: the cluster with replicas is ok and every master has a replica online.
ha_cluster_ok() {
	cluster_ok_on "${HA_CLUSTER_PORTS[@]}" || return 1
	local nodes masters slaves
	nodes=$(redis-cli -h 127.0.0.1 -p "${HA_CLUSTER_PORTS[0]}" cluster nodes 2>/dev/null) || return 1
	masters=$(awk '$3 ~ /master/ && $3 !~ /fail/' <<<"$nodes" | wc -l)
	slaves=$(awk '$3 ~ /slave/ && $3 !~ /fail/ && $8 == "connected"' <<<"$nodes" | wc -l)
	[ "$masters" -ge 3 ] && [ "$slaves" -ge 3 ]
}

# ha_cluster_up: 3 masters with a replica each, for failover drills (CLUSTER FAILOVER on a
# replica). Rebuilt from scratch when not ok (it holds test data only).
ha_cluster_up() {
	if ha_cluster_ok; then
		return 0
	fi
	cluster_create "$INFRA/redis/ha-cluster-create.log" 1 "${HA_CLUSTER_PORTS[@]}" -- \
		--cluster-node-timeout 3000 --repl-diskless-sync-delay 0
	wait_for 30 "cluster with replicas ok" ha_cluster_ok ||
		fail_with_log "the redis cluster with replicas did not get every replica online" "$INFRA/redis/ha-cluster-create.log" "$INFRA/redis/${HA_CLUSTER_PORTS[0]}/redis.log"
	log "redis cluster with replicas up on 127.0.0.1:${HA_CLUSTER_PORTS[0]}-${HA_CLUSTER_PORTS[5]}"
}

sentinel_pidfile() { echo "$INFRA/sentinel/$1/sentinel.pid"; }

# sentinel_ok: every sentinel names a master for SENT_MASTER, and that master answers with a
# replica online (after a failover drill the master may be either port).
sentinel_ok() {
	local p addr master=""
	for p in "${SENT_PORTS[@]}"; do
		addr=$(redis-cli -h 127.0.0.1 -p "$p" sentinel get-master-addr-by-name "$SENT_MASTER" 2>/dev/null | tr '\n' ' ') || return 1
		[ -n "$addr" ] || return 1
		[ -z "$master" ] || [ "$master" = "$addr" ] || return 1
		master=$addr
	done
	set -- $master
	redis-cli -h "$1" -p "$2" info replication 2>/dev/null | grep -q 'state=online'
}

# sentinel_up: one master, one replica, three sentinels (quorum 2) on loopback. Rebuilt from
# scratch when not ok.
sentinel_up() {
	if sentinel_ok; then
		return 0
	fi
	local p m=${SENT_REDIS_PORTS[0]} r=${SENT_REDIS_PORTS[1]} dir
	for p in "${SENT_PORTS[@]}"; do
		stop_pid "redis sentinel $p" "$(sentinel_pidfile "$p")" "redis-server 127.0.0.1:$p"
	done
	for p in "${SENT_REDIS_PORTS[@]}"; do
		stop_pid "redis $p" "$(redis_pidfile "$p")" "redis-server 127.0.0.1:$p"
	done
	for p in "${SENT_REDIS_PORTS[@]}" "${SENT_PORTS[@]}"; do
		port_open "$p" && die "127.0.0.1:$p is in use by a process this script did not start; stop it first"
		rm -rf "$INFRA/redis/$p" "$INFRA/sentinel/$p"
	done
	redis_start "$m" --repl-diskless-sync-delay 0
	redis_start "$r" --replicaof 127.0.0.1 "$m"
	wait_for 15 "replica $r online" sh -c "redis-cli -h 127.0.0.1 -p $m info replication | grep -q state=online" ||
		fail_with_log "the replica on $r did not sync from $m" "$INFRA/redis/$r/redis.log"
	for p in "${SENT_PORTS[@]}"; do
		dir="$INFRA/sentinel/$p"
		mkdir -p "$dir"
		# Each sentinel rewrites its own file.
		cat >"$dir/sentinel.conf" <<-CONF
			port $p
			bind 127.0.0.1
			daemonize yes
			pidfile $dir/sentinel.pid
			logfile $dir/sentinel.log
			dir $dir
			sentinel monitor $SENT_MASTER 127.0.0.1 $m 2
			sentinel down-after-milliseconds $SENT_MASTER 1000
			sentinel failover-timeout $SENT_MASTER 5000
			sentinel parallel-syncs $SENT_MASTER 1
		CONF
		redis-server "$dir/sentinel.conf" --sentinel >/dev/null ||
			fail_with_log "redis sentinel on $p did not start" "$dir/sentinel.log"
	done
	wait_for 15 "sentinels agree" sentinel_ok ||
		fail_with_log "the sentinels do not agree on a master" "$INFRA/sentinel/${SENT_PORTS[0]}/sentinel.log"
	log "redis sentinel group up: master 127.0.0.1:$m, replica $r, sentinels ${SENT_PORTS[*]} (name $SENT_MASTER)"
}

redis_down() {
	local p
	for p in 6379 "${CLUSTER_PORTS[@]}" "${SENT_REDIS_PORTS[@]}" "${HA_CLUSTER_PORTS[@]}"; do
		stop_pid "redis $p" "$(redis_pidfile "$p")" "redis-server 127.0.0.1:$p"
	done
	for p in "${SENT_PORTS[@]}"; do
		stop_pid "redis sentinel $p" "$(sentinel_pidfile "$p")" "redis-server 127.0.0.1:$p"
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

# maven_jars DIR NAME WHAT DEPENDENCY...: copies the runtime jars of the DEPENDENCYs (each a
# Maven <dependency> element) into DIR/lib, through the pom DIR/pom.xml of artifact NAME-runtime;
# Maven's output goes to DIR/maven.log, shown with WHAT when it fails.
maven_jars() {
	local dir=$1 name=$2 what=$3 deps
	shift 3
	deps=$(printf '    %s\n' "$@")
	mkdir -p "$dir"
	cat >"$dir/pom.xml" <<-EOF
		<project xmlns="http://maven.apache.org/POM/4.0.0">
		  <modelVersion>4.0.0</modelVersion>
		  <groupId>local.seckill</groupId><artifactId>$name-runtime</artifactId><version>0</version>
		  <packaging>pom</packaging>
		  <dependencies>
		$deps
		  </dependencies>
		</project>
	EOF
	rm -rf "$dir/lib"
	mvn -B -q -f "$dir/pom.xml" -Dmaven.repo.local="$CACHE/m2" \
		org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy-dependencies \
		-DoutputDirectory="$dir/lib" -DincludeScope=runtime >"$dir/maven.log" 2>&1 ||
		fail_with_log "Maven could not assemble $what" "$dir/maven.log"
}

# ---------------------------------------------------------------------------- RocketMQ

RMQ="$INFRA/rocketmq"

# rocketmq_jars: resolves rocketmq-namesrv and rocketmq-broker with Maven into the cache.
rocketmq_jars() {
	if [ -f "$RMQ_CACHE/lib/.complete" ]; then
		return 0
	fi
	log "assembling RocketMQ $RMQ_VER jars with Maven (cold cache: a few minutes)"
	maven_jars "$RMQ_CACHE" rocketmq "RocketMQ $RMQ_VER" \
		"<dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-namesrv</artifactId><version>$RMQ_VER</version></dependency>" \
		"<dependency><groupId>org.apache.rocketmq</groupId><artifactId>rocketmq-broker</artifactId><version>$RMQ_VER</version></dependency>"
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

# rocketmq_disk_check fails when the disk of the broker's store is 90 % full or more: the
# broker then refuses every message (seen: each order test and drill timed out waiting for
# orders, the clients logging "start retrying to send"), and warns from 85 %.
rocketmq_disk_check() {
	local used
	used=$(df --output=pcent "$RMQ/store" 2>/dev/null | tail -n 1 | tr -dc '0-9')
	[ -n "$used" ] || return 0
	if [ "$used" -ge 90 ]; then
		die "the disk of $RMQ/store is $used % full: the RocketMQ broker refuses every message from 90 %, so the order pipeline cannot work; free space (the Go build cache is often the largest: go clean -cache)"
	fi
	[ "$used" -lt 85 ] || log "warning: the disk of $RMQ/store is $used % full; the RocketMQ broker refuses every message from 90 %"
}

rocketmq_up() {
	[ "$RMQ_SKIP" = 1 ] && return 0
	rocketmq_disk_check
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

# ---------------------------------------------------------------------------- Nacos (Java server)
#
# The Java Nacos 3.1 server, standalone, embedded Derby storage, auth on. The published jars
# (a rebuild of the official sources; Alibaba publishes only the client) lack the official
# bootstrap module, so scripts/nacos/NacosLauncher.java, compiled here with javac, starts the
# server and the console the way the official "merged" deployment does.

NACOS="$INFRA/nacos"
NACOS_SRC="$ROOT/scripts/nacos/NacosLauncher.java"
NACOS_CONSOLE_PORT=18080
# The test administrator: the server creates no user by default; nacos_admin_init sets this
# password for the built-in administrator "nacos" on the first start of an empty data dir.
NACOS_USER=nacos
NACOS_PASSWORD="${SECKILL_NACOS_ADMIN_PASSWORD:-seckill-nacos}"
NACOS_TOKEN=""
NACOS_STARTED=0

# nacos_jars: resolves nacos-server and nacos-console with Maven into the cache (without the
# Istio and Kubernetes-sync modules, which a standalone server does not use).
nacos_jars() {
	if [ -f "$NACOS_CACHE/lib/.complete" ]; then
		return 0
	fi
	log "assembling Nacos $NACOS_VER jars with Maven (cold cache: ~1 min)"
	local excl='<exclusions><exclusion><groupId>io.github.pig-mesh.nacos</groupId><artifactId>nacos-istio</artifactId></exclusion><exclusion><groupId>io.github.pig-mesh.nacos</groupId><artifactId>nacos-k8s-sync</artifactId></exclusion></exclusions>'
	maven_jars "$NACOS_CACHE" nacos "Nacos $NACOS_VER" \
		"<dependency><groupId>io.github.pig-mesh.nacos</groupId><artifactId>nacos-server</artifactId><version>$NACOS_VER</version>$excl</dependency>" \
		"<dependency><groupId>io.github.pig-mesh.nacos</groupId><artifactId>nacos-console</artifactId><version>$NACOS_VER</version>$excl</dependency>"
	[ -f "$NACOS_CACHE/lib/nacos-console-$NACOS_VER.jar" ] && ls "$NACOS_CACHE"/lib/hessian-4.*.jar >/dev/null 2>&1 ||
		fail_with_log "nacos-console-$NACOS_VER.jar or hessian 4 missing after Maven" "$NACOS_CACHE/maven.log"
	touch "$NACOS_CACHE/lib/.complete"
}

# nacos_launcher: compiles the launcher into the cache when its source changed.
nacos_launcher() {
	local classes="$NACOS_CACHE/classes"
	if [ -f "$classes/NacosLauncher.class" ] && cmp -s "$NACOS_SRC" "$classes/NacosLauncher.java"; then
		return 0
	fi
	rm -rf "$classes"
	mkdir -p "$classes"
	javac -nowarn -d "$classes" -cp "$NACOS_CACHE/lib/*" "$NACOS_SRC" >"$NACOS_CACHE/javac.log" 2>&1 ||
		fail_with_log "javac could not compile $NACOS_SRC" "$NACOS_CACHE/javac.log"
	cp "$NACOS_SRC" "$classes/NacosLauncher.java"
}

# nacos_classpath: the launcher, then hessian 4 ahead of the hessian 3 that JRaft pulls in
# (the other order fails at start with NoSuchMethodError SerializerFactory.getClassFactory).
nacos_classpath() {
	local h
	h=$(ls "$NACOS_CACHE"/lib/hessian-4.*.jar | head -n1)
	printf '%s' "$NACOS_CACHE/classes:$h:$NACOS_CACHE/lib/*"
}

nacos_ready() {
	curl -fsS -m 2 "http://127.0.0.1:$NACOS_CONSOLE_PORT/v3/console/health/readiness" 2>/dev/null | grep -q '"code":0' &&
		curl -fsS -m 2 -o /dev/null http://127.0.0.1:8848/nacos/v3/admin/core/state && port_open 9848
}

# nacos_login: sets NACOS_TOKEN from the administrator's login.
nacos_login() {
	local out
	out=$(curl -sS -m 3 -X POST http://127.0.0.1:8848/nacos/v1/auth/login \
		--data-urlencode "username=$NACOS_USER" --data-urlencode "password=$NACOS_PASSWORD" 2>/dev/null) || return 1
	NACOS_TOKEN=$(printf '%s' "$out" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')
	[ -n "$NACOS_TOKEN" ]
}

# nacos_admin_init: on an empty data dir the server has no user; set the administrator's
# password through the console's one-shot endpoint (409 once an administrator exists).
nacos_admin_init() {
	if curl -fsS -m 3 http://127.0.0.1:8848/nacos/v3/admin/core/state 2>/dev/null | grep -q '"auth_admin_request":"true"'; then
		log "creating the Nacos administrator $NACOS_USER"
		curl -sS -m 5 -X POST "http://127.0.0.1:$NACOS_CONSOLE_PORT/v3/auth/user/admin" \
			--data-urlencode "password=$NACOS_PASSWORD" >"$NACOS/admin-init.log" 2>&1 || true
	fi
	# The user cache is refreshed in the background: the login works a few seconds later.
	wait_for 30 "nacos login" nacos_login ||
		fail_with_log "the Nacos administrator $NACOS_USER cannot log in with the test password (data dir from another password? remove $NACOS/home)" "$NACOS/admin-init.log" "$NACOS/nacos.out"
}

# nacos_writable: true once a published config can be read back (reads are served from a
# cache refreshed ~100 ms after a publish, so poll).
nacos_writable() {
	nacos_login || return 1
	local v="up-$$-$RANDOM-$SECONDS" i
	[ "$(curl -sS -m 3 -X POST "http://127.0.0.1:8848/nacos/v1/cs/configs?accessToken=$NACOS_TOKEN" \
		--data-urlencode dataId=services.probe --data-urlencode group=SECKILL_INFRA \
		--data-urlencode type=text --data-urlencode "content=$v" 2>/dev/null)" = true ] || return 1
	for i in $(seq 30); do
		[ "$(curl -sS -m 2 "http://127.0.0.1:8848/nacos/v1/cs/configs?dataId=services.probe&group=SECKILL_INFRA&accessToken=$NACOS_TOKEN" 2>/dev/null)" = "$v" ] && return 0
		sleep 0.1
	done
	return 1
}

# nacos_prepare DIR PORT CONSOLE_PORT: writes DIR/conf/application.properties and sets
# NACOS_CMD to the java command of a standalone server with its data and logs under DIR/home,
# HTTP on PORT (gRPC PORT+1000 and PORT+1001, raft PORT-1000) and the console on CONSOLE_PORT.
nacos_prepare() {
	local dir=$1 port=$2 console=$3
	mkdir -p "$dir/conf" "$dir/home/logs"
	# Local test values: the token key and the server identity only have to be set.
	cat >"$dir/conf/application.properties" <<-EOF
		server.address=127.0.0.1
		nacos.inetutils.ip-address=127.0.0.1
		nacos.core.auth.enabled=true
		nacos.core.auth.admin.enabled=true
		nacos.core.auth.console.enabled=true
		nacos.core.auth.system.type=nacos
		nacos.core.auth.plugin.nacos.token.secret.key=c2Vja2lsbC1sb2NhbC10ZXN0LXRva2VuLXNlY3JldC1rZXktMDEyMzQ1Njc4OQ==
		nacos.core.auth.plugin.nacos.token.expire.seconds=18000
		nacos.core.auth.server.identity.key=seckill-local
		nacos.core.auth.server.identity.value=seckill-local-identity
		spring.sql.init.platform=
		# Derby's login timeout is the pool's connection timeout, 3 s by default: a first start
		# on two busy cores can take longer to create the schema and then fails.
		db.pool.config.connectionTimeout=60000
		nacos.istio.mcp.server.enabled=false
		nacos.k8s.sync.enabled=false
		nacos.ai.mcp.registry.enabled=false
		server.tomcat.accesslog.enabled=false
		server.error.include-message=ALWAYS
	EOF
	# Lean flags for 2 cores: ~7 s to ready and ~500 MB resident on a quiet machine, against
	# 9-13 s and 670-850 MB with the official -Xms512m G1 flags.
	NACOS_CMD=(java -Xms64m -Xmx512m -XX:+UseSerialGC -XX:TieredStopAtLevel=1
		-Djava.net.preferIPv4Stack=true -Duser.home="$dir/home"
		-Dnacos.standalone=true -Dnacos.deployment.type=merged -Dnacos.home="$dir/home"
		-Dnacos.remote.grpc.listen.ip=127.0.0.1
		-cp "$(nacos_classpath)" NacosLauncher
		--spring.config.additional-location=file:"$dir/conf/" --nacos.server.main.port="$port"
		--nacos.console.port="$console" --nacos.logs.path="$dir/home/logs")
}

# cmd_nacos_server DIR PORT CONSOLE_PORT: runs a private Nacos in the foreground (tests that
# stop and restart a server of their own use it; the administrator's password is set by the
# caller through the console, as nacos_admin_init does).
cmd_nacos_server() {
	[ $# = 3 ] || die "usage: $0 nacos-server DIR PORT CONSOLE_PORT"
	nacos_jars
	nacos_launcher
	nacos_prepare "$1" "$2" "$3"
	cd "$1"
	exec "${NACOS_CMD[@]}"
}

# nacos_start: writes the configuration and launches the JVM without waiting for it, so it
# boots while the other services start. nacos_up finishes the job.
nacos_start() {
	if nacos_ready; then
		return 0
	fi
	if ! pid_alive "$NACOS/nacos.pid" NacosLauncher; then
		local p
		for p in 8848 9848 9849 "$NACOS_CONSOLE_PORT"; do
			port_open "$p" && die "127.0.0.1:$p is taken by a process this script did not start (an r-nacos of an older version of this script? stop it first)"
		done
	fi
	nacos_jars
	nacos_launcher
	pid_alive "$NACOS/nacos.pid" NacosLauncher && return 0 # still booting
	mkdir -p "$NACOS"
	: >"$NACOS/nacos.out"
	NACOS_T0=$SECONDS
	nacos_prepare "$NACOS" 8848 "$NACOS_CONSOLE_PORT"
	(
		cd "$NACOS" # Tomcat and Derby write next to the working directory
		start_bg "$NACOS/nacos.pid" "$NACOS/nacos.out" "${NACOS_CMD[@]}"
	)
	NACOS_STARTED=1
}

nacos_up() {
	if [ "$NACOS_STARTED" = 0 ] && nacos_ready; then
		if pid_alive "$NACOS/nacos.pid" NacosLauncher; then
			nacos_admin_init # idempotent; finishes an earlier `up` that was interrupted before it
		else
			log "note: 127.0.0.1:8848 answers but was not started by this script; reusing it"
		fi
		wait_for 10 "nacos publish" nacos_writable ||
			die "Nacos on 127.0.0.1:8848 answers but $NACOS_USER cannot log in with the test password and publish"
		return 0
	fi
	wait_for 120 "nacos readiness" nacos_ready || {
		pid_alive "$NACOS/nacos.pid" NacosLauncher || fail_with_log "the Nacos JVM exited during start-up" "$NACOS/nacos.out"
		fail_with_log "Nacos did not become ready in 120 s" "$NACOS/nacos.out" "$NACOS/home/logs/nacos.log"
	}
	local ready=$((SECONDS - ${NACOS_T0:-$SECONDS}))
	nacos_admin_init
	wait_for 30 "nacos publish" nacos_writable ||
		fail_with_log "Nacos is ready but does not store configs" "$NACOS/nacos.out" "$NACOS/home/logs/nacos.log"
	log "nacos $NACOS_VER up on 127.0.0.1:8848 (gRPC 9848/9849, console http://127.0.0.1:$NACOS_CONSOLE_PORT/, user $NACOS_USER), ready ${ready}s after the JVM start"
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
	need_pkgs javac openjdk-17-jdk-headless
	need_pkgs chromium chromium
	need_pkgs promtool prometheus
	phase rocketmq-start
	rocketmq_start
	phase nacos-start
	nacos_start
	phase redis
	redis_up
	phase redis-cluster
	cluster_up
	phase redis-sentinel
	sentinel_up
	phase redis-ha-cluster
	ha_cluster_up
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
		"nacos|$NACOS/nacos.pid|NacosLauncher|TERM"
		"r-nacos (left by an older version of this script)|$INFRA/rnacos/rnacos.pid|rnacos|INT"
		"rocketmq broker|$RMQ/broker.pid|BrokerStartup|TERM"
		"rocketmq name server|$RMQ/namesrv.pid|NamesrvStartup|TERM"
		"mariadb|$MY/mysqld.pid|mariadbd|TERM"
	)
	local p e name pidfile pattern sig pids=() files=()
	for p in 6379 "${CLUSTER_PORTS[@]}" "${SENT_REDIS_PORTS[@]}" "${HA_CLUSTER_PORTS[@]}"; do entries+=("redis $p|$(redis_pidfile "$p")|redis-server 127.0.0.1:$p|TERM"); done
	for p in "${SENT_PORTS[@]}"; do entries+=("redis sentinel $p|$(sentinel_pidfile "$p")|redis-server 127.0.0.1:$p|TERM"); done
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
	check "redis sentinel ${SENT_PORTS[*]}" sentinel_ok
	check "redis cluster+replicas ${HA_CLUSTER_PORTS[0]}-${HA_CLUSTER_PORTS[5]}" ha_cluster_ok
	check "mariadb      127.0.0.1:3306" mariadb_app_ready
	check "rocketmq ns  127.0.0.1:9876" port_open 9876
	check "rocketmq br  127.0.0.1:10911" port_open 10911
	check "nacos        127.0.0.1:8848" nacos_writable
	check "nacos grpc   127.0.0.1:9848" port_open 9848
	check "nacos console 127.0.0.1:$NACOS_CONSOLE_PORT" nacos_ready
	return "$STATUS_RC"
}

# cmd_fetch: fills the caches (RocketMQ and Nacos jars, the Nacos launcher) without starting anything.
cmd_fetch() {
	local t0=$SECONDS
	mkdir -p "$CACHE"
	need_pkgs java openjdk-17-jdk-headless
	need_pkgs mvn maven
	need_pkgs javac openjdk-17-jdk-headless
	phase rocketmq-jars
	rocketmq_jars
	phase nacos-jars
	nacos_jars
	nacos_launcher
	phase done
	log "caches ready in $((SECONDS - t0))s ($CACHE)"
}

# cmd_up_redis: the Redis servers only (standalone, cluster, Sentinel group, cluster with
# replicas), as `up` starts them.
cmd_up_redis() {
	mkdir -p "$INFRA"
	need_pkgs redis-server redis-server redis-tools
	need_pkgs redis-cli redis-tools
	redis_up
	cluster_up
	sentinel_up
	ha_cluster_up
}

case "${1:-}" in
up) cmd_up ;;
up-redis) cmd_up_redis ;;
fetch) cmd_fetch ;;
nacos-server)
	shift
	cmd_nacos_server "$@"
	;;
down) cmd_down ;;
status) cmd_status ;;
restart)
	cmd_down
	cmd_up
	;;
*)
	echo "usage: $0 up|up-redis|down|status|restart|fetch" >&2
	exit 2
	;;
esac
