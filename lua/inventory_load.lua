-- inventory_load.lua: load the initial stock of one shard {A:0:i}, at most once.
-- KEYS[1] stock  KEYS[2] drained
-- ARGV[1] units for this shard
-- Never adds to an existing stock key and never reopens a drained shard, so loading
-- twice cannot double the stock.
-- Returns 1 loaded now | 0 already loaded (or drained).
if redis.call('EXISTS', KEYS[1]) == 1 or redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1])
return 1
