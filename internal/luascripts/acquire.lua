-- acquire: take the lease on one key, once, atomically.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>      (same slot as G)
-- KEYS[3] fence counter    <prefix>:fence:{G}        (never deleted, never expires)
-- KEYS[4] round record     <prefix>:round:{G}        (never deleted, never expires);
--         with KEYS[5] and ARGV[6..7], left out by a plain acquire (no round,
--         no pause): three arguments fewer for Redis to copy into Lua
-- KEYS[5] pause key        <prefix>:pause:{G}        (exists while the key is paused);
--         given only by an acquire that honours a pause
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] ttl in ms
-- ARGV[3] PX of the data key in ms: ttl + tolerance, so the record lives
--         exactly as long as the lease is live
-- ARGV[4] PX of the index key in ms: ttl + tolerance + retention, so an
--         expired lease's ID is still known (Extend/Release say "expired")
-- ARGV[5] record tail built by the client: "key":...,"owner":...}
-- ARGV[6] round, 0 for none
-- ARGV[7] max skew in ms, 0 for none
-- With lease.WithAttempts only (a completion record is kept):
-- KEYS[5] pause key, always given; KEYS[6] completion record <prefix>:attempt:{G}
-- ARGV[8] "<deadlineMs>|<max>", the policy; ARGV[9] "1" to honour the pause, "0" not
--
-- Returns
--   {1, fence, expiresAtMs, acquiredAtMs, prevRound, round, attempt}
--                                          acquired with attempts, superseding the
--                                          open or running occurrence round (its
--                                          last attempt "attempt"): the new record
--                                          replaces its record, which gives it up
--   {1, fence, expiresAtMs, acquiredAtMs, prevRound}  acquired; prevRound is
--                                          the round recorded before this
--                                          acquire (0: none, or no round given)
--   {0, remainingMs}                       a live lease holds the key and the round
--                                          (if any) is newer than the recorded one;
--                                          ms until it can be taken
--                                          (expiresAt + tolerance - now, >= 1)
--   {-3}                                   round not newer than the recorded one
--                                          (whether or not the key is held)
--   {-4}                                   round more than max skew ahead of server time
--   {-6}                                   the key is paused (and KEYS[5] is given); a
--                                          round newer than the recorded one, and
--                                          within the skew bound, is recorded
--   {-9}                                   unreadable record, round or fence counter
--
-- Order of checks: a pause first (every replica reports a paused
-- occurrence as paused; its round is recorded so that it is neither missed
-- nor caught up), then a claimed round (the definitive answer: that
-- occurrence ran or runs), then a live lease (held by an earlier round: an
-- overlap), then the skew bound. The round is read only when one is given;
-- the pause is looked up only when asked (KEYS[5] given), with EXISTS (no
-- string is made).
--
-- The fence never goes back, even if Redis lost its data: it is the
-- counter + 1, or the server clock's floor, now in ms * 100, if that is
-- greater. A counter wiped or rolled back with the data resumes above
-- every fence issued before, unless the server clock went back by more
-- than the time since the last acquire. INCR and INCRBY answer integers,
-- so no string is made for it.
--
-- The record is {"lockId":"<id>","expiresAtMs":<%13d>,"acquiredAtMs":<%13d>,
-- "fence":"<%015d>","prev":<n>,<tail>: the ID at bytes 12-33 and the
-- expiry at bytes 50-62 (space-padded, still JSON), so other scripts read
-- both with string.sub, no JSON decoding; prev is the round recorded before
-- this acquire, which rollback.lua restores. Liveness: expiresAtMs > now -
-- 1000 (tolerance). The data key's PX ends with liveness, so a record that
-- exists is live (to the millisecond); the acquire still checks
-- expiresAtMs, which costs nothing on the path that finds no record.
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call

local round = ARGV[6] and ARGV[6] + 0 or 0
if KEYS[5] and ARGV[9] ~= '0' and redis.call('EXISTS', KEYS[5]) == 1 then
  -- Recorded as handled, within the skew bound: a fast clock must not
  -- record a future round while the key is paused.
  local skew = ARGV[7] + 0
  if round > 0 and (skew == 0 or round <= now + skew) then
    local rec = redis.call('GET', KEYS[4])
    if not rec or (tonumber(rec) or 0) < round then redis.call('SET', KEYS[4], ARGV[6]) end
  end
  return {-6}
end
local last -- the round record as stored, for "prev"
local prev = 0
if round > 0 then
  last = redis.call('GET', KEYS[4])
  if last then
    prev = tonumber(last)
    if not prev then return {-9} end
    if prev >= round then return {-3} end
  end
end

local cur = redis.call('GET', KEYS[1])
if cur then
  local exp = tonumber(string.sub(cur, 50, 62))
  if string.sub(cur, 1, 11) ~= '{"lockId":"' or string.sub(cur, 34, 49) ~= '","expiresAtMs":' or not exp then
    return {-9}
  end
  if exp > now - TOLERANCE_MS then
    return {0, exp + TOLERANCE_MS - now}
  end
end

if round > 0 then
  local skew = ARGV[7] + 0
  if skew > 0 and round > now + skew then return {-4} end
end

local fence = redis.call('INCR', KEYS[3])
local floor = now * 100
if fence < floor then
  fence = redis.call('INCRBY', KEYS[3], floor - fence)
end
local exp = now + ARGV[2]
redis.call('SET', KEYS[1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":%s,%s',
  ARGV[1], exp, now, fence, last or '0', ARGV[5]), 'PX', ARGV[3])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[4])
if round > 0 then redis.call('SET', KEYS[4], ARGV[6]) end
if ARGV[8] then -- completion record: attempt 1, running; an older open one is given up
  local old = redis.call('SET', KEYS[6], ARGV[6] .. '|1|r|0|' .. ARGV[8], 'GET')
  local r, a, st = string.match(old or '', '^(%d+)|(%d+)|([ro])|')
  if r and r ~= ARGV[6] then return {1, fence, exp, now, prev, r + 0, a + 0} end
end
return {1, fence, exp, now, prev}
