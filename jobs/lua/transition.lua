-- Saves a record if its stored status is one of the expected ones.
-- KEYS[1] record key, KEYS[2] done channel
-- ARGV: new_status, json, is_terminal, id, expected_status...
-- Returns {"ok"|"no", stored_status}.
local current = redis.call("HGET", KEYS[1], "status")
if not current then
  return {"no", ""}
end
for i = 5, #ARGV do
  if ARGV[i] == current then
    redis.call("HSET", KEYS[1], "status", ARGV[1], "json", ARGV[2])
    if ARGV[3] == "1" then
      redis.call("PUBLISH", KEYS[2], ARGV[4])
    end
    return {"ok", current}
  end
end
return {"no", current}
