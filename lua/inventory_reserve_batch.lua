-- inventory_reserve_batch.lua: several reservations on one home stock shard in one call (the
-- group commit of inventory/batch.go). Each runs exactly as inventory_reserve.lua would run
-- it, one after the other in the order given, so two reservations of one user or of one
-- idempotency key in a batch meet each other as if sent one after the other.
-- KEYS[1..6] the single script's KEYS[1..6]; with the IP bucket (single node only), then one
-- IP bucket key per reservation, in order (its KEYS[7]).
-- ARGV[1..20] the single script's ARGV for the first reservation (ARGV[19], ARGV[20] the IP
-- bucket's rate and burst, "0" without it); each further reservation adds four: user id,
-- user hash, quantity, idempotency field ("" none), which replace ARGV[2], ARGV[3], ARGV[4]
-- and ARGV[12]; everything else (activity, limits, times, epoch, shard, generation mark,
-- floor, issuer and call number) is the batch's: its reservations' numbers differ, so their
-- ids do.
-- Returns one answer per reservation, in order, each as inventory_reserve.lua answers it. The
-- shard is read once before the first (MGET, the mark's HEXISTS, TIME) and its stock, counter
-- and taken statistic written once after the last (lib_reserve.lua).
--#include lib_reserve.lua
local n = 1 + (#ARGV - 20) / 4
local ip = #KEYS > 6
local k = {KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]}
local a = {}
for i = 1, 20 do a[i] = ARGV[i] end
local out = {}
local sh, refused = shard_open(k, a) -- the same for all: the shard, its mark and floor are the batch's
for i = 1, n do
  if not sh then
    out[i] = refused
  else
    if i > 1 then
      local b = 20 + 4 * (i - 2)
      a[2], a[3], a[4], a[12] = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
    end
    if ip then k[7] = KEYS[6 + i] end
    out[i] = answer_on(k, a, sh)
  end
end
if sh then shard_close(k, sh) end
return out
