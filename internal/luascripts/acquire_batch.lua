-- acquire_batch: the acquires of acquire.lua for n keys in one call, each
-- decided and answered exactly as acquire.lua decides and answers it, with
-- one TIME, one MGET and one MSET for them all instead of one each (about
-- a third less server time per acquire). Only for a server that is not a
-- Redis Cluster (the keys of different leases are in different slots).
-- Its decisions are acquire.lua's, written again over offsets: change both
-- together; TestStore_AcquireBatch_AnswersAndWritesAsAcquire
-- (lease/redislease) compares them on every shape and answer.
--
-- ARGV[1] n, the number of acquires. Every acquire has the same shape: k =
-- #KEYS / n keys and a = (#ARGV - 1) / n arguments, laid out as
-- acquire.lua's KEYS[1] .. KEYS[k] and ARGV (k is 3, 4, 5 or 6; a is 5, 7 or 9).
-- Acquire i (from 0) has KEYS[i*k + 1 .. i*k + k] and ARGV[2 + i*a ..
-- 1 + i*a + a]. No lease key may be given twice (the acquires read every
-- key before any writes): a call that does fails before it writes.
--
-- Returns one reply per acquire, in order: acquire.lua's reply, or an
-- error reply for an acquire whose lease key holds another type
-- (WRONGTYPE: nothing of that acquire is written, as with acquire.lua).
--
-- Writes: per acquire won, the record (SET ... PX ... GET, first) and the
-- ID index (SET ... PX), as acquire.lua does; the fence counters, round
-- records and completion records of all of them with one MSET at the end.
-- A paused key's round is recorded with a SET of its own, as acquire.lua
-- does. Nothing else can fail once the first write is made.
local TOLERANCE_MS = 1000
local n = ARGV[1] + 0
local k = #KEYS / n
local a = (#ARGV - 1) / n
if n < 1 or k % 1 ~= 0 or a % 1 ~= 0 or k < 3 or k > 6 then
  return redis.error_reply('ERR acquire_batch: keys and arguments do not make ' .. ARGV[1] .. ' acquires')
end
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call

-- One read of every key the acquires decide on: per acquire, its record,
-- fence counter, and (as k gives them) round record, pause, completion
-- record (every key but the ID index), at v[i*(k-1) + 1 ..].
local names, m, seen = {}, 0, {}
for i = 0, n - 1 do
  local b = i * k
  if seen[KEYS[b + 1]] then
    return redis.error_reply('ERR acquire_batch: lease key given twice')
  end
  seen[KEYS[b + 1]] = true
  m = m + 1; names[m] = KEYS[b + 1]
  for j = 3, k do m = m + 1; names[m] = KEYS[b + j] end
end
local v = redis.call('MGET', unpack(names))

local out, w, ws = {}, {}, 0 -- replies; the MSET's arguments
for i = 0, n - 1 do
  local b, c, r = i * k, 1 + i * a, i * (k - 1)
  local rec, counter, lastRec, paused, done = v[r + 1], v[r + 2], v[r + 3], v[r + 4], v[r + 5]
  if k < 6 then done = nil end
  if k < 5 then paused = nil end
  if k < 4 then lastRec = nil end
  -- ARGV[6..9] of acquire.lua, nil where this shape has none (past a, the
  -- next acquire's arguments begin)
  local argRound, argSkew, argPolicy, argHonour
  if a >= 7 then argRound, argSkew = ARGV[c + 6], ARGV[c + 7] end
  if a >= 9 then argPolicy, argHonour = ARGV[c + 8], ARGV[c + 9] end
  local round = argRound and argRound + 0 or 0
  local last = round > 0 and lastRec or nil
  local res
  if paused and argHonour ~= '0' then
    local skew = argSkew + 0
    local before = last and tonumber(last) or 0
    if round > 0 and (skew == 0 or round <= now + skew) and before < round then
      redis.call('SET', KEYS[b + 4], argRound)
      res = {-6, before, tonumber(string.match(paused, '^%d+')) or 0}
    else
      res = {-6}
    end
  end
  local prev = 0
  if not res and last then
    prev = tonumber(last)
    if not prev then res = {-9}
    elseif prev >= round then res = {-3} end
  end
  if not res and rec then
    local exp = tonumber(string.sub(rec, 50, 62))
    if string.sub(rec, 1, 11) ~= '{"lockId":"' or string.sub(rec, 34, 49) ~= '","expiresAtMs":' or not exp then
      res = {-9}
    elseif exp > now - TOLERANCE_MS then
      res = {0, exp + TOLERANCE_MS - now}
    end
  end
  if not res and round > 0 then
    local skew = argSkew + 0
    if skew > 0 and round > now + skew then res = {-4} end
  end
  local fence = now * 100
  if not res and counter then
    if #counter > 16 or not string.find(counter, '^%d+$') then
      res = {-9}
    else
      local inc = counter + 1
      if inc > fence then fence = inc end
    end
  end
  if not res then
    local exp = now + ARGV[c + 2]
    local set = redis.pcall('SET', KEYS[b + 1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":%s,%s',
      ARGV[c + 1], exp, now, fence, last or '0', ARGV[c + 5]), 'PX', ARGV[c + 3], 'GET')
    if type(set) == 'table' and set.err then
      res = set -- WRONGTYPE: nothing of this acquire is written
    else
      ws = ws + 1; w[ws] = KEYS[b + 3]; ws = ws + 1; w[ws] = string.format('%d', fence)
      if argPolicy then
        ws = ws + 1; w[ws] = KEYS[b + 4]; ws = ws + 1; w[ws] = argRound
        ws = ws + 1; w[ws] = KEYS[b + 6]; ws = ws + 1; w[ws] = argRound .. '|1|r|0|' .. argPolicy
      elseif round > 0 then
        ws = ws + 1; w[ws] = KEYS[b + 4]; ws = ws + 1; w[ws] = argRound
      end
      redis.call('SET', KEYS[b + 2], KEYS[b + 1], 'PX', ARGV[c + 4])
      res = {1, fence, exp, now, prev}
      if argPolicy then
        local sr, sa = string.match(done or '', '^(%d+)|(%d+)|[ro]|')
        if sr and sr ~= argRound then res = {1, fence, exp, now, prev, sr + 0, sa + 0} end
      end
    end
  end
  out[i + 1] = res
end
if ws > 0 then redis.call('MSET', unpack(w)) end
return out
