-- Adds a skill version, charging its bytes to the tenant.
-- KEYS: skill hash, names set, bytes counter, versions sorted set
-- ARGV: name, version (0: the next), the version's JSON without its version, size,
--       quota (0: none), the most versions a skill may have (0: none)
-- Returns {1, version}, {-1, version} if that version exists, {-2, held} past the
-- quota, {-3, count} when the skill has as many versions as it may.
-- The sorted set indexes the hash's versions, so that the latest is read without the
-- others; a skill stored before it existed is indexed here, once.
if redis.call('EXISTS', KEYS[4]) == 0 then
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    local n = tonumber(f)
    if n then redis.call('ZADD', KEYS[4], n, f) end
  end
end
local v = tonumber(ARGV[2])
if v == 0 then
  local top = redis.call('ZREVRANGE', KEYS[4], 0, 0, 'WITHSCORES')
  v = 1
  if top[2] then v = tonumber(top[2]) + 1 end
elseif redis.call('HEXISTS', KEYS[1], tostring(v)) == 1 then
  return {-1, v}
end
local most = tonumber(ARGV[6])
local count = redis.call('ZCARD', KEYS[4])
if most > 0 and count >= most then
  return {-3, count}
end
local size, quota = tonumber(ARGV[4]), tonumber(ARGV[5])
local held = tonumber(redis.call('GET', KEYS[3]) or '0')
if quota > 0 and held + size > quota then
  return {-2, held}
end
redis.call('HSET', KEYS[1], tostring(v), ARGV[3])
redis.call('ZADD', KEYS[4], v, tostring(v))
redis.call('SADD', KEYS[2], ARGV[1])
redis.call('INCRBY', KEYS[3], size)
return {1, v}
