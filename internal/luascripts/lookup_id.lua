-- lookup_id: read the live lease with this ID.
--
-- KEYS[1] ID index key     <prefix>:id:{T}:<id>  (its value is the data key, same slot)
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] data key prefix  <prefix>:{              (guards against a foreign index value)
--
-- Returns
--   the record (string)  the lease with this ID is live; the client parses it
--   0                    no such lease, it is no longer live, or the key is held by another ID
--   -9                   unreadable index or record
--
-- Read-only. The ID is verified against the record before it is returned.
-- Record layout: see acquire.lua.
local TOLERANCE_MS = 1000
local dk = redis.call('GET', KEYS[1])
if not dk then return 0 end
if string.sub(dk, 1, #ARGV[2]) ~= ARGV[2] then return -9 end
local v = redis.call('GET', dk)
if not v then return 0 end
local exp = tonumber(string.sub(v, 50, 62))
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not exp then
  return -9
end
if string.sub(v, 12, 33) ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
if exp <= now - TOLERANCE_MS then return 0 end
return v
