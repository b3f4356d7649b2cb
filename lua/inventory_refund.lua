-- inventory_refund.lua: give a failed reservation's units back to the buyer's count, once.
-- KEYS[1] users hash, KEYS[2] stock, KEYS[3] drained marker, all of the user's home shard in
-- the current layout (a reshard copies the users hash, refund markers included).
-- ARGV[1] user hash, ARGV[2] quantity in units, ARGV[3] reservation id
-- The marker field "<uh>:r:<rid>" guards the decrement: only the first call for a
-- reservation id lowers the count (the first part of the user's state "<uh>",
-- inventory_reserve.lua), never below 0. The user's sequence is never lowered. A drained (or
-- not yet sealed) shard refuses: a reshard is moving the users hash, read the layout again
-- and retry.
-- A state that is not one (a field of the release before) is an error before anything is
-- written, so the refund can be tried again; a user without a state holds nothing.
-- Returns 1 refunded now, 2 already refunded, 3 shard closed (retry on the current layout).
if redis.call('EXISTS', KEYS[3]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then
  return 3
end
local cur = redis.call('HGET', KEYS[1], ARGV[1])
local h, rest
if cur then
  h, rest = string.match(cur, '^([^|]*)|(.*)$')
  if not h or not tonumber(h) then
    return redis.error_reply('seckill: malformed user state ' .. ARGV[1])
  end
end
if redis.call('HSETNX', KEYS[1], ARGV[1] .. ':r:' .. ARGV[3], 1) == 0 then
  return 2
end
if h then
  local left = math.max(tonumber(h) - tonumber(ARGV[2]), 0)
  redis.call('HSET', KEYS[1], ARGV[1], left .. '|' .. rest)
end
return 1
