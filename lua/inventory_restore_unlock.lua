-- inventory_restore_unlock.lua: release the restore lock of an activity only if it still
-- holds the token of the restore that took it (inventory/restore.go Store.Unlock).
-- KEYS[1] the restore lock "sk:{A}:restoring"
-- ARGV[1] the lock's token (Store.Fence)
-- Returns 1 released | 0 not ours (expired and maybe taken by another restore) or gone.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
