-- Makes a worker the owner of a thread, unless another live worker holds it. An
-- owner whose heartbeat is older than the TTL is dead and is replaced.
-- KEYS: 1 owner hash, 2 inflight, 3 workers zset, 4 unowned threads zset
-- ARGV: 1 worker, 2 now_ms, 3 heartbeat_ttl_ms, 4 thread key, 5 owned-set prefix
-- Returns {"claimed", inflight} or {"owned", other_worker}.
local w = redis.call("HGET", KEYS[1], "worker")
if w and w ~= ARGV[1] then
  local beat = redis.call("ZSCORE", KEYS[3], w)
  if beat and tonumber(beat) >= tonumber(ARGV[2]) - tonumber(ARGV[3]) then
    return {"owned", w}
  end
  redis.call("SREM", ARGV[5] .. w, ARGV[4])
end
redis.call("HSET", KEYS[1], "worker", ARGV[1])
redis.call("ZREM", KEYS[4], ARGV[4])
redis.call("SADD", ARGV[5] .. ARGV[1], ARGV[4])
return {"claimed", redis.call("GET", KEYS[2]) or ""}
