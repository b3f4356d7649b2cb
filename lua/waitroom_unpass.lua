-- waitroom_unpass.lua: give a used waiting-room pass back (tag {A}): the reservation it was
-- used for was refused by the reservation script (a rate limit, sold out), so the buyer's
-- turn is not over. The pass becomes live again with its first admission time, so it expires
-- when it would have; one already expired stays used. Only the reservation that used it gives
-- it back, on the line that gave the place to the user (waitroom_pass.lua's checks): a pass of
-- a line Redis lost since names another buyer's place, whose used pass stays used. Each
-- attempt of that reservation gives back its own use: the pass is live again only once every
-- attempt that used it did (one that took stock, or whose outcome is unknown, never does).
-- KEYS[1] live passes zset "sk:{A}:q:live": place -> Redis ms admitted
-- KEYS[2] used passes hash "sk:{A}:q:used": place -> "k:<key hash>|<n>" (waitroom_pass.lua)
-- KEYS[3] admissions hash "sk:{A}:q:adm": place -> Redis ms it was admitted
-- KEYS[4] places hash "sk:{A}:q:users": user hash -> ticket number
-- KEYS[5] state hash "sk:{A}:q:st" (field seed)
-- ARGV[1] place, ARGV[2] pass lifetime, ms, ARGV[3] the hash of the reservation's idempotency
-- key, ARGV[4] user hash, ARGV[5] the pass's ticket, ARGV[6] the seed of its line's order
-- Returns 1 given back | 0 not used by that reservation, not the user's place, or expired since.
local by = 'k:' .. ARGV[3] .. '|'
local u = redis.call('HGET', KEYS[2], ARGV[1])
local n = 0
if u and string.sub(u, 1, #by) == by then n = tonumber(string.sub(u, #by + 1)) or 0 end
if n == 0 or redis.call('HGET', KEYS[4], ARGV[4]) ~= ARGV[5] or redis.call('HGET', KEYS[5], 'seed') ~= ARGV[6] then
  return 0
end
if n > 1 then
  redis.call('HSET', KEYS[2], ARGV[1], by .. (n - 1))
  return 1
end
local at = tonumber(redis.call('HGET', KEYS[3], ARGV[1]))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not at or at < now - tonumber(ARGV[2]) then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], at, ARGV[1])
return 1
