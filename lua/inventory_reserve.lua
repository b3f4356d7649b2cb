-- inventory_reserve.lua: one reservation on the user's home stock shard {A:e:h}. A reservation
-- never spans two shards: when this shard has too few units the caller moves units here
-- (inventory_transfer.lua) and runs this script again.
-- KEYS[1] stock  KEYS[2] users  KEYS[3] seq  KEYS[4] journal  KEYS[5] stats: every key declared
-- exists once the shard sold (a slot migration serves a script whose keys all exist: issue 19).
-- The one key the script writes that cannot be declared is the new record "sk:{A:e:h}:r:<n>"
-- (same hash tag; n comes from seq): it is written before anything else, so a node that cannot
-- take it (its slot migrating away) refuses the script with nothing written, and the caller
-- retries once (inventory/reserve.go).  KEYS[6] the shard's generation: it exists once Create, a
-- restore's rebuild or the first reservation after a reshard (adoption, inventory/reserve.go)
-- wrote it; a shard that has none yet is refused {13} and adopts before it sells.
-- ARGV[1] activity id  ARGV[2] user id  ARGV[3] user hash  ARGV[4] quantity
-- ARGV[5] per-user limit  ARGV[6] opensAt ms (0 none)  ARGV[7] closesAt ms (0 none)
-- ARGV[8] bucket rate/s (0 off)  ARGV[9] bucket burst  ARGV[10] window ms (0 off)
-- ARGV[11] window max (0 off)  ARGV[12] idempotency field "<uh>:i:<hash>" or ""
-- ARGV[13] epoch  ARGV[14] shard  ARGV[15] record expiry, unix ms (closesAt + the TTL after
-- close, at least 1 h), or 0 when there is no closesAt  ARGV[16] record TTL ms without closesAt
-- ARGV[17] the activity's generation as the caller knows it ("" for an activity of before
-- generations: not checked). The shard sells only when its generation key (KEYS[6], read in
-- the same MGET as stock and seq: no extra call) holds it: a restore's fence writes
-- "restoring" there, a Redis that lost the activity has none (inventory/keys.go Gen).
-- ARGV[18] the highest reservation number the caller handed out on this shard (0 none): a
-- counter (KEYS[3]) below it went back with a rollback of the shard's node, so the next
-- number would be one already answered 202: refused {14} before anything is written
-- (inventory/rollback.go), so no journal entry can turn that number into another buyer's order.
-- Optional, single-node Redis only (the key is in another slot): KEYS[7] the per-IP token
-- bucket of the limiter (sk:{ip:<hash>}:tb), ARGV[19] IP rate/s, ARGV[20] IP burst: one IP
-- token is taken with the user's, all or nothing, in this same round trip.
-- The users hash keeps everything of a user on this shard: <uh> units held (an integer,
-- lowered by refunds: inventory_refund.lua), <uh>:s the user's sequence (only ever raised, so a
-- seq is never handed out twice), <uh>:l the last reservation id (the ALREADY answer),
-- <uh>:i:<hash> idempotency bindings, <uh>:r:<rid> refund markers, and <uh>:p the limits
-- state packed in one value
--   "tokens|tsSec|tsUsec|winStart|winPrev|winCur"
-- tokens/tsSec/tsUsec the user's token bucket (lib_bucket.lua; the time as Redis TIME gave it), winStart/winPrev/winCur the user's
-- window counter (lib_window.lua); the parts of a dimension that is off are kept as they are
-- (empty if never used); while both are off <uh>:p is neither read nor written (a limit turned
-- off and on again resumes from the state it left). One HMGET reads a user, one HSET writes it. A reshard copies the
-- whole hash, so bucket and window follow the user to the new home shard.
-- Compatible both ways with the script before issue 12 (a rolling upgrade runs both): <uh>,
-- <uh>:s, <uh>:l, the bindings and the INCR counter seq keep their meaning, so the 409 names
-- the latest reservation whichever version took it; the older script ignores <uh>:p and keeps
-- its own bucket and window keys, so during the upgrade each version limits on its own.
-- The per-user window is a sliding window COUNTER (lib_window.lua): two fixed windows, the
-- previous one weighted by how much of it the sliding span still covers. It never admits more
-- than max events in one fixed window nor 2 * max in any span of the window's length, and is
-- exact when the previous window's events were spread evenly.
-- A dimension that is off (rate 0, window 0 or max 0, no idempotency key) costs no field.
-- Order: shard open? -> generation -> idempotency replay -> open/close (Redis TIME) -> user bucket and
-- window -> IP bucket -> per-user limit -> stock -> record + journal. Tokens are not taken
-- when the answer is EMPTY (the caller refills the shard and asks again).
-- The record hash holds rid aid uid uh qty status ts (orderId and comp are added by the order
-- pipeline). The journal entry carries the idempotency field too (ik, "" without a key), so
-- the order keeps it and a restore from MySQL rebuilds the binding (inventory/restore.go).
-- Redis calls of a reservation (IP bucket off): MGET (stock, seq, generation), HMGET, TIME, HSET record,
-- PEXPIRE(AT) record, DECRBY, INCR seq, HSET users, HINCRBY stats, XADD. Numbers are turned into strings
-- as rarely as possible (quantity and epoch/shard are passed through as the caller's strings,
-- the time in ms is cut from TIME's strings).
-- Returns:
--   {1, rid, stockAfter}      RESERVED
--   {2, rid}                  REPLAYED (the idempotency key is bound to rid)
--   {3, lastRid or ""}        ALREADY: the per-user limit would be exceeded
--   {4, opensAtMs}            NOT_OPEN
--   {5}                       CLOSED
--   {6, retryMs}              USER_RATE (token bucket)
--   {7, retryMs}              USER_WINDOW (sliding window counter)
--   {8, stock}                EMPTY: stock < quantity here
--   {10}                      SHARD_CLOSED: stock key missing (drained by a reshard: a drained
--                             shard never has one): refresh
--   {12, retryMs}             IP_RATE (per-IP token bucket, when KEYS[7] is given)
--   {13, gen or "", 1 | 0}    GENERATION: the shard's generation is not ARGV[17] (fenced,
--                             lost, never given one, or a mark raised by a debit from the
--                             generation itself): nothing taken; 1 when ARGV[17] is in the
--                             shard's mark history (stats field "m:<mark>",
--                             inventory_transfer.lua). A debit mark ARGV[17] in the history
--                             of a shard holding a later mark of the same generation is not
--                             refused: the debits since raised it, the node lost nothing the
--                             caller knew (an HEXISTS more, only until the caller records it)
--   {14, counter}             ROLLED_BACK: the counter is below ARGV[18]: nothing taken
--#include lib_bucket.lua
--#include lib_window.lua
local sd = redis.call('MGET', KEYS[1], KEYS[3], KEYS[6])
if not sd[1] then
  return {10}
