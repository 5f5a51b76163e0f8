package sigbase

import "strings"

// OAuthAuthorization returns the Authorization value that carries OAuth
// 1.0a protocol parameters (RFC 5849 §3.5.1): "OAuth", the realm (a
// string needing no escape), then each of params in its order as
// name="value", name and value encoded (§3.6).
func OAuthAuthorization(realm string, params [][2]string) string {
	var b strings.Builder
	b.Grow(400)
	b.WriteString(`OAuth realm="` + realm + `"`)
	for _, p := range params {
		b.WriteString(", ")
		b.WriteString(OAuthEncode(p[0]))
		b.WriteString(`="`)
		b.WriteString(OAuthEncode(p[1]))
		b.WriteByte('"')
	}
	return b.String()
}
