-- inventory_create.lua: create an activity's metadata once (tag {A}).
-- KEYS[1] meta hash
-- ARGV[1] canonical definition JSON  ARGV[2] stock  ARGV[3] perUserLimit  ARGV[4] opensAt ms
-- ARGV[5] closesAt ms  ARGV[6] shards  ARGV[7] campaignId  ARGV[8] requireToken (0|1)
-- ARGV[9] generation (a random id, also kept in the MySQL row: inventory/generation.go)
-- A new activity starts at epoch 0 with loaded = 0; the caller loads the shards
-- (inventory_load.lua) and then sets loaded = 1.
-- Returns {1} created | {2, loaded} exists with the same definition | {3} exists with a
-- different definition (conflict).
local def = redis.call('HGET', KEYS[1], 'def')
if def then
  if def == ARGV[1] then
    return {2, tonumber(redis.call('HGET', KEYS[1], 'loaded') or '0')}
  end
  return {3}
end
redis.call('HSET', KEYS[1], 'def', ARGV[1], 'stock', ARGV[2], 'perUserLimit', ARGV[3],
  'opensAt', ARGV[4], 'closesAt', ARGV[5], 'epoch', 0, 'shards', ARGV[6],
  'campaignId', ARGV[7], 'requireToken', ARGV[8], 'layouts', '0:' .. ARGV[6], 'loaded', 0,
  'gen', ARGV[9])
return {1}
