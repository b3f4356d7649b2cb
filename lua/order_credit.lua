-- order_credit.lua: credit a failed reservation's units to a shard of the current layout,
-- when a reshard drained the shard that sold them. Once per reservation.
-- KEYS[1] target shard's compensation-credit hash, KEYS[2] target shard stock,
-- KEYS[3] target shard's drained marker (all the same shard)
-- ARGV[1] reservation id, ARGV[2] units
-- Returns 1 credited now, 2 credited before (nothing changed), 3 the target shard is
-- drained too (a reshard is under way: read the layout again and retry).
if redis.call('EXISTS', KEYS[3]) == 1 then
  return 3
end
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then
  return 2
end
redis.call('INCRBY', KEYS[2], tonumber(ARGV[2]))
return 1
