-- order_fail.lua: fail a reservation for good and give its stock back to its shard.
-- KEYS[1] reservation record hash, KEYS[2] shard stock, KEYS[3] stats hash (same shard)
-- ARGV: none (the quantity comes from the record)
-- On PENDING -> FAILED: status FAILED, INCRBY stock by qty (never SET),
-- stats.failed += qty, stats.compensated += qty.
-- Returns {code, qty}: code 1 failed now, 2 already failed, 3 record is CONFIRMED
-- (nothing changed), 4 record missing.
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  return {4, 0}
end
local q = tonumber(redis.call('HGET', KEYS[1], 'qty')) or 0
if st == 'FAILED' then
  return {2, q}
end
if st == 'CONFIRMED' then
  return {3, q}
end
redis.call('HSET', KEYS[1], 'status', 'FAILED')
redis.call('INCRBY', KEYS[2], q)
redis.call('HINCRBY', KEYS[3], 'failed', q)
redis.call('HINCRBY', KEYS[3], 'compensated', q)
return {1, q}
