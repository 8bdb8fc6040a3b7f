-- Puts the item a worker took back at the head of its thread's queue, as if it had
-- never been taken: only if the worker's lease is still the thread's and the item is
-- the one in flight, so an item is never queued twice nor handed back by a stale owner.
-- KEYS: 1 owner hash, 2 queue, 3 inflight
-- ARGV: 1 worker, 2 item id, 3 token
-- Returns "requeued", "lost" (the lease is no longer the thread's) or "not_inflight".
local own = redis.call("HMGET", KEYS[1], "worker", "token")
if own[1] ~= ARGV[1] or own[2] ~= ARGV[3] then
  return "lost"
end
if redis.call("GET", KEYS[3]) ~= ARGV[2] then
  return "not_inflight"
end
redis.call("LPUSH", KEYS[2], ARGV[2])
redis.call("DEL", KEYS[3])
return "requeued"
