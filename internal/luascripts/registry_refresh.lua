-- registry_refresh: keep a replica's registry entry alive.
--
-- KEYS[1] live replicas    <prefix>:fleet:{fleet}:replicas
-- KEYS[2] the entry        <prefix>:fleet:{fleet}:replica:<id>
-- KEYS[3] generation       <prefix>:fleet:{fleet}:generation
-- KEYS[4] the job list the entry names (absent: none)
-- ARGV[1] replica ID
-- ARGV[2] how long the entry lives unless refreshed, in ms
-- ARGV[3] how long the job list lives unless refreshed, in ms (with KEYS[4])
--
-- Returns {found, generation}: found is 0 when the entry or its job list
-- had lapsed (the replica must publish it again). A constant amount of work, whatever the
-- number of jobs.
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
local gen = tonumber(redis.call('GET', KEYS[3]) or '0')
if redis.call('PEXPIRE', KEYS[2], ARGV[2]) == 0 then return {0, gen} end
if KEYS[4] and redis.call('PEXPIRE', KEYS[4], ARGV[3]) == 0 then return {0, gen} end
redis.call('ZADD', KEYS[1], now + ARGV[2], ARGV[1])
return {1, gen}
