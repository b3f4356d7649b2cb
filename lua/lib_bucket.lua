-- lib_bucket.lua: token bucket, included by other scripts (not run on its own).
-- rate is tokens per second, burst the capacity. rate <= 0 disables the bucket (always allows).
-- Tokens of a bucket whose burst shrank are clamped to the new burst on the next call.
--
-- tb_take(tokens, ts, rate, burst, n, now_us) -> ok (bool), retry_after_ms, tokens_after
--   The arithmetic alone, on a state already read (tokens or ts nil: a full bucket). Looks
--   without writing; tokens_after is what to store when ok.
--
-- A bucket of its own (the limiter's per-IP and budget buckets): a string KEY
-- "<tokens (float)>|<last update in microseconds>", one GET to read and one SET to write.
-- tb_check(key, rate, burst, n, now_us) -> ok (bool), retry_after_ms, tokens_after (GET + tb_take)
-- tb_commit(key, tokens, now_us, rate, burst) stores the new state with a TTL of a full refill.
--
-- The reservation script keeps the per-user bucket inside the user's packed field of the
-- shard's users hash and runs tb_take on it (see inventory_reserve.lua); it runs tb_take on
-- the IP bucket too, read once and written once per call (lib_reserve.lua ip_bucket,
-- call_close).
local function tb_take(tokens, ts, rate, burst, n, now_us)
  if rate <= 0 then return true, 0, 0 end
  if tokens == nil or ts == nil then
    tokens = burst
    ts = now_us
  end
  local elapsed = now_us - ts
  if elapsed < 0 then elapsed = 0 end
  tokens = math.min(burst, tokens + elapsed * rate / 1000000)
  if tokens >= n then
    return true, 0, tokens - n
  end
  local retry = math.ceil((n - tokens) * 1000 / rate)
  if retry < 1 then retry = 1 end
  return false, retry, tokens
end

local function tb_check(key, rate, burst, n, now_us)
  if rate <= 0 then return true, 0, 0 end
  local v = redis.call('GET', key)
  local t, ts
  if v then
    local a, b = string.match(v, '^([^|]*)|(.*)$')
    t, ts = tonumber(a), tonumber(b)
  end
  return tb_take(t, ts, rate, burst, n, now_us)
end

local function tb_commit(key, tokens, now_us, rate, burst)
  if rate <= 0 then return end
  -- %.0f: now_us has 16 digits, more than tostring's %.14g keeps
  redis.call('SET', key, tostring(tokens) .. '|' .. string.format('%.0f', now_us), 'PX',
    math.ceil(burst * 1000 / rate) + 1000)
end
