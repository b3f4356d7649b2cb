-- inventory_confirm.lua: mark reservations confirmed once their orders are committed in MySQL.
-- KEYS[1..n] reservation record hashes, KEYS[n+1] the stats hash (all on one shard, one hash tag)
-- ARGV[1..n] order ids (MySQL orders.id), ARGV[i] for KEYS[i]
-- ARGV[n+1..2n] optional: the user hash of the order's buyer, ARGV[n+i] for KEYS[i] ("" or
-- absent: not checked). ARGV[2n+1..3n] optional: the order's reservation id, ARGV[2n+i] for
-- KEYS[i] ("" or absent: not checked). A record of another buyer, or of another id under the
-- same number (a number Redis handed out again after it lost its counter: the ids differ by
-- their issuer, inventory/keys.go), is not the order's reservation and is not changed.
-- For each record, on PENDING -> CONFIRMED: sets status and orderId; stats.confirmed grows by
-- the records' qty (one HINCRBY for the call).
-- Code per record: 1 confirmed now, 2 already confirmed, 3 record is FAILED (not changed),
--                  4 record missing (expired or never written), 5 the record is another
--                  buyer's or another id's (not changed).
-- Returns the code itself when n = 1 (the single-record form), else the list of codes in
-- KEYS order.
local n = #KEYS - 1
local codes = {}
local add = 0
for i = 1, n do
  local rec = redis.call('HMGET', KEYS[i], 'status', 'qty', 'uh', 'rid')
  local st = rec[1]
  local uh, rid = ARGV[n + i], ARGV[2 * n + i]
  if not st then
    codes[i] = 4
  elseif uh and uh ~= '' and rec[3] and rec[3] ~= uh or rid and rid ~= '' and rec[4] and rec[4] ~= rid then
    codes[i] = 5
  elseif st == 'CONFIRMED' then
    codes[i] = 2
  elseif st == 'FAILED' then
    codes[i] = 3
  else
    redis.call('HSET', KEYS[i], 'status', 'CONFIRMED', 'orderId', ARGV[i])
    add = add + (tonumber(rec[2]) or 0)
    codes[i] = 1
  end
end
if add > 0 then
  redis.call('HINCRBY', KEYS[n + 1], 'confirmed', add)
end
if n == 1 then
  return codes[1]
end
return codes
