-- waitroom_unpass.lua: give a used waiting-room pass back (tag {A}): the reservation it was
-- used for was refused by the reservation script (a rate limit, sold out), so the buyer's
-- turn is not over. The pass becomes live again with its first admission time, so it expires
-- when it would have; one already expired stays used.
-- KEYS[1] live passes zset "sk:{A}:q:live": place -> Redis ms admitted
-- KEYS[2] used passes hash "sk:{A}:q:used": place -> the key of the reservation that used it
-- KEYS[3] admissions hash "sk:{A}:q:adm": place -> Redis ms it was admitted
-- ARGV[1] place, ARGV[2] pass lifetime, ms
-- Returns 1 given back | 0 not used, or expired since.
if redis.call('HEXISTS', KEYS[2], ARGV[1]) == 0 then return 0 end
local at = tonumber(redis.call('HGET', KEYS[3], ARGV[1]))
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if not at or at < now - tonumber(ARGV[2]) then return 0 end
redis.call('HDEL', KEYS[2], ARGV[1])
redis.call('ZADD', KEYS[1], at, ARGV[1])
return 1
