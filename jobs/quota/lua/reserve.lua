-- Adds n to a counter if the total stays within limit.
-- KEYS: 1 the counter
-- ARGV: 1 n, 2 limit, 3 ttl_s
-- Returns {1, total} when added, {0, total} when the limit refused it.
local total = tonumber(redis.call("GET", KEYS[1]) or "0")
local n, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
if total + n > limit then
  return {0, total}
end
total = redis.call("INCRBY", KEYS[1], n)
redis.call("EXPIRE", KEYS[1], ARGV[3])
return {1, total}
