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
--   {-9}               unreadable record, round or fence counter
--
-- The fence follows the rule of acquire.lua (never goes back). The record
-- layout is acquire.lua's, with "prev" the round recorded before this one.
-- The completion record costs a GET on every trigger acquire, and a SET
-- only when it supersedes an occurrence (rare).
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call

if KEYS[7] and redis.call('EXISTS', KEYS[7]) == 1 then return {-6} end

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

local last = redis.call('GET', KEYS[5])
local prev = 0
if last then
  prev = tonumber(last)
  if not prev then return {-9} end
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
local fence = redis.call('INCR', KEYS[3])
local floor = now * 100
if fence < floor then
  fence = redis.call('INCRBY', KEYS[3], floor - fence)
end
local exp = now + ARGV[2]
redis.call('SET', KEYS[1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":%s,%s',
  ARGV[1], exp, now, fence, last or '0', ARGV[5]), 'PX', ARGV[3])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[4])
redis.call('SET', KEYS[5], string.format('%d', round))
local rec = redis.call('GET', KEYS[6])
if rec then
  local r, a, rest = string.match(rec, '^(%d+)|(%d+)|[ro]|(.*)$')
  if r and r + 0 < round then
    redis.call('SET', KEYS[6], r .. '|' .. a .. '|g|' .. rest)
    return {1, fence, exp, now, id, queued, round, prev, r + 0, a + 0}
  end
end
return {1, fence, exp, now, id, queued, round, prev}
