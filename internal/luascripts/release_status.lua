-- release_status: release_lease.lua that also records the run's status and
-- adds it to the job's history, for a holder that knows its lease's key;
-- and says how many triggers wait. release_batch.lua makes these releases
-- for many leases in one call, its decisions this script's written again
-- over offsets: change both together;
-- TestStore_ReleaseBatch_AnswersAndWritesAsRelease (lease/redislease)
-- compares them on every shape and answer.
--
-- KEYS[1] lease data key   <prefix>:{G}
-- KEYS[2] ID index key     <prefix>:id:{T}:<id>  (same slot as G)
-- KEYS[3] status key       <prefix>:status:{G}   (the last run, JSON; no expiry)
-- KEYS[4] trigger queue    <prefix>:trigger:{G}
-- KEYS[5] history key      <prefix>:history:{G}  (the last runs, newest first; no expiry)
-- ARGV[1] record head of the lease: {"lockId":"<id>","expiresAtMs":  (49 bytes)
-- ARGV[2] the status, JSON, built by the client (it carries no lease ID)
-- ARGV[3] the history's last index: its limit minus 1
-- ARGV[4] the most entries the history may hold: its limit plus a slack
-- With a lease acquired with lease.WithAttempts only:
-- KEYS[6] completion record <prefix>:attempt:{G}
-- ARGV[5] the close: d (done), o (open) or g (given up)
-- ARGV[6] "<round>|<attempt>|", ARGV[7] "|<deadlineMs>|<max>": the record's ends
-- ARGV[8] with o: ms after now before the next attempt may start
-- ARGV[9] with g: the "given_up" history entry, JSON
--
-- Returns {code, triggers}: code is release_lease.lua's (1 released, 0 not
-- owner, -1 not found, -2 expired, -5 another data key, -9 unreadable);
-- the status is written, and pushed on the history, only with code 1, by
-- the holder. triggers is the length of the trigger queue (expired entries
-- included; the trigger acquire drops them). A release is published for
-- the key's waiters as release.lua does. {1, triggers, 1}: released, but
-- the history key holds another type than a list, and the run was not
-- pushed on it.
--
-- The history and the trigger queue are read and written with pcall: a key
-- of another type there (written by hand, or by another program under the
-- same prefix) must not fail the script after the lease is gone and before
-- the completion record says how the attempt ended, which would leave the
-- occurrence "running" with no holder, to be resumed and run again. A
-- trigger queue of another type counts no trigger.
--
-- The history is trimmed with slack: LPUSH answers the list's length, and
-- only a length above ARGV[4] (limit + slack) trims it back to the limit
-- (LTRIM 0 ARGV[3]), so one release in slack + 1 trims and the list never
-- holds more than limit + slack entries; readers read the first limit
-- entries only (History). A release runs GET, DEL, SET, LPUSH, SPUBLISH and
-- LLEN; LTRIM when it trims. With attempts the status and the completion
-- record go in one MSET (the same slot), before the history, and TIME comes
-- first when the occurrence is left open.
local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, 49) == ARGV[1] then
  redis.call('DEL', KEYS[1], KEYS[2])
  local n
  if KEYS[6] then -- the attempt's end, in its completion record, with the status
    local nb = 0
    if ARGV[5] == 'o' then
      local t = redis.call('TIME')
      nb = t[1] * 1000 + t[2] / 1000 + ARGV[8]
      nb = nb - nb % 1
    end
    redis.call('MSET', KEYS[3], ARGV[2], KEYS[6], string.format('%s%s|%d%s', ARGV[6], ARGV[5], nb, ARGV[7]))
    if ARGV[5] == 'g' then -- the run, then the given_up entry above it
      n = redis.pcall('LPUSH', KEYS[5], ARGV[2], ARGV[9])
    else
      n = redis.pcall('LPUSH', KEYS[5], ARGV[2])
    end
  else
    redis.call('SET', KEYS[3], ARGV[2])
    n = redis.pcall('LPUSH', KEYS[5], ARGV[2])
  end
  redis.pcall('SPUBLISH', KEYS[1], 'release')
  local q = redis.pcall('LLEN', KEYS[4])
  if type(q) ~= 'number' then q = 0 end
  if type(n) ~= 'number' then return {1, q, 1} end
  if n > ARGV[4] + 0 then redis.call('LTRIM', KEYS[5], '0', ARGV[3]) end
  return {1, q}
end
local dk = redis.call('GET', KEYS[2])
if not dk then return {-1, 0} end
if dk ~= KEYS[1] then return {-5, 0} end
if not v then return {-2, 0} end
if string.sub(v, 1, 11) ~= '{"lockId":"' or string.sub(v, 34, 49) ~= '","expiresAtMs":' or not tonumber(string.sub(v, 50, 62)) then
  return {-9, 0}
end
return {0, 0}
