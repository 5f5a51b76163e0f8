package doctest

import (
	"reflect"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	doc := strings.Join([]string{
		"# Title",         // 1
		"```",             // 2
		"not run",         // 3
		"```",             // 4
		"```sh",           // 5
		"B=https://x",     // 6
		"curl -s $B/a \\", // 7
		"  -d '{}'   # → 201 `location: x` and `\"id\"`", // 8
		"# a comment",          // 9
		"curl -s $B/b",         // 10
		"#   → 409 `conflict`", // 11
		"curl -s $B/c         # 200, no arrow: no expectation", // 12
		"```",                              // 13
		"```sh skip=postgres",              // 14
		"./yard migrate --db postgres://x", // 15
		"```",                              // 16
	}, "\n")
	blocks, err := Parse(doc)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 || blocks[0].Line != 5 || blocks[0].Skip != "" || blocks[1].Skip != "postgres" {
		t.Fatalf("blocks = %+v", blocks)
	}
	cmds := blocks[0].Commands
	type short struct {
		First, Last int
		Expect      *Expect
	}
	var got []short
	for _, c := range cmds {
		got = append(got, short{c.First, c.Last, c.Expect})
	}
	want := []short{
		{6, 6, nil},
		{7, 8, &Expect{Status: 201, Fragments: []string{"location: x", `"id"`}}},
		{10, 11, &Expect{Status: 409, Fragments: []string{"conflict"}}},
		{12, 12, nil},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("commands:\n got %+v\nwant %+v", got, want)
	}
	if c := CommandAt(blocks, 8); c == nil || c.First != 7 {
		t.Errorf("CommandAt(8) = %+v", c)
	}
	if c := CommandAt(blocks, 9); c != nil {
		t.Errorf("CommandAt(9) = %+v, want none (a comment)", c)
	}

	for _, bad := range []string{
		"```sh\ncurl x\n",             // not closed
		"```sh skip=whatever\nx\n```", // unknown reason
		"```sh run=1\nx\n```",         // unknown attribute
	} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted it", bad)
		}
	}
}
