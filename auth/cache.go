package auth

import (
	"maps"
	"sync"
	"time"
)

// ttlCache remembers values by key, each for as long as its reader allows
// (get's ttl). It forgets everything at once rather than grow past a limit
// (put's limit). The zero value is empty and ready; it is safe for
// concurrent use.
type ttlCache[K comparable, V any] struct {
	mu sync.Mutex
	m  map[K]ttlEntry[V]
}

type ttlEntry[V any] struct {
	v       V
	fetched time.Time
}

// get returns the value of k if it was put less than ttl before now
// (never for a ttl of 0, even on a clock set back).
func (c *ttlCache[K, V]) get(k K, now time.Time, ttl time.Duration) (V, bool) {
	c.mu.Lock()
	e, ok := c.m[k]
	c.mu.Unlock()
	if !ok || ttl <= 0 || now.Sub(e.fetched) >= ttl {
		var zero V
		return zero, false
	}
	return e.v, true
}

// put remembers v as fetched at now, after forgetting everything if the
// cache holds more than limit values.
func (c *ttlCache[K, V]) put(k K, v V, now time.Time, limit int) {
	c.mu.Lock()
	if c.m == nil || len(c.m) > limit {
		c.m = map[K]ttlEntry[V]{}
	}
	c.m[k] = ttlEntry[V]{v: v, fetched: now}
	c.mu.Unlock()
}

// getOrLoad returns the value of k as get does, else the one load
// returns, remembered (as put does) when load succeeds.
func (c *ttlCache[K, V]) getOrLoad(k K, now time.Time, ttl time.Duration, limit int, load func() (V, error)) (V, error) {
	if v, ok := c.get(k, now, ttl); ok {
		return v, nil
	}
	v, err := load()
	if err == nil {
		c.put(k, v, now, limit)
	}
	return v, err
}

// drop forgets k.
func (c *ttlCache[K, V]) drop(k K) {
	c.mu.Lock()
	delete(c.m, k)
	c.mu.Unlock()
}

// update changes the value of k, if it is held, in place: when it was
// fetched stays as it was.
func (c *ttlCache[K, V]) update(k K, f func(*V)) {
	c.mu.Lock()
	if e, ok := c.m[k]; ok {
		f(&e.v)
		c.m[k] = e
	}
	c.mu.Unlock()
}

// dropFunc forgets every value del reports true for.
func (c *ttlCache[K, V]) dropFunc(del func(V) bool) {
	c.mu.Lock()
	maps.DeleteFunc(c.m, func(_ K, e ttlEntry[V]) bool { return del(e.v) })
	c.mu.Unlock()
}
