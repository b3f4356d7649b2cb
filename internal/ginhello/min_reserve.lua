-- min_reserve.lua: the one-round-trip ceiling of docs/BENCHMARKS.md, the irreducible work of a
-- reservation: take stock and append a journal entry of the service's form and size.
-- KEYS[1] stock (an integer), KEYS[2] journal (a stream)
-- ARGV[1] reservation id, ARGV[2] activity id, ARGV[3] user id, ARGV[4] user hash,
-- ARGV[5] quantity, ARGV[6] shard, ARGV[7] epoch
-- Returns {1, id, left} when taken, {2, left} when the stock is short (given back).
local qty = tonumber(ARGV[5])
local left = redis.call('DECRBY', KEYS[1], qty)
if left < 0 then
  redis.call('INCRBY', KEYS[1], qty)
  return {2, left + qty}
end
local t = redis.call('TIME')
local now_ms = t[1] * 1000 + math.floor(t[2] / 1000)
-- the service's entry form (inventory.ParseJournalEntry): the activity, epoch and shard are the id's
redis.call('XADD', KEYS[2], '*', 'e', ARGV[1] .. '|' .. ARGV[5] .. '|' .. left .. '|' .. now_ms .. '|' .. ARGV[4] .. '||' .. ARGV[3])
return {1, ARGV[1], left}
