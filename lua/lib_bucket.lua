-- lib_bucket.lua: token bucket, included by other scripts (not run on its own).
-- State: hash KEY {t = tokens (float), ts = last update in microseconds}.
-- rate is tokens per second, burst the capacity. rate <= 0 disables the bucket (always allows).
-- Tokens of a bucket whose burst shrank are clamped to the new burst on the next call.
--
-- tb_check(key, rate, burst, n, now_us) -> ok (bool), retry_after_ms, tokens_after
--   Looks without writing; tokens_after is what tb_commit stores when ok.
-- tb_commit(key, tokens, now_us, rate, burst) stores the new state with a TTL of a full refill.
local function tb_check(key, rate, burst, n, now_us)
  if rate <= 0 then return true, 0, 0 end
  local st = redis.call('HMGET', key, 't', 'ts')
  local tokens = tonumber(st[1])
  local ts = tonumber(st[2])
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

local function tb_commit(key, tokens, now_us, rate, burst)
  if rate <= 0 then return end
  redis.call('HSET', key, 't', tostring(tokens), 'ts', now_us)
  redis.call('PEXPIRE', key, math.ceil(burst * 1000 / rate) + 1000)
end
