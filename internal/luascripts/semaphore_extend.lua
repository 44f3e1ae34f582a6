-- semaphore_extend: set the expiry of one holder of a semaphore to
-- server-now + ttl.
--
-- KEYS[1] holders          <prefix>:sem:{S}          (sorted set: holder ID -> expiresAtMs)
-- ARGV[1] holder ID (22 characters)
-- ARGV[2] ttl in ms
--
-- Returns
--   {1, expiresAtMs}  extended
--   -1                no such holder (never was, released, or dropped)
--   -2                the holder is no longer live (expired); nothing done
--
-- Liveness and the set's expiry: see semaphore_acquire.lua.
local TOLERANCE_MS = 1000
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return -1 end
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
if tonumber(score) <= now - TOLERANCE_MS then return -2 end
local ttl = ARGV[2] + 0
local exp = now + ttl
redis.call('ZADD', KEYS[1], 'XX', exp, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl + TOLERANCE_MS then
  redis.call('PEXPIRE', KEYS[1], ttl + TOLERANCE_MS)
end
return {1, exp}
