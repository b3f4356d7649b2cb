-- order_unlock.lua: release the writer's (activity, user) lock only if we still hold it.
-- KEYS[1] lock key
-- ARGV[1] the holder's token
-- Returns 1 released, 0 not ours (expired and maybe taken by another writer) or gone.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  return redis.call('DEL', KEYS[1])
end
return 0
