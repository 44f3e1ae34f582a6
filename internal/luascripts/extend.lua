-- extend: set the expiry of the lease with this ID to server-now + ttl.
--
-- KEYS[1] ID index key     <prefix>:id:{T}:<id>  (its value is the data key, same slot)
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] ttl in ms
-- ARGV[3] new PX of the data key in ms (ttl + tolerance)
-- ARGV[4] new PX of the index key in ms (ttl + tolerance + retention)
-- ARGV[5] data key prefix  <prefix>:{              (guards against a foreign index value)
--
-- Returns
--   {1, expiresAtMs}  extended
--   0                 the data key holds another ID (not owner)
--   -1                no such lease (not found)
--   -2                the lease is no longer live (expired): its index is
--                     retained, its record is gone or past its expiry
--   -9                unreadable index or record
--
-- The ID is verified against the record before anything is written. The
-- record is rewritten with the new expiry in place (bytes 50-62, 13
-- characters, so the layout stays; see acquire.lua) and its new PX in one
-- SET, one command fewer than SETRANGE and PEXPIRE (measured: same server
-- time).
local TOLERANCE_MS = 1000
local dk = redis.call('GET', KEYS[1])
if not dk then return -1 end
if string.sub(dk, 1, #ARGV[5]) ~= ARGV[5] then return -9 end
local v = redis.call('GET', dk)
if not v then return -2 end
local exp = tonumber(string.sub(v, 50, 62))
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not exp then
  return -9
end
if string.sub(v, 12, 33) ~= ARGV[1] then return 0 end
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
if exp <= now - TOLERANCE_MS then return -2 end
local nexp = now + ARGV[2]
redis.call('SET', dk, string.sub(v, 1, 49) .. string.format('%13d', nexp) .. string.sub(v, 63), 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {1, nexp}
