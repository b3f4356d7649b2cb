-- inventory_ack.lua: acknowledge journal entries the relay has handed to the queue.
-- KEYS[1] journal stream, KEYS[2] stats hash (same shard, same hash tag)
-- ARGV[1] consumer group; then pairs ARGV[2k]=entry id, ARGV[2k+1]=quantity in units
-- For each entry: XACK; only when XACK acknowledged it (it was still pending) add its
-- quantity to stats.relayed, so two relays that both sent a claimed entry count it once,
-- and delete the entry (XDEL): RocketMQ holds it now, so the journal does not grow with
-- the sale (the stats hash keeps the counts reconciliation needs).
-- Returns {acked entries, units added to relayed}.
local acked, units = 0, 0
for i = 2, #ARGV, 2 do
  local n = redis.call('XACK', KEYS[1], ARGV[1], ARGV[i])
  if n == 1 then
    redis.call('XDEL', KEYS[1], ARGV[i])
    local q = tonumber(ARGV[i + 1]) or 0
    acked = acked + 1
    units = units + q
  end
end
if units > 0 then
  redis.call('HINCRBY', KEYS[2], 'relayed', units)
end
return {acked, units}
