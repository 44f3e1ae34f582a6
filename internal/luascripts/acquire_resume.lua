-- acquire_resume: take the lease on one key for the next attempt of its
-- last claimed round, when the round's completion record says the
-- occurrence is open, atomically.
--
-- KEYS[1] lease data key     <prefix>:{G}
-- KEYS[2] ID index key       <prefix>:id:{T}:<id>      (same slot as G)
-- KEYS[3] fence counter      <prefix>:fence:{G}        (never deleted, never expires)
-- KEYS[4] round record       <prefix>:round:{G}        (read only)
-- KEYS[5] completion record  <prefix>:attempt:{G}      (never expires)
-- KEYS[6] history key        <prefix>:history:{G}
-- KEYS[7] pause key          <prefix>:pause:{G}; given only by an acquire
--         that honours a pause
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] ttl in ms
-- ARGV[3] PX of the data key in ms (ttl + tolerance)
-- ARGV[4] PX of the index key in ms (ttl + tolerance + retention)
-- ARGV[5] record tail built by the client: "key":...,"owner":...}
-- ARGV[6] the round to resume, as the round record stores it (digits)
-- ARGV[7] the history's last index: its limit minus 1
-- ARGV[8] the most entries the history may hold: its limit plus a slack
--         (release_status.lua trims the same way)
--
-- The completion record is "round|attempt|state|notBeforeMs|deadlineMs|max",
-- state r (running: an attempt holds or held the lease), o (released
-- open), d (done) or g (given up).
--
-- Returns, in this order of checks:
--   {-6}                                    the key is paused (KEYS[7] given)
--   {-3}                                    the round record is absent or before
--                                           ARGV[6], the completion record is another
--                                           round's, or the occurrence is done or given up
--   {0, remainingMs}                        a live lease holds the key
-- An attempt left running by a holder that died (state r, no live lease)
-- gets an "interrupted" entry on the history first: no replica recorded its
-- end.
--
--   {-10, attempt}                          no attempt remains or the deadline has
--                                           passed: marked given up now (this call),
--                                           a "given_up" entry pushed on the history
--   {-10, attempt, 1}                       the same, because the round record is a
--                                           later round than ARGV[6] (superseded)
--   {-11, remainingMs}                      the backoff has not passed (>= 1)
--   {1, fence, expiresAtMs, acquiredAtMs, attempt, deadlineMs, max}
--                                           acquired as attempt "attempt"
--   {-9}                                    unreadable record
--
-- The lease record and fence are those of acquire.lua; "prev" is the
-- round itself (the round record is not changed), so rollback.lua, told
-- no round, leaves the round record alone and sets the completion record
-- back to open. As in acquire.lua, the keys it decides on are read with one
-- MGET, and the fence counter and the completion record written with one
-- MSET: a resume runs TIME, MGET, SET XX GET (a free lease key is checked
-- to be no other type before anything is written), MSET and the two SETs
-- of the lease.
local TOLERANCE_MS = 1000
local DEAD_HOLDER = 'its replica stopped renewing the lease and never released it (it died or lost the store)'
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1

-- v[1] record, v[2] fence counter, v[3] round record, v[4] completion
-- record, v[5] pause (with KEYS[7]); false for a key that does not exist.
local v
if KEYS[7] then
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[7])
else
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[4], KEYS[5])
end
if v[5] then return {-6} end
-- A later round recorded while the occurrence was open (a round refused as
-- paused, or claimed without attempts) superseded it: it is given up below
-- rather than left open, never attempted again nor given up.
local sup
if v[3] ~= ARGV[6] then
  local last = tonumber(v[3] or '')
  if not last or last < ARGV[6] + 0 then return {-3} end
  sup = 1
end
local rec = v[4]
if not rec then return {-3} end
local r, a, st, nb, dl, mx = string.match(rec, '^(%d+)|(%d+)|(%a)|(%d+)|(%d+)|(%d+)$')
if not r then return {-9} end
if r ~= ARGV[6] or st == 'd' or st == 'g' then return {-3} end
if st ~= 'r' and st ~= 'o' then return {-9} end

-- A lease key that holds another type reads as absent through MGET; SET
-- XX GET writes nothing to an absent key and fails with WRONGTYPE on
-- another type, before this script writes anything.
if not v[1] then redis.call('SET', KEYS[1], '', 'XX', 'GET') end
local cur = v[1]
if cur then
  local exp = tonumber(string.sub(cur, 50, 62))
  if string.sub(cur, 1, 11) ~= '{"lockId":"' or string.sub(cur, 34, 49) ~= '","expiresAtMs":' or not exp then
    return {-9}
  end
  if exp > now - TOLERANCE_MS then
    return {0, exp + TOLERANCE_MS - now}
  end
end

a, nb, dl, mx = a + 0, nb + 0, dl + 0, mx + 0
local dead -- the "interrupted" entry of an attempt whose holder died
if st == 'r' then
  -- The attempt's holder died (or lost the store) and never released:
  -- no replica recorded its end, so the history gets it here.
  dead = string.format(
    '{"occurrence":%s,"owner":"","attempt":%d,"fence":0,"startedAt":%d,"durationMs":0,"outcome":"interrupted","error":"%s"}', r, a, now, DEAD_HOLDER)
end
if sup or a >= mx or now >= dl then
  redis.call('SET', KEYS[5], string.format('%s|%d|g|%d|%d|%d', r, a, nb, dl, mx))
  local gone = string.format(
    '{"occurrence":%s,"owner":"","attempt":%d,"fence":0,"startedAt":%d,"durationMs":0,"outcome":"given_up"}', r, a, now)
  -- The history is written with pcall: a key of another type there loses
  -- the entries, not the give-up or the resume (release_status.lua says why).
  local n
  if dead then
    n = redis.pcall('LPUSH', KEYS[6], dead, gone)
  else
    n = redis.pcall('LPUSH', KEYS[6], gone)
  end
  if type(n) == 'number' and n > ARGV[8] + 0 then redis.call('LTRIM', KEYS[6], '0', ARGV[7]) end
  if sup then return {-10, a, 1} end
  return {-10, a}
end
if dead then
  local n = redis.pcall('LPUSH', KEYS[6], dead)
  if type(n) == 'number' and n > ARGV[8] + 0 then redis.call('LTRIM', KEYS[6], '0', ARGV[7]) end
end
if now < nb then return {-11, nb - now} end

local fence = now * 100
local counter = v[2]
if counter then
  if #counter > 16 or not string.find(counter, '^%d+$') then return {-9} end
  local inc = counter + 1 -- one conversion of the string
  if inc > fence then fence = inc end
end
redis.call('MSET', KEYS[3], string.format('%d', fence), KEYS[5], string.format('%s|%d|r|%d|%d|%d', r, a + 1, nb, dl, mx))
local exp = now + ARGV[2]
redis.call('SET', KEYS[1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":%s,%s',
  ARGV[1], exp, now, fence, r, ARGV[5]), 'PX', ARGV[3])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[4])
return {1, fence, exp, now, a + 1, dl, mx}
