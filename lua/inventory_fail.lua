-- inventory_fail.lua: fail a reservation for good and give its stock back to its shard.
-- KEYS[1] the shard's users hash, which holds its records (lib_record.lua), KEYS[2] shard
-- stock, KEYS[3] stats hash, KEYS[4] the shard's drained marker, KEYS[5] the shard's xout
-- hash (all the same shard)
-- ARGV[1] the record's field ("r:<n>"), ARGV[2] the reservation id: a record of another id
-- under the number (one a Redis that went back handed out again) is not this reservation's,
-- and is answered as missing, unchanged
-- ARGV[3] optional: "refused": MySQL refused the reservation's order (order/insert.go: no unit
-- left of the activity's stock, or the buyer at the limit, where the orders live). Redis
-- counted that unit twice, so nothing is given back (a credit would put a phantom unit on
-- sale): PENDING -> FAILED with why = REFUSED, stats.failed += qty, and code 1.
-- On PENDING -> FAILED: status FAILED, stats.failed += qty, stats.compensated += qty, and
-- INCRBY stock by qty (never SET) unless a reshard drained the shard: then the units go in
-- transit under the reservation id (xout[rid] = "<qty>||<ms>", no target yet, stats.xout +=
-- qty) and the caller credits them to a shard of the current layout (inventory.Mover).
-- Returns {code, qty}: code 1 failed now, 2 already failed, 3 record is CONFIRMED
-- (nothing changed), 4 record missing, 5 failed now and the units are in transit,
-- 6 already failed and the units are still in transit (finish the credit).
--#include lib_record.lua
local r = rec_read(KEYS[1], ARGV[1])
if not r or r.rid ~= ARGV[2] then
  return {4, 0}
end
local q = tonumber(r.qty) or 0
if r.st == 'FAILED' then
  if redis.call('HEXISTS', KEYS[5], r.rid) == 1 then
    return {6, q}
  end
  return {2, q}
end
if r.st == 'CONFIRMED' then
  return {3, q}
end
r.st = 'FAILED'
if ARGV[3] == 'refused' then
  r.why = 'REFUSED'
  rec_write(KEYS[1], ARGV[1], r)
  redis.call('HINCRBY', KEYS[3], 'failed', q)
  return {1, q}
end
rec_write(KEYS[1], ARGV[1], r)
redis.call('HINCRBY', KEYS[3], 'failed', q)
redis.call('HINCRBY', KEYS[3], 'compensated', q)
if redis.call('EXISTS', KEYS[4]) == 1 or redis.call('EXISTS', KEYS[2]) == 0 then
  local t = redis.call('TIME')
  redis.call('HSET', KEYS[5], r.rid, q .. '||' .. (tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)))
  redis.call('HINCRBY', KEYS[3], 'xout', q)
  return {5, q}
end
redis.call('INCRBY', KEYS[2], q)
return {1, q}
