-- queue_leave: take a waiter's ticket out of a key's queue.
--
-- KEYS[1] queue            <prefix>:queue:{G}        (list of tickets, in arrival order)
-- KEYS[2] queue expiries   <prefix>:queue:{G}:exp    (hash: ticket -> expiresAtMs)
-- KEYS[3] lease data key   <prefix>:{G}              (named only for its channel)
-- ARGV[1] the ticket
--
-- Returns
--   1   left the queue
--   0   the ticket was not queued
--
-- When the ticket was at the head, its departure is published on the
-- key's channel (see release.lua) so that the next waiter looks again.
if redis.call('HDEL', KEYS[2], ARGV[1]) == 0 then return 0 end
local head = redis.call('LINDEX', KEYS[1], 0)
redis.call('LREM', KEYS[1], 1, ARGV[1])
if redis.call('LLEN', KEYS[1]) == 0 then redis.call('DEL', KEYS[1], KEYS[2]) end
if head == ARGV[1] then redis.pcall('SPUBLISH', KEYS[3], 'leave') end
return 1
