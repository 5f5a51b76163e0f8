//go:build !amd64 || purego

package search

const vectorCount = false

func countAndNot(f, a, x []uint64) uint64   { return countAndNotGo(f, a, x) }
func countAnd3Not3(ops *[7][]uint64) uint64 { return countAnd3Not3Go(ops) }

func orInto(dst, src []uint64)     { orIntoGo(dst, src) }
func andInto(dst, src []uint64)    { andIntoGo(dst, src) }
func andNotInto(dst, src []uint64) { andNotIntoGo(dst, src) }
