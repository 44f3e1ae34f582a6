-- semaphore_acquire: become one of at most limit live holders of a
-- semaphore, atomically.
--
-- KEYS[1] holders          <prefix>:sem:{S}          (sorted set: holder ID -> expiresAtMs)
-- KEYS[2] fence counter    <prefix>:sem:{S}:fence    (never deleted, never expires)
-- ARGV[1] holder ID (22 characters)
-- ARGV[2] ttl in ms
-- ARGV[3] limit
--
-- Returns
--   {1, fence, expiresAtMs, acquiredAtMs}  a holder now
--   {0, remainingMs}                       limit holders are live; ms until
--                                          the first of them stops being live
--                                          (expiresAt + tolerance - now, >= 1)
--
-- A holder is live while expiresAtMs > now - 1000 (tolerance), the rule of
-- leases; holders no longer live are removed first. The set itself expires
-- when its longest-lived holder stops being live (its PX only lengthens).
-- The fence follows acquire.lua's rule: the counter + 1, or the server
-- clock's floor (now in ms * 100) if that is greater, so it never goes
-- back, even if Redis lost its data. As in acquire.lua the counter is read
-- (GET) and written back as decimal digits (SET); a counter that is not 1
-- to 16 digits fails the acquire with an error before the holder is added.
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - TOLERANCE_MS)
if redis.call('ZCARD', KEYS[1]) >= ARGV[3] + 0 then
  local first = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
  return {0, math.max(tonumber(first[2]) + TOLERANCE_MS - now, 1)}
end
local fence = now * 100
local counter = redis.call('GET', KEYS[2])
if counter then
  if #counter > 16 or not string.find(counter, '^%d+$') then
    return redis.error_reply('ERR semaphore fence counter is not a number')
  end
  local inc = counter + 1 -- one conversion of the string
  if inc > fence then fence = inc end
end
redis.call('SET', KEYS[2], string.format('%d', fence))
local ttl = ARGV[2] + 0
local exp = now + ttl
redis.call('ZADD', KEYS[1], exp, ARGV[1])
if redis.call('PTTL', KEYS[1]) < ttl + TOLERANCE_MS then
  redis.call('PEXPIRE', KEYS[1], ttl + TOLERANCE_MS)
end
return {1, fence, exp, now}
