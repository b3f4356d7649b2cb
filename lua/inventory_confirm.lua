-- inventory_confirm.lua: mark reservations confirmed once their orders are committed in MySQL.
-- KEYS[1] the shard's users hash, which holds its records (lib_record.lua), KEYS[2] its stats
-- hash (one shard, one hash tag).
-- ARGV, four per record: the record's field ("r:<n>"), the order id (MySQL orders.id), the
-- user hash of the order's buyer ("": not checked) and the order's reservation id ("": not
-- checked). A record of another buyer, or of another id under the same number (a number
-- Redis handed out again after it lost its counter: the ids differ by their issuer,
-- inventory/keys.go), is not the order's reservation and is not changed.
-- For each record, on PENDING -> CONFIRMED: sets status and orderId; stats.confirmed grows by
-- the records' qty (one HINCRBY for the call).
-- Code per record: 1 confirmed now, 2 already confirmed, 3 record is FAILED (not changed),
--                  4 record missing (never written, or its layout archived), 5 the record is
--                  another buyer's or another id's (not changed).
-- Returns the code itself for one record, else the list of codes in ARGV order.
--#include lib_record.lua
local n = #ARGV / 4
local codes = {}
local add = 0
for i = 1, n do
  local b = 4 * (i - 1)
  local r = rec_read(KEYS[1], ARGV[b + 1])
  local uh, rid = ARGV[b + 3], ARGV[b + 4]
  if not r then
    codes[i] = 4
  elseif uh ~= '' and r.uh ~= '' and r.uh ~= uh or rid ~= '' and r.rid ~= '' and r.rid ~= rid then
    codes[i] = 5
  elseif r.st == 'CONFIRMED' then
    codes[i] = 2
  elseif r.st == 'FAILED' then
    codes[i] = 3
  else
    r.st, r.oid = 'CONFIRMED', ARGV[b + 2]
    rec_write(KEYS[1], ARGV[b + 1], r)
    add = add + (tonumber(r.qty) or 0)
    codes[i] = 1
  end
end
if add > 0 then
  redis.call('HINCRBY', KEYS[2], 'confirmed', add)
end
if n == 1 then
  return codes[1]
end
return codes
