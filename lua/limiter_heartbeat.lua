-- limiter_heartbeat.lua: register this instance and count the healthy ones.
-- KEYS[1]  instances, a zset: instance id -> last heartbeat in milliseconds (sk:instances)
-- ARGV[1]  instance id
-- ARGV[2]  healthy_ms: an instance seen within this many milliseconds is healthy
-- ARGV[3]  forget_ms: instances silent for longer are removed
-- ARGV[4]  leave: 1 removes this instance instead of registering it
-- Returns the number of healthy instances (this one included unless it left).
--#include lib_time.lua
local now_ms = math.floor(now_us() / 1000)
if ARGV[4] == '1' then
  redis.call('ZREM', KEYS[1], ARGV[1])
else
  redis.call('ZADD', KEYS[1], now_ms, ARGV[1])
end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_ms - tonumber(ARGV[3]))
return redis.call('ZCOUNT', KEYS[1], now_ms - tonumber(ARGV[2]), '+inf')
