package cache

import "crypto/sha256"

// Key is a cache key: the SHA-256 of the caller's bytes. Fixed-size, so that
// a large key costs the cache 32 bytes; a collision is as likely as one of
// SHA-256.
type Key [sha256.Size]byte

// KeyOf hashes the parts of a key, each length-prefixed so that ("ab", "c")
// and ("a", "bc") differ.
func KeyOf(parts ...[]byte) Key {
	h := sha256.New()
	var n [8]byte
	for _, p := range parts {
		l := uint64(len(p))
		for i := range n {
			n[i] = byte(l >> (8 * i))
		}
		h.Write(n[:])
		h.Write(p)
	}
	var k Key
	h.Sum(k[:0])
	return k
}
