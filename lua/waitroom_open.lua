-- waitroom_open.lua: open an activity's waiting room: freeze the prequeue and store its
-- order (tag {A}). Run once, by the lease holder, at the opening.
-- KEYS[1] state hash "sk:{A}:q:st" (fields seq, fence; sets pre, seed, openMs, pos)
-- KEYS[2] order hash "sk:{A}:q:perm": place -> ticket number, for places 1..pre
-- KEYS[3] lease string "sk:{A}:q:lease"
-- ARGV[1] holder id, ARGV[2] fencing token
-- ARGV[3] pre: the number of tickets handed out before the opening, as the caller read seq
-- ARGV[4] seed of the order (decimal; the same on every instance: each derives the order from it)
-- ARGV[5..] for a shuffled line, the ticket number of place 1, 2, ..., pre (none for fifo)
-- Returns 1 opened now | 2 open already | -1 not the lease holder or a stale fencing token |
-- -2 seq moved since the caller read it (read again and retry).
if redis.call('GET', KEYS[3]) ~= ARGV[1] or redis.call('HGET', KEYS[1], 'fence') ~= ARGV[2] then
  return -1
end
if redis.call('HEXISTS', KEYS[1], 'pre') == 1 then return 2 end
local pre = tonumber(ARGV[3])
if tonumber(redis.call('HGET', KEYS[1], 'seq') or '0') ~= pre then return -2 end
local n = #ARGV - 4
if n > 0 then
  if n ~= pre then return -2 end
  local batch = {}
  for i = 1, n do
    batch[#batch + 1] = i
    batch[#batch + 1] = ARGV[4 + i]
    if #batch >= 1000 then
      redis.call('HSET', KEYS[2], unpack(batch))
      batch = {}
    end
  end
  if #batch > 0 then redis.call('HSET', KEYS[2], unpack(batch)) end
end
local t = redis.call('TIME')
local ms = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('HSET', KEYS[1], 'pre', pre, 'seed', ARGV[4], 'openMs', ms, 'pos', 0, 'lastMs', ms)
return 1
