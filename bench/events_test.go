package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/yard-api/yard"
	"github.com/yard-api/yard/auth"
	"github.com/yard-api/yard/events"
	"github.com/yard-api/yard/fetch"
	"github.com/yard-api/yard/httpapi"
	"github.com/yard-api/yard/jobs"
	"github.com/yard-api/yard/notify"
	"github.com/yard-api/yard/store"
)

// events: 1,000 open Server-Sent Events streams (100 people, 10 streams
// each) while dog changes are written at 500 events/s, each to a random
// dog of a random person (seeded). It reports the time from an event's
// transaction to its arrival at a stream (p50, p99), on the process that
// wrote it and, on PostgreSQL, on a second server with its own store
// connections and hub (as another process would be: woken by NOTIFY); the
// memory the streams cost; and the rate of bark accepts (202) with the
// streams open against the rate without.
func eventsGroup(b *bench) error {
	const people, perPerson, streams, rate = 100, 10, 1000, 500.0
	var names []string
	var dogs [][]string
	for i := range people {
		u, err := b.newUser(fmt.Sprintf("ev%d", i))
		if err != nil {
			return err
		}
		names = append(names, u.Name)
		var ds []string
		for j := range 2 {
			d := &yard.Dog{Name: fmt.Sprintf("Dog %d-%d", i, j), Email: "dog@example.org", Owner: u.ID}
			if err := b.db.CreateDog(b.ctx, d); err != nil {
				return err
			}
			ds = append(ds, d.ID)
		}
		dogs = append(dogs, ds)
	}

	ctx, stop := context.WithCancel(b.ctx)
	defer stop()
	// Bark tasks are accepted and stored (their workers do not run here).
	dir, err := os.MkdirTemp("", "yardbench-events-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	start := func(db *store.DB) (string, *events.Hub) {
		svc := jobs.New(jobs.Config{DB: db, Effects: &jobs.Effects{Mailer: &notify.MailOutbox{Dir: dir}, Texter: &notify.TextOutbox{Dir: dir},
			Fetcher: &fetch.Runner{}, Users: db, DataDir: dir}})
		hub := events.New(db, events.Config{PerPerson: perPerson})
		go func() { _ = hub.Run(ctx) }()
		basic := auth.NewBasic(db, auth.NewLoginLimiter(0, nil), b.hashing)
		srv := httptest.NewUnstartedServer(nil)
		srv.EnableHTTP2 = true
		srv.StartTLS()
		go func() { <-ctx.Done(); srv.Close() }()
		api := httpapi.New(httpapi.Deps{DB: db, Auth: &auth.Chain{Header: []auth.Scheme{basic}}, BaseURL: srv.URL,
			Logger: slog.New(slog.NewJSONHandler(io.Discard, nil)), StoreWait: httpapi.DefaultStoreWait, Events: hub, Barks: svc})
		srv.Config.Handler = api.Handler()
		return srv.URL, hub
	}
	urlA, _ := start(b.db)
	urls := []string{urlA}
	if b.db.Engine() == store.Postgres && b.otherServer {
		// A second server over its own connections: what another process
		// sees of the same store.
		db2, err := store.Open(b.ctx, b.dsn, os.TempDir())
		if err != nil {
			return err
		}
		defer db2.Close()
		urlB, _ := start(db2)
		urls = append(urls, urlB)
	}

	fmt.Fprintf(b.out, "## events: %d streams (%d people × %d, %s), %.0f events/s written, store %s\n", streams, people, perPerson, b.streamProto, rate, b.db.Engine())
	client := loadClient(b.concurrency)
	auth := func(req *http.Request, person int) { req.SetBasicAuth(names[person], benchPassword) }
	// Warm the Basic cache of every person on every server.
	for _, u := range urls {
		for p := range people {
			req, _ := http.NewRequest("GET", u+"/v1/dogs/"+dogs[p][0]+"/", nil)
			auth(req, p)
			if resp, err := client.Do(req); err == nil {
				resp.Body.Close()
			}
		}
	}
	// Bark accepts: by a person nobody streams (the streams' 500 events/s
	// flow beside them), and by the people who hold the streams (each
	// accept's bark.created then goes to 10 streams).
	barker, err := b.newUser("evbarker")
	if err != nil {
		return err
	}
	var barkerDogs []string
	for i := range 100 {
		d := &yard.Dog{Name: fmt.Sprintf("Barker %d", i), Email: "dog@example.org", Owner: barker.ID}
		if err := b.db.CreateDog(b.ctx, d); err != nil {
			return err
		}
		barkerDogs = append(barkerDogs, d.ID)
	}
	acceptBy := func(watched bool) func(w, i int) *http.Request {
		return func(w, i int) *http.Request {
			rng := rand.New(rand.NewPCG(uint64(w), uint64(i)))
			p := rng.IntN(people)
			dog := barkerDogs[rng.IntN(len(barkerDogs))]
			if watched {
				dog = dogs[p][rng.IntN(2)]
			}
			req, _ := http.NewRequest("POST", urlA+"/v1/dogs/"+dog+"/barks", strings.NewReader(`{"effect":"record"}`))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Prefer", "respond-async")
			if watched {
				auth(req, p)
			} else {
				req.SetBasicAuth("evbarker", benchPassword)
			}
			return req
		}
	}
	// 500 events/s: renames of random dogs (one dog.updated each).
	rename := func(w, i int) *http.Request {
		rng := rand.New(rand.NewPCG(uint64(w)+1<<32, uint64(i)))
		p := rng.IntN(people)
		req, _ := http.NewRequest("PATCH", urlA+"/v1/dogs/"+dogs[p][rng.IntN(2)]+"/",
			strings.NewReader(`{"name":"Dog `+strconv.Itoa(rng.IntN(1e6))+`"}`))
		req.Header.Set("Content-Type", "application/json")
		auth(req, p)
		return req
	}
	if resp, err := client.Do(acceptBy(false)(0, 0)); err == nil {
		resp.Body.Close()
	}
	// withRenames runs accepts while renames are written at the rate.
	withRenames := func(name, profile string, accept func(w, i int) *http.Request) (accepts, renamed result) {
		done := make(chan result, 1)
		go func() {
			done <- runPaced(b.ctx, fmt.Sprintf("  dog renames at %.0f/s", rate), loadClient(b.concurrency), b.concurrency, rate, b.duration, 204, rename)
		}()
		settle(b)
		stopProfile := startProfile(b, profile)
		pg0, local := postgresCPUTime()
		accepts = runLoad(b.ctx, name, client, b.concurrency, b.duration, 202, accept)
		pg1, _ := postgresCPUTime()
		stopProfile()
		renamed = <-done
		b.report(accepts)
		b.report(renamed)
		if local && b.db.Engine() == store.Postgres {
			// What the phase cost the database on the same cores.
			fmt.Fprintf(b.out, "  PostgreSQL's processes: %.0f%% of one core\n", 100*(pg1-pg0).Seconds()/b.duration.Seconds())
		}
		return accepts, renamed
	}
	// Rounds alternate without and with the streams, and which comes
	// first, so that a drift of the machine or of the store's size (it
	// grows by every accept) falls on both.
	rounds := b.eventRounds
	var without, with, withoutWatched, withWatched []result
	// Memory is measured in the rounds that open the streams after the
	// round's work without them (the first of each pair): the resident
	// size of a Go process seldom shrinks, so a round that starts with the
	// streams has no baseline of its own. fileControl is the file-backed
	// growth over the work without streams that precedes them, for
	// comparison.
	var heapGrowth, anonGrowth, fileGrowth, fileControl []float64
	noStreams := func() {
		a, _ := withRenames("async 202, no streams", fmt.Sprintf("without-%d.prof", len(without)+1), acceptBy(false))
		without = append(without, a)
		settle(b)
		withoutWatched = append(withoutWatched, b.report(runLoad(b.ctx, "async 202 by the streams' people, no streams", client, b.concurrency, b.duration, 202, acceptBy(true))))
	}
	for round := range rounds {
		fmt.Fprintf(b.out, "round %d\n", round+1)
		measured := round%2 == 0
		var start mem
		if measured {
			start = memory()
			noStreams()
		}
		runtime.GC()
		m0 := memory()
		// The streams are held by a child process (this program again),
		// so that this process's memory is the server's alone (and its
		// load clients). -streams http1 (the default): one connection
		// each, as most clients hold them; -streams h2: a person's 10
		// streams share one HTTP/2 connection, as a browser's tabs on one
		// origin do.
		child := exec.Command(os.Args[0])
		child.Env = append(os.Environ(), "YARDBENCH_STREAMS="+strings.Join(urls, ","), "YARDBENCH_STREAMS_N="+strconv.Itoa(streams),
			"YARDBENCH_STREAMS_PEOPLE="+strconv.Itoa(people), "YARDBENCH_STREAMS_PROTO="+b.streamProto)
		child.Stderr = os.Stderr
		stdin, _ := child.StdinPipe()
		stdout, _ := child.StdoutPipe()
		if err := child.Start(); err != nil {
			return err
		}
		lines := bufio.NewScanner(stdout)
		lines.Buffer(make([]byte, 1<<20), 1<<20)
		if !lines.Scan() {
			_ = child.Process.Kill()
			return fmt.Errorf("the stream client said nothing")
		}
		fmt.Fprintf(b.out, "  %s\n", lines.Text())
		cpu0 := processCPU(child.Process.Pid)
		a, _ := withRenames("async 202, streams open", fmt.Sprintf("with-%d.prof", len(with)+1), acceptBy(false))
		with = append(with, a)
		childCPU := processCPU(child.Process.Pid) - cpu0
		settle(b)
		withWatched = append(withWatched, b.report(runLoad(b.ctx, "async 202 by the streams' people", client, b.concurrency, b.duration, 202, acceptBy(true))))
		m1 := memory()
		if measured {
			heapGrowth = append(heapGrowth, float64(m1.heap-m0.heap)/1e6)
			anonGrowth = append(anonGrowth, float64(m1.anon-m0.anon)/1e6)
			fileGrowth = append(fileGrowth, float64(m1.file-m0.file)/1e6)
			fileControl = append(fileControl, float64(m0.file-start.file)/1e6)
		}
		time.Sleep(500 * time.Millisecond) // the last deliveries
		stdin.Close()
		for lines.Scan() {
			fmt.Fprintf(b.out, "  %s\n", lines.Text())
		}
		_ = child.Wait()
		if measured {
			i := len(anonGrowth) - 1
			fmt.Fprintf(b.out, "  the server's memory with the streams open and the writes done: Go heap %+.1f MB, resident %+.1f MB "+
				"(anonymous %+.1f MB, file-backed %+.1f MB; file-backed over the work without streams before them: %+.1f MB)\n",
				heapGrowth[i], anonGrowth[i]+fileGrowth[i], anonGrowth[i], fileGrowth[i], fileControl[i])
		}
		fmt.Fprintf(b.out, "  CPU of the stream client (another process) while renames and accepts ran: %.0f%% of one core\n", 100*childCPU.Seconds()/b.duration.Seconds())
		// Let the server close the streams before the next baseline.
		time.Sleep(time.Second)
		if round%2 == 1 {
			noStreams()
		}
	}
	stop()
	median := func(rs []result) result {
		s := slices.Clone(rs)
		slices.SortFunc(s, func(x, y result) int { return int(x.RPS - y.RPS) })
		return s[len(s)/2]
	}
	// Each round's ratio, and the ratio of the rounds' sums, which weighs
	// every round alike whichever way the machine drifted.
	ratios := func(num, den []result) string {
		var parts []string
		var n, d float64
		for i := range num {
			parts = append(parts, fmt.Sprintf("%.1f%%", 100*num[i].RPS/den[i].RPS))
			n, d = n+num[i].RPS, d+den[i].RPS
		}
		return fmt.Sprintf("rounds %s; all rounds %.1f%%", strings.Join(parts, ", "), 100*n/d)
	}
	fmt.Fprintf(b.out, "medians of %d rounds:\n", rounds)
	b.ratio("bark accepts with 1,000 streams open, against none (500 renames/s in both)", median(with), median(without))
	fmt.Fprintf(b.out, "    %s\n", ratios(with, without))
	b.ratio("bark accepts by the streams' people (each event to 10 streams), against no streams", median(withWatched), median(withoutWatched))
	fmt.Fprintf(b.out, "    %s\n", ratios(withWatched, withoutWatched))
	med := func(v []float64) float64 {
		v = slices.Clone(v)
		slices.Sort(v)
		return (v[(len(v)-1)/2] + v[len(v)/2]) / 2
	}
	// Anonymous memory is the process's own; file-backed resident pages
	// are the SQLite file mapped by the store (PRAGMA mmap_size), pages
	// of the kernel's cache that grow with the store, streams or not.
	fmt.Fprintf(b.out, "  the server's resident growth with the streams open: median anonymous %+.1f MB, file-backed %+.1f MB (%+.1f MB without streams)\n",
		med(anonGrowth), med(fileGrowth), med(fileControl))
	fmt.Fprintln(b.out)
	return nil
}

