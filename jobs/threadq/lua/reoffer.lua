-- Offers again a thread that has waited unowned since before a cutoff: its offer
-- may have been lost (a worker took it and died). Only one sweeper gets each.
-- KEYS: 1 unowned threads zset, 2 owner hash, 3 workers zset, 4 offers list
-- ARGV: 1 thread key, 2 cutoff_ms, 3 now_ms, 4 heartbeat_ttl_ms
-- Returns 1 when it offered the thread again.
local since = redis.call("ZSCORE", KEYS[1], ARGV[1])
if not since or tonumber(since) > tonumber(ARGV[2]) then
  return 0
end
local w = redis.call("HGET", KEYS[2], "worker")
if w then
  local beat = redis.call("ZSCORE", KEYS[3], w)
  if beat and tonumber(beat) >= tonumber(ARGV[3]) - tonumber(ARGV[4]) then
    redis.call("ZREM", KEYS[1], ARGV[1])
    return 0
  end
end
redis.call("ZADD", KEYS[1], ARGV[3], ARGV[1])
redis.call("RPUSH", KEYS[4], ARGV[1])
return 1
