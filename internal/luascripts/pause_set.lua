-- pause_set: pause one key, stamping the pause with server time.
--
-- KEYS[1] pause key        <prefix>:pause:{G}
-- ARGV[1] the pause without its time: "<by>\n<note>"
--
-- Returns the server time in ms. The key holds "<atMs>\n<by>\n<note>".
local t = redis.call('TIME')
local now = t[1] * 1000 + t[2] / 1000
now = now - now % 1 -- whole ms, without math.floor's lookup and call
redis.call('SET', KEYS[1], string.format('%d', now) .. '\n' .. ARGV[1])
return now
