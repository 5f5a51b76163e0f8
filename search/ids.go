package search

import (
	"hash/maphash"
	"unsafe"
)

// idList holds the cars' ids end to end in one byte slice, position p's
// from ends[p-1] (0 for the first) to ends[p]. A slice of a million
// strings is a million pointers for the garbage collector to follow at
// each cycle (the index is most of a server's heap); this holds two.
// Ids are only appended: a position keeps its id for good.
type idList struct {
	b    []byte
	ends []int
}

func (l *idList) len() int { return len(l.ends) }

func (l *idList) add(id string) {
	l.b = append(l.b, id...)
	l.ends = append(l.ends, len(l.b))
}

// at returns position p's id. The string shares the slice's memory,
// which is never written again (an append that grows it copies).
func (l *idList) at(p uint32) string {
	start := 0
	if p > 0 {
		start = l.ends[p-1]
	}
	n := l.ends[p] - start
	if n == 0 {
		return ""
	}
	return unsafe.String(&l.b[start], n)
}

// idTable finds a position by its car id: open addressing over a table of
// positions (plus one; 0 is an empty slot) kept at most half full, hashed
// with maphash. 4 to 8 bytes per car, where a Go map from id to position
// would cost some 40, and one or two probes of memory where a binary search
// over the ids in order compares about 20 ids, each a cache miss on a
// million cars.
type idTable struct {
	slots []uint32
	n     int
}

// idSeed is the hash's seed, one per process: which slot an id lands in
// is not up to whoever chooses the ids.
var idSeed = maphash.MakeSeed()

// find returns id's position in l, if it has one.
func (t *idTable) find(l *idList, id string) (uint32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := uint64(len(t.slots) - 1)
	for h := maphash.String(idSeed, id) & mask; ; h = (h + 1) & mask {
		v := t.slots[h]
		if v == 0 {
			return 0, false
		}
		if l.at(v-1) == id {
			return v - 1, true
		}
	}
}

// add records position p, whose id in l is new to the table.
func (t *idTable) add(l *idList, p uint32) {
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]uint32, max(1024, 2*len(old)))
		t.n = 0
		for _, v := range old {
			if v != 0 {
				t.insert(l, v-1)
			}
		}
	}
	t.insert(l, p)
}

func (t *idTable) insert(l *idList, p uint32) {
	mask := uint64(len(t.slots) - 1)
	h := maphash.String(idSeed, l.at(p)) & mask
	for t.slots[h] != 0 {
		h = (h + 1) & mask
	}
	t.slots[h] = p + 1
	t.n++
}
