-- registry_publish: write a replica's registry entry.
--
-- KEYS[1] live replicas    <prefix>:fleet:{fleet}:replicas  (sorted set: ID -> expiry, server ms)
-- KEYS[2] the entry        <prefix>:fleet:{fleet}:replica:<id>  (JSON)
-- KEYS[3] generation       <prefix>:fleet:{fleet}:generation
-- ARGV[1] replica ID
-- ARGV[2] the entry, JSON
-- ARGV[3] how long the entry lives unless refreshed, in ms
--
-- Returns {generation, nowMs}. Entries past their expiry are removed from
-- the set (their keys have expired by themselves).
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ARGV[3], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
return {redis.call('INCR', KEYS[3]), now}
