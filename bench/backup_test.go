package bench

import (
	"bytes"
	"crypto/tls"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sync"
	"time"
)

// backupWrite is one write of the backup writers.
type backupWrite struct {
	start, end time.Time
	ok         bool
}

// backupWriters measures what a backup costs the writers of a running yard
// serve, for scripts/bench-backup (docs/operations.md, "Backups and
// restore"): it runs -clients writers, each creating dogs through the API
// one after another, for -before, then runs the backup command given after
// the flags while the writers go on, then -after more. It prints the latency
// of the writes answered before the backup began and of those that
// overlapped it (p50, p99, max), their rates, and how long the backup took.
// It is a program of this test binary (tools, YARDBENCH_TOOL=backup):
//
//	go test -c -o /tmp/bench.test ./bench
//	YARDBENCH_TOOL=backup /tmp/bench.test -url https://127.0.0.1:18460 -user admin -password PW -- ./yard backup --data DIR
func backupWriters(args []string) {
	fs := flag.NewFlagSet("benchbackup", flag.ExitOnError)
	base := fs.String("url", "https://127.0.0.1:18460", "yard serve's base URL")
	user := fs.String("user", "admin", "user that creates dogs (Basic)")
	pass := fs.String("password", "", "its password")
	clients := fs.Int("clients", 4, "writers, each one write at a time")
	before := fs.Duration("before", 5*time.Second, "writes before the backup starts")
	after := fs.Duration("after", 2*time.Second, "writes after it ends")
	_ = fs.Parse(args)
	if fs.NArg() == 0 {
		fmt.Fprintln(os.Stderr, "benchbackup: the backup command follows the flags")
		os.Exit(2)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, MaxIdleConnsPerHost: *clients}}
	var (
		mu     sync.Mutex
		writes []backupWrite
		stop   = make(chan struct{})
		wg     sync.WaitGroup
	)
	for c := range *clients {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Appendf(nil, `{"name":"w%d-%d","email":"w@example.org"}`, c, i)
				req, _ := http.NewRequest("POST", *base+"/v1/dogs", bytes.NewReader(body))
				req.Header.Set("Content-Type", "application/json")
				req.SetBasicAuth(*user, *pass)
				w := backupWrite{start: time.Now()}
				resp, err := client.Do(req)
				w.end = time.Now()
				if err == nil {
					w.ok = resp.StatusCode == 201
					resp.Body.Close()
				}
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
			}
		})
	}
	time.Sleep(*before)
	cmd := exec.Command(fs.Arg(0), fs.Args()[1:]...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	bStart := time.Now()
	err := cmd.Run()
	bEnd := time.Now()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchbackup: the backup command:", err)
	}
	time.Sleep(*after)
	close(stop)
	wg.Wait()

	var base0, during []time.Duration
	failed := 0
	for _, w := range writes {
		if !w.ok {
			failed++
			continue
		}
		switch {
		case w.end.Before(bStart):
			base0 = append(base0, w.end.Sub(w.start))
		case w.start.Before(bEnd) && w.end.After(bStart):
			during = append(during, w.end.Sub(w.start))
		}
	}
	fmt.Printf("backup took %s; %d writers; %d writes failed\n", bEnd.Sub(bStart).Round(time.Millisecond), *clients, failed)
	reportWrites("before the backup", base0, *before)
	reportWrites("during the backup", during, bEnd.Sub(bStart))
}

// reportWrites prints the latency and rate of the writes d over window.
func reportWrites(what string, d []time.Duration, window time.Duration) {
	if len(d) == 0 {
		fmt.Printf("%s: no writes\n", what)
		return
	}
	slices.Sort(d)
	q := func(p float64) time.Duration { return d[min(len(d)-1, int(p*float64(len(d))))] }
	fmt.Printf("%s: %d writes, %.0f/s, p50 %s, p99 %s, max %s\n", what, len(d), float64(len(d))/window.Seconds(),
		q(0.5).Round(10*time.Microsecond), q(0.99).Round(10*time.Microsecond), d[len(d)-1].Round(10*time.Microsecond))
}
