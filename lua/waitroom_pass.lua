-- waitroom_pass.lua: use a waiting-room pass (tag {A}). The caller has checked the pass's
-- signature (bound to the user and the activity) and its expiry; this checks that the line
-- still gives the pass's place to the user (a line Redis lost numbers its places again, so an
-- old pass would name another buyer's), and makes it single use, bound to the idempotency key
-- of the reservation that used it: that same reservation, sent again with its key after an
-- answer it did not get (503 OUTCOME_UNKNOWN), may use it again (the reservation script then
-- replays or makes that one reservation), any other may not.
-- KEYS[1] live passes zset "sk:{A}:q:live": place -> Redis ms admitted
-- KEYS[2] used passes hash "sk:{A}:q:used": place -> "k:<key hash>|<n>", the reservation
--         of that key used it n times (its attempts not given back: waitroom_unpass.lua; a
--         poll of a place whose turn came reads it: a used pass is not shown again)
-- KEYS[3] places hash "sk:{A}:q:users": user hash -> ticket number
-- KEYS[4] state hash "sk:{A}:q:st" (field seed: the order of the line's places)
-- ARGV[1] place, ARGV[2] pass lifetime, ms, ARGV[3] the hash of the reservation's idempotency key
-- ARGV[4] user hash, ARGV[5] the pass's ticket, ARGV[6] the seed of the order it was issued in
-- (the ticket and the seed give the place: the same in the line as it is now)
-- Returns 1 used now (or again, by the same key) | 0 not admitted, used by another
-- reservation, expired, or not the user's place.
if redis.call('HGET', KEYS[3], ARGV[4]) ~= ARGV[5] or redis.call('HGET', KEYS[4], 'seed') ~= ARGV[6] then
  return 0
end
local by = 'k:' .. ARGV[3] .. '|'
local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not at then
  local u = redis.call('HGET', KEYS[2], ARGV[1])
  if u and string.sub(u, 1, #by) == by then
    redis.call('HSET', KEYS[2], ARGV[1], by .. ((tonumber(string.sub(u, #by + 1)) or 0) + 1))
    return 1
  end
  return 0
end
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if at < now - tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], by .. 1)
return 1
