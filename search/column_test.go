package search

import "testing"

// TestColumnWidens holds a column's ids across its widening from one
// byte to two and to four, and its counts.
func TestColumnWidens(t *testing.T) {
	var c column
	want := []uint32{}
	for i, id := range []uint32{3, 255, 0, 256, 7, 65535, 65536, 1 << 20, 9} {
		c.grow()
		want = append(want, id)
		c.set(uint32(i), id)
		for p, w := range want {
			counts := make([]uint64, w+1)
			c.count([]uint32{uint32(p)}, counts)
			if counts[w] != 1 {
				t.Fatalf("after setting %d at %d: position %d does not hold %d", id, i, p, w)
			}
		}
	}
	if c.w32 == nil || c.w8 != nil || c.w16 != nil {
		t.Fatalf("not widened to four bytes: %d %d %d", len(c.w8), len(c.w16), len(c.w32))
	}
}
