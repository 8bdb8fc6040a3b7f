-- Creates a record, honouring an idempotency key and the tenant's quotas; for a
-- thread, appends it to the thread's queue in the same step, so queue order is
-- acceptance order.
-- KEYS: 1 idempotency key (used if ARGV[1] == "1"), 2 record, 3 tenant index,
--       4 thread queue, 5 thread owner, 6 thread index (4-6 used if ARGV[9] == "1"),
--       7 workers zset, 8 unowned threads zset, 9 offers list,
--       10 the tenant's active (queued or running) executions zset,
--       11 the thread's profile (used if ARGV[9] == "1")
-- ARGV: 1 use_idem, 2 id, 3 request_hash, 4 status, 5 json, 6 record_ttl, 7 idem_ttl,
--       8 created_ms, 9 in_thread, 10 thread key, 11 wake key prefix,
--       12 now_ms, 13 heartbeat_ttl_ms, 14 is_execution (operations are not listed),
--       15 max active (0: none), 16 max queued on the thread (0: none),
--       17 the record's profile ("": none, for operations on an existing thread),
--       18 counted (asked for by the tenant: checked against the quotas and held
--       among the active; the service's own operations are neither), 19 the
--       record's own ttl (shorter for an awaited operation)
-- Returns {"created"|"exists", id, hash, owner}: owner is the live worker holding the
-- thread, which has been woken, or "" when the thread needs a new owner; or
-- {"quota", name, limit} when a quota refuses it, or {"profile", the thread's} when
-- the record names a profile other than its thread's (nothing is stored then).
if ARGV[1] == "1" then
  local existing = redis.call("HMGET", KEYS[1], "id", "hash")
  if existing[1] then
    return {"exists", existing[1], existing[2] or "", ""}
  end
end
local execution = ARGV[14] == "1"
local counted = ARGV[18] == "1"
if counted then
  local maxActive = tonumber(ARGV[15])
  if maxActive > 0 and redis.call("ZCARD", KEYS[10]) >= maxActive then
    return {"quota", "active", ARGV[15]}
  end
  local maxQueue = tonumber(ARGV[16])
  if ARGV[9] == "1" and maxQueue > 0 and redis.call("LLEN", KEYS[4]) >= maxQueue then
    return {"quota", "thread_queue", ARGV[16]}
  end
end
-- A thread keeps the profile its first record named.
if ARGV[9] == "1" and ARGV[17] ~= "" then
  local profile = redis.call("GET", KEYS[11])
  if profile and profile ~= ARGV[17] then
    return {"profile", profile}
  end
  redis.call("SET", KEYS[11], ARGV[17], "EX", ARGV[6])
end
if ARGV[1] == "1" then
  redis.call("HSET", KEYS[1], "id", ARGV[2], "hash", ARGV[3])
  redis.call("EXPIRE", KEYS[1], ARGV[7])
end
redis.call("HSET", KEYS[2], "status", ARGV[4], "json", ARGV[5])
redis.call("EXPIRE", KEYS[2], ARGV[19])
if execution then
  redis.call("ZADD", KEYS[3], 0, ARGV[2])
  redis.call("EXPIRE", KEYS[3], ARGV[6])
end
if counted then
  redis.call("ZADD", KEYS[10], ARGV[8], ARGV[2])
  redis.call("EXPIRE", KEYS[10], ARGV[6])
end
local owner = ""
if ARGV[9] == "1" then
  redis.call("RPUSH", KEYS[4], ARGV[2])
  if execution then
    redis.call("ZADD", KEYS[6], 0, ARGV[2])
    redis.call("EXPIRE", KEYS[6], ARGV[6])
  end
  owner = redis.call("HGET", KEYS[5], "worker") or ""
  local beat = owner ~= "" and redis.call("ZSCORE", KEYS[7], owner)
  if not beat or tonumber(beat) < tonumber(ARGV[12]) - tonumber(ARGV[13]) then
    owner = ""
    -- Offered to any worker; the sweep offers it again if nobody claims it.
    if redis.call("ZADD", KEYS[8], "NX", ARGV[12], ARGV[10]) == 1 then
      redis.call("RPUSH", KEYS[9], ARGV[10])
    end
  else
    -- The wake key is built here, so this script needs a single (non-cluster) Redis.
    redis.call("RPUSH", ARGV[11] .. owner, ARGV[10])
    redis.call("EXPIRE", ARGV[11] .. owner, 86400)
  end
end
return {"created", ARGV[2], ARGV[3], owner}
