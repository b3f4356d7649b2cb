-- inventory_reserve.lua: one reservation attempt on the user's home stock shard {A:e:h}.
-- KEYS[1] stock  KEYS[2] users  KEYS[3] last  KEYS[4] idem  KEYS[5] seq  KEYS[6] journal
-- KEYS[7] stats  KEYS[8] holds  KEYS[9] drained  KEYS[10] tb:<uh>  KEYS[11] sw:<uh>
-- KEYS[12] record prefix ("sk:{A:e:h}:r:", the script appends n)
-- ARGV[1] activity id  ARGV[2] user id  ARGV[3] user hash  ARGV[4] quantity
-- ARGV[5] per-user limit  ARGV[6] opensAt ms (0 none)  ARGV[7] closesAt ms (0 none)
-- ARGV[8] bucket rate/s  ARGV[9] bucket burst  ARGV[10] window ms  ARGV[11] window max
-- ARGV[12] idempotency field "<uh>:<hash>" or ""  ARGV[13] request nonce (window member)
-- ARGV[14] 1 = hold the quota when this shard is empty, 0 = answer EMPTY
-- ARGV[15] epoch  ARGV[16] shard  ARGV[17] record TTL after close ms
-- ARGV[18] record TTL without closesAt ms  ARGV[19] hold TTL ms
-- Optional, single-node Redis only (the key is in another slot): KEYS[13] the per-IP token
-- bucket of the limiter (sk:{ip:<hash>}:tb), ARGV[20] IP rate/s, ARGV[21] IP burst: one IP
-- token is taken with the user's, all or nothing, in this same round trip.
-- Order: shard open? -> idempotency replay -> open/close (Redis TIME) -> user bucket and
-- window (both committed once both pass) -> per-user limit -> stock -> record + journal.
-- Returns:
--   {1, rid, stockAfter}      RESERVED
--   {2, rid}                  REPLAYED (the idempotency key is bound to rid)
--   {3, lastRid or ""}        ALREADY: the per-user limit would be exceeded
--   {4, opensAtMs}            NOT_OPEN
--   {5}                       CLOSED
--   {6, retryMs}              USER_RATE (token bucket)
--   {7, retryMs}              USER_WINDOW (sliding window)
--   {8, stock}                EMPTY: stock < quantity here and ARGV[14] is 0
--   {9, holdId, seq, stock}   NEED_OTHER: quota held here (users += qty), take elsewhere
--   {10}                      SHARD_CLOSED: stock key missing or drained (reshard): refresh
--   {11}                      PENDING: the idempotency key is bound to a hold in progress
--   {12, retryMs}             IP_RATE (per-IP token bucket, when KEYS[13] is given)
--#include lib_time.lua
--#include lib_bucket.lua
--#include lib_window.lua
local stock = redis.call('GET', KEYS[1])
if not stock or redis.call('EXISTS', KEYS[9]) == 1 then
  return {10}
end
stock = tonumber(stock)
local uh = ARGV[3]
local qty = tonumber(ARGV[4])
local now = now_us()
local now_ms = math.floor(now / 1000)

local idf = ARGV[12]
if idf ~= '' then
  local prev = redis.call('HGET', KEYS[4], idf)
  if prev then
    if string.sub(prev, 1, 1) ~= '~' then
      return {2, prev}
    end
    local h = redis.call('HGET', KEYS[8], string.sub(prev, 2))
    if h then
      local exp = tonumber(string.match(h, '|(%d+)$')) or 0
      if exp > now_ms then
        return {11}
      end
    end
    redis.call('HDEL', KEYS[4], idf)
  end
end

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
local tb_ok, tb_retry, tb_tokens = tb_check(KEYS[10], rate, burst, 1, now)
if not tb_ok then
  return {6, tb_retry}
end
local sw_ok, sw_retry = sw_check(KEYS[11], wms, wmax, now)
if not sw_ok then
  return {7, sw_retry}
end
local iprate, ipburst, ip_tokens = 0, 0, 0
if KEYS[13] then
  iprate, ipburst = tonumber(ARGV[20]), tonumber(ARGV[21])
  local ip_ok, ip_retry
  ip_ok, ip_retry, ip_tokens = tb_check(KEYS[13], iprate, ipburst, 1, now)
  if not ip_ok then
    return {12, ip_retry}
  end
  tb_commit(KEYS[13], ip_tokens, now, iprate, ipburst)
end
tb_commit(KEYS[10], tb_tokens, now, rate, burst)
if wmax > 0 then sw_commit(KEYS[11], ARGV[13], now, wms) end

local held = tonumber(redis.call('HGET', KEYS[2], uh) or '0')
if held + qty > tonumber(ARGV[5]) then
  return {3, redis.call('HGET', KEYS[3], uh) or ''}
end

if stock < qty then
  if ARGV[14] ~= '1' then
    return {8, stock}
  end
  local seq = redis.call('HINCRBY', KEYS[2], uh, qty)
  local hid = 'h' .. redis.call('INCR', KEYS[5])
  redis.call('HSET', KEYS[8], hid, uh .. '|' .. qty .. '|' .. (now_ms + tonumber(ARGV[19])))
  if idf ~= '' then
    redis.call('HSET', KEYS[4], idf, '~' .. hid)
  end
  return {9, hid, seq, stock}
end

local left = redis.call('DECRBY', KEYS[1], qty)
local seq = redis.call('HINCRBY', KEYS[2], uh, qty)
local n = redis.call('INCR', KEYS[5])
local rid = ARGV[1] .. '.' .. ARGV[15] .. '.' .. ARGV[16] .. '.' .. n
local rec = KEYS[12] .. n
redis.call('HSET', rec, 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', uh, 'qty', qty,
  'status', 'PENDING', 'orderId', '', 'home', ARGV[16], 'ts', now_ms)
local ttl = tonumber(ARGV[18])
if closes > 0 then
  ttl = math.max(closes + tonumber(ARGV[17]) - now_ms, 3600000)
end
redis.call('PEXPIRE', rec, ttl)
redis.call('HSET', KEYS[3], uh, rid)
if idf ~= '' then
  redis.call('HSET', KEYS[4], idf, rid)
end
redis.call('HINCRBY', KEYS[7], 'taken', qty)
redis.call('XADD', KEYS[6], '*', 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', uh,
  'qty', qty, 'seq', seq, 'home', ARGV[16], 'shard', ARGV[16], 'epoch', ARGV[15], 'ts', now_ms)
return {1, rid, left}
