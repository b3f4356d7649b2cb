-- order_confirm.lua: mark a reservation confirmed once its order is committed in MySQL.
-- KEYS[1] reservation record hash, KEYS[2] stats hash (same shard, same hash tag)
-- ARGV[1] order id (MySQL orders.id)
-- On PENDING -> CONFIRMED: sets status and orderId, stats.confirmed += record qty.
-- Returns 1 confirmed now, 2 already confirmed, 3 record is FAILED (not changed),
--         4 record missing (expired or never written).
local st = redis.call('HGET', KEYS[1], 'status')
if not st then
  return 4
end
if st == 'CONFIRMED' then
  return 2
end
if st == 'FAILED' then
  return 3
end
local q = tonumber(redis.call('HGET', KEYS[1], 'qty')) or 0
redis.call('HSET', KEYS[1], 'status', 'CONFIRMED', 'orderId', ARGV[1])
redis.call('HINCRBY', KEYS[2], 'confirmed', q)
return 1
