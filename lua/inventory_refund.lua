-- inventory_refund.lua: give a failed reservation's units back to the buyer's count, once.
-- KEYS[1] users hash, KEYS[2] stock, KEYS[3] drained marker, all of the user's home shard in
-- the current layout (a reshard copies the users hash, refund markers included).
-- ARGV[1] user hash, ARGV[2] quantity in units, ARGV[3] reservation id
-- The marker field "<uh>:r:<rid>" guards the decrement: only the first call for a
-- reservation id lowers the count; a count that reaches 0 is removed. The user's sequence
-- ("<uh>:s") is never lowered. A drained (or not yet sealed) shard refuses: a reshard is
-- moving the users hash, read the layout again and retry.
-- Returns 1 refunded now, 2 already refunded, 3 shard closed (retry on the current layout).
if redis.call('EXISTS', KEYS[3]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then
  return 3
end
if redis.call('HSETNX', KEYS[1], ARGV[1] .. ':r:' .. ARGV[3], 1) == 0 then
  return 2
end
local left = redis.call('HINCRBY', KEYS[1], ARGV[1], -tonumber(ARGV[2]))
if left <= 0 then
  redis.call('HDEL', KEYS[1], ARGV[1])
end
return 1
