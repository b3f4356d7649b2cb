-- inventory_end.lua: end an activity's sale (Store.End). Meta's "ended" becomes ARGV[1] unless
-- the sale was ended earlier (the first end stands, so every instance and a retried call agree
-- on one time); a missing meta is left missing (the activity's Redis state is gone: MySQL's
-- row carries the end, and a restore writes it back).
-- KEYS[1] meta  ARGV[1] the end, unix ms
-- Returns {1, the end that stands} or {0} when there is no meta.
if redis.call('HEXISTS', KEYS[1], 'def') == 0 then
  return {0}
end
local cur = tonumber(redis.call('HGET', KEYS[1], 'ended') or '0') or 0
local want = tonumber(ARGV[1])
if cur == 0 or want < cur then
  redis.call('HSET', KEYS[1], 'ended', ARGV[1])
  cur = want
end
return {1, cur}
