-- Adds a skill version, charging its bytes to the tenant.
-- KEYS: skill hash, names set, bytes counter
-- ARGV: name, version (0: the next), the version's JSON without its version, size, quota (0: none)
-- Returns {1, version}, {-1, version} if that version exists, {-2, held} past the quota.
local v = tonumber(ARGV[2])
if v == 0 then
  v = 0
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    local n = tonumber(f)
    if n and n > v then v = n end
  end
  v = v + 1
elseif redis.call('HEXISTS', KEYS[1], tostring(v)) == 1 then
  return {-1, v}
end
local size, quota = tonumber(ARGV[4]), tonumber(ARGV[5])
local held = tonumber(redis.call('GET', KEYS[3]) or '0')
if quota > 0 and held + size > quota then
  return {-2, held}
end
redis.call('HSET', KEYS[1], tostring(v), ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('INCRBY', KEYS[3], size)
return {1, v}
