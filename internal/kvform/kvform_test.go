package kvform

import (
	"maps"
	"testing"
)

func TestParse(t *testing.T) {
	got, err := Parse([]byte("mode:id_res\nis_valid:true\nurl:https://x:1/\nempty:\n"))
	want := map[string]string{"mode": "id_res", "is_valid": "true", "url": "https://x:1/", "empty": ""}
	if err != nil || !maps.Equal(got, want) {
		t.Errorf("Parse = %v, %v; want %v", got, err, want)
	}
	if got, err := Parse(nil); err != nil || len(got) != 0 {
		t.Errorf("an empty body: %v, %v", got, err)
	}
	for _, bad := range []string{"mode:id_res", "no colon\n", ":v\n", "a:1\na:2\n", "a:1\n\n"} {
		if got, err := Parse([]byte(bad)); err == nil {
			t.Errorf("Parse(%q) = %v, want an error", bad, got)
		}
	}
}
