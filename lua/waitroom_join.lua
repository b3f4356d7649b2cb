-- waitroom_join.lua: take a place in an activity's waiting room, once per user (tag {A}).
-- KEYS[1] places hash "sk:{A}:q:users": user hash -> ticket number
-- KEYS[2] state hash "sk:{A}:q:st" (field seq: the last ticket number handed out)
-- KEYS[3] heartbeats zset "sk:{A}:q:hb": ticket number -> last sign of life, Redis ms
-- ARGV[1] user hash
-- ARGV[2] "1": the place is alive from now (its heartbeat is set); "0": it gets none (a
--         blacklisted user: the inlet skips the place, so it never advances)
-- Returns {n, new}: the user's ticket number (>= 1) and 1 when the place was taken now, 0 when
-- the user had it already (joining again returns the same place).
local n = redis.call('HGET', KEYS[1], ARGV[1])
if n then return {tonumber(n), 0} end
n = redis.call('HINCRBY', KEYS[2], 'seq', 1)
redis.call('HSET', KEYS[1], ARGV[1], n)
if ARGV[2] == '1' then
  local t = redis.call('TIME')
  redis.call('ZADD', KEYS[3], tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000), n)
end
return {n, 1}
