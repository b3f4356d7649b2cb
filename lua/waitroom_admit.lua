-- waitroom_admit.lua: one step of an activity's inlet: move the serving position over the
-- next places, admitting the live ones and skipping the abandoned ones (tag {A}).
-- KEYS[1] state hash "sk:{A}:q:st": seq, pre, pos (every place <= pos is served), fence,
--         lastMs (Redis ms of the last step), holdMs (Redis ms until which nothing is walked:
--         a pause's end plus its hold)
-- KEYS[2] lease string "sk:{A}:q:lease"
-- KEYS[3] heartbeats zset "sk:{A}:q:hb": ticket number -> Redis ms
-- KEYS[4] admissions hash "sk:{A}:q:adm": place -> Redis ms it was admitted (kept)
-- KEYS[5] live passes zset "sk:{A}:q:live": place -> Redis ms admitted, unused and unexpired
-- KEYS[6] steps zset "sk:{A}:q:steps": member "<ms>:<admitted>:<pos>:<skipped>", score ms
-- KEYS[7] skipped zset "sk:{A}:q:skip": place -> place, every place skipped (kept: followers
--         read it so that a poll of a skipped place never shows a pass)
-- ARGV[1] holder id, ARGV[2] fencing token
-- ARGV[3] rate: admitted places per second, > 0
-- ARGV[4] heartbeat bound, ms: a place whose last sign of life is older is skipped
-- ARGV[5] pass lifetime, ms: a live pass older than this is dropped
-- ARGV[6] cap: the most live passes allowed (stock factor x units left), >= 0; or, negative,
--         the line is paused (a kill switch, a recovering activity: its polls are refused, so
--         its places' heartbeats go stale): nothing is walked now, nor for -ARGV[6] ms (at
--         most a minute) after the last paused step, so that the places are polled again
--         (a refused poll is retried after its Retry-After) before the inlet reaches them (it
--         skipped every place of the line whose pause outlasted the heartbeat bound)
-- ARGV[7] the most places walked by this step (bounds the script's run time)
-- ARGV[8] "1": the line is shuffled: places 1..pre hold the tickets of the prequeue in the
--         order drawn from the line's seed, which the caller computes (every instance derives
--         it from the seed; Redis keeps no copy, so the opening writes nothing per place)
-- ARGV[9] the first place ARGV[10..] names (shuffled only); ARGV[10..] the ticket numbers of
--         places ARGV[9], ARGV[9] + 1, ...: the walk stops where the list does
-- Invariant: the admissions of the steps in any span of 1000 ms sum to at most floor(rate)
-- (at the moment of each step, the steps of the last 999 ms plus this one), whoever calls:
-- the sum is read and written in this one atomic script, against Redis TIME.
-- Returns {admitted, skipped, pos} | {-1} not the lease holder or a stale fencing token |
-- {-2} not open yet.
if redis.call('GET', KEYS[2]) ~= ARGV[1] or redis.call('HGET', KEYS[1], 'fence') ~= ARGV[2] then
  return {-1}
end
local st = redis.call('HMGET', KEYS[1], 'seq', 'pre', 'pos', 'lastMs', 'holdMs')
if not st[2] then return {-2} end
local seq, pre, pos = tonumber(st[1] or '0'), tonumber(st[2]), tonumber(st[3] or '0')
local last = tonumber(st[4] or '0')
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local rate = tonumber(ARGV[3])
local hbMin = now - tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', '(' .. (now - tonumber(ARGV[5])))
redis.call('ZREMRANGEBYSCORE', KEYS[6], '-inf', '(' .. (now - 60000))
local cap = tonumber(ARGV[6])
if cap < 0 then
  redis.call('HSET', KEYS[1], 'holdMs', now - cap, 'lastMs', now)
  return {0, 0, pos}
end
local hold = tonumber(st[5] or '0') or 0
if now < hold and hold - now <= 60000 then -- (a hold further off is a clock that went back)
  redis.call('HSET', KEYS[1], 'lastMs', now)
  return {0, 0, pos}
end
local inWindow = 0
for _, m in ipairs(redis.call('ZRANGEBYSCORE', KEYS[6], '(' .. (now - 1000), '+inf')) do
  local a = string.match(m, '^[0-9]+:([0-9]+):')
  inWindow = inWindow + tonumber(a)
end
local allow = math.floor(rate) - inWindow
-- Spread the budget over the second: a step admits about rate x the time since the last one.
local dt = now - last
if dt > 1000 then dt = 1000 end
if dt < 0 then dt = 0 end
local share = math.ceil(rate * dt / 1000)
if share < allow then allow = share end
local room = cap - redis.call('ZCARD', KEYS[5])
if room < allow then allow = room end
local admitted, skipped, walked = 0, 0, 0
local maxWalk = tonumber(ARGV[7])
local shuffled = ARGV[8] == '1'
local start = tonumber(ARGV[9] or '0') or 0
while admitted < allow and pos < seq and walked < maxWalk do
  local e = pos + 1
  local n = e
  if shuffled and e <= pre then
    local i = e - start + 10
    if e < start or i > #ARGV then break end -- the caller's list does not reach here
    n = tonumber(ARGV[i])
  end
  local hb = n and tonumber(redis.call('ZSCORE', KEYS[3], n))
  if hb and hb >= hbMin then
    redis.call('HSET', KEYS[4], e, now)
    redis.call('ZADD', KEYS[5], now, e)
    admitted = admitted + 1
  else
    redis.call('ZADD', KEYS[7], e, e)
    skipped = skipped + 1
  end
  pos = e
  walked = walked + 1
end
redis.call('HSET', KEYS[1], 'pos', pos, 'lastMs', now)
if admitted > 0 or skipped > 0 then
  redis.call('ZADD', KEYS[6], now, now .. ':' .. admitted .. ':' .. pos .. ':' .. skipped)
  redis.call('HINCRBY', KEYS[1], 'admitted', admitted)
  redis.call('HINCRBY', KEYS[1], 'skipped', skipped)
end
return {admitted, skipped, pos}
