package search

import "math/bits"

// The counts of a pass over twins (densescan.go), in Go. On amd64 with
// AVX-512's vector population count (popcount_amd64.go) the same counts
// run eight words at a time; these answer everywhere else, and the tests
// hold the two to the same results.

// countAndNotGo returns the bits of f & a &^ x; every slice is at least
// as long as f.
func countAndNotGo(f, a, x []uint64) (c uint64) {
	a, x = a[:len(f)], x[:len(f)]
	for i, w := range f {
		c += uint64(bits.OnesCount64(w & a[i] &^ x[i]))
	}
	return c
}

// countAnd3Not3Go returns the bits of ops[0] & ops[1] & ops[2] & ops[3]
// &^ (ops[4] | ops[5] | ops[6]); every slice is at least as long as the
// first.
func countAnd3Not3Go(ops *[7][]uint64) (c uint64) {
	f := ops[0]
	a1, a2, a3 := ops[1][:len(f)], ops[2][:len(f)], ops[3][:len(f)]
	x1, x2, x3 := ops[4][:len(f)], ops[5][:len(f)], ops[6][:len(f)]
	for i, w := range f {
		c += uint64(bits.OnesCount64(w & a1[i] & a2[i] & a3[i] &^ (x1[i] | x2[i] | x3[i])))
	}
	return c
}

func orIntoGo(dst, src []uint64) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] |= src[i]
	}
}

func andIntoGo(dst, src []uint64) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] &= src[i]
	}
}

func andNotIntoGo(dst, src []uint64) {
	src = src[:len(dst)]
	for i := range dst {
		dst[i] &^= src[i]
	}
}
