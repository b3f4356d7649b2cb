-- inventory_token.lua: use a one-time grab token, or give it back (tag {A}).
-- KEYS[1] token key "sk:{A}:tok:<tokenhash>": the user hash of its owner while it is unused,
--         "<user hash>|k:<key hash>|<n>" once the reservation of that idempotency key used it,
--         n times (its attempts not given back)
-- ARGV[1] "use" or "return", ARGV[2] user hash of the caller, ARGV[3] the hash of the
-- reservation's idempotency key
-- use: the token is taken only when it belongs to the caller and is unused, so another user
--   cannot burn it; it stays bound to the reservation's key (with the TTL it had): that same
--   reservation, sent again with its key after an answer it did not get (503 OUTCOME_UNKNOWN),
--   may use it again (the reservation script then replays or makes that one reservation), any
--   other may not. Returns 1 used now (or again, by the same key) | 0 missing, expired, bound
--   to another user or used by another reservation.
-- return: an attempt of that reservation refused by the reservation script (a rate limit, a
--   recovering activity) gives its use back; once every attempt gave its use back, the token
--   is unused again, so a retry can use it (an attempt that took stock, or whose outcome is
--   unknown, never gives its use back: the token stays spent). Returns 1 given back | 0 not
--   used by that reservation (or expired since).
local v = redis.call('GET', KEYS[1])
local used = ARGV[2] .. '|k:' .. ARGV[3] .. '|'
local n = 0
if v and string.sub(v, 1, #used) == used then
  n = tonumber(string.sub(v, #used + 1)) or 0
end
if ARGV[1] == 'use' then
  if v == ARGV[2] or n > 0 then
    redis.call('SET', KEYS[1], used .. (n + 1), 'KEEPTTL')
    return 1
  end
  return 0
end
if ARGV[1] == 'return' then
  if n == 1 then
    redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  elseif n > 1 then
    redis.call('SET', KEYS[1], used .. (n - 1), 'KEEPTTL')
  else
    return 0
  end
  return 1
end
return redis.error_reply('inventory_token.lua: unknown operation ' .. tostring(ARGV[1]))
