-- due: the entries of the index of open and running occurrences that are
-- due at the server's now, oldest first. Reads only.
--
-- KEYS[1] the index  <prefix>:open  (sorted set: "<round>:<deadlineMs>:<key>" -> due ms)
-- ARGV[1] at most this many entries
--
-- Returns {member, score, member, score, ...} (scores as strings), as
-- ZRANGEBYSCORE ... WITHSCORES LIMIT 0 ARGV[1] with the server's now, in
-- ms, as the maximum score.
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1
return redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, ARGV[1])
