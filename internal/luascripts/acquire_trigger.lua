-- acquire_trigger: take the lease on one key to run a trigger: only if
-- the key is free (and, when asked, not paused) and a live trigger is
-- queued, which is consumed in the same step. The run's occurrence is a
-- round claimed here: server time, or the millisecond after the recorded
-- round when that is not before server time (a replica whose clock runs
-- fast claimed it, within its skew bound). So a run's occurrence is after
-- every occurrence claimed before it, whatever started the run, and a
-- scheduled round at or before a trigger's is refused as claimed
-- (acquire.lua).
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>      (same slot as G)
-- KEYS[3] fence counter    <prefix>:fence:{G}        (never deleted, never expires)
-- KEYS[4] trigger queue    <prefix>:trigger:{G}      (a list of "<expiresAtMs>|<queuedAtMs>|<trigger id>")
-- KEYS[5] round record     <prefix>:round:{G}        (never deleted, never expires)
-- KEYS[6] completion record <prefix>:attempt:{G}   (lease.WithAttempts; absent for a job without)
-- KEYS[7] pause key        <prefix>:pause:{G}        (exists while the key is paused);
--         given only by an acquire that honours a pause
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] ttl in ms
-- ARGV[3] PX of the data key in ms (ttl + tolerance)
-- ARGV[4] PX of the index key in ms (ttl + tolerance + retention)
-- ARGV[5] record tail built by the client: "key":...,"owner":...}
--
-- Returns
--   {1, fence, expiresAtMs, acquiredAtMs, triggerID, queuedAtMs, round, prevRound}
--                      acquired; round is the run's occurrence in Unix ms,
--                      prevRound the round recorded before it (0: none)
--   {1, fence, expiresAtMs, acquiredAtMs, triggerID, queuedAtMs, round, prevRound, sround, sattempt}
--                      acquired, superseding the occurrence sround, open or
--                      running (its holder died: the key was free) after
--                      attempt sattempt: no resume can claim it after this
--                      round, so its record is marked given up here, once
--   {0, remainingMs}   a live lease holds the key; the triggers stay queued
--   {-6}               the key is paused (and KEYS[7] is given); the
--                      triggers stay queued
--   {-7}               no live trigger is queued (expired ones are dropped)
--   {-8}               1000 expired triggers were dropped and more entries
--                      wait: call again (each call's work stays bounded)
--   {-9}               unreadable record, round or fence counter (checked
--                      before any trigger is taken)
--
-- The fence follows the rule of acquire.lua (never goes back), and so does
-- the way it is kept: the record, fence counter, round record, completion
-- record and pause are read with one MGET; the counter and the round
-- record (and the completion record when it is superseded) are written
-- with one MSET. A counter that is unreadable answers {-9} before a
-- trigger is taken, so the triggers stay queued. The record layout is
-- acquire.lua's, with "prev" the round recorded before this one. A
-- triggered run costs TIME, MGET, SET XX GET (a free lease key is checked
-- to be no other type before the trigger is taken), LPOP (one per entry
-- dropped), MSET and the two SETs of the lease.
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call

-- v[1] record, v[2] fence counter, v[3] round record, v[4] completion
-- record, v[5] pause (with KEYS[7]); false for a key that does not exist.
local v
if KEYS[7] then
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[5], KEYS[6], KEYS[7])
else
  v = redis.call('MGET', KEYS[1], KEYS[3], KEYS[5], KEYS[6])
end
if v[5] then return {-6} end

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

local last = v[3]
local prev = 0
if last then
  prev = tonumber(last)
  if not prev then return {-9} end
end

local fence = now * 100
local counter = v[2]
if counter then
  if #counter > 16 or not string.find(counter, '^%d+$') then return {-9} end
  local inc = counter + 1 -- one conversion of the string
  if inc > fence then fence = inc end
end

local id, queued
for _ = 1, 1000 do
  local e = redis.call('LPOP', KEYS[4])
  if not e then return {-7} end
  local exp, at, tid = string.match(e, '^(%d+)|(%d+)|(.+)$')
  if exp and tonumber(exp) > now then
    id, queued = tid, tonumber(at)
    break
  end
end
if not id then return {-8} end

local round = now
if prev >= round then round = prev + 1 end
local rs = string.format('%d', round)
local r, a, rest = string.match(v[4] or '', '^(%d+)|(%d+)|[ro]|(.*)$')
if r and r + 0 < round then
  redis.call('MSET', KEYS[3], string.format('%d', fence), KEYS[5], rs, KEYS[6], r .. '|' .. a .. '|g|' .. rest)
else
  r = nil
  redis.call('MSET', KEYS[3], string.format('%d', fence), KEYS[5], rs)
end
local exp = now + ARGV[2]
redis.call('SET', KEYS[1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":%s,%s',
  ARGV[1], exp, now, fence, last or '0', ARGV[5]), 'PX', ARGV[3])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[4])
if r then return {1, fence, exp, now, id, queued, round, prev, r + 0, a + 0} end
return {1, fence, exp, now, id, queued, round, prev}
