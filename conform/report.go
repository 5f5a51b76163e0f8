package conform

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of a run.
type Report struct {
	URL       string        `json:"url"`
	Started   time.Time     `json:"started"`
	Duration  time.Duration `json:"durationNs"`
	TimedOut  bool          `json:"timedOut,omitempty"`
	Results   []Result      `json:"results"`
	Passed    int           `json:"passed"`
	Failed    int           `json:"failed"`
	Skipped   int           `json:"skipped"`
	Leftovers []string      `json:"leftovers,omitempty"` // what the kit could not remove
}

// Result is the outcome of one check.
type Result struct {
	ID       string        `json:"id"`
	Part     string        `json:"part"`
	Level    Level         `json:"level"`
	Doc      string        `json:"doc"`
	Status   Status        `json:"status"`
	Message  string        `json:"message,omitempty"`
	Exchange string        `json:"exchange,omitempty"` // the failed request and response, secrets redacted
	Duration time.Duration `json:"durationNs"`
}

func (rep *Report) add(c Check, s Status, msg, exchange string, d time.Duration) {
	rep.Results = append(rep.Results, Result{ID: c.ID, Part: c.Part, Level: c.Level, Doc: c.Doc,
		Status: s, Message: msg, Exchange: exchange, Duration: d})
	rep.Passed, rep.Failed, rep.Skipped, _ = tally(rep.Results)
}

// MustFailed reports whether a MUST check failed (exit status 1).
func (rep *Report) MustFailed() bool {
	return slices.ContainsFunc(rep.Results, func(r Result) bool { return r.Status == Failed && r.Level == Must })
}

// WriteText writes the report for people: one FAIL line per failed check
// (its exchange indented below it), the skipped checks with their
// reasons, a table by part, then "N passed, M failed, K skipped".
func (rep *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, r := range rep.Results {
		if r.Status != Failed {
			continue
		}
		fmt.Fprintf(&b, "FAIL %s %s %s: %s\n", r.ID, r.Part, r.Level, oneLine(r.Message))
		if r.Doc != "" {
			fmt.Fprintf(&b, "    rule: %s\n", r.Doc)
		}
		for _, line := range strings.Split(strings.TrimRight(r.Exchange, "\n"), "\n") {
			if line != "" {
				fmt.Fprintf(&b, "    | %s\n", line)
			}
		}
	}
	for _, r := range rep.Results {
		if r.Status == Skipped {
			fmt.Fprintf(&b, "SKIP %s %s %s: %s\n", r.ID, r.Part, r.Level, oneLine(r.Message))
		}
	}
	for _, l := range rep.Leftovers {
		fmt.Fprintf(&b, "LEFT %s\n", l)
	}
	if b.Len() > 0 {
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tchecks\tpassed\tfailed\tskipped\tMUST failed")
	for _, results := range rep.byPart() {
		pass, fail, skip, mustFail := tally(results)
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\n", results[0].Part, len(results), pass, fail, skip, mustFail)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s (%s)\n", rep.Summary(), rep.Duration.Round(time.Millisecond))
	return err
}

// tally counts the results by status, and the failed MUST checks.
func tally(results []Result) (pass, fail, skip, mustFail int) {
	for _, r := range results {
		switch r.Status {
		case Passed:
			pass++
		case Failed:
			fail++
			if r.Level == Must {
				mustFail++
			}
		default:
			skip++
		}
	}
	return pass, fail, skip, mustFail
}

// byPart groups the results by part, in the order of Parts, leaving out
// the parts without results.
func (rep *Report) byPart() [][]Result {
	var out [][]Result
	for _, p := range Parts() {
		results := slices.DeleteFunc(slices.Clone(rep.Results), func(r Result) bool { return r.Part != p })
		if len(results) > 0 {
			out = append(out, results)
		}
	}
	return out
}

// Summary is the report's last line without its time: "N passed, M
// failed, K skipped".
func (rep *Report) Summary() string {
	return fmt.Sprintf("%d passed, %d failed, %d skipped", rep.Passed, rep.Failed, rep.Skipped)
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// WriteJSON writes the report as one JSON document.
func (rep *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(rep)
}

// JUnit XML, as CI systems read it: a suite per part, a case per check.
type junitSuites struct {
	XMLName xml.Name `xml:"testsuites"`
	junitCounts
	Suites []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	junitCounts
	Cases []junitCase `xml:"testcase"`
}

// junitCounts are the attributes a suite and the whole run share.
type junitCounts struct {
	Name  string `xml:"name,attr"`
	Tests int    `xml:"tests,attr"`
	Fails int    `xml:"failures,attr"`
	Skips int    `xml:"skipped,attr"`
	Time  string `xml:"time,attr"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Skipped   *junitMessage `xml:"skipped,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }

// WriteJUnit writes the report as JUnit XML.
func (rep *Report) WriteJUnit(w io.Writer) error {
	out := junitSuites{junitCounts: junitCounts{Name: "yard conform " + rep.URL, Tests: len(rep.Results), Fails: rep.Failed,
		Skips: rep.Skipped, Time: seconds(rep.Duration)}}
	for _, results := range rep.byPart() {
		s := junitSuite{junitCounts: junitCounts{Name: results[0].Part}}
		_, s.Fails, s.Skips, _ = tally(results)
		var d time.Duration
		for _, r := range results {
			d += r.Duration
			c := junitCase{Name: r.ID, ClassName: "conform." + r.Part, Time: seconds(r.Duration)}
			switch r.Status {
			case Failed:
				c.Failure = &junitMessage{Message: string(r.Level) + ": " + oneLine(r.Message), Type: string(r.Level),
					Text: "rule: " + r.Doc + "\n" + r.Exchange}
			case Skipped:
				c.Skipped = &junitMessage{Message: oneLine(r.Message)}
			}
			s.Cases = append(s.Cases, c)
		}
		s.Tests, s.Time = len(s.Cases), seconds(d)
		out.Suites = append(out.Suites, s)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
