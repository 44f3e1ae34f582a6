-- rollback: undo an acquire whose outcome the client never learned (its
-- reply was lost to a timeout or a broken connection, or too few replicas
-- acknowledged it): release the lease if this ID holds it, and give back
-- the round it claimed, if that round is still the recorded one.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>  (same slot as G)
-- KEYS[3] round record     <prefix>:round:{G}    (never deleted; only set back)
-- ARGV[1] record head of the lease: {"lockId":"<id>","expiresAtMs":  (49 bytes)
-- ARGV[2] the round the acquire claimed, 0 for none
-- KEYS[4] completion record <prefix>:attempt:{G}, given only for a resume
--         (acquire_resume.lua), which is set back to open at the attempt
--         before: the resume that never reached its caller used no attempt
-- ARGV[3] the resumed round (with KEYS[4])
--
-- Returns
--   2   rolled back: the lease released and its round given back
--   1   rolled back: the lease released (it claimed no round, or the round
--       record has moved on)
--   0   nothing to roll back: this ID holds no lease on the key (the
--       acquire did not run, was refused, or its lease is gone)
--
-- While the lease is live no other acquire can claim a round of the key,
-- so the round record still holds this lease's round, and is set back to
-- the round before it ("prev" in the lease record; 0 when there was none),
-- so that another replica can still claim the occurrence. The fence
-- counter is never set back: a token once issued stays used. The release
-- is published for the key's waiters as release.lua does. Record layout:
-- see acquire.lua.
local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, 49) ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2])
redis.pcall('SPUBLISH', KEYS[1], 'rollback')
if KEYS[4] then
  local rec = redis.call('GET', KEYS[4]) or ''
  local r, a, rest = string.match(rec, '^(%d+)|(%d+)|r(|.*)$')
  if r == ARGV[3] and a + 0 > 1 then redis.call('SET', KEYS[4], string.format('%s|%d|o%s', r, a - 1, rest)) end
  return 1
end
if ARGV[2] == '0' or redis.call('GET', KEYS[3]) ~= ARGV[2] then return 1 end
local prev = string.match(v, '"prev":(%d+),')
if not prev then return 1 end
redis.call('SET', KEYS[3], prev)
return 2
