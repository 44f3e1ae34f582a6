-- acquire: take the lease on one key, once, atomically.
--
-- acquire_batch.lua makes the same decisions and writes for many keys in
-- one call: change both together.
-- TestStore_AcquireBatch_AnswersAndWritesAsAcquire (lease/redislease)
-- compares them on every shape and answer.
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
--   {-6, prevRound, pausedAtMs}            the key is paused (and KEYS[5] is given); a
--                                          round newer than the recorded one, and
--                                          within the skew bound, is recorded, and
--                                          the answer tells the round recorded before
--                                          it (0: none) and the pause's time (0:
--                                          unreadable)
--   {-6}                                   the key is paused; nothing was recorded
--   {-9}                                   unreadable record, round or fence counter
--
-- Order of checks: a pause first (every replica reports a paused
-- occurrence as paused; its round is recorded so that it is neither missed
-- nor caught up), then a claimed round (the definitive answer: that
-- occurrence ran or runs), then a live lease (held by an earlier round: an
-- overlap), then the skew bound. Every key it decides on is read with one
-- MGET (they share G's slot): the record and the fence counter always, the
-- round record and the pause when given, the completion record with
-- attempts. A pause is honoured when its key holds a value (pause_set.lua
-- writes a string). The round record is used only when a round is given.
-- MGET answers nil for a key that holds another type than a string (no
-- script of the store writes one there): such a key reads as absent. The
-- lease's record is the first write of a won acquire, a SET with GET,
-- which fails with WRONGTYPE on another type before anything is written:
-- a value someone else keeps under the lease key is never replaced. (The
-- fence counter, round and completion records are the store's own keys.)
--
-- The fence never goes back, even if Redis lost its data: it is the
-- counter + 1, or the server clock's floor, now in ms * 100, if that is
-- greater. A counter wiped or rolled back with the data resumes above
-- every fence issued before, unless the server clock went back by more
-- than the time since the last acquire. The counter is read by the MGET
-- and written back as the fence's decimal digits (what INCR would leave,
-- so other scripts may still INCR it); a counter that is not 1 to 16
-- digits is unreadable ({-9}) and nothing is written. The new counter, the
-- round record and the completion record (all without expiry) are written
-- with one MSET: a won round acquire runs TIME, MGET, SET record (first,
-- see below), MSET, SET index; a lost one TIME and MGET.
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

-- One read of every key the acquire decides on (the ID index is only
-- written): v[1] record, v[2] fence counter, v[3] round record, v[4]
-- pause, v[5] completion record; false for a key that does not exist.
local v
if KEYS[6] then
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[4], KEYS[5], KEYS[6])
elseif KEYS[5] then
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[4], KEYS[5])
elseif KEYS[4] then
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[4])
else
  v = redis.call('MGET', KEYS[1], KEYS[3])
end

local round = ARGV[6] and ARGV[6] + 0 or 0
local last = round > 0 and v[3] or nil -- the round record as stored, for "prev"
if v[4] and ARGV[9] ~= '0' then
  -- Recorded as handled, within the skew bound: a fast clock must not
  -- record a future round while the key is paused.
  local skew = ARGV[7] + 0
  if round > 0 and (skew == 0 or round <= now + skew) then
    local before = last and tonumber(last) or 0
    if before < round then
      -- The refusal that records the round tells the one before it and
      -- the pause's time ("<atMs>\n...", pause_set.lua), as a win's ledger
      -- would: what ran nowhere before the pause is reported missed.
      redis.call('SET', KEYS[4], ARGV[6])
      return {-6, before, tonumber(string.match(v[4], '^%d+')) or 0}
    end
  end
  return {-6}
end
local prev = 0
if last then
  prev = tonumber(last)
  if not prev then return {-9} end
  if prev >= round then return {-3} end
end

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

if round > 0 then
  local skew = ARGV[7] + 0
  if skew > 0 and round > now + skew then return {-4} end
end

local fence = now * 100
local counter = v[2]
if counter then
  if #counter > 16 or not string.find(counter, '^%d+$') then return {-9} end
  local inc = counter + 1 -- one conversion of the string
  if inc > fence then fence = inc end
end
local exp = now + ARGV[2]
-- The record first, with GET: a key of another type fails it (WRONGTYPE)
-- before anything is written.
redis.call('SET', KEYS[1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":%s,%s',
  ARGV[1], exp, now, fence, last or '0', ARGV[5]), 'PX', ARGV[3], 'GET')
local fs = string.format('%d', fence)
if ARGV[8] then -- completion record: attempt 1, running; an older open one is given up
  redis.call('MSET', KEYS[3], fs, KEYS[4], ARGV[6], KEYS[6], ARGV[6] .. '|1|r|0|' .. ARGV[8])
elseif round > 0 then
  redis.call('MSET', KEYS[3], fs, KEYS[4], ARGV[6])
else
  redis.call('SET', KEYS[3], fs)
end
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[4])
if ARGV[8] then
  local r, a = string.match(v[5] or '', '^(%d+)|(%d+)|[ro]|')
  if r and r ~= ARGV[6] then return {1, fence, exp, now, prev, r + 0, a + 0} end
end
return {1, fence, exp, now, prev}
