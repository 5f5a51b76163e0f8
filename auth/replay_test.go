package auth

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/yard-api/yard/store/storetest"
)

func TestMain(m *testing.M) { storetest.Main(m) }

// Many requests, each signature sent several times at once, through two
// batchers (two processes) on one store: each signature is accepted exactly
// once.
func TestSignatureBatcherAcceptsEachSignatureOnce(t *testing.T) {
	for _, engine := range storetest.Engines {
		t.Run(engine, func(t *testing.T) {
			db := storetest.Open(t, engine)
			procs := []*signatureBatcher{{}, {}}
			exp := time.Now().Add(time.Minute)
			const sigs, copies = 100, 4
			accepted := make([]atomic.Int32, sigs)
			var wg sync.WaitGroup
			for i := range sigs {
				for c := range copies {
					wg.Go(func() {
						ok, err := procs[c%2].use(context.Background(), db, "sig"+strconv.Itoa(i), exp)
						if err != nil {
							t.Error(err)
						}
						if ok {
							accepted[i].Add(1)
						}
					})
				}
			}
			wg.Wait()
			for i := range accepted {
				if n := accepted[i].Load(); n != 1 {
					t.Errorf("signature %d accepted %d times, want once", i, n)
				}
			}
		})
	}
}
