-- Deletes one version of a skill (ARGV[2] > 0) or all of them, crediting their bytes.
-- KEYS: skill hash, names set, bytes counter, versions sorted set
-- ARGV: name, version (0: all)
-- Returns the versions deleted.
local versions = {}
if tonumber(ARGV[2]) > 0 then
  if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 1 then versions = {ARGV[2]} end
else
  versions = redis.call('HKEYS', KEYS[1])
end
local freed = 0
for _, v in ipairs(versions) do
  local meta = cjson.decode(redis.call('HGET', KEYS[1], v))
  freed = freed + (tonumber(meta['size']) or 0)
  redis.call('HDEL', KEYS[1], v)
  redis.call('ZREM', KEYS[4], v)
end
if redis.call('HLEN', KEYS[1]) == 0 then
  redis.call('SREM', KEYS[2], ARGV[1])
  redis.call('DEL', KEYS[4])
end
if freed > 0 then
  local left = redis.call('DECRBY', KEYS[3], freed)
  if left < 0 then redis.call('SET', KEYS[3], 0) end
end
return versions
