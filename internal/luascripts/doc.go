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
package luascripts
