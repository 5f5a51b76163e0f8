package framing

// scanner follows the framing of the HTTP/1.x requests on one connection
// (RFC 9112 §2.1, §6): a request line, header lines up to an empty line,
// then a body of Content-Length bytes or in chunks (§7.1) with trailers. It
// keeps only a short prefix of each line, so its memory is fixed. Anything
// it cannot follow (a malformed message, which the server refuses and
// closes anyway) turns it off.
type scanner struct {
	off   bool
	state int
	line  [64]byte // a line's first bytes
	n     int      // bytes of the current line seen (may exceed len(line))

	requests int64 // request lines seen, except OPTIONS *
	skip     bool  // the current request is OPTIONS *, which no handler sees
	hasCL    bool
	hasTE    bool
	chunked  bool
	length   int64
	remain   int64 // body or chunk bytes still to pass
}

const (
	stRequestLine = iota
	stHeader
	stBody
	stChunkSize
	stChunkData
	stChunkEnd
	stTrailer
)

// feed follows p and returns the number of a request (counted from 1 on
// the connection) that carried both Content-Length and Transfer-Encoding,
// or 0. After such a request the connection closes, so the scanner stops.
func (s *scanner) feed(p []byte) int64 {
	for len(p) > 0 && !s.off {
		switch s.state {
		case stBody, stChunkData:
			k := int64(len(p))
			if k > s.remain {
				k = s.remain
			}
			s.remain -= k
			p = p[k:]
			if s.remain == 0 {
				if s.state == stBody {
					s.state = stRequestLine
				} else {
					s.state = stChunkEnd
				}
			}
			continue
		}
		c := p[0]
		p = p[1:]
		if c != '\n' {
			if s.n < len(s.line) {
				s.line[s.n] = c
			}
			s.n++
			continue
		}
		line := s.line[:min(s.n, len(s.line))]
		if len(line) > 0 && line[len(line)-1] == '\r' && s.n <= len(s.line) {
			line = line[:len(line)-1]
		}
		long := s.n > len(s.line)
		s.n = 0
		if k := s.endLine(line, long); k > 0 {
			s.off = true
			return k
		}
	}
	return 0
}

// endLine takes one complete line (without CRLF); long says only its
// prefix is there.
func (s *scanner) endLine(line []byte, long bool) int64 {
	switch s.state {
	case stRequestLine:
		if len(line) == 0 && !long {
			return 0 // an empty line before a request line (RFC 9112 §2.2)
		}
		s.skip = string(line[:min(len(line), 10)]) == "OPTIONS * " // methods are case-sensitive
		if !s.skip {
			s.requests++
		}
		s.hasCL, s.hasTE, s.chunked, s.length = false, false, false, 0
		s.state = stHeader
	case stHeader:
		if len(line) == 0 && !long {
			return s.endHeader()
		}
		switch {
		case hasPrefixFold(line, "content-length:"):
			v, ok := parseDecimal(trimSpace(line[len("content-length:"):]))
			if !ok || long || (s.hasCL && v != s.length) {
				s.off = true // the server refuses it and closes
				return 0
			}
			s.hasCL, s.length = true, v
		case hasPrefixFold(line, "transfer-encoding:"):
			if s.hasTE || long {
				s.off = true // several: the server refuses it (501)
				s.hasTE = true
				if s.hasCL {
					return s.flag()
				}
				return 0
			}
			s.hasTE = true
			s.chunked = equalFold(trimSpace(line[len("transfer-encoding:"):]), "chunked")
		}
	case stChunkSize:
		size, ok := parseHex(line)
		if !ok || long {
			s.off = true
			return 0
		}
		if size == 0 {
			s.state = stTrailer
		} else {
			s.remain, s.state = size, stChunkData
		}
	case stChunkEnd:
		s.state = stChunkSize
	case stTrailer:
		if len(line) == 0 && !long {
			s.state = stRequestLine
		}
	}
	return 0
}

func (s *scanner) endHeader() int64 {
	switch {
	case s.hasTE && s.hasCL:
		return s.flag()
	case s.hasTE && !s.chunked:
		s.off = true // the server refuses it (501) and closes
	case s.hasTE:
		s.state = stChunkSize
	case s.length > 0:
		s.remain, s.state = s.length, stBody
	default:
		s.state = stRequestLine
	}
	return 0
}

func (s *scanner) flag() int64 {
	s.off = true
	if s.skip {
		return 0
	}
	return s.requests
}

func hasPrefixFold(b []byte, prefix string) bool {
	return len(b) >= len(prefix) && equalFold(b[:len(prefix)], prefix)
}

// equalFold compares ASCII case-insensitively; prefix is lower case.
func equalFold(b []byte, lower string) bool {
	if len(b) != len(lower) {
		return false
	}
	for i := range b {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}

func parseDecimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var v int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int64(c-'0')
	}
	return v, true
}

// parseHex reads a chunk size (RFC 9112 §7.1), ignoring extensions after
// ';' and white space before them.
func parseHex(line []byte) (int64, bool) {
	for i, c := range line {
		if c == ';' || c == ' ' || c == '\t' {
			line = line[:i]
			break
		}
	}
	if len(line) == 0 || len(line) > 15 {
		return 0, false
	}
	var v int64
	for _, c := range line {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		v = v<<4 | int64(c)
	}
	return v, true
}