end
if ARGV[17] ~= '' and sd[3] ~= ARGV[17] then
  -- A mark of the same generation raised since by debits (ARGV[17] in the history) is no
  -- loss of what the caller knew: sell (the refresh records the new mark). Anything else
  -- (a fence, another generation, a mark whose history lost ARGV[17]) is refused.
  local known = redis.call('HEXISTS', KEYS[5], 'm:' .. ARGV[17])
  local b = string.find(ARGV[17], '#', 1, true)
  if known == 0 or not b or not sd[3] or string.sub(sd[3], 1, b) ~= string.sub(ARGV[17], 1, b) then
    return {13, sd[3] or '', known}
  end
end
if (tonumber(sd[2]) or 0) < tonumber(ARGV[18]) then -- rolled back (see ARGV[18])
  return {14, sd[2] or '0'}
end
local stock = tonumber(sd[1])
local uh = ARGV[3]
local qs = ARGV[4]
local qty = tonumber(qs)
local idf = ARGV[12]
local rate = tonumber(ARGV[8])
local wms, wmax = tonumber(ARGV[10]), tonumber(ARGV[11])
local lim = rate > 0 or (wms > 0 and wmax > 0) -- a user bucket or window is on: <uh>:p is used
-- One HMGET reads what this reservation decides on: units held, the sequence, the packed
-- limits (only when a limit is on), the key binding (only with a key). The last id <uh>:l is
-- read only for the LIMIT answer that names it.
local u, packed, bound
if lim then
  if idf ~= '' then
    u = redis.call('HMGET', KEYS[2], uh, uh .. ':s', uh .. ':p', idf)
    packed, bound = u[3], u[4]
  else
    u = redis.call('HMGET', KEYS[2], uh, uh .. ':s', uh .. ':p')
    packed = u[3]
  end
elseif idf ~= '' then
  u = redis.call('HMGET', KEYS[2], uh, uh .. ':s', idf)
  bound = u[3]
else
  u = redis.call('HMGET', KEYS[2], uh, uh .. ':s')
end
if bound then
  return {2, bound}
end

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local now_ms = math.floor(now / 1000)
local opens = tonumber(ARGV[6])
local closes = tonumber(ARGV[7])
if opens > 0 and now_ms < opens then
  return {4, opens}
