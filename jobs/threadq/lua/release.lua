-- Lets go of a thread the worker owns under the given lease.
-- KEYS: 1 owner hash, 2 queue, 3 inflight, 4 the worker's owned set, 5 unowned zset,
--       6 offers list
-- ARGV: 1 worker, 2 thread key, 3 now_ms, 4 token
-- Returns "released_work" when work is left (the thread is then offered to others),
-- "released" when not, "not_owner" when the lease is no longer the thread's.
local own = redis.call("HMGET", KEYS[1], "worker", "token")
if own[1] ~= ARGV[1] or own[2] ~= ARGV[4] then
  return "not_owner"
end
redis.call("DEL", KEYS[1])
redis.call("SREM", KEYS[4], ARGV[2])
if redis.call("LLEN", KEYS[2]) > 0 or redis.call("EXISTS", KEYS[3]) == 1 then
  redis.call("ZADD", KEYS[5], ARGV[3], ARGV[2])
  redis.call("RPUSH", KEYS[6], ARGV[2])
  return "released_work"
end
return "released"
