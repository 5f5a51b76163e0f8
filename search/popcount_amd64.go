//go:build amd64 && !purego

package search

import "golang.org/x/sys/cpu"

// vectorCount is whether the CPU (and the operating system, which must
// save the registers) has AVX-512 with its vector population count.
var vectorCount = cpu.X86.HasAVX512F && cpu.X86.HasAVX512VPOPCNTDQ

// Implemented in popcount_amd64.s: n words (a multiple of 8) from each
// pointer.
//
//go:noescape
func countAndNotAVX512(f, a, x *uint64, n int) uint64

//go:noescape
func countAnd3Not3AVX512(ops *[7]*uint64, n int) uint64

//go:noescape
func orIntoAVX512(dst, src *uint64, n int)

//go:noescape
func andIntoAVX512(dst, src *uint64, n int)

//go:noescape
func andNotIntoAVX512(dst, src *uint64, n int)

// orInto, andInto and andNotInto set dst to dst | src, dst & src and
// dst &^ src; src is at least as long as dst.
func orInto(dst, src []uint64)     { combine(dst, src, orIntoAVX512, orIntoGo) }
func andInto(dst, src []uint64)    { combine(dst, src, andIntoAVX512, andIntoGo) }
func andNotInto(dst, src []uint64) { combine(dst, src, andNotIntoAVX512, andNotIntoGo) }

// combine runs vec over dst's words eight at a time and rest over the
// words left.
func combine(dst, src []uint64, vec func(dst, src *uint64, n int), rest func(dst, src []uint64)) {
	src = src[:len(dst)]
	if n := len(dst) &^ 7; vectorCount && n > 0 {
		vec(&dst[0], &src[0], n)
		dst, src = dst[n:], src[n:]
	}
	rest(dst, src)
}

func countAndNot(f, a, x []uint64) uint64 {
	a, x = a[:len(f)], x[:len(f)]
	n := len(f) &^ 7
	if !vectorCount || n == 0 {
		return countAndNotGo(f, a, x)
	}
	return countAndNotAVX512(&f[0], &a[0], &x[0], n) + countAndNotGo(f[n:], a[n:], x[n:])
}

func countAnd3Not3(ops *[7][]uint64) uint64 {
	f := ops[0]
	n := len(f) &^ 7
	if !vectorCount || n == 0 {
		return countAnd3Not3Go(ops)
	}
	var ps [7]*uint64
	var tail [7][]uint64
	for i := range ops {
		o := ops[i][:len(f)]
		ps[i], tail[i] = &o[0], o[n:]
	}
	return countAnd3Not3AVX512(&ps, n) + countAnd3Not3Go(&tail)
}
