-- release_lease: release.lua for a holder that knows its lease's key: the
-- keyed fast path, which declares every key it touches and skips the index
-- read when the record is the lease's own.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>  (same slot as G)
-- ARGV[1] record head of the lease: {"lockId":"<id>","expiresAtMs":  (49 bytes)
--
-- Returns the codes of release.lua, plus
--   -5  the ID's index names another data key (the caller's key is not the
--       lease's): nothing done; the client asks release.lua by ID
--
-- The ID is verified against the record (its head) before anything is
-- deleted. A record that exists is live (see release.lua), so the common
-- path is one GET and one DEL. When the record is not the lease's own, the
-- index is read to give the answer release.lua would give. Fence and round
-- keys are never touched. Record layout: see acquire.lua. A release is
-- published for the key's waiters as release.lua does.
local v = redis.call('GET', KEYS[1])
if v and string.find(v, ARGV[1], 1, true) == 1 then -- the head, without making a 49-byte string
  redis.call('DEL', KEYS[1], KEYS[2])
  redis.pcall('SPUBLISH', KEYS[1], 'release')
  return 1
end
local dk = redis.call('GET', KEYS[2])
if not dk then return -1 end
if dk ~= KEYS[1] then return -5 end
if not v then return -2 end
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not tonumber(string.sub(v, 50, 62)) then
  return -9
end
return 0
