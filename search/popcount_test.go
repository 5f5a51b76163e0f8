package search

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCountsMatchGo holds the counts (vector ones where the CPU has
// them) to the plain Go loops on random words of random lengths and
// offsets, sparse and dense.
func TestCountsMatchGo(t *testing.T) {
	if !vectorCount {
		t.Log("no vector count on this CPU: the Go loops answer (compared with themselves)")
	}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() uint64 {
		switch r.IntN(4) {
		case 0:
			return 0
		case 1:
			return ^uint64(0)
		case 2:
			a, b := r.Uint64(), r.Uint64()
			return a & b & r.Uint64() // sparse
		}
		return r.Uint64()
	}
	for range 3000 {
		n := r.IntN(300)
		var ops [7][]uint64
		for i := range ops {
			off := r.IntN(9)
			w := make([]uint64, off+n+r.IntN(3))
			for j := range w {
				w[j] = word()
			}
			ops[i] = w[off:]
		}
		ops[0] = ops[0][:n]
		if got, want := countAndNot(ops[0], ops[1], ops[2]), countAndNotGo(ops[0], ops[1], ops[2]); got != want {
			t.Fatalf("countAndNot over %d words: %d, want %d", n, got, want)
		}
		if got, want := countAnd3Not3(&ops), countAnd3Not3Go(&ops); got != want {
			t.Fatalf("countAnd3Not3 over %d words: %d, want %d", n, got, want)
		}
		for _, f := range []struct {
			name     string
			vec, ref func(dst, src []uint64)
		}{{"orInto", orInto, orIntoGo}, {"andInto", andInto, andIntoGo}, {"andNotInto", andNotInto, andNotIntoGo}} {
			got, want := slices.Clone(ops[0]), slices.Clone(ops[0])
			f.vec(got, ops[1])
			f.ref(want, ops[1])
			if !slices.Equal(got, want) {
				t.Fatalf("%s over %d words differs from the Go loop", f.name, n)
			}
		}
	}
}

func BenchmarkCount(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	var ops [7][]uint64
	for i := range ops {
		ops[i] = make([]uint64, 1024)
		for j := range ops[i] {
			ops[i][j] = r.Uint64()
		}
	}
	b.Run("andNot", func(b *testing.B) {
		for b.Loop() {
			countAndNot(ops[0], ops[1], ops[2])
		}
	})
	b.Run("andNotGo", func(b *testing.B) {
		for b.Loop() {
			countAndNotGo(ops[0], ops[1], ops[2])
		}
	})
	b.Run("and3Not3", func(b *testing.B) {
		for b.Loop() {
			countAnd3Not3(&ops)
		}
	})
	b.Run("and3Not3Go", func(b *testing.B) {
		for b.Loop() {
			countAnd3Not3Go(&ops)
		}
	})
}
