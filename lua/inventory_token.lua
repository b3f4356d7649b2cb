-- inventory_token.lua: consume a one-time grab token (tag {A}).
-- KEYS[1] token key "sk:{A}:tok:<tokenhash>"
-- ARGV[1] user hash of the caller
-- The token is deleted only when it belongs to the caller, so another user cannot burn it.
-- Returns 1 consumed | 0 missing, expired or bound to another user.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
