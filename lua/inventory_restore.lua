-- inventory_restore.lua: replace an activity's metadata with the one a restore from MySQL
-- built (tag {A}), in one step, so no instance reads half of it.
-- KEYS[1] meta hash  KEYS[2] the restore lock (sk:{A}:restoring)
-- ARGV[1] the lock token  ARGV[2..] field, value pairs of the new meta
-- The shards of the new layout are written before this script runs; the meta written here
-- (a new epoch and generation, loaded = 1) is what opens them. Only the holder of the lock
-- writes it.
-- Returns 1 written | 0 the lock is not held with this token (nothing written).
if redis.call('GET', KEYS[2]) ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], unpack(ARGV, 2))
return 1
