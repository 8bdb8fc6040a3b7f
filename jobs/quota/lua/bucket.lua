-- A token bucket: takes one token if there is one. Tokens refill at rate per second
-- up to burst. State is a hash of tokens and the time they were counted at.
-- KEYS: 1 the bucket
-- ARGV: 1 rate (tokens/s), 2 burst, 3 now_ms
-- Returns {1, 0} when a token was taken, {0, ms until the next token} when not.
local rate, burst, now = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local state = redis.call("HMGET", KEYS[1], "tokens", "at")
local tokens, at = tonumber(state[1]), tonumber(state[2])
if not tokens then
  tokens, at = burst, now
end
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local taken, wait = 0, 0
if tokens >= 1 then
  tokens, taken = tokens - 1, 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call("HSET", KEYS[1], "tokens", tostring(tokens), "at", now)
-- A full bucket needs no state: it expires once it would have refilled.
redis.call("PEXPIRE", KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return {taken, wait}
