package client

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"io"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The reader of a Server-Sent Events stream (events.go reads the
// server's /v1/events through it).

var (
	errTooLarge = errors.New("client: an event stream line or event exceeds 16 MiB")
	errCutOff   = errors.New("client: the server cut the event stream off")
)

// sseBlock is one dispatched event of an event stream.
type sseBlock struct {
	id, event string
	data      []byte
}

// sseReader parses an event stream as the WHATWG HTML standard's "Server-
// sent events" section says (§9.2.6 Interpreting an event stream): lines
// end in CRLF, LF or CR; a line starting with ":" is a comment; "field:
// value" loses one space after the colon; a line without a colon is a
// field with an empty value; data lines are joined with LF; an id holding
// NUL is ignored; retry takes ASCII digits only; a blank line dispatches;
// an incomplete event at the end of the stream is dropped. A comment
// saying "cut off" ends the connection: the server closes it next
// (docs/events.md, "Streams").
type sseReader struct {
	r       *bufio.Reader
	line    []byte
	skipLF  bool // the last line ended in CR: a following LF belongs to it
	started bool // past a leading byte order mark
	touch   func()
	onRetry func(time.Duration)

	id     string // the last event ID buffer
	lastID string // the last event ID, set from id at each dispatch
	event  string
	data   []byte
	has    bool // a data field arrived since the last dispatch
}

func newSSEReader(r io.Reader, lastID string, touch func(), onRetry func(time.Duration)) *sseReader {
	return &sseReader{r: bufio.NewReaderSize(r, 64<<10), id: lastID, lastID: lastID, touch: touch, onRetry: onRetry}
}

// readLine returns the next line without its end; a line the stream ends
// in the middle of is not returned.
func (p *sseReader) readLine() ([]byte, error) {
	p.line = p.line[:0]
	for {
		n := max(p.r.Buffered(), 1)
		buf, err := p.r.Peek(n)
		if len(buf) == 0 {
			return nil, err
		}
		if p.skipLF {
			p.skipLF = false
			if buf[0] == '\n' {
				_, _ = p.r.Discard(1)
				continue
			}
		}
		if i := bytes.IndexAny(buf, "\r\n"); i >= 0 {
			p.line = append(p.line, buf[:i]...)
			p.skipLF = buf[i] == '\r'
			_, _ = p.r.Discard(i + 1)
			break
		}
		p.line = append(p.line, buf...)
		_, _ = p.r.Discard(len(buf))
		if len(p.line) > maxEventSize {
			return nil, errTooLarge
		}
	}
	if !p.started {
		p.started = true
		p.line = bytes.TrimPrefix(p.line, []byte("\uFEFF"))
	}
	if len(p.line) > maxEventSize {
		return nil, errTooLarge
	}
	return p.line, nil
}

// next returns the next event with data; comments, retry and events
// without data are taken in on the way.
func (p *sseReader) next() (sseBlock, error) {
	for {
		line, err := p.readLine()
		if err != nil {
			return sseBlock{}, err
		}
		p.touch()
		if len(line) == 0 {
			// Dispatch (the last event ID is the buffer's even when
			// there is no data).
			p.lastID = p.id
			b := sseBlock{id: p.id, event: p.event, data: bytes.TrimSuffix(p.data, []byte("\n"))}
			has := p.has
			p.event, p.data, p.has = "", nil, false
			if !has {
				continue
			}
			b.event = cmp.Or(b.event, "message")
			if !utf8.Valid(b.data) {
				b.data = bytes.ToValidUTF8(b.data, []byte("\uFFFD"))
			}
			return b, nil
		}
		if line[0] == ':' {
			if bytes.HasPrefix(bytes.TrimLeft(line[1:], " "), []byte("cut off")) {
				return sseBlock{}, errCutOff
			}
			continue
		}
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimPrefix(value, []byte(" "))
		switch string(field) {
		case "event":
			p.event = strings.ToValidUTF8(string(value), "\uFFFD")
		case "data":
			if len(p.data)+len(value) > maxEventSize {
				return sseBlock{}, errTooLarge
			}
			p.data = append(append(p.data, value...), '\n')
			p.has = true
		case "id":
			if bytes.IndexByte(value, 0) < 0 {
				p.id = strings.ToValidUTF8(string(value), "\uFFFD")
			}
		case "retry":
			// ASCII digits only; a number too large saturates (ParseUint
			// stops at the overflow, so the rest is checked too).
			ms, err := strconv.ParseUint(string(value), 10, 64)
			digits := err == nil || errors.Is(err, strconv.ErrRange) && strings.Trim(string(value), "0123456789") == ""
			if digits {
				p.onRetry(time.Duration(min(ms, uint64(maxRetryAfter/time.Millisecond))) * time.Millisecond)
			}
		}
	}
}
