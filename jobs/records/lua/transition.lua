-- Saves a record if its stored status is one of the expected ones, and appends the
-- change to the execution's event stream (and, when it ended, announces that and
-- drops it from the tenant's active executions), in the same atomic step, so a
-- stream reader never misses the end.
-- A thread's owner presents its lease: KEYS[5] is then the thread's owner hash
-- (jobs/threadq's), and the change is refused unless the lease is still the thread's,
-- so a stale owner can neither start nor end an item.
-- KEYS[1] record key, KEYS[2] done channel, KEYS[3] event stream,
-- KEYS[4] the tenant's active executions zset, KEYS[5] (optional) owner hash
-- ARGV: new_status, json, is_terminal, id, stream_ttl_s, worker, token, expected_status...
-- Returns {"ok"|"no", stored_status} or {"fenced", owner}.
if KEYS[5] then
  local own = redis.call("HMGET", KEYS[5], "worker", "token")
  if own[1] ~= ARGV[6] or own[2] ~= ARGV[7] then
    return {"fenced", own[1] or ""}
  end
end
local current = redis.call("HGET", KEYS[1], "status")
if not current then
  return {"no", ""}
end
for i = 8, #ARGV do
  if ARGV[i] == current then
    redis.call("HSET", KEYS[1], "status", ARGV[1], "json", ARGV[2])
    if ARGV[1] ~= current then
      redis.call("XADD", KEYS[3], "MAXLEN", "~", "10000", "*", "type", "status", "data", '{"status":"' .. ARGV[1] .. '"}')
    end
    if ARGV[3] == "1" then
      redis.call("XADD", KEYS[3], "*", "type", "done", "data", "{}")
      redis.call("PUBLISH", KEYS[2], ARGV[4])
      redis.call("ZREM", KEYS[4], ARGV[4])
    end
    redis.call("EXPIRE", KEYS[3], ARGV[5])
    return {"ok", current}
  end
end
return {"no", current}
