-- inventory_fail.lua: fail a reservation for good and give its stock back to its shard.
-- KEYS[1] reservation record hash, KEYS[2] shard stock, KEYS[3] stats hash,
-- KEYS[4] the shard's drained marker, KEYS[5] the shard's xout hash (all the same shard)
-- ARGV[1] optional: "refused": MySQL refused the reservation's order (order/insert.go: no unit
-- left of the activity's stock, or the buyer at the limit, where the orders live). Redis
-- counted that unit twice, so nothing is given back (a credit would put a phantom unit on
-- sale): PENDING -> FAILED with why = REFUSED, stats.failed += qty, and code 1.
-- On PENDING -> FAILED: status FAILED, stats.failed += qty, stats.compensated += qty, and
-- INCRBY stock by qty (never SET) unless a reshard drained the shard: then the units go in
-- transit under the reservation id (xout[rid] = "<qty>||<ms>", no target yet, stats.xout +=
-- qty) and the caller credits them to a shard of the current layout (inventory.Mover).
-- Returns {code, qty}: code 1 failed now, 2 already failed, 3 record is CONFIRMED
-- (nothing changed), 4 record missing, 5 failed now and the units are in transit,
-- 6 already failed and the units are still in transit (finish the credit).
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  return {4, 0}
end
local q = tonumber(redis.call('HGET', KEYS[1], 'qty')) or 0
local rid = redis.call('HGET', KEYS[1], 'rid') or ''
if st == 'FAILED' then
  if redis.call('HEXISTS', KEYS[5], rid) == 1 then
    return {6, q}
  end
  return {2, q}
end
if st == 'CONFIRMED' then
  return {3, q}
end
if ARGV[1] == 'refused' then
  redis.call('HSET', KEYS[1], 'status', 'FAILED', 'why', 'REFUSED')
  redis.call('HINCRBY', KEYS[3], 'failed', q)
  return {1, q}
end
redis.call('HSET', KEYS[1], 'status', 'FAILED')
redis.call('HINCRBY', KEYS[3], 'failed', q)
redis.call('HINCRBY', KEYS[3], 'compensated', q)
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[5], rid, q .. '||' .. (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
  redis.call('HINCRBY', KEYS[3], 'xout', q)
  return {5, q}
end
redis.call('INCRBY', KEYS[2], q)
return {1, q}
