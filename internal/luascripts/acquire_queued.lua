-- acquire_queued: one attempt of a queued (fair) waiter: keep its place in
-- the key's queue, and take the lease only if the key is free and the
-- waiter is the oldest live one, atomically. Claims no round.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>      (same slot as G)
-- KEYS[3] fence counter    <prefix>:fence:{G}        (never deleted, never expires)
-- KEYS[4] queue            <prefix>:queue:{G}        (list of tickets, in arrival order)
-- KEYS[5] queue expiries   <prefix>:queue:{G}:exp    (hash: ticket -> expiresAtMs)
-- ARGV[1] lease ID (22 characters)
-- ARGV[2] ttl in ms
-- ARGV[3] PX of the data key in ms (ttl + tolerance)
-- ARGV[4] PX of the index key in ms (ttl + tolerance + retention)
-- ARGV[5] record tail built by the client: "key":...,"owner":...}
-- ARGV[6] the waiter's ticket (22 characters)
-- ARGV[7] how long the ticket's place lasts, in ms
--
-- Returns
--   {1, fence, expiresAtMs, acquiredAtMs, 0}  acquired; the ticket left the queue
--   {0, remainingMs}   a live lease holds the key (ms until it can be taken),
--                      or another ticket is at the head (ms until its place
--                      expires unless it acts)
--   {-9}               unreadable record or fence counter
--
-- A free key with no queue is taken at once (the common case costs one
-- EXISTS and one SET XX GET more than acquire.lua: the free lease key is
-- checked to be no other type before anything is written). Otherwise the ticket is appended if it is
-- not queued, and its expiry set to now + ARGV[7] either way; both keys
-- live as long as the longest place (their PX only lengthens). Tickets at
-- the head whose place expired (a waiter that died) or that left are
-- dropped, at most 100 per call. A ticket dropped that way and seen again
-- is queued anew, at the end. The fence and the record follow acquire.lua
-- ("prev":0): the record and the fence counter are read with one MGET, and
-- the counter is written back with a SET (no round is claimed).
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call

local v = redis.call('MGET', KEYS[1], KEYS[3]) -- the record, the fence counter
-- A lease key that holds another type reads as absent through MGET; SET
-- XX GET writes nothing to an absent key and fails with WRONGTYPE on
-- another type, before this script writes anything.
if not v[1] then redis.call('SET', KEYS[1], '', 'XX', 'GET') end
local cur = v[1]
local held -- ms until the holder's lease can be taken, if it is live
if cur then
  local exp = tonumber(string.sub(cur, 50, 62))
  if string.sub(cur, 1, 11) ~= '{"lockId":"' or string.sub(cur, 34, 49) ~= '","expiresAtMs":' or not exp then
    return {-9}
  end
  if exp > now - TOLERANCE_MS then held = exp + TOLERANCE_MS - now end
end

-- A free key with nobody queued is taken at once, without a place.
if held or redis.call('EXISTS', KEYS[4]) == 1 then
  local place = ARGV[7] + 0
  if redis.call('HSET', KEYS[5], ARGV[6], now + place) == 1 then
    redis.call('RPUSH', KEYS[4], ARGV[6])
  end
  if redis.call('PTTL', KEYS[4]) < place then
    redis.call('PEXPIRE', KEYS[4], place)
    redis.call('PEXPIRE', KEYS[5], place)
  end
  if held then return {0, held} end

  local head, headExp
  for _ = 1, 100 do
    head = redis.call('LINDEX', KEYS[4], 0)
    if not head then break end
    headExp = tonumber(redis.call('HGET', KEYS[5], head))
    if headExp and headExp > now then break end
    redis.call('LPOP', KEYS[4])
    if headExp then redis.call('HDEL', KEYS[5], head) end
    head = nil
  end
  if head ~= ARGV[6] then
    if head then return {0, math.max(headExp - now, 1)} end
    return {0, 1} -- more dead tickets ahead than one call drops
  end
  redis.call('LPOP', KEYS[4])
  redis.call('HDEL', KEYS[5], ARGV[6])
  if redis.call('LLEN', KEYS[4]) == 0 then redis.call('DEL', KEYS[4], KEYS[5]) end
end

local fence = now * 100
local counter = v[2]
if counter then
  if #counter > 16 or not string.find(counter, '^%d+$') then return {-9} end
  local inc = counter + 1 -- one conversion of the string
  if inc > fence then fence = inc end
end
redis.call('SET', KEYS[3], string.format('%d', fence))
local exp = now + ARGV[2]
redis.call('SET', KEYS[1], string.format('{"lockId":"%s","expiresAtMs":%13d,"acquiredAtMs":%13d,"fence":"%015d","prev":0,%s',
  ARGV[1], exp, now, fence, ARGV[5]), 'PX', ARGV[3])
redis.call('SET', KEYS[2], KEYS[1], 'PX', ARGV[4])
return {1, fence, exp, now, 0}
