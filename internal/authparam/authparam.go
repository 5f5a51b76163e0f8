// Package authparam parses the parameters of an HTTP authentication
// scheme: the auth-params of an Authorization or WWW-Authenticate value
// after the scheme's name (RFC 9110 §11.2, §11.4), as Digest (RFC 7616),
// OAuth 1.0a (RFC 5849 §3.5.1) and yard's client read them. One parser
// serves the server's schemes and the client, so both read a header alike.
//
// The grammar, from RFC 9110 §5.6:
//
//	auth-param    = token BWS "=" BWS ( token / quoted-string )
//	#auth-param   = a comma-separated list; OWS around each comma
//	quoted-string = DQUOTE *( qdtext / quoted-pair ) DQUOTE
//	quoted-pair   = "\" ( HTAB / SP / VCHAR / obs-text )
//
// A name must be a token. An unquoted value is read up to the next comma
// or whitespace and must hold no DQUOTE or control character: wider than
// token (clients do send uri=/a/b unquoted), never ambiguous.
package authparam

import (
	"errors"
	"strings"
)

// Param is one auth-param. Value is unescaped; Quoted tells whether it was
// a quoted-string.
type Param struct {
	Name   string
	Value  string
	Quoted bool
}

// Errors of Parse.
var (
	ErrEmpty   = errors.New("authparam: no parameters")
	ErrSyntax  = errors.New("authparam: malformed parameter list")
	ErrElement = errors.New("authparam: an empty list element")
)

// Parse reads a comma-separated list of auth-params. Empty list elements
// ("a=1, , b=2", a trailing comma) are accepted, as RFC 9110 §5.6.1 asks
// of recipients, unless strict is set (RFC 5849 §3.5.1 lists none). A
// list without any parameter is ErrEmpty.
func Parse(s string, strict bool) ([]Param, error) {
	var out []Param
	i, n := 0, len(s)
	skipOWS := func() {
		for i < n && (s[i] == ' ' || s[i] == '\t') {
			i++
		}
	}
	for {
		skipOWS()
		if i >= n {
			break
		}
		if s[i] == ',' { // an empty element
			if strict {
				return nil, ErrElement
			}
			i++
			continue
		}
		start := i
		for i < n && isTchar(s[i]) {
			i++
		}
		name := s[start:i]
		skipOWS()
		if name == "" || i >= n || s[i] != '=' {
			return nil, ErrSyntax
		}
		i++
		skipOWS()
		p := Param{Name: name}
		if i < n && s[i] == '"' {
			var b strings.Builder
			closed := false
			for i++; i < n; i++ {
				c := s[i]
				if c == '"' {
					closed = true
					i++
					break
				}
				if c == '\\' {
					if i+1 >= n {
						return nil, ErrSyntax
					}
					i++
					c = s[i]
				}
				if isCtl(c) && c != '\t' {
					return nil, ErrSyntax
				}
				b.WriteByte(c)
			}
			if !closed {
				return nil, ErrSyntax
			}
			p.Value, p.Quoted = b.String(), true
		} else {
			start := i
			for i < n && s[i] != ',' && s[i] != ' ' && s[i] != '\t' {
				if s[i] == '"' || isCtl(s[i]) {
					return nil, ErrSyntax
				}
				i++
			}
			if i == start {
				return nil, ErrSyntax // name= with no value
			}
			p.Value = s[start:i]
		}
		out = append(out, p)
		skipOWS()
		if i >= n {
			break
		}
		if s[i] != ',' {
			return nil, ErrSyntax // two parameters without a comma
		}
		i++
		if skipOWS(); strict && i >= n {
			return nil, ErrElement // a trailing comma
		}
	}
	if len(out) == 0 {
		return nil, ErrEmpty
	}
	return out, nil
}

// Quote returns s as a quoted-string (RFC 9110 §5.6.4).
func Quote(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// isTchar reports whether c may be part of a token (RFC 9110 §5.6.2).
func isTchar(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0
}

func isCtl(c byte) bool { return c < 0x20 || c == 0x7f }
