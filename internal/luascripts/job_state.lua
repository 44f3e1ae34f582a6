-- job_state: read what the store holds about one key, at one instant.
-- Read-only.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] round record     <prefix>:round:{G}
-- KEYS[3] status key       <prefix>:status:{G}
-- KEYS[4] pause key        <prefix>:pause:{G}
-- KEYS[5] trigger queue    <prefix>:trigger:{G}
--
-- Returns {nowMs, record or "", round or "", status or "", pause or "",
-- liveTriggers}: the lease record only if it is live (see acquire.lua),
-- and the number of queued triggers that have not expired.
local TOLERANCE_MS = 1000
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
local v = redis.call('GET', KEYS[1]) or ''
if v ~= '' then
  local exp = tonumber(string.sub(v, 50, 62))
  if not exp or exp <= now - TOLERANCE_MS then v = '' end
end
local live = 0
for _, e in ipairs(redis.call('LRANGE', KEYS[5], 0, -1)) do
  local exp = tonumber(string.match(e, '^(%d+)|'))
  if exp and exp > now then live = live + 1 end
end
return {now, v, redis.call('GET', KEYS[2]) or '', redis.call('GET', KEYS[3]) or '', redis.call('GET', KEYS[4]) or '', live}
