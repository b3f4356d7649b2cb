-- inventory_hold.lua: finish a quota hold made by inventory_reserve.lua (NEED_OTHER) on the
-- user's home shard {A:e:h}.
-- KEYS[1] holds  KEYS[2] users  KEYS[3] last  KEYS[4] idem
-- ARGV[1] "commit" | "release"  ARGV[2] hold id  ARGV[3] user hash
-- ARGV[4] reservation id (commit) or ""  ARGV[5] idempotency field or ""
-- commit: the units were taken on another shard; the hold becomes the purchase: last = rid,
--         idem field = rid. Done even when the hold marker is gone (the quota stays held).
-- release: nothing was taken; users -= the held quantity, once (the marker guards it), and
--          an idempotency field still pointing at the hold is removed.
-- Returns 1 applied with the marker present, 0 marker already gone (release changed nothing).
local h = redis.call('HGET', KEYS[1], ARGV[2])
if ARGV[1] == 'commit' then
  redis.call('HDEL', KEYS[1], ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[3], ARGV[4])
  if ARGV[5] ~= '' then
    redis.call('HSET', KEYS[4], ARGV[5], ARGV[4])
  end
  if h then return 1 end
  return 0
end
if not h then
  return 0
end
redis.call('HDEL', KEYS[1], ARGV[2])
local qty = tonumber(string.match(h, '^[^|]+|(%d+)|')) or 0
local left = redis.call('HINCRBY', KEYS[2], ARGV[3], -qty)
if left <= 0 then
  redis.call('HDEL', KEYS[2], ARGV[3])
end
if ARGV[5] ~= '' and redis.call('HGET', KEYS[4], ARGV[5]) == '~' .. ARGV[2] then
  redis.call('HDEL', KEYS[4], ARGV[5])
end
return 1
