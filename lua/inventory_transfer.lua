-- inventory_transfer.lua: move units between two stock shards in two idempotent steps,
-- journalled on the source shard, so a reservation never spans two shards.
-- KEYS (all of one shard, tag {A:e:i}): KEYS[1] stock  KEYS[2] drained  KEYS[3] xout (on a
-- source) or xin (on a target)  KEYS[4] stats
-- ARGV[1] operation, then:
-- debit (on the source)   ARGV[2] transfer id  ARGV[3] units wanted  ARGV[4] target "<e>:<i>"
--   ARGV[5] the source's generation mark as the caller knows it ("" for an activity of before
--   generations: not checked)  KEYS[5] the source's generation key  KEYS[6] the source's
--   reservation counter  ARGV[6] the highest reservation number the caller handed out or read
--   on the source (0 none): a counter below it went back with a rollback of the source's node,
--   whose stock then holds units of reservations already answered 202: refused {14, counter}
--   before anything is taken (inventory/rollback.go), as the reservation script refuses it.
--   Takes min(stock, max(wanted, floor(stock / 2))) units off the stock, records them in
--   transit: xout[id] = "<units>|<target>|<ms>", stats.xout += units, and raises the source's
--   mark, naming the debit: "<gen>" -> "<gen>#1.<id>" -> "<gen>#2.<id2>"..., each recorded in
--   the source's history (stats field "m:<mark>"). A node that loses the debit (goes back to
--   an older copy) loses the raised mark and its history field with it, while the instance
--   that debited keeps the mark, and the reservation script and the next debit, called with
--   that mark, refuse the shard (inventory/rollback.go): its units were credited elsewhere
--   and must not be sold again. A mark not in the history was lost, whatever the shard holds.
--   A debit of an id already in transit here (a resend after a lost reply) answers that
--   debit again without taking anything.
--   Returns {1, units, stockAfter, mark} | {8, 0} nothing here | {10} shard closed (reshard)
--   | {13, mark or "", 1 | 0} the source's mark is not ARGV[5] (nothing taken), and whether
--   ARGV[5] is in its history | {14, counter} the source's counter is below ARGV[6] (nothing
--   taken).
-- credit (on the target)  ARGV[2] transfer id  ARGV[3] units  ARGV[4] source "<e>:<i>"
--   ARGV[5] the transit entry's time (ms, as the source recorded it)  ARGV[6] keep (ms)
--   Once per id: xin[id] = "<units>|<source>|<ms now>", stock += units, stats.xin += units.
--   A drained or unsealed target refuses (the caller picks a target of the current layout).
--   A transit entry older than keep is not credited under its id (forget may have removed
--   the id's record here after keep): the caller gives it a new id (rekey) first.
--   Returns {1, stockAfter} credited now | {2} credited before | {3} target closed |
--   {4} too old for its id (rekey).
-- finish (on the source)  ARGV[2] transfer id: the credit is done, HDEL xout[id]. Returns {1}.
-- rekey (on the source)  ARGV[2] transfer id  ARGV[3] new id: moves a transfer still in
--   transit to a new id with the time now (its units and target kept).
--   Returns {1} moved | {0} not in transit.
-- forget (on the target)  ARGV[2] transfer id  ARGV[3] keep (ms): removes the id's credit
--   record once it is older than keep. The caller checked first that the source holds no
--   transit entry under the id (an id is debited once, so that stays true).
--   Returns {1} removed | {0} kept (younger, or not there).
-- retarget (on the source) ARGV[2] transfer id  ARGV[3] old target  ARGV[4] new target
--   Replaces the target of a transfer still in transit only if it is still the old one.
--   Returns {1} changed | {2, value} another target is recorded | {0} not in transit.
-- Units in transit on all shards = sum(stats.xout) - sum(stats.xin): reconciliation counts
-- them as remaining stock.
--#include lib_time.lua
local op = ARGV[1]
if op == 'debit' then
  local s = redis.call('GET', KEYS[1])
  if not s or redis.call('EXISTS', KEYS[2]) == 1 then
    return {10}
  end
  local prev = redis.call('HGET', KEYS[3], ARGV[2])
  if prev then
    -- Debited before under this id (a client's resend of a call whose reply was lost): its
    -- answer again, nothing taken twice; the mark only when it is still the one that debit
    -- raised.
    local g = redis.call('GET', KEYS[5]) or ''
    if string.sub(g, -(string.len(ARGV[2]) + 1)) ~= '.' .. ARGV[2] then g = '' end
    return {1, tonumber(string.match(prev, '^(%d+)')), tonumber(s), g}
  end
  local mark = ARGV[5]
  if mark ~= '' then
    local g = redis.call('GET', KEYS[5])
    if g ~= mark then
      return {13, g or '', redis.call('HEXISTS', KEYS[4], 'm:' .. mark)}
    end
  end
  if KEYS[6] then
    local c = redis.call('GET', KEYS[6]) or '0'
    if (tonumber(c) or 0) < tonumber(ARGV[6]) then
      return {14, c}
    end
  end
  s = tonumber(s)
  local want = tonumber(ARGV[3])
  local units = math.min(s, math.max(want, math.floor(s / 2)))
  if units <= 0 then
    return {8, 0}
  end
  local left = redis.call('DECRBY', KEYS[1], units)
  redis.call('HSET', KEYS[3], ARGV[2], units .. '|' .. ARGV[4] .. '|' .. math.floor(now_us() / 1000))
  redis.call('HINCRBY', KEYS[4], 'xout', units)
  if mark ~= '' then
    local base, n = string.match(mark, '^([^#]*)#(%d+)')
    if base then mark = base .. '#' .. (tonumber(n) + 1) else mark = mark .. '#1' end
    mark = mark .. '.' .. ARGV[2]
    redis.call('SET', KEYS[5], mark)
    redis.call('HSET', KEYS[4], 'm:' .. mark, 1)
  end
  return {1, units, left, mark}
end
if op == 'credit' then
  if redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then
    return {2}
  end
  if redis.call('EXISTS', KEYS[2]) == 1 or redis.call('EXISTS', KEYS[1]) == 0 then
    return {3}
  end
  local ms = math.floor(now_us() / 1000)
  if ms - tonumber(ARGV[5]) > tonumber(ARGV[6]) then
    return {4}
  end
  local units = tonumber(ARGV[3])
  redis.call('HSET', KEYS[3], ARGV[2], units .. '|' .. ARGV[4] .. '|' .. ms)
  redis.call('HINCRBY', KEYS[4], 'xin', units)
  return {1, redis.call('INCRBY', KEYS[1], units)}
end
if op == 'finish' then
  redis.call('HDEL', KEYS[3], ARGV[2])
  return {1}
end
if op == 'rekey' then
  local v = redis.call('HGET', KEYS[3], ARGV[2])
  if not v then
    return {0}
  end
  local units, target = string.match(v, '^([^|]*)|([^|]*)|')
  redis.call('HDEL', KEYS[3], ARGV[2])
  redis.call('HSET', KEYS[3], ARGV[3], units .. '|' .. target .. '|' .. math.floor(now_us() / 1000))
  return {1}
end
if op == 'forget' then
  local v = redis.call('HGET', KEYS[3], ARGV[2])
  if not v then
    return {0}
  end
  local ms = tonumber(string.match(v, '|([^|]*)$') or '')
  if not ms or math.floor(now_us() / 1000) - ms <= tonumber(ARGV[3]) then
    return {0}
  end
  redis.call('HDEL', KEYS[3], ARGV[2])
  return {1}
end
if op == 'retarget' then
  local v = redis.call('HGET', KEYS[3], ARGV[2])
  if not v then
    return {0}
  end
  local units, target, ts = string.match(v, '^([^|]*)|([^|]*)|(.*)$')
  if target ~= ARGV[3] then
    return {2, v}
  end
  redis.call('HSET', KEYS[3], ARGV[2], units .. '|' .. ARGV[4] .. '|' .. ts)
  return {1}
end
return redis.error_reply('inventory_transfer.lua: unknown operation ' .. tostring(op))
