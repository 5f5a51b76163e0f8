package kvform

import (
	"maps"
	"testing"
)

func TestParse(t *testing.T) {
	got := Parse([]byte("mode:id_res\nis_valid:true\nno colon\nurl:https://x:1/\nmode:error"))
	want := map[string]string{"mode": "error", "is_valid": "true", "url": "https://x:1/"}
	if !maps.Equal(got, want) {
		t.Errorf("Parse = %v, want %v", got, want)
	}
}
