-- inventory_issued.lua: an instance reports the highest reservation numbers it handed out on
-- a recovering activity's shards (Store.reportIssued), unless the activity was archived.
-- KEYS[1] the issued hash "sk:{A}:issued"  KEYS[2] the archive's mark "sk:{A}:archived"
-- ARGV field, value pairs: "<epoch>:<shard>:<instance>" -> the highest number
-- Returns 1 written | 0 archived: nothing written (a hash written after the archive deleted
-- the activity's keys would stay for good).
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], unpack(ARGV))
return 1
