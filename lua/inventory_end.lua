-- inventory_end.lua: end an activity's sale (Store.End), and say whether the end has settled.
-- Meta's "ended" becomes ARGV[1] unless the sale was ended earlier (the first end stands, so
-- every instance and a retried call agree on one time); "endedSet" is the Redis time the end
-- was first written here (a restore that rewrote meta without it starts the clock again). A
-- missing meta is left missing (the activity's Redis state is gone: MySQL's row carries the
-- end, and a restore writes it back).
-- KEYS[1] meta  ARGV[1] the end, unix ms (0: none, only say)  ARGV[2] the settle time, ms
-- Returns {0} when there is no meta, else {1, the end that stands (0: none), settled}:
-- settled is 1 when the end was written at least ARGV[2] ms ago, or closesAt passed that long
-- ago (every instance applied it by then: its refresh reads meta every 250 ms).
if redis.call('HEXISTS', KEYS[1], 'def') == 0 then
  return {0}
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cur = tonumber(redis.call('HGET', KEYS[1], 'ended') or '0') or 0
local want = tonumber(ARGV[1]) or 0
if want > 0 and (cur == 0 or want < cur) then
  redis.call('HSET', KEYS[1], 'ended', want)
  cur = want
end
local set = tonumber(redis.call('HGET', KEYS[1], 'endedSet') or '0') or 0
if cur > 0 and set == 0 then
  redis.call('HSET', KEYS[1], 'endedSet', now)
  set = now
end
local closes = tonumber(redis.call('HGET', KEYS[1], 'closesAt') or '0') or 0
local settle = tonumber(ARGV[2])
local settled = 0
if (set > 0 and now - set >= settle) or (closes > 0 and now - closes >= settle) then
  settled = 1
end
return {1, cur, settled}
