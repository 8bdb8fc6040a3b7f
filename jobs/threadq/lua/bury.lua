-- Frees the threads of a worker whose heartbeat stopped. Only one of several
-- concurrent sweepers gets to do it (the one whose ZREM removes the worker).
-- KEYS: 1 workers zset, 2 the dead worker's owned set, 3 ready-workers zset,
--       4 unowned threads zset, 5 offers list
-- ARGV: 1 worker, 2 now_ms, 3 heartbeat_ttl_ms, 4 thread key prefix (P.."t:")
-- Returns the thread keys that have work left; they are offered to other workers.
local beat = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not beat or tonumber(beat) >= tonumber(ARGV[2]) - tonumber(ARGV[3]) then
  return {}
end
redis.call("ZREM", KEYS[1], ARGV[1])
redis.call("ZREM", KEYS[3], ARGV[1])
local orphans = {}
for _, tk in ipairs(redis.call("SMEMBERS", KEYS[2])) do
  local own = ARGV[4] .. tk .. ":own"
  if redis.call("HGET", own, "worker") == ARGV[1] then
    redis.call("DEL", own)
    if redis.call("LLEN", ARGV[4] .. tk .. ":q") > 0 or redis.call("EXISTS", ARGV[4] .. tk .. ":inflight") == 1 then
      table.insert(orphans, tk)
      redis.call("ZADD", KEYS[4], ARGV[2], tk)
      redis.call("RPUSH", KEYS[5], tk)
    end
  end
end
redis.call("DEL", KEYS[2])
return orphans
