// Package kvform reads OpenID 2.0's key-value form (§4.1.1), one reader
// for the provider (openid.ParseKV, the relying parties' direct requests
// to it) and for the module's relying parties that read the provider's
// answers (the console's authentication lab, the conformance kit's
// checks, which so also check that the answer is well formed).
package kvform

import (
	"errors"
	"fmt"
	"strings"
)

// Parse returns the keys and values of a key-value form body: every line
// "key:value" and ended by a newline, no key twice. An empty body has no
// keys.
func Parse(b []byte) (map[string]string, error) {
	m := map[string]string{}
	s := string(b)
	if s == "" {
		return m, nil
	}
	if !strings.HasSuffix(s, "\n") {
		return nil, errors.New("key-value form: the last line has no newline")
	}
	for line := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k == "" {
			return nil, fmt.Errorf("key-value form: line %q has no key", line)
		}
		if _, dup := m[k]; dup {
			return nil, fmt.Errorf("key-value form: key %q is repeated", k)
		}
		m[k] = v
	}
	return m, nil
}
