-- semaphore_held: count the live holders of a semaphore. Read-only.
--
-- KEYS[1] holders          <prefix>:sem:{S}          (sorted set: holder ID -> expiresAtMs)
--
-- Returns the number of holders whose expiresAtMs > now - 1000 (see
-- semaphore_acquire.lua).
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
return redis.call('ZCOUNT', KEYS[1], '(' .. (now - TOLERANCE_MS), '+inf')
