// Package kvform reads OpenID 2.0's key-value form (§4.1.1) as the
// module's relying parties read the provider's answers (the console's
// authentication lab, the conformance kit's checks): leniently, every
// "key:value" line, the rest ignored. The provider's own strict reader is
// openid.ParseKV.
package kvform

import "strings"

// Parse returns the keys and values of b's lines; a line without a colon
// is left out, and a repeated key keeps its last value.
func Parse(b []byte) map[string]string {
	out := map[string]string{}
	for line := range strings.SplitSeq(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			out[k] = v
		}
	}
	return out
}
