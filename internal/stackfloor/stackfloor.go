// Package stackfloor keeps the first stack of a new goroutine at 4 KiB,
// the size net/http's goroutine of each HTTP/1.1 request ends up needing
// (docs/operations.md, "Goroutine stacks").
//
// The runtime gives a new goroutine a first stack sized by the average
// stack in use at the last garbage collection (Go 1.19's adaptive start,
// GODEBUG adaptivestackstart), rounded up to a power of two with a guard
// of 928 bytes: an average under about 1.1 KiB gives 2 KiB. For every
// HTTP/1.1 request net/http starts a goroutine that reads the connection
// in the background while the handler runs; its path down through TLS to
// the socket's read needs about 1.3 KiB. When the server's other
// goroutines are few and shallow (idle workers parked in a select), the
// average stays under the line, and every request's goroutine outgrows its
// 2 KiB and is copied to 4 KiB: unwinding and copying the stack, a tenth
// of the CPU of a short request in profiles (docs/benchmarks.md).
//
// Keep watches the starting size the runtime reports and, while it is
// under 4 KiB, parks a few more goroutines that each hold about 2.5 KiB of
// stack in use, which lifts the average. Each lives in a 4 KiB stack, and
// their stacks in use can lift the average to at most 2.5 KiB, so the
// starting size never goes past 4 KiB on their account. At most
// MaxHolders are kept (1 MiB of stacks).
package stackfloor

import (
	"context"
	"os"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"
)

const (
	// Floor is the starting stack size Keep holds.
	Floor = 4 << 10
	// MaxHolders bounds the goroutines Keep parks.
	MaxHolders = 256
	// batch is how many Keep adds at a look that finds the size short.
	batch = 16
)

// startingSize is the runtime's metric of a new goroutine's first stack.
const startingSize = "/gc/stack/starting-size:bytes"

// Size returns the starting stack size of a new goroutine as the runtime
// last computed it (at the end of a garbage collection), or 0 when the
// runtime does not report it.
func Size() uint64 {
	s := []metrics.Sample{{Name: startingSize}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// Keep looks at the starting stack size every interval and parks more
// holding goroutines while it is under Floor, until ctx ends, when they
// all return. It returns when ctx ends, or at once when the runtime's
// adaptive start is off (GODEBUG adaptivestackstart=0: every goroutine
// starts at 2 KiB whatever the average).
func Keep(ctx context.Context, interval time.Duration) {
	if !adaptive(os.Getenv("GODEBUG")) {
		return
	}
	release := make(chan struct{})
	defer close(release)
	t := time.NewTicker(interval)
	defer t.Stop()
	held := 0
	for {
		if size := Size(); size != 0 && size < Floor && held < MaxHolders {
			for range min(batch, MaxHolders-held) {
				go hold(release)
				held++
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// adaptive reports whether the GODEBUG setting godebug leaves the
// runtime's adaptive stack start on (the last adaptivestackstart= wins,
// as the runtime reads it).
func adaptive(godebug string) bool {
	on := true
	for kv := range strings.SplitSeq(godebug, ",") {
		if v, ok := strings.CutPrefix(kv, "adaptivestackstart="); ok {
			on = v != "0"
		}
	}
	return on
}

// holdBytes is the stack a holding goroutine keeps in use: well over the
// 1.1 KiB line, and with the runtime's guard under 4 KiB, so that its
// stack is 4 KiB and no more.
const holdBytes = 2400

// holders counts the holding goroutines of every Keep running.
var holders atomic.Int64

// hold parks until release is closed with holdBytes of its frame in use.
//
//go:noinline
func hold(release <-chan struct{}) {
	holders.Add(1)
	defer holders.Add(-1)
	var pad [holdBytes]byte
	pad[0] = 1
	<-release
	use(pad[:])
}

// use reads b, so that hold's frame keeps its array (b does not escape:
// the array stays on the stack).
//
//go:noinline
func use(b []byte) byte { return b[0] + b[len(b)-1] }
