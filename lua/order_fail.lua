-- order_fail.lua: fail a reservation for good and give its stock back to its shard.
-- KEYS[1] reservation record hash, KEYS[2] shard stock, KEYS[3] stats hash,
-- KEYS[4] the shard's drained marker (all the same shard)
-- ARGV: none (the quantity comes from the record)
-- On PENDING -> FAILED: status FAILED, stats.failed += qty, stats.compensated += qty, and
-- INCRBY stock by qty (never SET) unless a reshard drained the shard: then the record is
-- marked moved=1 and the caller credits the units to a shard of the current layout
-- (order_credit.lua, idempotent per reservation).
-- Returns {code, qty}: code 1 failed now, 2 already failed, 3 record is CONFIRMED
-- (nothing changed), 4 record missing, 5 failed now and the units must be credited
-- elsewhere, 6 already failed and the units must be credited elsewhere (a repeat delivery:
-- the credit may not have happened yet).
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  return {4, 0}
end
local q = tonumber(redis.call('HGET', KEYS[1], 'qty')) or 0
if st == 'FAILED' then
  if redis.call('HGET', KEYS[1], 'moved') == '1' then
    return {6, q}
  end
  return {2, q}
end
if st == 'CONFIRMED' then
  return {3, q}
end
redis.call('HSET', KEYS[1], 'status', 'FAILED')
redis.call('HINCRBY', KEYS[3], 'failed', q)
redis.call('HINCRBY', KEYS[3], 'compensated', q)
if redis.call('EXISTS', KEYS[4]) == 1 then
  redis.call('HSET', KEYS[1], 'moved', '1')
  return {5, q}
end
redis.call('INCRBY', KEYS[2], q)
return {1, q}
