package conform

import (
	"fmt"
	"io"
	"strings"
)

// WriteMarkdown writes the check table as the Markdown of
// docs/conformance.md: a section per part, a row per check.
func WriteMarkdown(w io.Writer) error {
	checks := Checks()
	var b strings.Builder
	fmt.Fprintf(&b, "%d checks in %d parts.\n", len(checks), len(Parts()))
	for _, p := range Parts() {
		fmt.Fprintf(&b, "\n### %s\n\n| id | level | sends | expects | rule |\n|---|---|---|---|---|\n", p)
		for _, c := range checks {
			if c.Part == p {
				fmt.Fprintf(&b, "| `%s` | %s | %s | %s | [%s](%s) |\n", c.ID, c.Level, cell(c.Sends), cell(c.Expects), c.Doc, strings.TrimPrefix(c.Doc, "docs/"))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// cell escapes a table cell's pipes and angle brackets.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "<", "&lt;", ">", "&gt;").Replace(s)
}
