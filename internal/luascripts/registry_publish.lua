-- registry_publish: write a replica's registry entry.
--
-- KEYS[1] live replicas    <prefix>:fleet:{fleet}:replicas  (sorted set: ID -> expiry, server ms)
-- KEYS[2] the entry        <prefix>:fleet:{fleet}:replica:<id>  (JSON)
-- KEYS[3] generation       <prefix>:fleet:{fleet}:generation
-- KEYS[4] the job list     <prefix>:fleet:{fleet}:jobs:<digest>  (JSON; absent for a replica without jobs)
-- ARGV[1] replica ID
-- ARGV[2] the entry, JSON
-- ARGV[3] how long the entry lives unless refreshed, in ms
-- ARGV[4] the job list, JSON (with KEYS[4])
-- ARGV[5] how long the job list lives unless refreshed, in ms (with KEYS[4])
--
-- Returns {generation, nowMs}. Entries past their expiry are removed from
-- the set (their keys have expired by themselves). A job list is named by
-- its content, and every replica with the same jobs names the same one: a
-- list already stored is kept (its expiry renewed), not written again.
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZADD', KEYS[1], now + ARGV[3], ARGV[1])
redis.call('SET', KEYS[2], ARGV[2], 'PX', ARGV[3])
if KEYS[4] and not redis.call('SET', KEYS[4], ARGV[4], 'NX', 'PX', ARGV[5]) then
  redis.call('PEXPIRE', KEYS[4], ARGV[5])
end
return {redis.call('INCR', KEYS[3]), now}
