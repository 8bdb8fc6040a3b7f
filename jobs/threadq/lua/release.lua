-- Lets go of a thread the worker owns.
-- KEYS: 1 owner hash, 2 queue, 3 inflight, 4 the worker's owned set, 5 unowned zset,
--       6 offers list
-- ARGV: 1 worker, 2 thread key, 3 now_ms
-- Returns "released_work" when work is left (the thread is then offered to others),
-- "released" when not, "not_owner" when the worker did not own it.
if redis.call("HGET", KEYS[1], "worker") ~= ARGV[1] then
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
