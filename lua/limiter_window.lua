-- limiter_window.lua: one exact sliding-window decision on its own (the sliding-window log of
-- lib_window.lua; the reservation script runs that library's counter instead, kept in the
-- user's field of the users hash; this script serves tests and standalone use).
-- KEYS[1]  window, a zset of events scored by time in microseconds
-- ARGV[1]  window in milliseconds (<= 0: off)
-- ARGV[2]  max events within the window (<= 0: off)
-- ARGV[3]  member naming this event (unique per event)
-- ARGV[4]  now in microseconds; 0 means Redis TIME (tests pass a clock, production passes 0)
-- Returns {1, 0} allowed and recorded, {2, retry_ms} rejected with retry_ms >= 1.
--#include lib_time.lua
--#include lib_window.lua
local window_ms = tonumber(ARGV[1])
local max = tonumber(ARGV[2])
local now = tonumber(ARGV[4])
if now == nil or now <= 0 then now = now_us() end

local ok, retry = sw_check(KEYS[1], window_ms, max, now)
if not ok then return {2, retry} end
if max > 0 then sw_commit(KEYS[1], ARGV[3], now, window_ms) end
return {1, 0}
