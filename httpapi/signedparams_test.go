package httpapi

import (
	"slices"
	"testing"
)

// TestCredentialParams: each query variable a scheme reads maps to the
// component parameter of that name (any letter case), the apiKey security
// scheme's variable to none, and an undocumented one is an error.
func TestCredentialParams(t *testing.T) {
	components := map[string]any{
		"securitySchemes": map[string]any{"signedRequest": map[string]any{"type": "apiKey", "in": "query", "name": "apiKey"}},
		"parameters": map[string]any{
			"offset":           map[string]any{"name": "offset", "in": "query"},
			"signed-signature": map[string]any{"name": "signature", "in": "query"},
			"signed-bodyhash":  map[string]any{"name": "bodyhash", "in": "query"},
			"signature-header": map[string]any{"name": "signature", "in": "header"},
		},
	}
	got, err := credentialParams([]string{"apiKey", "signature", "bodyHash"}, components)
	if err != nil || !slices.Equal(got, []string{"signed-signature", "signed-bodyhash"}) {
		t.Fatalf("credentialParams = %v, %v", got, err)
	}
	if _, err := credentialParams([]string{"signature", "nonce"}, components); err == nil {
		t.Fatal("an undocumented credential variable was accepted")
	}
	// A scheme that lists its other variables documents them.
	components["securitySchemes"].(map[string]any)["signedRequest"].(map[string]any)["x-yard-query-variables"] = []any{"signature", "BodyHash"}
	got, err = credentialParams([]string{"apiKey", "signature", "bodyHash"}, components)
	if err != nil || len(got) != 0 {
		t.Fatalf("credentialParams with x-yard-query-variables = %v, %v; want none", got, err)
	}
}
