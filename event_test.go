package yard

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestEventIDText: the text form is 32 lower-case hex digits, tx then seq,
// and ParseEventID reads it back.
func TestEventIDText(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ids := []EventID{{}, {Tx: 1, Seq: 1}, {Tx: 1 << 62, Seq: 1 << 62}}
	for range 1000 {
		ids = append(ids, EventID{Tx: rng.Int64N(1 << 62), Seq: rng.Int64N(1 << 20)})
	}
	for _, id := range ids {
		s := id.String()
		if want := fmt.Sprintf("%016x%016x", uint64(id.Tx), uint64(id.Seq)); s != want {
			t.Fatalf("%+v: %q, want %q", id, s, want)
		}
		back, err := ParseEventID(s, "after")
		if err != nil || back != id {
			t.Fatalf("%q read back as %+v, %v", s, back, err)
		}
	}
}
