-- inventory_issued.lua: an instance reports the highest reservation numbers it handed out on
-- a recovering activity's shards (Store.reportIssued), unless the activity was archived.
-- KEYS[1] the issued hash "sk:{A}:issued"  KEYS[2] the archive's mark "sk:{A}:archived"
-- ARGV field, value pairs: "<epoch>:<shard>:<instance>" -> the highest number
-- A field keeps the larger of its number and the one reported: two reports of one instance
-- (the one made when it saw the loss, a refresh pass's) may land out of order, and a process
-- restarted under the same id knows less than it reported.
-- Returns 1 written | 0 archived: nothing written (a hash written after the archive deleted
-- the activity's keys would stay for good).
if redis.call('EXISTS', KEYS[2]) == 1 then
  return 0
end
local fields = {}
for i = 1, #ARGV, 2 do
  fields[#fields + 1] = ARGV[i]
end
local cur = redis.call('HMGET', KEYS[1], unpack(fields))
local set = {}
for j, f in ipairs(fields) do
  local n, old = ARGV[2 * j], tonumber(cur[j])
  if not old or tonumber(n) > old then
    set[#set + 1] = f
    set[#set + 1] = n
  end
end
if #set > 0 then
  redis.call('HSET', KEYS[1], unpack(set))
end
return 1
