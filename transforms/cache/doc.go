// Package cache keeps the results of calls so that a lookup seen before is
// not called again: a bounded local cache with a time to live (Local, on
// hashicorp/golang-lru/v2), a cache shared by every worker in Redis
// (Shared), and a single flight (Flight) that makes copies of a key being
// called right now wait for that one call.
//
// It knows nothing of Beam. Keys are the caller's bytes (the async
// transform encodes an element's key and value, or a user's cache key, with
// their Beam coders), hashed to a fixed size; values are the caller's bytes
// (the encoded outputs of one call). A value is never shared between
// callers as a mutable object: each hit decodes its own copy.
//
// Every failure of Redis degrades to a miss, or a store skipped; a lookup
// Redis did not answer is counted (SharedStats.Errors). It is never an
// error of the caller's element. A caller that would rather
// not start without Redis asks Shared.Check first.
package cache
