-- inventory_reserve_batch.lua: several reservations in one call (the group commit of
-- inventory/batch.go), on one or more stock shards of one layout: on a single Redis node a
-- call carries any shards (a script's keys need no common slot there), on a cluster the
-- shards of one slot, that is one. Each runs exactly as inventory_reserve.lua would run it on
-- its shard, one after the other in the order given, so two reservations of one user or of
-- one idempotency key in a batch meet each other as if sent one after the other (a user's
-- reservations are on its home shard, so one shard holds its state).
-- KEYS: six per shard, in the single script's order (stock, users, seq, journal, stats,
-- generation), the shards in the order of ARGV's shard list; with the IP bucket (single node
-- only), then one IP bucket key per reservation, in order (its KEYS[7]).
-- ARGV[1..20] the single script's ARGV for the first reservation (ARGV[19], ARGV[20] the IP
-- bucket's rate and burst, "0" without it): activity, limits, times, epoch, issuer and call
-- number are the batch's; its reservations' numbers differ, so their ids do. ARGV[21] the
-- number of shards G, then three per shard (its number, the generation mark and the floor of
-- numbers the caller gives it: the single script's ARGV[14], ARGV[15], ARGV[16]), then five
-- per reservation, the first included: its shard's place in that list (1..G), user id, user
-- hash, quantity, idempotency field ("" none), which replace ARGV[2], ARGV[3], ARGV[4] and
-- ARGV[12].
-- Returns one answer per reservation, in order, each as inventory_reserve.lua answers it; a
-- reservation that fails (an error reply of its own, or one it raised: a corrupt user state,
-- a command refused) gets an error answer in its place and writes nothing, and the others
-- are answered and written as if it had not been sent (all or nothing per reservation); a
-- refusal of the node's state (READONLY, NOREPLICAS, MISCONF, OOM) fails the whole call. A
-- shard is read once before its first reservation (MGET, stats.taken's HGET, the mark's
-- HEXISTS; a shard that raises there, on a key of the wrong type, fails its own reservations
-- alone) and its stock,
-- counter and taken statistic written once after the call's last; Redis TIME is read once,
-- and each IP bucket once before its first attempt and written once after every shard's
-- close (lib_reserve.lua call_open, call_close).
--#include lib_reserve.lua
-- the errors a node refuses a script's first write with, for its state, not the data's
local state_refusals = {READONLY = true, NOREPLICAS = true, MISCONF = true, OOM = true}
-- refusal_of is the message of an error a pcall caught, raised again when it is the node's
-- state's (the whole call's, see below)
local function refusal_of(e)
  if type(e) == 'table' then e = e.err end -- a command's error (a refusal comes as a string)
  e = tostring(e)
  if state_refusals[string.match(e, '^(%u+) ')] then error({err = e}) end
  return e
end
local g = tonumber(ARGV[21])
local base = 21 + 3 * g
local n = (#ARGV - base) / 5
local ip = #KEYS > 6 * g
local a = {}
for i = 1, 20 do a[i] = ARGV[i] end
local cx = call_open(a)
local shards, out = {}, {}
for i = 1, n do
  local b = base + 5 * (i - 1)
  local j = tonumber(ARGV[b + 1])
  local s = shards[j]
  local d = 21 + 3 * (j - 1)
  a[14], a[15], a[16] = ARGV[d + 1], ARGV[d + 2], ARGV[d + 3]
  if not s then
    local o = 6 * (j - 1)
    s = {k = {KEYS[o + 1], KEYS[o + 2], KEYS[o + 3], KEYS[o + 4], KEYS[o + 5], KEYS[o + 6]}}
    -- A shard that raises on opening (a key of the wrong type) wrote nothing: its
    -- reservations get its error, the others of the call are sold and closed.
    local ok, sh, refused = pcall(shard_open, s.k, a, cx)
    if ok then
      s.sh, s.refused = sh, refused
    else
      s.refused = redis.error_reply('seckill: shard ' .. s.k[1] .. ' failed: ' .. refusal_of(sh))
    end
    shards[j] = s
  end
  if not s.sh then
    out[i] = s.refused
  else
    a[2], a[3], a[4], a[12] = ARGV[b + 2], ARGV[b + 3], ARGV[b + 4], ARGV[b + 5]
    if ip then s.k[7] = KEYS[6 * g + i] else s.k[7] = nil end
    -- A reservation that raises (a Lua error on a corrupt state, a command refused) writes
    -- nothing before it does (lib_reserve.lua): it fails alone, with an error answer of
    -- its own, and the others of the call are answered and closed as if it had not been sent.
    -- A refusal of the node's state (READONLY, NOREPLICAS, MISCONF, OOM) comes only at the
    -- call's first write, before anything is written, and is the whole call's: raised again,
    -- the call fails with it as the single script does, so the client sees the server's error
    -- (and drops a connection to a demoted master). Any other error (ERR, WRONGTYPE, an ACL's
    -- NOPERM, checked on every command) may come after an earlier reservation wrote: it is
    -- answered alone, so shard_close still counts what the others sold (and the IP buckets'
    -- SETs at the call's end, call_close, log theirs and let the sales stand).
    local ok, r = pcall(answer_on, s.k, a, s.sh, cx)
    if not ok then
      r = redis.error_reply('seckill: reservation of ' .. a[3] .. ' failed: ' .. refusal_of(r))
    end
    out[i] = r
  end
end
for j = 1, g do
  local s = shards[j]
  if s and s.sh then shard_close(s.k, s.sh) end
end
call_close(cx)
return out
