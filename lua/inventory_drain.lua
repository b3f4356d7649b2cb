-- inventory_drain.lua: close a stock shard {A:e:i} for a reshard and hand back its stock.
-- KEYS[1] stock  KEYS[2] drained  KEYS[3] stats  KEYS[4] seq  KEYS[5] generation
-- ARGV[1] the run's start (Redis ms, read before the run read meta)  ARGV[2] the run's
-- limit (ms)
-- A run older than its limit is refused before anything is read: a layout is deleted
-- (inventory/retire.go) only once every run that could still drain it is older than that, so
-- a run that stalled past it may find the keys of a retired layout gone and must not take
-- that for a shard whose node lost them (the runner would fence a live activity); the run
-- starts over from the current meta. So a drain that answers "never loaded" saw a layout
-- that was not retired: the shard's node lost its keys.
-- The first call moves the stock into the drained marker, deletes the stock key (so every
-- later reserve, transfer, refund or credit there answers "closed") and counts the units as
-- in transit (stats.xout += units) until the new shards are credited (inventory_credit.lua
-- counts stats.xin). Later calls return the same amount (the drain is idempotent).
-- Both answers carry the shard's reservation counter and generation mark as the drain found
-- them: the runner checks them against what its instance handed out and saw there
-- (inventory/rollback.go), so a shard whose node went back is noticed before its users hash
-- and stock are carried into the new layout.
-- Returns {1, units, counter, mark} drained now | {2, units, counter, mark} drained before |
-- {0} never loaded (error) | {4} the run is too old.
--#include lib_time.lua
if math.floor(now_us() / 1000) - tonumber(ARGV[1]) > tonumber(ARGV[2]) then
  return {4}
end
local d = redis.call('GET', KEYS[2])
local sq = redis.call('MGET', KEYS[4], KEYS[5])
if d then
  return {2, tonumber(d), sq[1] or '0', sq[2] or ''}
end
local s = redis.call('GET', KEYS[1])
if not s then
  return {0}
end
redis.call('SET', KEYS[2], s)
redis.call('DEL', KEYS[1])
redis.call('HINCRBY', KEYS[3], 'xout', tonumber(s))
return {1, tonumber(s), sq[1] or '0', sq[2] or ''}
