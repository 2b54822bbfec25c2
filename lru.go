package projectdata

import "container/list"

// lru is a set of values by key that remembers the order of use, most
// recently used first. The Store keeps its open projects in one. An lru is
// not safe for concurrent use: its owner guards it.
type lru[V any] struct {
	order *list.List               // of *lruEntry[V], most recently used at the front
	byKey map[string]*list.Element // key → element of order
}

type lruEntry[V any] struct {
	key   string
	value V
}

func newLRU[V any]() *lru[V] {
	return &lru[V]{order: list.New(), byKey: make(map[string]*list.Element)}
}

// len returns the number of values.
func (l *lru[V]) len() int { return l.order.Len() }

// get returns the value of key and marks it the most recently used.
func (l *lru[V]) get(key string) (v V, ok bool) {
	e, ok := l.byKey[key]
	if !ok {
		return v, false
	}
	l.order.MoveToFront(e)
	return e.Value.(*lruEntry[V]).value, true
}

// add sets the value of key and marks it the most recently used.
func (l *lru[V]) add(key string, v V) {
	if e, ok := l.byKey[key]; ok {
		e.Value.(*lruEntry[V]).value = v
		l.order.MoveToFront(e)
		return
	}
	l.byKey[key] = l.order.PushFront(&lruEntry[V]{key: key, value: v})
}

// removeIf removes key when its value is one that match accepts, and
// reports whether it did.
func (l *lru[V]) removeIf(key string, match func(V) bool) bool {
	e, ok := l.byKey[key]
	if !ok || !match(e.Value.(*lruEntry[V]).value) {
		return false
	}
	delete(l.byKey, key)
	l.order.Remove(e)
	return true
}

// demote marks key the least recently used, when its value is one that
// match accepts.
func (l *lru[V]) demote(key string, match func(V) bool) {
	if e, ok := l.byKey[key]; ok && match(e.Value.(*lruEntry[V]).value) {
		l.order.MoveToBack(e)
	}
}

// trim removes least recently used values that evictable accepts, while
// more than max remain, and returns them, least recently used first.
// Values evictable refuses stay, whatever their age.
func (l *lru[V]) trim(max int, evictable func(V) bool) []V {
	var out []V
	for e := l.order.Back(); e != nil && l.order.Len() > max; {
		prev := e.Prev()
		if ent := e.Value.(*lruEntry[V]); evictable(ent.value) {
			delete(l.byKey, ent.key)
			l.order.Remove(e)
			out = append(out, ent.value)
		}
		e = prev
	}
	return out
}

// drain removes every value and returns them, most recently used first.
func (l *lru[V]) drain() []V {
	out := make([]V, 0, l.order.Len())
	for e := l.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*lruEntry[V]).value)
	}
	l.order.Init()
	clear(l.byKey)
	return out
}

// keys returns the keys, most recently used first.
func (l *lru[V]) keys() []string {
	out := make([]string, 0, l.order.Len())
	for e := l.order.Front(); e != nil; e = e.Next() {
		out = append(out, e.Value.(*lruEntry[V]).key)
	}
	return out
}
