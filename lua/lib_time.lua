-- lib_time.lua: the Redis server clock, included by other scripts.
-- now_us() -> microseconds since the epoch, from TIME (never the caller's clock).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end
