#!/bin/sh
# nacos-init for docker/compose.yaml: sets the Nacos administrator's password once (3.x creates
# no user), then publishes docker/seckill-nacos.yaml as data id $DATA_ID in group $GROUP unless
# that data id exists already (console edits survive a restart). Exits non-zero on any failure,
# so the seckill service (service_completed_successfully) does not start without a config.
set -eu
: "${NACOS_PASSWORD:?}" "${CONSOLE:=http://nacos:8080}" "${SERVER:=http://nacos:8848}"
: "${DATA_ID:=seckill.yaml}" "${GROUP:=SECKILL}" "${CONFIG_FILE:=/seckill-nacos.yaml}"

# 200 on the first start, 409 once the administrator exists: both are fine.
code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "$CONSOLE/v3/auth/user/admin" \
	--data-urlencode "password=$NACOS_PASSWORD")
echo "admin init: HTTP $code"
[ "$code" = 200 ] || [ "$code" = 409 ]

login=$(curl -fsS -X POST "$SERVER/nacos/v1/auth/users/login" \
	--data-urlencode "username=nacos" --data-urlencode "password=$NACOS_PASSWORD")
token=$(printf '%s' "$login" | sed -n 's/.*"accessToken":"\([^"]*\)".*/\1/p')
[ -n "$token" ] || { echo "login failed: $login" >&2; exit 1; }

code=$(curl -s -o /dev/null -w '%{http_code}' -G "$SERVER/nacos/v1/cs/configs" \
	--data-urlencode "dataId=$DATA_ID" --data-urlencode "group=$GROUP" --data-urlencode "accessToken=$token")
case "$code" in
200) echo "config $GROUP/$DATA_ID exists: kept"; exit 0 ;;
404) ;;
*) echo "reading config $GROUP/$DATA_ID: HTTP $code" >&2; exit 1 ;;
esac
out=$(curl -fsS -X POST "$SERVER/nacos/v1/cs/configs?accessToken=$token" \
	--data-urlencode "dataId=$DATA_ID" --data-urlencode "group=$GROUP" --data-urlencode "type=yaml" \
	--data-urlencode "content@$CONFIG_FILE")
[ "$out" = true ] || { echo "publishing config $GROUP/$DATA_ID: $out" >&2; exit 1; }
echo "config $GROUP/$DATA_ID published from $CONFIG_FILE"
