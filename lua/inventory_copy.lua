-- inventory_copy.lua: copy buyer records to their new home shard {A:e+1:j} during a reshard.
-- KEYS[1] stock  KEYS[2] users  KEYS[3] last  KEYS[4] idem
-- ARGV: triples kind, field, value; kind "u" users, "l" last, "i" idem.
-- Each user has exactly one old home shard, so the copy is an idempotent HSET. A sealed shard
-- (stock key present: it may already take reservations) refuses, so a slow copier can never
-- overwrite newer records.
-- Returns 1 copied | 2 refused (sealed).
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 2
end
for i = 1, #ARGV, 3 do
  local k = ARGV[i]
  local key = KEYS[4]
  if k == 'u' then key = KEYS[2] elseif k == 'l' then key = KEYS[3] end
  redis.call('HSET', key, ARGV[i + 1], ARGV[i + 2])
end
return 1
