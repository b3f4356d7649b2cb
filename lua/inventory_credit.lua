-- inventory_credit.lua: build a new shard {A:e+1:j} during a reshard.
-- KEYS[1] stock  KEYS[2] credits  KEYS[3] stats  KEYS[4] drained
-- A drained shard refuses both (a run that stalled while a later reshard drained this
-- layout must write nothing here: credit answers 2, seal {4}).
-- ARGV[1] "credit" | "seal"
-- credit: ARGV[2] source shard id, ARGV[3] units. Records the credit once per source
--         (credits[src] = units, credits._sum += units); the stock key stays absent, so
--         the shard takes no reservations yet, and the units stay counted in transit.
-- seal:   ARGV[2] number of sources expected. Creates the stock key from credits._sum once
--         every source has credited (stats.xin += _sum: the units drained into this shard
--         leave transit as they become stock); afterwards copies (inventory_copy.lua) are
--         refused.
-- Returns credit: 1 credited now | 0 already credited | 2 already sealed (or drained);
--         seal: {1, units} sealed now | {2, units} sealed before | {0, sources seen} missing
--         sources | {4} drained (a later reshard moved on).
if ARGV[1] == 'credit' then
  if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[4]) == 1 then
    return 2
  end
  if redis.call('HSETNX', KEYS[2], ARGV[2], ARGV[3]) == 1 then
    redis.call('HINCRBY', KEYS[2], '_sum', tonumber(ARGV[3]))
    return 1
  end
  return 0
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
if n < tonumber(ARGV[2]) then
  return {0, n}
end
sum = tonumber(sum or '0')
redis.call('SET', KEYS[1], sum)
redis.call('HINCRBY', KEYS[3], 'xin', sum)
return {1, sum}
