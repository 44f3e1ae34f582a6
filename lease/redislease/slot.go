package redislease

import "sync"

// slotCount is the number of Redis Cluster hash slots.
const slotCount = 16384

// keySlot returns the Redis Cluster hash slot of a hash tag: CRC16 (XMODEM) of
// tag, mod 16384.
func keySlot(tag string) int {
	return int(crc16(tag)) & (slotCount - 1)
}

// crc16 is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the checksum
// Redis Cluster uses for key slots, a byte at a time from crc16Table.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc = crc<<8 ^ crc16Table[byte(crc>>8)^s[i]]
	}
	return crc
}

// crc16Table holds the CRC-16/XMODEM of every byte value, computed bit by
// bit.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		crc := uint16(i) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
		t[i] = crc
	}
	return t
}()

// tagAlphabet is the alphabet of slot tags: characters that need no quoting
// anywhere and are not braces.
const tagAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

var (
	slotTagsOnce sync.Once
	slotTags     []string // slot -> shortest tag over tagAlphabet in that slot
)

// slotTag returns the fixed tag T of a slot: the shortest string over
// [0-9A-Za-z] (first in length-then-alphabet order) whose hash slot is slot.
// The table of all 16384 tags is computed once, on first use. It panics if
// slot is out of range; callers check.
func slotTag(slot int) string {
	slotTagsOnce.Do(buildSlotTags)
	return slotTags[slot]
}

// buildSlotTags fills the tag table by enumerating strings of length 1, 2, 3
// and (if ever needed) 4 in order, keeping the first string seen per slot.
func buildSlotTags() {
	tags := make([]string, slotCount)
	left := slotCount
	buf := make([]byte, 0, 4)
	var walk func(depth int)
	walk = func(depth int) {
		if left == 0 {
			return
		}
		if len(buf) == depth {
			s := keySlot(string(buf))
			if tags[s] == "" {
				tags[s] = string(buf)
				left--
			}
			return
		}
		for i := 0; i < len(tagAlphabet) && left > 0; i++ {
			buf = append(buf, tagAlphabet[i])
			walk(depth)
			buf = buf[:len(buf)-1]
		}
	}
	for n := 1; n <= 4 && left > 0; n++ {
		walk(n)
	}
	slotTags = tags
}

// idAlphabet is base64url, the alphabet of lease IDs, in value order.
const idAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// idValue maps an ID character to its 6-bit value, or -1.
var idValue = func() (v [256]int8) {
	for i := range v {
		v[i] = -1
	}
	for i := 0; i < len(idAlphabet); i++ {
		v[idAlphabet[i]] = int8(i)
	}
	return v
}()

// appendSlot appends the three ID characters that encode slot to dst (14
// bits in 18: the first character is always one of A-D).
func appendSlot(dst []byte, slot int) []byte {
	return append(dst, idAlphabet[slot>>12&63], idAlphabet[slot>>6&63], idAlphabet[slot&63])
}

// decodeSlot returns the slot encoded in the first three characters of a
// lease ID, and false when they encode no slot (a value of 16384 or more, a
// character outside base64url, or an ID shorter than three characters).
func decodeSlot(id string) (int, bool) {
	if len(id) < 3 {
		return 0, false
	}
	a, b, c := idValue[id[0]], idValue[id[1]], idValue[id[2]]
	if a < 0 || b < 0 || c < 0 {
		return 0, false
	}
	v := int(a)<<12 | int(b)<<6 | int(c)
	if v >= slotCount {
		return 0, false
	}
	return v, true
}
