-- semaphore_release: remove one holder of a semaphore.
--
-- KEYS[1] holders          <prefix>:sem:{S}          (sorted set: holder ID -> expiresAtMs)
-- ARGV[1] holder ID (22 characters)
--
-- Returns
--   1   released
--   -1  no such holder (never was, released, or dropped)
--   -2  the holder was no longer live (expired); removed
--
-- A release of a live holder is published on the sharded channel named
-- after the set (SPUBLISH; see release.lua), for the semaphore's waiters.
-- Liveness: see semaphore_acquire.lua.
local TOLERANCE_MS = 1000
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score then return -1 end
redis.call('ZREM', KEYS[1], ARGV[1])
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
if tonumber(score) <= now - TOLERANCE_MS then return -2 end
redis.pcall('SPUBLISH', KEYS[1], 'release')
return 1
