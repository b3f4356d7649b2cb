-- limiter_bucket.lua: one exact token bucket decision (per IP), or a refund.
-- KEYS[1]  bucket, a string "<tokens>|<ts>" (lib_bucket.lua): sk:{ip:<iphash>}:tk
-- ARGV[1]  rate, tokens per second (<= 0: off, always allowed)
-- ARGV[2]  burst, the capacity
-- ARGV[3]  n: > 0 takes n tokens all or nothing; < 0 gives -n tokens back (clamped to burst)
-- ARGV[4]  now in microseconds; 0 means Redis TIME (tests pass a clock, production passes 0)
-- Returns {1, 0} allowed (or given back), {2, retry_ms} rejected with retry_ms >= 1.
--#include lib_time.lua
--#include lib_bucket.lua
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local n = tonumber(ARGV[3])
local now = tonumber(ARGV[4])
if now == nil or now <= 0 then now = now_us() end

if n < 0 then
  local _, _, tokens = tb_check(KEYS[1], rate, burst, 0, now)
  tb_commit(KEYS[1], math.min(burst, tokens - n), now, rate, burst)
  return {1, 0}
end
local ok, retry, after = tb_check(KEYS[1], rate, burst, n, now)
if ok then
  tb_commit(KEYS[1], after, now, rate, burst)
  return {1, 0}
end
return {2, retry}
