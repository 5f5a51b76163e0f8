package doctest

import (
	"bufio"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// SkipReasons are the reasons a block may give for not being run.
var SkipReasons = map[string]string{
	"build":     "builds yard from the source tree; the runner builds ./yard itself",
	"test":      "runs the test suite, which runs this runner",
	"postgres":  "needs a PostgreSQL server",
	"smtp":      "needs a real SMTP server",
	"acme":      "needs a public domain and an ACME certificate authority",
	"browser":   "needs a person at a web browser",
	"benchmark": "a load benchmark that runs for minutes (docs/benchmarks.md)",
	"fuzz":      "a fuzzing run of several minutes (docs/security.md)",
	"long":      "generates and imports a million cars (minutes)",
	"cluster":   "needs a second machine or process sharing a PostgreSQL store",
	"root":      "installs system files with sudo (a systemd unit, a system user)",
}

// A Block is one fenced "sh" block of a document.
type Block struct {
	Line     int    // line of the opening fence (1-based)
	Skip     string // the skip reason, "" when the block runs
	Lines    []string
	Commands []Command
}

// A Command is one shell command of a block, with its continuation lines.
type Command struct {
	First, Last int // lines of the document (1-based)
	Text        string
	Expect      *Expect
}

// Expect is what a curl command's answer must be.
type Expect struct {
	Status    int
	Fragments []string
}

var (
	expectRe   = regexp.MustCompile(`#\s*→\s*(\d{3})\b(.*)$`)
	fragmentRe = regexp.MustCompile("`([^`]+)`")
)

// Parse returns the "sh" blocks of a Markdown document.
func Parse(doc string) ([]Block, error) {
	var blocks []Block
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur *Block
	inOther := false
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && !inOther && strings.HasPrefix(trimmed, "```"):
			info := strings.Fields(strings.TrimPrefix(trimmed, "```"))
			if len(info) == 0 || info[0] != "sh" {
				inOther = true
				continue
			}
			b := Block{Line: n}
			for _, attr := range info[1:] {
				reason, ok := strings.CutPrefix(attr, "skip=")
				if !ok {
					return nil, fmt.Errorf("line %d: unknown attribute %q of an sh block (want skip=REASON)", n, attr)
				}
				if _, known := SkipReasons[reason]; !known {
					return nil, fmt.Errorf("line %d: unknown skip reason %q", n, reason)
				}
				b.Skip = reason
			}
			cur = &b
		case inOther && trimmed == "```":
			inOther = false
		case cur != nil && trimmed == "```":
			cur.Commands = commands(cur.Line, cur.Lines)
			blocks = append(blocks, *cur)
			cur = nil
		case cur != nil:
			cur.Lines = append(cur.Lines, line)
		}
	}
	if cur != nil || inOther {
		return nil, fmt.Errorf("a code block is not closed at the end of the document")
	}
	return blocks, sc.Err()
}

// commands splits a block's lines into commands; fence is the line of the
// opening fence, so lines[i] is line fence+1+i of the document.
func commands(fence int, lines []string) []Command {
	var cmds []Command
	for i := 0; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		if t == "" {
			continue
		}
		if strings.HasPrefix(t, "#") {
			// An expectation on a line of its own belongs to the command
			// just before it.
			if e := parseExpect(t); e != nil && len(cmds) > 0 && cmds[len(cmds)-1].Expect == nil && cmds[len(cmds)-1].Last == fence+i {
				cmds[len(cmds)-1].Expect = e
				cmds[len(cmds)-1].Last = fence + 1 + i
			}
			continue
		}
		c := Command{First: fence + 1 + i}
		var text []string
		for ; i < len(lines); i++ {
			text = append(text, lines[i])
			if !strings.HasSuffix(strings.TrimRight(lines[i], " \t"), `\`) {
				break
			}
		}
		if i == len(lines) {
			i--
		}
		c.Last = fence + 1 + i
		c.Text = strings.Join(text, "\n")
		c.Expect = parseExpect(lines[i])
		cmds = append(cmds, c)
	}
	return cmds
}

func parseExpect(line string) *Expect {
	m := expectRe.FindStringSubmatch(line)
	if m == nil {
		return nil
	}
	status, _ := strconv.Atoi(m[1])
	e := &Expect{Status: status}
	for _, f := range fragmentRe.FindAllStringSubmatch(m[2], -1) {
		e.Fragments = append(e.Fragments, f[1])
	}
	return e
}

// CommandAt returns the command of blocks whose lines hold document line n.
func CommandAt(blocks []Block, n int) *Command {
	for bi := range blocks {
		for ci := range blocks[bi].Commands {
			c := &blocks[bi].Commands[ci]
			if c.First <= n && n <= c.Last {
				return c
			}
		}
	}
	return nil
}
