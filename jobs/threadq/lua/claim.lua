-- Makes a worker the owner of a thread, unless another live worker holds it. An
-- owner whose heartbeat is older than the TTL is dead and is replaced.
--
-- Every claim gets a fencing token larger than any the thread had before: the
-- larger of the last token + 1 and Redis's clock in microseconds. The clock keeps
-- tokens growing even when a Redis crash lost the last claims (AOF everysec loses up
-- to a second of writes, and a restart takes longer than that), so a stale owner's
-- token is always the smaller one. Every later step of the owner presents its token.
-- KEYS: 1 owner hash, 2 inflight, 3 workers zset, 4 unowned threads zset, 5 last token
-- ARGV: 1 worker, 2 now_ms, 3 heartbeat_ttl_ms, 4 thread key, 5 owned-set prefix
-- Returns {"claimed", inflight, token} or {"owned", other_worker}.
local w = redis.call("HGET", KEYS[1], "worker")
if w and w ~= ARGV[1] then
  local beat = redis.call("ZSCORE", KEYS[3], w)
  if beat and tonumber(beat) >= tonumber(ARGV[2]) - tonumber(ARGV[3]) then
    return {"owned", w}
  end
  redis.call("SREM", ARGV[5] .. w, ARGV[4])
end
local t = redis.call("TIME")
local token = tonumber(t[1]) * 1000000 + tonumber(t[2])
local last = tonumber(redis.call("GET", KEYS[5]) or "0")
if token <= last then
  token = last + 1
end
token = string.format("%.0f", token)
redis.call("SET", KEYS[5], token, "PX", 2592000000)
redis.call("HSET", KEYS[1], "worker", ARGV[1], "token", token)
redis.call("ZREM", KEYS[4], ARGV[4])
redis.call("SADD", ARGV[5] .. ARGV[1], ARGV[4])
return {"claimed", redis.call("GET", KEYS[2]) or "", token}
