-- Returns the latest version of a skill and its JSON, or an empty reply.
-- KEYS: skill hash, versions sorted set
-- A skill stored before the sorted set existed is not indexed yet: its versions are
-- read from the hash (read only; the next add indexes it).
local v
local top = redis.call('ZREVRANGE', KEYS[2], 0, 0)
if top[1] then
  v = top[1]
else
  local n = 0
  for _, f in ipairs(redis.call('HKEYS', KEYS[1])) do
    local m = tonumber(f)
    if m and m > n then n = m end
  end
  if n == 0 then return {} end
  v = tostring(n)
end
local meta = redis.call('HGET', KEYS[1], v)
if not meta then return {} end
return {v, meta}
