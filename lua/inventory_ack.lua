-- inventory_ack.lua: acknowledge journal entries the relay has handed to the queue.
-- KEYS[1] journal stream, KEYS[2] stats hash (same shard, same hash tag)
-- ARGV[1] consumer group; then pairs ARGV[2k]=entry id, ARGV[2k+1]=quantity in units
-- For each entry: XACK; only when XACK acknowledged it (it was still pending) add its
-- quantity to stats.relayed, so two relays that both sent a claimed entry count it once.
-- Then, when this call acknowledged any, the journal is trimmed (XTRIM MINID) below the
-- oldest entry the group still needs: the oldest pending one, or, with none pending, the
-- first never delivered (every entry up to the group's last delivered id is acknowledged).
-- RocketMQ holds those now, so the journal does not grow with the sale (the stats hash keeps
-- the counts reconciliation needs). An entry acknowledged behind an older pending one stays
-- until that one is acknowledged: one trim per call costs a fraction of an XDEL per entry.
-- Returns {acked entries, units added to relayed}.
local acked, units = 0, 0
for i = 2, #ARGV, 2 do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    acked = acked + 1
    units = units + (tonumber(ARGV[i + 1]) or 0)
  end
end
if units > 0 then
  redis.call('HINCRBY', KEYS[2], 'relayed', units)
end
if acked > 0 then
  local p = redis.call('XPENDING', KEYS[1], ARGV[1])
  if p[1] > 0 then
    redis.call('XTRIM', KEYS[1], 'MINID', p[2])
  else
    local last
    for _, g in ipairs(redis.call('XINFO', 'GROUPS', KEYS[1])) do
      local f = {}
      for j = 1, #g, 2 do f[g[j]] = g[j + 1] end
      if f['name'] == ARGV[1] then last = f['last-delivered-id'] end
    end
    if last then
      -- below the last delivered id, then that one: MINID keeps the id it is given
      redis.call('XTRIM', KEYS[1], 'MINID', last)
      redis.call('XDEL', KEYS[1], last)
    end
  end
end
return {acked, units}
