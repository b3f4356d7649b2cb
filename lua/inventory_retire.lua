-- inventory_retire.lua: retire a drained layout of an activity in its meta hash (tag {A});
-- inventory/retire.go checks what the layout's shards hold and deletes their keys.
-- KEYS[1] meta
-- ARGV[1] operation, then:
-- stamp  ARGV[2..] epochs: records, once per epoch, when a retirer first saw the layout
--   drained and not current (meta "retire.<e>" = Redis ms). Returns the age (ms) of each
--   epoch's stamp, in ARGV order.
-- retire ARGV[2] "<e>:<n>"  ARGV[3..9] the layout's stats summed over its shards (taken,
--   relayed, confirmed, failed, compensated, xout, xin): when layouts names "<e>:<n>" and e is
--   below the current epoch, removes it from layouts, adds the sums to meta "retired.<name>"
--   (reconciliation counts them: Ledger.Counts), appends "<e>:<n>:<ms now>" to gc (the
--   layouts whose keys are being deleted) and drops the stamp. Once per layout: a second
--   retirer finds it gone. Returns {1} retired now | {0} not (already, or current).
-- done   ARGV[2] "<e>:<n>": removes the layout's entry from gc. Returns {1}.
--#include lib_time.lua
local op = ARGV[1]
local function without(list, drop)
  local out = {}
  for part in string.gmatch(list, '[^,]+') do
    if not drop(part) then out[#out + 1] = part end
  end
  return table.concat(out, ',')
end
if op == 'stamp' then
  local now = math.floor(now_us() / 1000)
  local ages = {}
  for i = 2, #ARGV do
    local f = 'retire.' .. ARGV[i]
    redis.call('HSETNX', KEYS[1], f, now)
    ages[#ages + 1] = now - tonumber(redis.call('HGET', KEYS[1], f))
  end
  return ages
end
if op == 'retire' then
  local lay = ARGV[2]
  local e = string.match(lay, '^(%d+):')
  local layouts = redis.call('HGET', KEYS[1], 'layouts') or ''
  local named = false
  for part in string.gmatch(layouts, '[^,]+') do
    if part == lay then named = true end
  end
  if not named or tonumber(e) >= tonumber(redis.call('HGET', KEYS[1], 'epoch') or '0') then
    return {0}
  end
  redis.call('HSET', KEYS[1], 'layouts', without(layouts, function(p) return p == lay end))
  local names = {'taken', 'relayed', 'confirmed', 'failed', 'compensated', 'xout', 'xin'}
  for i, name in ipairs(names) do
    local v = tonumber(ARGV[2 + i])
    if v ~= 0 then redis.call('HINCRBY', KEYS[1], 'retired.' .. name, v) end
  end
  local gc = redis.call('HGET', KEYS[1], 'gc') or ''
  local entry = lay .. ':' .. math.floor(now_us() / 1000)
  if gc == '' then gc = entry else gc = gc .. ',' .. entry end
  redis.call('HSET', KEYS[1], 'gc', gc)
  redis.call('HDEL', KEYS[1], 'retire.' .. e)
  return {1}
end
if op == 'done' then
  local lay = ARGV[2]
  local gc = without(redis.call('HGET', KEYS[1], 'gc') or '', function(p)
    return string.sub(p, 1, #lay + 1) == lay .. ':'
  end)
  if gc == '' then redis.call('HDEL', KEYS[1], 'gc') else redis.call('HSET', KEYS[1], 'gc', gc) end
  return {1}
end
return redis.error_reply('inventory_retire.lua: unknown operation ' .. tostring(op))
