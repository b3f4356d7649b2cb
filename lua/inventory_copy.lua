-- inventory_copy.lua: copy buyer records to their new home shard {A:e+1:j} during a reshard.
-- KEYS[1] stock  KEYS[2] users  KEYS[3] drained
-- ARGV[1] the run's start (Redis ms, read before the run read meta)  ARGV[2] the run's
-- limit (ms), then pairs field, value of the old home shard's users hash (count, seq, last
-- id, idempotency bindings and refund markers of users whose new home this is).
-- The old shard is drained before the copy and nothing writes a drained shard's users hash
-- (reserve and refund refuse there), so the copy is complete; each user has exactly one old
-- home shard, so it is an idempotent HSET. A sealed shard (stock key present: it may already
-- take reservations) or a drained one (a later reshard moved on: its users hash is newer
-- than the copier's source) refuses, so a slow copier can never overwrite newer records; so
-- does a run older than its limit (the layout may have been deleted since: retire.go).
-- Returns 1 copied | 2 refused (sealed or drained) | 3 refused (the run is too old).
--#include lib_time.lua
if math.floor(now_us() / 1000) - tonumber(ARGV[1]) > tonumber(ARGV[2]) then
  return 3
end
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[3]) == 1 then
  return 2
end
if #ARGV > 2 then
  redis.call('HSET', KEYS[2], unpack(ARGV, 3))
end
return 1
