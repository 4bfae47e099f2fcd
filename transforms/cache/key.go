package cache

import (
	"crypto/sha256"
	"encoding/hex"
)

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

// NamespaceOf is a short name for the identity given by parts (hashed as
// KeyOf hashes them): 16 hex digits, the first 8 bytes of the hash, for
// SharedConfig.Namespace. Equal parts give equal names; different parts
// give different names but for a chance of 2^-64 per pair.
func NamespaceOf(parts ...[]byte) string {
	k := KeyOf(parts...)
	return hex.EncodeToString(k[:8])
}
