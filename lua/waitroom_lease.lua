-- waitroom_lease.lua: take or keep the inlet lease of an activity's waiting room (tag {A}).
-- Exactly one holder at a time moves the serving position; each new holder gets a larger
-- fencing token, which every inlet step checks (waitroom_open.lua, waitroom_admit.lua), so a
-- holder whose lease lapsed (paused, partitioned) can no longer move anything.
-- KEYS[1] lease string "sk:{A}:q:lease" = holder id, with a TTL
-- KEYS[2] state hash "sk:{A}:q:st" (field fence)
-- ARGV[1] holder id (the instance)
-- ARGV[2] lease length, ms (>= 1)
-- Returns the fencing token (>= 1) of the caller, who holds the lease for ARGV[2] ms from now,
-- or 0: another holder has it.
local h = redis.call('GET', KEYS[1])
if h == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  local f = tonumber(redis.call('HGET', KEYS[2], 'fence'))
  if f then return f end
  return redis.call('HINCRBY', KEYS[2], 'fence', 1)
end
if h then return 0 end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return redis.call('HINCRBY', KEYS[2], 'fence', 1)
