package search

import "unsafe"

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
