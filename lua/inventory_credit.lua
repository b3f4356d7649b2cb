-- inventory_credit.lua: build a new shard {A:e+1:j} during a reshard.
-- KEYS[1] stock  KEYS[2] credits  KEYS[3] stats  KEYS[4] drained
-- A drained shard refuses both (a run that stalled while a later reshard drained this
-- layout must write nothing here: credit answers 2, seal {4}), and so does a run older than
-- its limit: a layout is deleted (inventory/retire.go) only once every run that could still
-- write to it is older than that, so a stalled run can write nothing on a deleted layout
-- either (credit answers 4, seal {5}; the run starts over).
-- ARGV[1] "credit" | "seal", then the run's start (Redis ms, read before the run read meta)
-- and its limit (ms), then the arguments below.
-- credit: ARGV[4..] pairs source shard id, units. Records each source's credit once
--         (credits[src] = units, credits._sum += units); the stock key stays absent, so the
--         shard takes no reservations yet, and the units stay counted in transit.
-- seal:   ARGV[4] number of sources expected  ARGV[5] the activity's generation ("" none)
--         KEYS[5] the shard's generation key. Creates the stock key from credits._sum once
--         every source has credited (stats.xin += _sum: the units drained into this shard
--         leave transit as they become stock) and deletes the credits (a credit after the
--         seal is refused by the stock key); afterwards copies (inventory_copy.lua) are
--         refused. The generation key is written with the stock key (SET NX: a fence written
--         before stands), so a node keeps both or neither: an adoption (inventory/reserve.go)
--         can no longer reopen a shard whose node went back to before it.
-- Returns credit: 1 a source credited now | 0 every source credited before | 2 already
--         sealed (or drained) | 4 the run is too old;
--         seal: {1, units} sealed now | {2, units} sealed before | {0, sources seen} missing
--         sources | {4} drained (a later reshard moved on) | {5} the run is too old.
--#include lib_time.lua
local credit = ARGV[1] == 'credit'
if math.floor(now_us() / 1000) - tonumber(ARGV[2]) > tonumber(ARGV[3]) then
  if credit then return 4 end
  return {5}
end
if credit then
  if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[4]) == 1 then
    return 2
  end
  local now, add = 0, 0
  for i = 4, #ARGV, 2 do
    if redis.call('HSETNX', KEYS[2], ARGV[i], ARGV[i + 1]) == 1 then
      now = 1
      add = add + tonumber(ARGV[i + 1])
    end
  end
  if now == 1 then
    redis.call('HINCRBY', KEYS[2], '_sum', add)
  end
  return now
end
local s = redis.call('GET', KEYS[1])
if s then
  return {2, tonumber(s)}
end
if redis.call('EXISTS', KEYS[4]) == 1 then
  return {4}
end
local n = redis.call('HLEN', KEYS[2])
local sum = redis.call('HGET', KEYS[2], '_sum')
if sum then n = n - 1 end
if n < tonumber(ARGV[4]) then
  return {0, n}
end
sum = tonumber(sum or '0')
redis.call('SET', KEYS[1], sum)
if KEYS[5] and ARGV[5] and ARGV[5] ~= '' then
  redis.call('SET', KEYS[5], ARGV[5], 'NX')
end
redis.call('HINCRBY', KEYS[3], 'xin', sum)
redis.call('DEL', KEYS[2])
return {1, sum}
