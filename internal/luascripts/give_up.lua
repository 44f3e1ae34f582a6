-- give_up: mark an occurrence given up when its completion record is open
-- (or running with no live lease) and it has no attempt left or its
-- deadline has passed, and push a "given_up" entry on the job's history.
--
-- KEYS[1] lease data key     <prefix>:{G}
-- KEYS[2] completion record  <prefix>:attempt:{G}
-- KEYS[3] history key        <prefix>:history:{G}
-- ARGV[1] the round, as the record stores it (digits)
-- ARGV[2] the history's last index: its limit minus 1
-- ARGV[3] the most entries the history may hold: its limit plus a slack
--         (trimmed back to the limit only above it, as release_status.lua)
--
-- Returns
--   {1, deadlineMs}   given up by this call
--   {0, deadlineMs}   not given up: attempts and time remain, or a live
--                     lease holds the key (the occurrence may still complete)
--   {2, deadlineMs}   already done or given up
--   {-3}              no record of this round
--   {-9}              unreadable record
local TOLERANCE_MS = 1000
local rec = redis.call('GET', KEYS[2])
if not rec then return {-3} end
local r, a, st, nb, dl, mx = string.match(rec, '^(%d+)|(%d+)|(%a)|(%d+)|(%d+)|(%d+)$')
if not r then return {-9} end
if r ~= ARGV[1] then return {-3} end
dl = dl + 0
if st == 'd' or st == 'g' then return {2, dl} end
if st ~= 'r' and st ~= 'o' then return {-9} end
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1
if st == 'r' then
  local cur = redis.call('GET', KEYS[1])
  if cur then
    local exp = tonumber(string.sub(cur, 50, 62))
    if not exp then return {-9} end
    if exp > now - TOLERANCE_MS then return {0, dl} end
  end
end
a = a + 0
if a < mx + 0 and now < dl then return {0, dl} end
local dead -- the "interrupted" entry of an attempt whose holder died
if st == 'r' then
  -- Its holder died and never released: no replica recorded the attempt's end.
  dead = string.format(
    '{"occurrence":%s,"owner":"","attempt":%d,"fence":0,"startedAt":%d,"durationMs":0,"outcome":"interrupted","error":"its replica stopped renewing the lease and never released it (it died or lost the store)"}', r, a, now)
end
redis.call('SET', KEYS[2], string.format('%s|%d|g|%s|%d|%s', r, a, nb, dl, mx))
local gone = string.format(
  '{"occurrence":%s,"owner":"","attempt":%d,"fence":0,"startedAt":%d,"durationMs":0,"outcome":"given_up"}', r, a, now)
-- With pcall: a history key of another type loses the entries, not the
-- give-up (release_status.lua says why).
local n
if dead then
  n = redis.pcall('LPUSH', KEYS[3], dead, gone)
else
  n = redis.pcall('LPUSH', KEYS[3], gone)
end
if type(n) == 'number' and n > ARGV[3] + 0 then redis.call('LTRIM', KEYS[3], '0', ARGV[2]) end
return {1, dl}
