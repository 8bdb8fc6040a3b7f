-- Puts the item a worker took back at the head of its thread's queue, as if it had
-- never been taken: only if the worker still owns the thread and the item is the one
-- in flight, so an item is never queued twice nor handed back by a stale owner.
-- KEYS: 1 owner hash, 2 queue, 3 inflight
-- ARGV: 1 worker, 2 item id
-- Returns "requeued", "lost" (the worker no longer owns the thread) or "not_inflight".
if redis.call("HGET", KEYS[1], "worker") ~= ARGV[1] then
  return "lost"
end
if redis.call("GET", KEYS[3]) ~= ARGV[2] then
  return "not_inflight"
end
redis.call("LPUSH", KEYS[2], ARGV[2])
redis.call("DEL", KEYS[3])
return "requeued"
