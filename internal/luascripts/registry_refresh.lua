-- registry_refresh: keep a replica's registry entry alive, and the job list
-- it names.
--
-- KEYS[1] live replicas    <prefix>:fleet:{fleet}:replicas
-- KEYS[2] the entry        <prefix>:fleet:{fleet}:replica:<id>
-- KEYS[3] generation       <prefix>:fleet:{fleet}:generation
-- KEYS[4] the job list the replica published (absent: none)
-- ARGV[1] replica ID
-- ARGV[2] how long the entry lives unless refreshed, in ms
-- ARGV[3] how long the job list lives unless refreshed, in ms (with KEYS[4])
-- ARGV[4] the job list's digest (with KEYS[4])
--
-- Returns {found, generation}: found is 0 when the replica must publish its
-- entry again: the entry lapsed, it names another job list than the one
-- the replica published (a failover that restored an older entry, another
-- client's publish), or that list lapsed. A constant amount of work,
-- whatever the number of jobs: the entry holds no job (about 150 bytes).
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
local v = redis.call('MGET', KEYS[3], KEYS[2])
local gen = tonumber(v[1] or '0')
local entry = v[2]
if not entry then return {0, gen} end
if KEYS[4] then
  if not string.find(entry, '"jobList":"' .. ARGV[4] .. '"', 1, true) then return {0, gen} end
elseif string.find(entry, '"jobList":"', 1, true) then
  return {0, gen}
end
if redis.call('PEXPIRE', KEYS[2], ARGV[2]) == 0 then return {0, gen} end
if KEYS[4] and redis.call('PEXPIRE', KEYS[4], ARGV[3]) == 0 then return {0, gen} end
redis.call('ZADD', KEYS[1], now + ARGV[2], ARGV[1])
return {1, gen}
