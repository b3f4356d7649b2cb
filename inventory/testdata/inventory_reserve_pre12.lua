-- The reservation script as released before issue 12 (commit 6bb3959, includes expanded),
-- for rolling-upgrade tests: a release that runs it beside the current one.
-- inventory_reserve.lua: one reservation on the user's home stock shard {A:e:h}. A reservation
-- never spans two shards: when this shard has too few units the caller moves units here
-- (inventory_transfer.lua) and runs this script again.
-- KEYS[1] stock  KEYS[2] users  KEYS[3] seq  KEYS[4] journal  KEYS[5] stats  KEYS[6] drained
-- KEYS[7] tb:<uh>  KEYS[8] sw:<uh>  KEYS[9] record prefix ("sk:{A:e:h}:r:", the script appends n)
-- ARGV[1] activity id  ARGV[2] user id  ARGV[3] user hash  ARGV[4] quantity
-- ARGV[5] per-user limit  ARGV[6] opensAt ms (0 none)  ARGV[7] closesAt ms (0 none)
-- ARGV[8] bucket rate/s  ARGV[9] bucket burst  ARGV[10] window ms  ARGV[11] window max
-- ARGV[12] idempotency field "<uh>:i:<hash>" or ""  ARGV[13] request nonce (window member)
-- ARGV[14] epoch  ARGV[15] shard  ARGV[16] record TTL after close ms
-- ARGV[17] record TTL without closesAt ms
-- Optional, single-node Redis only (the key is in another slot): KEYS[10] the per-IP token
-- bucket of the limiter (sk:{ip:<hash>}:tb), ARGV[18] IP rate/s, ARGV[19] IP burst: one IP
-- token is taken with the user's, all or nothing, in this same round trip.
-- The users hash keeps everything of a user on this shard: <uh> units held (lowered by
-- refunds), <uh>:s the user's sequence (only ever raised, so a seq is never handed out
-- twice), <uh>:l the last reservation id, <uh>:i:<hash> idempotency bindings and
-- <uh>:r:<rid> refund markers (order_refund.lua). A reshard copies the whole hash.
-- Order: shard open? -> idempotency replay -> open/close (Redis TIME) -> user bucket and
-- window -> per-user limit -> stock -> record + journal. Tokens are not taken when the
-- answer is EMPTY (the caller refills the shard and asks again).
-- Returns:
--   {1, rid, stockAfter}      RESERVED
--   {2, rid}                  REPLAYED (the idempotency key is bound to rid)
--   {3, lastRid or ""}        ALREADY: the per-user limit would be exceeded
--   {4, opensAtMs}            NOT_OPEN
--   {5}                       CLOSED
--   {6, retryMs}              USER_RATE (token bucket)
--   {7, retryMs}              USER_WINDOW (sliding window)
--   {8, stock}                EMPTY: stock < quantity here
--   {10}                      SHARD_CLOSED: stock key missing or drained (reshard): refresh
--   {12, retryMs}             IP_RATE (per-IP token bucket, when KEYS[10] is given)
-- lib_time.lua: the Redis server clock, included by other scripts.
-- now_us() -> microseconds since the epoch, from TIME (never the caller's clock).
local function now_us()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000000 + tonumber(t[2])
end

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

local stock = redis.call('GET', KEYS[1])
if not stock or redis.call('EXISTS', KEYS[6]) == 1 then
  return {10}
end
stock = tonumber(stock)
local uh = ARGV[3]
local qty = tonumber(ARGV[4])
local idf = ARGV[12]
if idf ~= '' then
  local prev = redis.call('HGET', KEYS[2], idf)
  if prev then
    return {2, prev}
  end
end

local now = now_us()
local now_ms = math.floor(now / 1000)
local opens = tonumber(ARGV[6])
local closes = tonumber(ARGV[7])
if opens > 0 and now_ms < opens then
  return {4, opens}
end
if closes > 0 and now_ms >= closes then
  return {5}
end

local rate, burst = tonumber(ARGV[8]), tonumber(ARGV[9])
local wms, wmax = tonumber(ARGV[10]), tonumber(ARGV[11])
local tb_ok, tb_retry, tb_tokens = tb_check(KEYS[7], rate, burst, 1, now)
if not tb_ok then
  return {6, tb_retry}
end
local sw_ok, sw_retry = sw_check(KEYS[8], wms, wmax, now)
if not sw_ok then
  return {7, sw_retry}
end
local iprate, ipburst, ip_tokens = 0, 0, 0
if KEYS[10] then
  iprate, ipburst = tonumber(ARGV[18]), tonumber(ARGV[19])
  local ip_ok, ip_retry
  ip_ok, ip_retry, ip_tokens = tb_check(KEYS[10], iprate, ipburst, 1, now)
  if not ip_ok then
    return {12, ip_retry}
  end
end
local function commit()
  if KEYS[10] then tb_commit(KEYS[10], ip_tokens, now, iprate, ipburst) end
  tb_commit(KEYS[7], tb_tokens, now, rate, burst)
  if wmax > 0 then sw_commit(KEYS[8], ARGV[13], now, wms) end
end

local u = redis.call('HMGET', KEYS[2], uh, uh .. ':s')
local held = tonumber(u[1] or '0')
if held + qty > tonumber(ARGV[5]) then
  commit()
  return {3, redis.call('HGET', KEYS[2], uh .. ':l') or ''}
end
if stock < qty then
  return {8, stock}
end
commit()

local left = redis.call('DECRBY', KEYS[1], qty)
local seq = tonumber(u[2] or '0') + qty
local n = redis.call('INCR', KEYS[3])
local rid = ARGV[1] .. '.' .. ARGV[14] .. '.' .. ARGV[15] .. '.' .. n
local rec = KEYS[9] .. n
redis.call('HSET', rec, 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', uh, 'qty', qty,
  'status', 'PENDING', 'orderId', '', 'home', ARGV[15], 'ts', now_ms)
local ttl = tonumber(ARGV[17])
if closes > 0 then
  ttl = math.max(closes + tonumber(ARGV[16]) - now_ms, 3600000)
end
redis.call('PEXPIRE', rec, ttl)
if idf ~= '' then
  redis.call('HSET', KEYS[2], uh, held + qty, uh .. ':s', seq, uh .. ':l', rid, idf, rid)
else
  redis.call('HSET', KEYS[2], uh, held + qty, uh .. ':s', seq, uh .. ':l', rid)
end
redis.call('HINCRBY', KEYS[5], 'taken', qty)
redis.call('XADD', KEYS[4], '*', 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', uh,
  'qty', qty, 'seq', seq, 'home', ARGV[15], 'shard', ARGV[15], 'epoch', ARGV[14], 'ts', now_ms)
return {1, rid, left}
