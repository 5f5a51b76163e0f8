package store_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/yard-api/yard/store"
	"github.com/yard-api/yard/store/storetest"
)

// BenchmarkUseSignatures: the cost of recording signed-request signatures
// one by one and in batches (group commit), per signature.
func BenchmarkUseSignatures(b *testing.B) {
	for _, engine := range storetest.Engines {
		b.Run(engine, func(b *testing.B) {
			db := storetest.Open(b, engine)
			ctx := context.Background()
			exp := time.Now().Add(time.Hour)
			n := 0
			for _, size := range []int{1, 8, 32} {
				b.Run("batch"+strconv.Itoa(size), func(b *testing.B) {
					sigs := make([]string, size)
					exps := make([]time.Time, size)
					for b.Loop() {
						for i := range sigs {
							n++
							sigs[i], exps[i] = strconv.Itoa(n), exp
						}
						if _, err := db.UseSignatures(ctx, sigs, exps); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*size), "ns/signature")
				})
			}
			_ = store.SQLite
		})
	}
}
