package terms

// The namespace of a transform's entries in Redis: the identity of the
// lookup whose answers they are. Cache.Prefix names the cache, and two
// transforms whose keys and answers have the same types could otherwise
// read each other's answers under one Prefix. With the lookup's identity
// in every key, two different lookups never share an entry, and the same
// lookup in two transforms or jobs does, by choice of the Prefix. The
// worker's cache needs no namespace: it is one per transform (resultCache),
// so it holds one lookup's answers.

import "github.com/asyncbeam/asyncbeam/transforms/cache"

// cacheNamespace is the short hash of the lookup's identity (lookupIdentity)
// that follows Cache.Prefix in every Redis key.
func (c *Config) CacheNamespace() string { return cache.NamespaceOf(c.lookupIdentity()...) }

// lookupIdentity is what the cached answers depend on besides the element
// (the cache key) and the types (the shape, cachetypes.go): the wrapped fn
// or Enrich's lookup, as a worker rebuilds it, and the WithFallbacks value
// of the attempts whose answers are cached.
//
//   - a registered function: its name;
//   - a registered struct: its type's package path and name, the method
//     called (Lookup, LookupBatch, ProcessElement, ProcessBatch) and the
//     JSON of its exported fields, its shipped configuration (a service's
//     URL, a model's name);
//   - WithFallbacks: the first value. Only attempts that all take one
//     value are cached (internal/worker/cachedjob.go): the first, or all
//     of them when one value is given.
//
// Enrich's join is not part of it: it runs after the cache, per record.
func (c *Config) lookupIdentity() [][]byte {
	u := c.User
	parts := [][]byte{[]byte("lookup/v1")}
	switch {
	case u.Func != nil:
		parts = append(parts, []byte("func"), []byte(u.Func.Func().Name()))
	case u.Type != nil:
		method := u.Method()
		if u.Batch {
			method = u.BatchMethod()
		}
		t := u.Type.T
		parts = append(parts, []byte("type"), []byte(t.PkgPath()+"."+t.Name()), []byte(method), []byte(u.JSON))
	}
	if len(c.Fallbacks) > 0 {
		parts = append(parts, []byte("fallback"), []byte(c.Fallbacks[0]))
	}
	return parts
}

// SharedCache is the config of the transform's Redis-shared cache: under
// Cache.Prefix, the namespace of its lookup (CacheNamespace).
func (c *Config) SharedCache() cache.SharedConfig {
	s := c.Cache
	return cache.SharedConfig{Addr: s.Redis, Prefix: s.Prefix, Namespace: c.CacheNamespace(), TTL: s.TTL,
		PasswordEnv: s.PasswordEnv, PasswordFile: s.PasswordFile, CAFile: s.CAFile}
}
