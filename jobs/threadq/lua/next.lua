-- Takes the next item of a thread's queue for its owner, marking it in flight.
-- KEYS: 1 owner hash, 2 queue, 3 inflight
-- ARGV: 1 worker
-- Returns {"next", id}, {"empty"} or {"lost"} (the worker no longer owns the thread).
if redis.call("HGET", KEYS[1], "worker") ~= ARGV[1] then
  return {"lost"}
end
local id = redis.call("LPOP", KEYS[2])
if not id then
  redis.call("DEL", KEYS[3])
  return {"empty"}
end
redis.call("SET", KEYS[3], id)
return {"next", id}
