// Package luascripts holds the Lua scripts of the Redis lease store, one
// file per operation, embedded into the binary.
//
// Each script's header comment gives its KEYS, ARGV and return codes. The
// scripts return only integers, strings and arrays (cjson and RESP disagree
// on everything else). They read time only from the server (TIME), never
// delete or expire fence or round keys, and verify the lease ID against the
// stored record before they change or return anything found through an ID.
//
// The scripts share a record layout with the Go code in lease/redislease: the ID
// at bytes 12-33 and the space-padded expiry in Unix ms at bytes 50-62, so
// that no hot path needs cjson. Change both together.
//
// Numbers the client sends (ARGV) are read by arithmetic, ARGV[2] + 0, not
// tonumber(ARGV[2]): Lua 5.1's tonumber converts the string twice, about
// 1,100 instructions more per number, and the client always sends decimal
// integers. Values read from Redis keep tonumber, whose nil marks a record
// that is not ours to trust.
package luascripts
