-- inventory_reshard.lua: begin or finish a reshard in the activity's meta hash (tag {A}).
-- KEYS[1] meta
-- ARGV[1] "begin" | "switch"  ARGV[2] current epoch e  ARGV[3] target shard count n
-- begin:  when meta.epoch == e and no reshard is recorded, records reshard = "<e+1>:<n>" and
--         appends "<e+1>:<n>" to layouts.
-- switch: when meta.epoch == e and reshard == "<e+1>:<n>", sets epoch = e+1, shards = n and
--         clears reshard.
-- Returns begin: {1} begun | {2, reshard} another reshard is recorded (resume it) |
--                {0, epoch} meta moved on (re-read);
--         switch: {1} switched | {2} already switched | {0, epoch} mismatch.
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then
  return {0, -1}
end
local e = tonumber(ARGV[2])
local target = (e + 1) .. ':' .. ARGV[3]
local r = redis.call('HGET', KEYS[1], 'reshard') or ''
if ARGV[1] == 'begin' then
  if tonumber(epoch) ~= e then
    return {0, tonumber(epoch)}
  end
  if r ~= '' then
    return {2, r}
  end
  redis.call('HSET', KEYS[1], 'reshard', target)
  local l = redis.call('HGET', KEYS[1], 'layouts') or ''
  if l == '' then l = target else l = l .. ',' .. target end
  redis.call('HSET', KEYS[1], 'layouts', l)
  return {1}
end
if tonumber(epoch) == e + 1 and r == '' then
  return {2}
end
if tonumber(epoch) ~= e or r ~= target then
  return {0, tonumber(epoch)}
end
redis.call('HSET', KEYS[1], 'epoch', e + 1, 'shards', ARGV[3])
redis.call('HDEL', KEYS[1], 'reshard')
return {1}
