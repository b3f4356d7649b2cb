-- inventory_ack.lua: acknowledge journal entries the relay has handed to the queue.
-- KEYS[1] journal stream, KEYS[2] stats hash (same shard, same hash tag)
-- ARGV[1] consumer group; then pairs ARGV[2k]=entry id, ARGV[2k+1]=quantity in units
-- For each entry: XACK; only when XACK acknowledged it (it was still pending) add its
-- quantity to stats.relayed, so two relays that both sent a claimed entry count it once.
-- Then the entries acknowledged now leave the journal (RocketMQ holds them; the stats hash
-- keeps the counts reconciliation needs), so the journal holds exactly the entries not yet
-- acknowledged, as when each was deleted on its own: a group created again reads none twice,
-- and a layout's journal empties once all are acknowledged. Most go with one trim: below the
-- oldest entry the group still needs (the oldest pending one; with none pending, every entry
-- up to the group's last delivered id is acknowledged). Only those acknowledged ahead of an
-- older pending one are deleted by id: one XDEL per entry cost four times its XACK.
-- Returns {acked entries, units added to relayed}.
local acked, units = {}, 0
for i = 2, #ARGV, 2 do
  if redis.call('XACK', KEYS[1], ARGV[1], ARGV[i]) == 1 then
    acked[#acked + 1] = ARGV[i]
    units = units + (tonumber(ARGV[i + 1]) or 0)
  end
end
if units > 0 then
  redis.call('HINCRBY', KEYS[2], 'relayed', units)
end
if #acked > 0 then
  local p = redis.call('XPENDING', KEYS[1], ARGV[1])
  if p[1] > 0 then
    local oldest = p[2]
    redis.call('XTRIM', KEYS[1], 'MINID', oldest)
    -- (an id XACK took may leave out its sequence: "<ms>" is "<ms>-0")
    local oms, oseq = string.match(oldest, '^(%d+)-?(%d*)$')
    oms, oseq = tonumber(oms), tonumber(oseq) or 0
    local ahead = {}
    for _, id in ipairs(acked) do
      local ms, seq = string.match(id, '^(%d+)-?(%d*)$')
      ms, seq = tonumber(ms), tonumber(seq) or 0
      if ms > oms or ms == oms and seq > oseq then ahead[#ahead + 1] = id end
    end
    if #ahead > 0 then
      redis.call('XDEL', KEYS[1], unpack(ahead))
    end
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
return {#acked, units}
