-- lib_window.lua: sliding windows, included by other scripts (not run on its own).
-- max <= 0 or window_ms <= 0 disables a window (always allows).
--
-- 1. Sliding window log (limiter_window.lua, exact): zset KEY of events scored by time in
--    microseconds.
-- sw_check(key, window_ms, max, now_us) -> ok (bool), retry_after_ms
--   Drops events older than the window, then looks.
-- sw_commit(key, member, now_us, window_ms) records one event.
--
-- 2. Sliding window counter (the reservation script's per-user window, kept inside the user's
--    packed field of the shard's users hash): two fixed windows. start (ms, a multiple of
--    window_ms) is the start of the current fixed window, prev and cur the events counted in
--    the previous and the current one.
--    APPROXIMATION: the events within the last window_ms are estimated as
--      prev * (window_ms - elapsed) / window_ms + cur    (elapsed = now - start)
--    i.e. the previous window's events are taken as spread evenly over it. An event is allowed
--    when the estimate including it is <= max. Bounds: never more than max events in one fixed
--    window, and never more than max + prev * elapsed / window_ms < 2 * max in any span of
--    window_ms (the excess needs the previous window's events bunched at its end); exact when
--    they were spread evenly, and when prev = 0 (a burst is refused after max events).
-- wc_check(start, prev, cur, window_ms, max, now_ms) -> ok (bool), retry_after_ms, start, prev, cur
--   start, prev, cur: the stored state (nil: none). Looks without writing; when ok the state
--   returned counts this event and is what to store.
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

local function wc_check(start, prev, cur, window_ms, max, now_ms)
  if max <= 0 or window_ms <= 0 then return true, 0, start, prev, cur end
  local now_start = now_ms - now_ms % window_ms
  if start == nil or prev == nil or cur == nil or start < now_start - window_ms then
    start, prev, cur = now_start, 0, 0
  elseif start < now_start then
    start, prev, cur = now_start, cur, 0
  end
  -- start >= now_start: the current fixed window, or a later start left by a longer window
  -- (keep counting there)
  local left = window_ms - (now_ms - start) -- ms of the previous window still inside the span
  if left > window_ms then left = window_ms end
  if left < 0 then left = 0 end
  -- integer form of prev * left / window_ms + cur + 1 <= max
  if prev * left + (cur + 1) * window_ms <= max * window_ms then
    return true, 0, start, prev, cur + 1
  end
  local at -- ms after start when the event would fit
  if cur + 1 <= max then
    at = window_ms - math.floor((max - cur - 1) * window_ms / prev)
  else
    -- only in a later window, where cur becomes prev (max 1 with cur 1 waits two windows)
    at = window_ms + window_ms - math.floor((max - 1) * window_ms / cur)
  end
  local retry = start + at - now_ms
  if retry < 1 then retry = 1 end
  return false, retry, start, prev, cur
end
