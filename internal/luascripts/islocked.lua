-- islocked: report whether a live lease holds one key. Read-only.
--
-- KEYS[1] lease data key   <prefix>:{G}
--
-- Returns
--   1   a live lease holds the key
--   0   no live lease
--   -9  unreadable record
--
-- The data key's PX ends with the lease's liveness (see acquire.lua), so an
-- expired record is gone by itself; the expiry is still checked, to the
-- millisecond. Record layout: see acquire.lua.
local TOLERANCE_MS = 1000
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local exp = tonumber(string.sub(v, 50, 62))
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not exp then
  return -9
end
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
if exp > now - TOLERANCE_MS then return 1 end
return 0
