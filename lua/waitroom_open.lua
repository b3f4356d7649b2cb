-- waitroom_open.lua: open an activity's waiting room: freeze the prequeue and the seed of its
-- order (tag {A}). Run once, by the lease holder, at the opening. Nothing is written per
-- place: every instance derives the order from the seed (the inlet passes the tickets of the
-- places it walks), so opening a line of a million places costs what opening an empty one does.
-- KEYS[1] state hash "sk:{A}:q:st" (fields seq, fence; sets pre, seed, openMs, pos)
-- KEYS[2] lease string "sk:{A}:q:lease"
-- ARGV[1] holder id, ARGV[2] fencing token
-- ARGV[3] pre: the number of tickets handed out before the opening, as the caller read seq
-- ARGV[4] seed of the order (decimal; 0: first come, first served)
-- Returns 1 opened now | 2 open already | -1 not the lease holder or a stale fencing token |
-- -2 seq moved since the caller read it (read again and retry).
if redis.call('GET', KEYS[2]) ~= ARGV[1] or redis.call('HGET', KEYS[1], 'fence') ~= ARGV[2] then
  return -1
end
if redis.call('HEXISTS', KEYS[1], 'pre') == 1 then return 2 end
local pre = tonumber(ARGV[3])
if tonumber(redis.call('HGET', KEYS[1], 'seq') or '0') ~= pre then return -2 end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'pre', pre, 'seed', ARGV[4], 'openMs', ms, 'pos', 0, 'lastMs', ms)
return 1