// settle brings a PostgreSQL store to the same state before each phase of
// the events group: its tables vacuumed and analysed and a checkpoint
// taken, so that neither an autovacuum of the growing tasks and events
// tables (seconds of a core each, at 20% more rows) nor the first writes
// after a checkpoint (whole pages into the WAL) fall on one phase and not
// on the other. CHECKPOINT needs a superuser or pg_checkpoint; without
// them the phase runs as it is.
func settle(b *bench) {
	if b.db.Engine() != store.Postgres {
		return
	}
	for _, q := range []string{"VACUUM (ANALYZE) tasks, events, dogs", "CHECKPOINT"} {
		if _, err := b.db.Read().ExecContext(b.ctx, q); err != nil && !b.settleWarned {
			b.settleWarned = true
			fmt.Fprintf(b.out, "  (before the phase, %s: %v)\n", q, err)
		}
	}
}

// startProfile starts a CPU profile of this process into name in
// b.eventProfiles, when set; the function returned stops it.
func startProfile(b *bench, name string) (stop func()) {
	if b.eventProfiles == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(b.eventProfiles, name))
	if err == nil {
		err = pprof.StartCPUProfile(f)
	}
	if err != nil {
		fmt.Fprintf(b.out, "  no profile %s: %v\n", name, err)
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// mem is a process's memory: the Go heap in use, and its resident pages,
// anonymous (its own) and file-backed (mapped files), in bytes.
type mem struct{ heap, anon, file int64 }

// memory returns this process's memory.
func memory() mem {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	m := mem{heap: int64(ms.HeapInuse)}
	if b, err := os.ReadFile("/proc/self/status"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			switch k {
			case "RssAnon":
				m.anon = kb * 1024
			case "RssFile":
				m.file = kb * 1024
			}
		}
	}
	return m
}

