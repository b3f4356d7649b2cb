-- inventory_drain.lua: close a stock shard {A:e:i} for a reshard and hand back its stock.
-- KEYS[1] stock  KEYS[2] drained
-- ARGV: none
-- The first call moves the stock into the drained marker and deletes the stock key, so
-- every later reserve or take there answers SHARD_CLOSED; later calls return the same
-- amount (the drain is idempotent).
-- Returns {1, units} drained now | {2, units} drained before | {0} never loaded (error).
local d = redis.call('GET', KEYS[2])
if d then
  return {2, tonumber(d)}
end
local s = redis.call('GET', KEYS[1])
if not s then
  return {0}
end
redis.call('SET', KEYS[2], s)
redis.call('DEL', KEYS[1])
return {1, tonumber(s)}
