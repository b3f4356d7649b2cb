-- lib_reserve.lua: the body of one reservation (inventory_reserve.lua has its contract), as a
-- function of the script's KEYS and ARGV, so a batch of reservations on one or more shards
-- (inventory_reserve_batch.lua) runs each exactly as the single script would, one after the
-- other in one call. What the reservations of one shard in a call share is read and written
-- once: the shard (shard_open: stock, counter, mark, floor, read before its first;
-- shard_close: the stock, the counter and the stats' taken, written after the call's last);
-- what all of a call's reservations share, once per call (call_open): Redis TIME, the numbers
-- of the limits, and each IP bucket (one GET before its first attempt, one SET after the
-- call's last, call_close). A script is atomic, so each reservation still sees its shard and
-- its IP bucket as the ones before it left them.
--#include lib_bucket.lua
--#include lib_window.lua
-- call_open reads once what every reservation of a call shares (a batch's reservations share
-- ARGV[5..11], ARGV[19], ARGV[20]: inventory/batch.go B4): the numbers of the limits and
-- times; later the IP buckets the call has read (ip: key -> {tokens, ts, taken}; ipk: the
-- keys taken from, in order; call_close writes each once), a new user's limits state (fresh)
-- and Redis TIME once a shard opened (clk).
local function call_open(ARGV)
  local rate, wms, wmax = tonumber(ARGV[8]), tonumber(ARGV[10]), tonumber(ARGV[11])
  return {limit = tonumber(ARGV[5]), opens = tonumber(ARGV[6]), closes = tonumber(ARGV[7]),
    rate = rate, burst = tonumber(ARGV[9]), wms = wms, wmax = wmax,
    lim = rate > 0 or (wms > 0 and wmax > 0), -- a user bucket or window is on: the limits part of the user's state is used
    iprate = tonumber(ARGV[19]) or 0, ipburst = tonumber(ARGV[20]) or 0,
    suffix = '.' .. ARGV[17] .. ARGV[18], ip = false, ipk = false, fresh = false, clk = false}
  -- (every field the call sets later is in the constructor: a table that grows rehashes)
end

-- ip_bucket is the IP bucket of key as the call's reservations left it: read with one GET by
-- its first, then kept in the call (call_close writes it once).
local function ip_bucket(cx, key)
  local ip = cx.ip
  if not ip then
    ip = {}
    cx.ip, cx.ipk = ip, {}
  end
  local b = ip[key]
  if not b then
    local v, x, y = redis.call('GET', key)
    if v then
      x, y = string.match(v, '^([^|]*)|(.*)$')
    end
    b = {tokens = tonumber(x), ts = tonumber(y), taken = false}
    ip[key] = b
  end
  return b
end

-- ip_took keeps what an attempt took from the IP bucket b of key, for call_close to write:
-- the tokens as the SET stores them (tostring: 14 digits; a whole number under 1e14 is
-- stored as it is), so the next attempt of the call reads what it would have read from
-- Redis after a call of its own.
local function ip_took(cx, key, b, tokens, now)
  if not b.taken then
    b.taken = true
    cx.ipk[#cx.ipk + 1] = key
  end
  if tokens ~= math.floor(tokens) or tokens >= 1e14 then
    tokens = tonumber(tostring(tokens))
  end
  b.tokens, b.ts = tokens, now
end

-- limits_take takes this attempt from the user's bucket and window (on packed, the limits'
-- part of the user's state, see the header): the part as it leaves them, or nil and the
-- refusal (USER_RATE, USER_WINDOW).
local function limits_take(cx, packed, sh)
  local btok, bsec, busec, wst, wpr, wcu = '', '', '', '', '', ''
  do
    local c, d, e, f, g, h = string.match(packed, '^([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)|([^|]*)$')
    if c then
      btok, bsec, busec, wst, wpr, wcu = c, d, e, f, g, h
    end
  end

  if cx.rate > 0 then
    local ts
    if bsec ~= '' then ts = tonumber(bsec) * 1000000 + tonumber(busec) end
    local ok, retry, after = tb_take(tonumber(btok), ts, cx.rate, cx.burst, 1, sh.now)
    if not ok then
      return nil, {6, retry}
    end
    btok, bsec, busec = tostring(after), sh.t[1], sh.t[2]
  end
  if cx.wms > 0 and cx.wmax > 0 then
    local s0, p0 = tonumber(wst), tonumber(wpr)
    local ok, retry, s1, p1, c1 = wc_check(s0, p0, tonumber(wcu), cx.wms, cx.wmax, sh.now_ms)
    if not ok then
      return nil, {7, retry}
    end
    if s1 ~= s0 or p1 ~= p0 then
      wst = tostring(s1)
      if p1 == 0 then wpr = '0' else wpr = tostring(p1) end
    end
    if c1 == 1 then wcu = '1' else wcu = tostring(c1) end
  end
  return btok .. '|' .. bsec .. '|' .. busec .. '|' .. wst .. '|' .. wpr .. '|' .. wcu
end

-- reserve_on decides one reservation on sh, the shard as shard_open read it and the
-- reservations before this one of the call left it; cx is the call's (call_open).
local function reserve_on(KEYS, ARGV, sh, cx)
  local stock = sh.stock
  local uh = ARGV[3]
  local qs = ARGV[4]
  local qty = tonumber(qs)
  local idf = ARGV[12]
  local lim = cx.lim
  -- One read of what this reservation decides on: the user's state (one field, see the
  -- header) and, with a key, the key's binding.
  local cur
  if idf ~= '' then
    local u = redis.call('HMGET', KEYS[2], uh, idf)
    if u[2] then
      return {2, u[2]}
    end
    cur = u[1]
  else
    cur = redis.call('HGET', KEYS[2], uh)
  end
  local held, seq_s, last, packed = 0, '0', '', '|||||'
  if cur then
    local h, s, l, p = string.match(cur, '^([^|]*)|([^|]*)|([^|]*)|(.*)$')
    -- the sequence is checked here, not where a sale raises it: a sale writes nothing before
    -- its last point that can fail (see the writes below)
    if not h or not tonumber(s) then
      return redis.error_reply('seckill: malformed user state ' .. uh)
    end
    held, seq_s, last, packed = tonumber(h) or 0, s, l, p
  end

  local now, now_ms = sh.now, sh.now_ms
  local opens, closes = cx.opens, cx.closes
  if opens > 0 and now_ms < opens then
    return {4, opens}
  end
  if closes > 0 and now_ms >= closes then
    return {5}
  end

  -- the limits' packed state after this attempt: a new user's is the same for every new user
  -- of the call (a full bucket and an empty window at one Redis time), formed by the first
  local lp
  if lim then
    if not cur and cx.fresh then
      lp = cx.fresh
    else
      local refused
      lp, refused = limits_take(cx, packed, sh)
      if not lp then
        return refused
      end
      if not cur then cx.fresh = lp end
    end
  end
  local ipb, ip_tokens -- the IP bucket, when checked, and its tokens once this one is taken
  if KEYS[7] and cx.iprate > 0 then
    ipb = ip_bucket(cx, KEYS[7])
    local ip_ok, ip_retry
    ip_ok, ip_retry, ip_tokens = tb_take(ipb.tokens, ipb.ts, cx.iprate, cx.ipburst, 1, now)
    if not ip_ok then
      return {12, ip_retry}
    end
  end
  if lim then packed = lp end

  if held + qty > cx.limit then
    if lim then -- the attempt counts against bucket and window
      redis.call('HSET', KEYS[2], uh, held .. '|' .. seq_s .. '|' .. last .. '|' .. packed)
    end
    if ipb then ip_took(cx, KEYS[7], ipb, ip_tokens, now) end -- after the HSET: a failed one took nothing
    return {3, last}
  end
  if stock < qty then
    return {8, stock}
  end

  local seq = qs -- a new user's sequence is the quantity (no number to format)
  if seq_s ~= '0' then seq = tostring(tonumber(seq_s) + qty) end
  local n = string.format('%d', sh.n + 1)
  local rid = sh.prefix .. n .. cx.suffix
  local ms = sh.ms
  -- the record (lib_record.lua's form), written with the user's fields in one HSET
  local rf, rec = 'r:' .. n, 'PENDING|' .. qs .. '|' .. ms .. '|' .. uh .. '|||' .. rid .. '|' .. ARGV[2]
  local count = qs
  if held > 0 then count = held + qty end
  local user = count .. '|' .. seq .. '|' .. rid .. '|' .. packed
  -- A sale writes nothing before its last command that can fail, so a failure (raised: the
  -- script stops, or the batch script's pcall answers it alone) leaves nothing of it: the
  -- journal entry first (a journal of the wrong type refuses it), then the users hash (read
  -- above: it takes the HSET), and only then what the call's end writes for it (the IP
  -- bucket's token, kept in the call until call_close; what shard_close writes).
  redis.call('XADD', KEYS[4], '*', 'e', rid .. '|' .. qs .. '|' .. seq .. '|' .. ms .. '|' .. uh .. '|' .. idf .. '|' .. ARGV[2])
  if idf ~= '' then
    redis.call('HSET', KEYS[2], rf, rec, uh, user, idf, rid)
  else
    redis.call('HSET', KEYS[2], rf, rec, uh, user)
  end
  if ipb then ip_took(cx, KEYS[7], ipb, ip_tokens, now) end
  sh.n = sh.n + 1
  sh.stock = stock - qty
  sh.taken = sh.taken + qty
  return {1, rid, sh.stock}
end

-- shard_open reads the shard the reservations of a call share: nil and the answer of each
-- when it refuses them all (SHARD_CLOSED, GENERATION, ROLLED_BACK, a malformed stock, counter
-- or statistic), before anything of the shard is written; it raises on a key of the wrong
-- type. The first shard of the call
-- to open reads Redis TIME into cx.clk: every shard of a call sells at one time.
-- int_ok: s is an integer as Redis's DECRBY and INCRBY read one (negative only when neg).
local function int_ok(s, neg)
  if s == '0' then return true end
  local pat = '^[1-9]%d*$'
  if neg then pat = '^%-?[1-9]%d*$' end
  return #s <= 18 and string.find(s, pat) ~= nil
end

local function shard_open(KEYS, ARGV, cx)
  local sd = redis.call('MGET', KEYS[1], KEYS[3], KEYS[6])
  if not sd[1] then
    return nil, {10}
  end
  -- shard_close's DECRBY and INCRBY run after the sales wrote: a stock or counter they would
  -- refuse refuses the shard here, before anything is written (Redis reads an integer with no
  -- leading zero and at most 19 digits; 18 here, far above any stock)
  -- (MGET reads a counter of another type as missing, a shard's first sale: only then is the
  -- key looked at)
  if not int_ok(sd[1], true) or (sd[2] and not int_ok(sd[2], false)) or
      (not sd[2] and redis.call('EXISTS', KEYS[3]) == 1) then
    return nil, redis.error_reply('seckill: malformed stock or counter ' .. KEYS[1])
  end
  -- and its HINCRBY of the statistics: a key of another type raises here (WRONGTYPE), a taken
  -- count HINCRBY would refuse refuses the shard
  local tk = redis.call('HGET', KEYS[5], 'taken')
  if tk and not int_ok(tk, true) then
    return nil, redis.error_reply('seckill: malformed statistics ' .. KEYS[5])
  end
  local later
  if ARGV[15] ~= '' and sd[3] ~= ARGV[15] then
    -- A mark of the same generation raised since by debits is no loss of what the caller
    -- knew: sell, each answer carrying the new mark for the caller to record (answer_on).
    -- That is every mark of the generation when ARGV[15] is the generation itself (count 0:
    -- every debit descends from it), else one whose history holds ARGV[15]. Anything else
    -- (a fence, another generation, a mark whose history lost ARGV[15]) is refused.
    local k, known = ARGV[15], 1
    local b = string.find(k, '#', 1, true)
    if b then
      known = redis.call('HEXISTS', KEYS[5], 'm:' .. k)
    else
      k = k .. '#'
      b = #k
    end
    if known == 0 or not sd[3] or string.sub(sd[3], 1, b) ~= string.sub(k, 1, b) then
      return nil, {13, sd[3] or '', known}
    end
    later = sd[3]
  end
  if (tonumber(sd[2]) or 0) < tonumber(ARGV[16]) then -- rolled back (see ARGV[16])
    return nil, {14, sd[2] or '0'}
  end
  local clk = cx.clk
  if not clk then
    local t = redis.call('TIME')
    local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
    clk = {t = t, now = now, now_ms = math.floor(now / 1000), ms = t[1] .. string.sub(string.sub('00000' .. t[2], -6), 1, 3)}
    cx.clk = clk
  end
  local n = tonumber(sd[2]) or 0
  -- prefix: the reservation id's part the shard's sales share (keys.go ReservationID)
  return {stock = tonumber(sd[1]), n = n, n0 = n, taken = 0, later = later, t = clk.t, now = clk.now,
    now_ms = clk.now_ms, ms = clk.ms, prefix = ARGV[1] .. '.' .. ARGV[13] .. '.' .. ARGV[14] .. '.'}
end

-- shard_close writes what the call's sales took from sh: the stock, the counter and the taken
-- statistic, one command each.
local function shard_close(KEYS, sh)
  if sh.taken > 0 then
    redis.call('DECRBY', KEYS[1], sh.taken)
    redis.call('INCRBY', KEYS[3], sh.n - sh.n0)
    redis.call('HINCRBY', KEYS[5], 'taken', sh.taken)
  end
end

-- call_close writes each IP bucket the call's attempts took from, once, after every shard's
-- shard_close. A SET takes a key of any type, so only an ACL that forbids the command (one
-- that forbids a declared key refuses the whole call before it runs) or a PX out of range (a
-- rate under 1e-14/s) refuses it, after the sales wrote: the sales stand and are
-- answered, the bucket stays as it was (the IP limit lets more through, as the limiter does
-- when it degrades), and Redis logs a warning, rather than every caller of the call told
-- "error" for units it was sold.
local function call_close(cx)
  if not cx.ipk then return end
  for _, key in ipairs(cx.ipk) do
    local b = cx.ip[key]
    local ok, err = pcall(tb_commit, key, b.tokens, b.ts, cx.iprate, cx.ipburst)
    if not ok then
      if type(err) == 'table' then err = err.err end
      redis.log(redis.LOG_WARNING, 'seckill: the IP bucket ' .. key .. ' was not written: ' .. tostring(err))
    end
  end
end

-- answer_on is reserve_on's answer for the caller: on a later mark than ARGV[15] it carries
-- that mark (4th, the shorter answers padded with 0), so the caller records it, sold or
-- not: a record left behind by an answer that sold nothing would match the shard again once
-- its node went back past the debits since, and the next call would sell their units twice.
local function answer_on(KEYS, ARGV, sh, cx)
  local r = reserve_on(KEYS, ARGV, sh, cx)
  if sh.later then
    for i = #r + 1, 3 do r[i] = 0 end
    r[4] = sh.later
  end
  return r
end

-- reserve_one is one reservation (inventory_reserve.lua's contract).
local function reserve_one(KEYS, ARGV)
  local cx = call_open(ARGV)
  local sh, refused = shard_open(KEYS, ARGV, cx)
  if not sh then
    return refused
  end
  local r = answer_on(KEYS, ARGV, sh, cx)
  shard_close(KEYS, sh)
  call_close(cx)
  return r
end
