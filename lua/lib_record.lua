-- lib_record.lua: a reservation record, the field "r:<n>" of its shard's users hash
-- (inventory/record.go): "<status>|<qty>|<ts ms>|<uh>|<orderId>|<why>|<rid>|<uid>", the user
-- id last (it may hold '|'). rec_read answers the record as a table, or nil when the field is
-- missing or holds no record; rec_write writes one back.
local function rec_read(key, field)
  local v = redis.call('HGET', key, field)
  if not v then
    return nil
  end
  local st, q, ts, uh, oid, why, rid, uid = string.match(v, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|(.*)$')
  if not st then
    return nil
  end
  return {st = st, qty = q, ts = ts, uh = uh, oid = oid, why = why, rid = rid, uid = uid}
end

local function rec_write(key, field, r)
  redis.call('HSET', key, field, r.st .. '|' .. r.qty .. '|' .. r.ts .. '|' .. r.uh .. '|' .. r.oid .. '|' .. r.why ..
    '|' .. r.rid .. '|' .. r.uid)
end
