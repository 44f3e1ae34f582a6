-- trigger_add: queue a trigger for one key.
--
-- KEYS[1] trigger queue    <prefix>:trigger:{G}
-- ARGV[1] trigger ID
-- ARGV[2] how long the trigger lives, in ms
--
-- Returns {queuedAtMs, expiresAtMs}. The queue entry is
-- "<expiresAtMs>|<queuedAtMs>|<trigger id>"; the queue itself expires with
-- its longest-lived entry (its expiry is only ever lengthened).
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
local exp = now + ARGV[2]
redis.call('RPUSH', KEYS[1], string.format('%d|%d|%s', exp, now, ARGV[1]))
local left = redis.call('PTTL', KEYS[1])
if left < 0 or left < ARGV[2] + 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
return {now, exp}
