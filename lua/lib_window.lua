-- lib_window.lua: sliding window log, included by other scripts (not run on its own).
-- State: zset KEY of events scored by time in microseconds. max <= 0 or window_ms <= 0
-- disables the window (always allows).
--
-- sw_check(key, window_ms, max, now_us) -> ok (bool), retry_after_ms
--   Drops events older than the window, then looks.
-- sw_commit(key, member, now_us, window_ms) records one event.
local function sw_check(key, window_ms, max, now_us)
  if max <= 0 or window_ms <= 0 then return true, 0 end
  local from = now_us - window_ms * 1000
  redis.call('ZREMRANGEBYSCORE', key, '-inf', from)
  local count = redis.call('ZCARD', key)
  if count < max then return true, 0 end
  local oldest = redis.call('ZRANGE', key, 0, 0, 'WITHSCORES')
  local retry = math.ceil((tonumber(oldest[2]) + window_ms * 1000 - now_us) / 1000)
  if retry < 1 then retry = 1 end
  return false, retry
end

local function sw_commit(key, member, now_us, window_ms)
  if window_ms <= 0 then return end
  redis.call('ZADD', key, now_us, member)
  redis.call('PEXPIRE', key, window_ms + 1000)
end
