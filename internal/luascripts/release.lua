-- release: delete the lease if and only if this ID holds it.
--
-- KEYS[1] ID index key     <prefix>:id:{T}:<id>  (its value is the data key, same slot)
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] data key prefix  <prefix>:{              (guards against a foreign index value)
--
-- Returns
--   1   released (data and index deleted)
--   0   the data key holds another ID (not owner); nothing deleted
--   -1  no such lease (not found)
--   -2  the lease is no longer live (expired): its index is retained, its
--       record is gone; the index is left to expire
--   -9  unreadable index or record
--
-- The data key's PX ends with the lease's liveness (see acquire.lua), so a
-- record that exists is live: no server time is needed. The ID is verified
-- against the record before anything is deleted. The fence and round keys
-- are never touched. Record layout: see acquire.lua.
--
-- A release is published on the sharded channel named after the data key
-- (SPUBLISH, Redis 7; the name carries the key's hash tag, so it is in the
-- key's slot), for the key's waiters. pcall: a server without SPUBLISH, or
-- an ACL without it, releases all the same (waiters then poll).
local dk = redis.call('GET', KEYS[1])
if not dk then return -1 end
if string.sub(dk, 1, #ARGV[2]) ~= ARGV[2] then return -9 end
local v = redis.call('GET', dk)
if not v then return -2 end
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not tonumber(string.sub(v, 50, 62)) then
  return -9
end
if string.sub(v, 12, 33) ~= ARGV[1] then return 0 end
redis.call('DEL', dk, KEYS[1])
redis.pcall('SPUBLISH', dk, 'release')
return 1
