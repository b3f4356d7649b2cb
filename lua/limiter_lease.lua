-- limiter_lease.lua: lease tokens from a shared budget bucket (global, campaign, activity,
-- channel) so an instance can admit many requests per Redis call.
-- KEYS[1]  budget bucket, a string "<tokens>|<ts>" (lib_bucket.lua): sk:{budget:<dimension>:<name>}:tk
-- ARGV[1]  rate, tokens per second (<= 0: the budget is off, every lease is granted in full)
-- ARGV[2]  burst, the capacity
-- ARGV[3]  want, tokens asked for (>= 0; 0 only gives back)
-- ARGV[4]  give, unused tokens of an expired lease handed back first (>= 0, clamped to burst)
-- ARGV[5]  now in microseconds; 0 means Redis TIME (tests pass a clock, production passes 0)
-- Returns {got, retry_ms}: got in 0..want tokens now belong to the caller. When got = 0 and
-- want > 0, retry_ms (>= 1) is the time until one token is in the bucket.
--#include lib_time.lua
--#include lib_bucket.lua
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local want = tonumber(ARGV[3])
local give = tonumber(ARGV[4])
local now = tonumber(ARGV[5])
if now == nil or now <= 0 then now = now_us() end
if rate <= 0 then return {want, 0} end

local _, _, tokens = tb_check(KEYS[1], rate, burst, 0, now)
if give > 0 then tokens = math.min(burst, tokens + give) end
local got = math.min(want, math.floor(tokens))
if got < 0 then got = 0 end
if got > 0 or give > 0 then tb_commit(KEYS[1], tokens - got, now, rate, burst) end
if got == 0 and want > 0 then
  local retry = math.ceil((1 - tokens) * 1000 / rate)
  if retry < 1 then retry = 1 end
  return {0, retry}
end
return {got, 0}
