-- islocked: report whether a live lease holds one key; optionally clean up.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- ARGV[1] "1" to delete an expired record (data and its ID index), "0" for read-only
-- ARGV[2] ID index key prefix <prefix>:id:{T}:  (T is fixed for G's slot; the ID is appended)
--
-- Returns
--   1   a live lease holds the key
--   0   no live lease
--   -9  unreadable record (never deleted)
--
-- Cleanup deletes only an expired record and the index key of the ID it
-- names, and the index only while it still points at this data key. Fence
-- and round keys are never touched. Record layout: see acquire.lua.
local TOLERANCE_MS = 1000
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local exp = tonumber(string.sub(v, 50, 62))
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not exp then
  return -9
end
local t = redis.call('TIME')
local now = t[1] * 1000 + math.floor(t[2] / 1000)
if exp > now - TOLERANCE_MS then return 1 end
if ARGV[1] == '1' then
  local ik = ARGV[2] .. string.sub(v, 12, 33)
  if redis.call('GET', ik) == KEYS[1] then redis.call('DEL', ik) end
  redis.call('DEL', KEYS[1])
end
return 0
