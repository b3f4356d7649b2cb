-- order_refund.lua: give a failed reservation's units back to the buyer's record, once.
-- KEYS[1] users hash of the home shard, KEYS[2] refunds set of the home shard (same tag)
-- ARGV[1] user hash, ARGV[2] quantity in units, ARGV[3] reservation id
-- The refunds set guards the decrement: only the first call for a reservation id changes
-- the users hash; a field that reaches 0 is removed.
-- Returns 1 refunded now, 2 already refunded.
if redis.call('SADD', KEYS[2], ARGV[3]) == 0 then
  return 2
end
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -tonumber(ARGV[2]))
if left <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
