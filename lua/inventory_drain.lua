-- inventory_drain.lua: close a stock shard {A:e:i} for a reshard and hand back its stock.
-- KEYS[1] stock  KEYS[2] drained  KEYS[3] stats  KEYS[4] seq  KEYS[5] generation
-- ARGV: none
-- The first call moves the stock into the drained marker, deletes the stock key (so every
-- later reserve, transfer, refund or credit there answers "closed") and counts the units as
-- in transit (stats.xout += units) until the new shards are credited (inventory_credit.lua
-- counts stats.xin). Later calls return the same amount (the drain is idempotent).
-- Both answers carry the shard's reservation counter and generation mark as the drain found
-- them: the runner checks them against what its instance handed out and saw there
-- (inventory/rollback.go), so a shard whose node went back is noticed before its users hash
-- and stock are carried into the new layout.
-- Returns {1, units, counter, mark} drained now | {2, units, counter, mark} drained before |
-- {0} never loaded (error).
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