end
if closes > 0 and now_ms >= closes then
  return {5}
end

-- the user's sequence and packed state (see the header)
local seq_s = u[2] or '0'
local btok, bsec, busec, wst, wpr, wcu = '', '', '', '', '', ''
if packed then
  local c, d, e, f, g, h = string.match(packed, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
  if c then
    btok, bsec, busec, wst, wpr, wcu = c, d, e, f, g, h
  end
end

if rate > 0 then
  local ts
  if bsec ~= '' then ts = tonumber(bsec) * 1000000 + tonumber(busec) end
  local ok, retry, after = tb_take(tonumber(btok), ts, rate, tonumber(ARGV[9]), 1, now)
  if not ok then
    return {6, retry}
  end
  btok, bsec, busec = tostring(after), t[1], t[2]
end
if wms > 0 and wmax > 0 then
  local s0, p0 = tonumber(wst), tonumber(wpr)
  local ok, retry, s1, p1, c1 = wc_check(s0, p0, tonumber(wcu), wms, wmax, now_ms)
  if not ok then
    return {7, retry}
  end
  if s1 ~= s0 or p1 ~= p0 then
    wst = tostring(s1)
    if p1 == 0 then wpr = '0' else wpr = tostring(p1) end
  end
  if c1 == 1 then wcu = '1' else wcu = tostring(c1) end
end
local iprate, ipburst, ip_tokens = 0, 0, 0
if KEYS[7] then
  iprate, ipburst = tonumber(ARGV[19]), tonumber(ARGV[20])
  local ip_ok, ip_retry
  ip_ok, ip_retry, ip_tokens = tb_check(KEYS[7], iprate, ipburst, 1, now)
  if not ip_ok then
    return {12, ip_retry}
  end
end
local limits
if lim then limits = btok .. '|' .. bsec .. '|' .. busec .. '|' .. wst .. '|' .. wpr .. '|' .. wcu end

local held = tonumber(u[1] or '0')
if held + qty > tonumber(ARGV[5]) then
  if KEYS[7] then tb_commit(KEYS[7], ip_tokens, now, iprate, ipburst) end
  if lim then -- the attempt counts against bucket and window
    redis.call('HSET', KEYS[2], uh .. ':p', limits)
  end
  return {3, redis.call('HGET', KEYS[2], uh .. ':l') or ''}
end
if stock < qty then
  return {8, stock}
end
if KEYS[7] then tb_commit(KEYS[7], ip_tokens, now, iprate, ipburst) end

local seq = qs -- a new user's sequence is the quantity (no number to format)
if seq_s ~= '0' then seq = tostring(tonumber(seq_s) + qty) end
local n = tostring((tonumber(sd[2]) or 0) + 1)
local rid = ARGV[1] .. '.' .. ARGV[13] .. '.' .. ARGV[14] .. '.' .. n
local rec = string.sub(KEYS[1], 1, -6) .. 'r:' .. n -- the first write: see the header
local ms = t[1] .. string.sub(string.sub('00000' .. t[2], -6), 1, 3)
redis.call('HSET', rec, 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', uh, 'qty', qs, 'status', 'PENDING',
  'ts', ms)
if closes > 0 then
  redis.call('PEXPIREAT', rec, ARGV[15])
else
  redis.call('PEXPIRE', rec, ARGV[16])
end
local left = redis.call('DECRBY', KEYS[1], qs)
redis.call('INCR', KEYS[3])
local count = qs
if held > 0 then count = held + qty end
if lim then
  if idf ~= '' then
    redis.call('HSET', KEYS[2], uh, count, uh .. ':s', seq, uh .. ':l', rid, uh .. ':p', limits, idf, rid)
  else
    redis.call('HSET', KEYS[2], uh, count, uh .. ':s', seq, uh .. ':l', rid, uh .. ':p', limits)
  end
elseif idf ~= '' then
  redis.call('HSET', KEYS[2], uh, count, uh .. ':s', seq, uh .. ':l', rid, idf, rid)
else
  redis.call('HSET', KEYS[2], uh, count, uh .. ':s', seq, uh .. ':l', rid)
end
redis.call('HINCRBY', KEYS[5], 'taken', qs)
redis.call('XADD', KEYS[4], '*', 'rid', rid, 'aid', ARGV[1], 'uid', ARGV[2], 'uh', uh,
  'qty', qs, 'seq', seq, 'home', ARGV[14], 'shard', ARGV[14], 'epoch', ARGV[13], 'ts', ms, 'ik', idf)
return {1, rid, left}
