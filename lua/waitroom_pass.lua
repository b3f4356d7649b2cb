-- waitroom_pass.lua: use a waiting-room pass (tag {A}). The caller has checked the pass's
-- signature (bound to the user and the activity) and its expiry; this makes it single use.
-- KEYS[1] live passes zset "sk:{A}:q:live": place -> Redis ms admitted
-- KEYS[2] used passes hash "sk:{A}:q:used": place -> Redis ms used (kept)
-- ARGV[1] place, ARGV[2] pass lifetime, ms
-- Returns 1 used now | 0 not admitted, used before or expired.
local at = tonumber(redis.call('ZSCORE', KEYS[1], ARGV[1]))
if not at then return 0 end
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if at < now - tonumber(ARGV[2]) then return 0 end
redis.call('HSET', KEYS[2], ARGV[1], now)
return 1
