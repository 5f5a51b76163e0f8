package main

import (
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/yard-api/yard/store/storetest"
)

// TestCarReadLeasesTwoProcesses: two serve processes on one PostgreSQL,
// each holding a read lease (docs/cars.md, "Read leases"): a car written
// through one is read through the other right after the write's answer,
// every time, and car reads without writes go without the change probe.
func TestCarReadLeasesTwoProcesses(t *testing.T) {
	dsn := storetest.NewPostgresDatabase(t)
	s1 := startProcess(t, "--data", t.TempDir(), "--db", dsn, "--car-read-lease", "1s")
	s2 := startProcess(t, "--data", t.TempDir(), "--db", dsn, "--car-read-lease", "1s")
	admin := s1.Password
	waitCarIndex(t, s1)
	waitCarIndex(t, s2)
	withoutProbe := func(s *server) float64 {
		req, _ := http.NewRequest("GET", s.URL+"/metrics", nil)
		req.SetBasicAuth("admin", admin)
		resp, err := insecure.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := regexp.MustCompile(`(?m)^yard_car_reads_without_probe_total (\S+)$`).FindSubmatch(body)
		if m == nil {
			t.Fatalf("metrics of %s: no yard_car_reads_without_probe_total", s.URL)
		}
		v, _ := strconv.ParseFloat(string(m[1]), 64)
		return v
	}
	if resp, m := call(t, "PUT", s1.URL+"/garages/gl", "admin", admin, map[string]any{"name": "Lease", "state": "CA"}); resp.StatusCode/100 != 2 {
		t.Fatalf("garage: %d %v", resp.StatusCode, m)
	}
	for i := range 30 {
		writer, reader := s1, s2
		if i%2 == 1 {
			writer, reader = s2, s1
		}
		id := fmt.Sprintf("lease-%d", i%5)
		year := 2000 + i
		start := time.Now()
		resp, m := call(t, "PUT", writer.URL+"/cars/"+id, "admin", admin, map[string]any{
			"color": "red", "type": "sedan", "doors": 4, "make": "Ford", "model": "Focus", "year": year, "garage": "gl"})
		if resp.StatusCode/100 != 2 {
			t.Fatalf("PUT %s: %d %v", id, resp.StatusCode, m)
		}
		if d := time.Since(start); d > 500*time.Millisecond {
			t.Fatalf("PUT %s took %v: the other process's acknowledgement did not come", id, d)
		}
		if _, car := call(t, "GET", reader.URL+"/cars/"+id, "", "", nil); car["year"] != float64(year) {
			t.Fatalf("write %d through %s, then a read through %s: %v, want year %d", i, writer.URL, reader.URL, car, year)
		}
		if _, page := call(t, "GET", reader.URL+fmt.Sprintf("/cars?q.year.eq=%d&garage.state=ca", year), "", "", nil); page["total"] != 1.0 {
			t.Fatalf("write %d, then a search through the other process: %v, want one car", i, page)
		}
	}
	// Reads and no writes: most go without the probe.
	before := withoutProbe(s2)
	for range 40 {
		call(t, "GET", s2.URL+"/cars/lease-1", "", "", nil)
	}
	if after := withoutProbe(s2); after-before < 30 {
		t.Fatalf("40 reads without writes: %v went without the probe, want most", after-before)
	}
}
