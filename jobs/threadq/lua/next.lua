-- Takes the next item of a thread's queue for its owner, marking it in flight.
-- KEYS: 1 owner hash, 2 queue, 3 inflight
-- ARGV: 1 worker, 2 token
-- Returns {"next", id}, {"empty"} or {"lost"} (the lease is no longer the thread's).
local own = redis.call("HMGET", KEYS[1], "worker", "token")
if own[1] ~= ARGV[1] or own[2] ~= ARGV[2] then
  return {"lost"}
end
local id = redis.call("LPOP", KEYS[2])
if not id then
  redis.call("DEL", KEYS[3])
  return {"empty"}
end
redis.call("SET", KEYS[3], id)
return {"next", id}