// streamClient is the child process of the events group: it opens
// YARDBENCH_STREAMS_N streams over the servers in YARDBENCH_STREAMS (comma
// separated), as people ev0… (YARDBENCH_STREAMS_PEOPLE of them, by turns),
// says how many opened, reads until its standard input closes, and prints
// the time from each event's transaction to its arrival, per server.
func streamClient(urlList string) {
	urls := strings.Split(urlList, ",")
	n, _ := strconv.Atoi(os.Getenv("YARDBENCH_STREAMS_N"))
	people, _ := strconv.Atoi(os.Getenv("YARDBENCH_STREAMS_PEOPLE"))
	ctx, stop := context.WithCancel(context.Background())
	client := loadClient(n)
	client.Timeout = 0
	// With YARDBENCH_STREAMS_PROTO=h2, each person holds one HTTP/2
	// connection per server, which carries all their streams there.
	h2 := os.Getenv("YARDBENCH_STREAMS_PROTO") == "h2"
	var h2mu sync.Mutex
	h2clients := map[[2]int]*http.Client{}
	clientFor := func(server, person int) *http.Client {
		if !h2 {
			return client
		}
		h2mu.Lock()
		defer h2mu.Unlock()
		c := h2clients[[2]int{server, person}]
		if c == nil {
			c = &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true},
				ForceAttemptHTTP2: true, DisableCompression: true}}
			h2clients[[2]int{server, person}] = c
		}
		return c
	}
	var notH2 atomic.Int64
	type lat struct {
		mu  sync.Mutex
		all []time.Duration
	}
	lats := make([]*lat, len(urls))
	for i := range lats {
		lats[i] = &lat{}
	}
	var opened, failed atomic.Int64
	var wg sync.WaitGroup
	for s := range n {
		server := s % len(urls)
		person := (s / len(urls)) % people
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, "GET", urls[server]+"/v1/events", nil)
			req.Header.Set("Accept", "text/event-stream")
			req.SetBasicAuth(fmt.Sprintf("ev%d", person), benchPassword)
			resp, err := clientFor(server, person).Do(req)
			if err != nil || resp.StatusCode != 200 {
				failed.Add(1)
				return
			}
			defer resp.Body.Close()
			if h2 && resp.ProtoMajor != 2 {
				notH2.Add(1)
			}
			opened.Add(1)
			r := bufio.NewReaderSize(resp.Body, 4096)
			var mine []time.Duration
			defer func() {
				l := lats[server]
				l.mu.Lock()
				l.all = append(l.all, mine...)
				l.mu.Unlock()
			}()
			for {
				line, err := r.ReadSlice('\n')
				if err != nil {
					return
				}
				if !bytes.HasPrefix(line, []byte("data: ")) {
					continue
				}
				now := time.Now()
				i := bytes.Index(line, []byte(`"time":"`))
				if i < 0 || len(line) < i+8+24 {
					continue
				}
				if at, err := time.Parse(time.RFC3339Nano, string(line[i+8:i+8+24])); err == nil {
					mine = append(mine, now.Sub(at))
				}
			}
		})
	}
	for deadline := time.Now().Add(60 * time.Second); opened.Load()+failed.Load() < int64(n) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
	}
	fmt.Printf("streams open: %d (%d refused), %d connections", opened.Load(), failed.Load(), map[bool]int{true: len(h2clients), false: int(opened.Load())}[h2])
	if h2 {
		fmt.Printf(" (HTTP/2; %d streams not over HTTP/2)", notH2.Load())
	}
	fmt.Println()
	_, _ = io.Copy(io.Discard, os.Stdin)
	stop()
	wg.Wait()
	where := []string{"same process", "other server (woken by NOTIFY)"}
	for i, l := range lats {
		slices.Sort(l.all)
		if len(l.all) == 0 {
			continue
		}
		q := func(f float64) float64 { return float64(l.all[int(f*float64(len(l.all)-1))].Microseconds()) / 1000 }
		fmt.Printf("transaction → stream, %s: %d deliveries, p50 %.1f ms, p99 %.1f ms, max %.1f ms\n", where[i], len(l.all), q(0.5), q(0.99), q(1))
	}
}

// processCPU returns the CPU time (user and system) a process has used.
func processCPU(pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's closing parenthesis; utime and stime
	// are the 14th and 15th of the line.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+2:]))
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	s, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(u+s) * time.Second / 100 // clock ticks (USER_HZ)
}
