-- extend_lease: extend.lua for a holder that knows its lease's key: the
-- keyed fast path, which declares every key it touches and skips the index
-- read when the record is the lease's own.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>  (same slot as G)
-- ARGV[1] record head of the lease: {"lockId":"<id>","expiresAtMs":  (49 bytes)
-- ARGV[2] ttl in ms
-- ARGV[3] new PX of the data key in ms (ttl + tolerance)
-- ARGV[4] new PX of the index key in ms (ttl + tolerance + retention)
--
-- Returns the codes of extend.lua, plus
--   -5  the ID's index names another data key (the caller's key is not the
--       lease's): nothing done; the client asks extend.lua by ID
--
-- The ID is verified against the record (its head) before anything is
-- written. The record is rewritten with the new expiry in place (bytes
-- 50-62) and the new PX in one SET. When the record is not the lease's own,
-- the index is read to give the answer extend.lua would give.
-- Record layout: see acquire.lua.
local TOLERANCE_MS = 1000
local v = redis.call('GET', KEYS[1])
if v and string.find(v, ARGV[1], 1, true) == 1 then -- the head, without making a 49-byte string
  local exp = tonumber(string.sub(v, 50, 62))
  if exp then
    local t = redis.call('TIME')
    local now = t[1] * 1000 + t[2] / 1000
    now = now - now % 1 -- whole ms, without math.floor's lookup and call
    if exp <= now - TOLERANCE_MS then return -2 end
    local nexp = now + ARGV[2]
    redis.call('SET', KEYS[1], ARGV[1] .. string.format('%13d', nexp) .. string.sub(v, 63), 'PX', ARGV[3])
    redis.call('PEXPIRE', KEYS[2], ARGV[4])
    return {1, nexp}
  end
end
local dk = redis.call('GET', KEYS[2])
if not dk then return -1 end
if dk ~= KEYS[1] then return -5 end
if not v then return -2 end
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not tonumber(string.sub(v, 50, 62)) then
  return -9
end
return 0
