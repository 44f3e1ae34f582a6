-- release_batch: the releases of release_status.lua for n leases in one
-- call, each decided, written and answered exactly as release_status.lua
-- decides, writes and answers it, with one MGET of the records, one DEL and
-- one MSET for them all instead of a GET, a DEL and a SET (or MSET) each
-- (about a fifth less server time per release, BENCHMARKS.md). Only for a
-- server that is not a Redis Cluster (the keys of different leases are in
-- different slots).
-- Its decisions are release_status.lua's, written again over offsets:
-- change both together; TestStore_ReleaseBatch_AnswersAndWritesAsRelease
-- (lease/redislease) compares them on every shape and answer.
--
-- ARGV[1] n, the number of releases; ARGV[2] the history's last index and
-- ARGV[3] the most entries it may hold (release_status.lua's ARGV[3] and
-- ARGV[4], the same for every release of a store). Every release has the
-- same shape: k = #KEYS / n keys, laid out as release_status.lua's KEYS[1]
-- .. KEYS[k] (k is 5, or 6 with attempts), and a = (#ARGV - 3) / n arguments, laid out as
-- release_status.lua's ARGV without ARGV[3] and ARGV[4] (2, or 7 with
-- attempts: the head, the status, then ARGV[5..9]). Release i (from 0) has
-- KEYS[i*k + 1 .. i*k + k] and ARGV[4 + i*a .. 3 + i*a + a]. No lease key
-- may be given twice (the releases read every record before any writes): a
-- call that does fails before it writes.
--
-- Returns one reply per release, in order: release_status.lua's reply, or
-- an error reply for a release whose lease key (or, when the lease is not
-- held, whose ID index key) holds another type than a string: nothing of
-- that release is written, as release_status.lua fails before it writes.
--
-- Writes, per release of a held lease: the record and the ID index in one
-- DEL and the status (and completion record) in one MSET for them all;
-- then, each in the order of the releases, the history's LPUSH, the
-- SPUBLISH of the release, the trigger queue's LLEN and, when the history
-- is long enough, its LTRIM, as release_status.lua does them (the history
-- and the trigger queue with pcall). Nothing can fail once the first write
-- is made.
local n = ARGV[1] + 0
local k = #KEYS / n
local a = (#ARGV - 3) / n
if n < 1 or k % 1 ~= 0 or a % 1 ~= 0 or not ((k == 5 and a == 2) or (k == 6 and a == 7)) then
  return redis.error_reply('ERR release_batch: keys and arguments do not make ' .. ARGV[1] .. ' releases')
end
local last, most = ARGV[2], ARGV[3] + 0

local names, seen = {}, {}
for i = 0, n - 1 do
  local d = KEYS[i * k + 1]
  if seen[d] then
    return redis.error_reply('ERR release_batch: lease key given twice')
  end
  seen[d] = true
  names[i + 1] = d
end
local v = redis.call('MGET', unpack(names))

-- Decide every release before any write: held, or its answer.
local out, held, dels, nd, sets, ns, now = {}, {}, {}, 0, {}, 0, nil
for i = 0, n - 1 do
  local b, c = i * k, 4 + i * a
  local rec = v[i + 1]
  if not rec then
    -- MGET reads a key of another type as nil; GET fails on it, as it
    -- fails release_status.lua (this release alone).
    local r = redis.pcall('GET', KEYS[b + 1])
    if type(r) == 'table' then out[i + 1] = r end
  end
  if out[i + 1] then
    -- answered: the lease key holds another type
  elseif rec and string.sub(rec, 1, 49) == ARGV[c] then
    held[i + 1] = true
    dels[nd + 1], dels[nd + 2] = KEYS[b + 1], KEYS[b + 2]
    nd = nd + 2
    sets[ns + 1], sets[ns + 2] = KEYS[b + 3], ARGV[c + 1]
    ns = ns + 2
    if k == 6 then -- the attempt's end, in its completion record, with the status
      local nb = 0
      if ARGV[c + 2] == 'o' then
        if not now then
          local t = redis.call('TIME')
          now = t[1] * 1000 + t[2] / 1000
        end
        nb = now + ARGV[c + 5]
        nb = nb - nb % 1
      end
      sets[ns + 1], sets[ns + 2] = KEYS[b + 6], string.format('%s%s|%d%s', ARGV[c + 3], ARGV[c + 2], nb, ARGV[c + 4])
      ns = ns + 2
    end
  else
    local dk = redis.pcall('GET', KEYS[b + 2])
    if type(dk) == 'table' then out[i + 1] = dk
    elseif not dk then out[i + 1] = {-1, 0}
    elseif dk ~= KEYS[b + 1] then out[i + 1] = {-5, 0}
    elseif not rec then out[i + 1] = {-2, 0}
    elseif string.sub(rec, 1, 11) ~= '{"lockId":"' or string.sub(rec, 34, 49) ~= '","expiresAtMs":' or not tonumber(string.sub(rec, 50, 62)) then
      out[i + 1] = {-9, 0}
    else out[i + 1] = {0, 0}
    end
  end
end

if nd > 0 then
  redis.call('DEL', unpack(dels))
  redis.call('MSET', unpack(sets))
end
for i = 0, n - 1 do
  if held[i + 1] then
    local b, c = i * k, 4 + i * a
    local h
    if k == 6 and ARGV[c + 2] == 'g' then -- the run, then the given_up entry above it
      h = redis.pcall('LPUSH', KEYS[b + 5], ARGV[c + 1], ARGV[c + 6])
    else
      h = redis.pcall('LPUSH', KEYS[b + 5], ARGV[c + 1])
    end
    redis.pcall('SPUBLISH', KEYS[b + 1], 'release')
    local q = redis.pcall('LLEN', KEYS[b + 4])
    if type(q) ~= 'number' then q = 0 end
    if type(h) ~= 'number' then
      out[i + 1] = {1, q, 1}
    else
      if h > most then redis.call('LTRIM', KEYS[b + 5], '0', last) end
      out[i + 1] = {1, q}
    end
  end
end
return out
