-- Creates an execution record, honouring an idempotency key.
-- KEYS[1] idempotency key (ignored unless ARGV[1] is "1"), KEYS[2] record key
-- ARGV: use_idem, id, request_hash, status, json, record_ttl, idem_ttl
-- Returns {"created", id, hash} or {"exists", existing_id, existing_hash}.
if ARGV[1] == "1" then
  local existing = redis.call("HMGET", KEYS[1], "id", "hash")
  if existing[1] then
    return {"exists", existing[1], existing[2] or ""}
  end
  redis.call("HSET", KEYS[1], "id", ARGV[2], "hash", ARGV[3])
  redis.call("EXPIRE", KEYS[1], ARGV[7])
end
redis.call("HSET", KEYS[2], "status", ARGV[4], "json", ARGV[5])
redis.call("EXPIRE", KEYS[2], ARGV[6])
return {"created", ARGV[2], ARGV[3]}
