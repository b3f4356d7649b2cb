-- app_restorejob.lua: the fleet's one record of an activity's restore job (app/restore.go), a
-- hash: state, job (the JSON GET answers), token (the runner's), until (Redis ms: the
-- runner's claim holds until then; a run is bounded well below it).
-- KEYS[1] the job's hash
-- ARGV[1] operation, then:
-- start  ARGV[2] token  ARGV[3] job JSON (RUNNING)  ARGV[4] claim ms  ARGV[5] ttl ms:
--   claims the job for token unless a RUNNING job's claim still holds.
--   Returns {1} claimed | {0, job JSON} the running job.
-- finish ARGV[2] token  ARGV[3] state  ARGV[4] job JSON  ARGV[5] ttl ms: records the
--   terminal state only while token holds the claim. Returns {1} | {0} not the runner.
-- get: the job as recorded. Returns {} none | {job JSON, 1 when it is RUNNING past its claim:
--   its runner stopped (the instance died or restarted) without recording an outcome, 0 else}.
--#include lib_time.lua
local op = ARGV[1]
local now = math.floor(now_us() / 1000)
if op == 'start' then
  local st = redis.call('HGET', KEYS[1], 'state')
  local untl = tonumber(redis.call('HGET', KEYS[1], 'until') or '0') or 0
  if st == 'RUNNING' and untl > now then
    return {0, redis.call('HGET', KEYS[1], 'job')}
  end
  redis.call('HSET', KEYS[1], 'state', 'RUNNING', 'job', ARGV[3], 'token', ARGV[2], 'until', now + tonumber(ARGV[4]))
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return {1}
end
if op == 'finish' then
  if redis.call('HGET', KEYS[1], 'token') ~= ARGV[2] then
    return {0}
  end
  redis.call('HSET', KEYS[1], 'state', ARGV[3], 'job', ARGV[4], 'until', 0)
  redis.call('PEXPIRE', KEYS[1], ARGV[5])
  return {1}
end
if op == 'get' then
  local h = redis.call('HMGET', KEYS[1], 'job', 'state', 'until')
  if not h[1] then
    return {}
  end
  local lapsed = 0
  if h[2] == 'RUNNING' and (tonumber(h[3] or '0') or 0) <= now then
    lapsed = 1
  end
  return {h[1], lapsed}
end
return redis.error_reply('app_restorejob.lua: unknown operation ' .. tostring(op))
