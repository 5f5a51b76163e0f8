package doctest

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

var (
	linkRe    = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	headingRe = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
)

// anchor is the fragment GitHub gives a heading: lower case, punctuation
// other than - and _ dropped, spaces as -.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}

// TestLinks checks that every relative link of README.md and docs/*.md
// names a file of the repository and, with a fragment, a heading of it, and
// that no document points at a path outside the repository: the documents
// stand on their own.
func TestLinks(t *testing.T) {
	docs, _ := filepath.Glob("../../docs/*.md")
	docs = append(docs, "../../README.md")
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := anchors[path]; ok {
			return a
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return nil
		}
		a := map[string]bool{}
		// Headings inside code blocks are not headings.
		inCode := false
		for _, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				inCode = !inCode
				continue
			}
			if m := headingRe.FindStringSubmatch(line); m != nil && !inCode {
				a[anchor(m[1])] = true
			}
		}
		anchors[path] = a
		return a
	}
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimPrefix(doc, "../../")
		for _, outside := range []string{"/work/", "../shared", "CONTRACT", "spec/000"} {
			if strings.Contains(string(b), outside) {
				t.Errorf("%s names %q, which is not in the repository", name, outside)
			}
		}
		for _, m := range linkRe.FindAllStringSubmatch(string(b), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			full := doc
			if path != "" {
				full = filepath.Join(filepath.Dir(doc), path)
				if _, err := os.Stat(full); err != nil {
					t.Errorf("%s: link to %s: no such file in the repository", name, target)
					continue
				}
			}
			if frag != "" && strings.HasSuffix(full, ".md") && !anchorsOf(full)[frag] {
				t.Errorf("%s: link to %s: no heading with that anchor", name, target)
			}
		}
	}
}
