-- inventory_take.lua: take stock on a shard {A:e:j} that is not the user's home shard; the
-- home shard already holds the user's quota (inventory_reserve.lua answered NEED_OTHER).
-- KEYS[1] stock  KEYS[2] seq  KEYS[3] journal  KEYS[4] stats  KEYS[5] drained
-- KEYS[6] record prefix ("sk:{A:e:j}:r:")
-- ARGV[1] activity id  ARGV[2] user id  ARGV[3] user hash  ARGV[4] quantity
-- ARGV[5] user's running unit count (seq) from the hold  ARGV[6] home shard
-- ARGV[7] epoch  ARGV[8] this shard  ARGV[9] closesAt ms (0 none)
-- ARGV[10] record TTL after close ms  ARGV[11] record TTL without closesAt ms
-- Returns {1, rid, stockAfter} TAKEN | {8, stock} EMPTY (stock < quantity) |
--         {10} SHARD_CLOSED (stock key missing or drained)
--#include lib_time.lua
local stock = redis.call('GET', KEYS[1])
if not stock or redis.call('EXISTS', KEYS[5]) == 1 then
  return {10}
end
stock = tonumber(stock)
local qty = tonumber(ARGV[4])
if stock < qty then
  return {8, stock}
end
local now_ms = math.floor(now_us() / 1000)
local left = redis.call('DECRBY', KEYS[1], qty)
local n = redis.call('INCR', KEYS[2])
local rid = ARGV[1] .. '.' .. ARGV[7] .. '.' .. ARGV[8] .. '.' .. n
local rec = KEYS[6] .. n
redis.call('HSET', rec, 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', ARGV[3], 'qty', qty,
  'status', 'PENDING', 'orderId', '', 'home', ARGV[6], 'ts', now_ms)
local closes = tonumber(ARGV[9])
local ttl = tonumber(ARGV[11])
if closes > 0 then
  ttl = math.max(closes + tonumber(ARGV[10]) - now_ms, 3600000)
end
redis.call('PEXPIRE', rec, ttl)
redis.call('HINCRBY', KEYS[4], 'taken', qty)
redis.call('XADD', KEYS[3], '*', 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', ARGV[3],
  'qty', qty, 'seq', ARGV[5], 'home', ARGV[6], 'shard', ARGV[8], 'epoch', ARGV[7], 'ts', now_ms)
return {1, rid, left}
