-- inventory_fence_meta.lua: write the rolled-back fence in meta's generation while meta still
-- names the generation the caller saw (a rollback met, or MySQL refused an order of it), so
-- every instance takes the activity for recovering; a meta naming another generation (a
-- restore's fence, a restored state) is left alone (inventory/rollback.go fenceMeta).
-- KEYS[1] meta "sk:{A}:meta"
-- ARGV[1] the rolled-back fence  ARGV[2] the generation seen, "" for an activity from before
-- generations (then only a meta that exists and names none is fenced)
-- Returns 1 meta holds the fence (written now or before) | 0 left alone.
local g = redis.call('HGET', KEYS[1], 'gen')
if g == ARGV[1] then return 1 end
local match = g == ARGV[2]
if ARGV[2] == '' then match = (not g or g == '') and redis.call('EXISTS', KEYS[1]) == 1 end
if match then redis.call('HSET', KEYS[1], 'gen', ARGV[1]) return 1 end
return 0
