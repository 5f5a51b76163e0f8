//go:build amd64 && !purego

#include "textflag.h"

// COMBINE is the body of the combines below: eight of dst's words at a
// time in Z1 and src's in Z2, set to OP A, B, Z1 (Go's operand order).
#define COMBINE(OP, A, B) \
	MOVQ dst+0(FP), DI; \
	MOVQ src+8(FP), SI; \
	MOVQ n+16(FP), CX; \
	SHLQ $3, CX; \
	XORQ DX, DX; \
loop: \
	CMPQ DX, CX; \
	JAE  done; \
	VMOVDQU64 (DI)(DX*1), Z1; \
	VMOVDQU64 (SI)(DX*1), Z2; \
	OP A, B, Z1; \
	VMOVDQU64 Z1, (DI)(DX*1); \
	ADDQ $64, DX; \
	JMP  loop; \
done: \
	VZEROUPPER; \
	RET

// SUMZ0 adds up the eight counts in Z0 into AX.
#define SUMZ0 \
	VEXTRACTI64X4 $1, Z0, Y1; \
	VPADDQ Y1, Y0, Y0; \
	VEXTRACTI128 $1, Y0, X1; \
	VPADDQ X1, X0, X0; \
	VPSHUFD $0x4e, X0, X1; \
	VPADDQ X1, X0, X0; \
	VMOVQ X0, AX; \
	VZEROUPPER

// Population counts of combined bitsets, eight words to a register
// (popcount_amd64.go). n is a multiple of 8: the caller counts the rest.
// In Go's operand order VPANDNQ B, A, D sets D to B &^ A.

// func countAndNotAVX512(f, a, x *uint64, n int) uint64
TEXT ·countAndNotAVX512(SB), NOSPLIT, $0-40
	MOVQ f+0(FP), SI
	MOVQ a+8(FP), DI
	MOVQ x+16(FP), R8
	MOVQ n+24(FP), CX
	SHLQ $3, CX
	XORQ DX, DX
	VPXORQ Z0, Z0, Z0

loop:
	CMPQ DX, CX
	JAE  done
	VMOVDQU64 (SI)(DX*1), Z1
	VMOVDQU64 (R8)(DX*1), Z2
	VPANDQ    (DI)(DX*1), Z1, Z1
	VPANDNQ   Z1, Z2, Z1
	VPOPCNTQ  Z1, Z1
	VPADDQ    Z1, Z0, Z0
	ADDQ      $64, DX
	JMP       loop

done:
	SUMZ0
	MOVQ          AX, ret+32(FP)
	RET

// func countAnd3Not3AVX512(ops *[7]*uint64, n int) uint64
TEXT ·countAnd3Not3AVX512(SB), NOSPLIT, $0-24
	MOVQ ops+0(FP), AX
	MOVQ n+8(FP), CX
	MOVQ 0(AX), SI
	MOVQ 8(AX), DI
	MOVQ 16(AX), R8
	MOVQ 24(AX), R9
	MOVQ 32(AX), R10
	MOVQ 40(AX), R11
	MOVQ 48(AX), R12
	SHLQ $3, CX
	XORQ DX, DX
	VPXORQ Z0, Z0, Z0

loop3:
	CMPQ DX, CX
	JAE  done3
	VMOVDQU64 (SI)(DX*1), Z1
	VMOVDQU64 (R10)(DX*1), Z2
	VPANDQ    (DI)(DX*1), Z1, Z1
	VPORQ     (R11)(DX*1), Z2, Z2
	VPANDQ    (R8)(DX*1), Z1, Z1
	VPORQ     (R12)(DX*1), Z2, Z2
	VPANDQ    (R9)(DX*1), Z1, Z1
	VPANDNQ   Z1, Z2, Z1
	VPOPCNTQ  Z1, Z1
	VPADDQ    Z1, Z0, Z0
	ADDQ      $64, DX
	JMP       loop3

done3:
	SUMZ0
	MOVQ          AX, ret+16(FP)
	RET

// func orIntoAVX512(dst, src *uint64, n int)
TEXT ·orIntoAVX512(SB), NOSPLIT, $0-24
	COMBINE(VPORQ, Z2, Z1)

// func andIntoAVX512(dst, src *uint64, n int)
TEXT ·andIntoAVX512(SB), NOSPLIT, $0-24
	COMBINE(VPANDQ, Z2, Z1)

// func andNotIntoAVX512(dst, src *uint64, n int)
TEXT ·andNotIntoAVX512(SB), NOSPLIT, $0-24
	COMBINE(VPANDNQ, Z1, Z2) // Z1 &^ Z2
