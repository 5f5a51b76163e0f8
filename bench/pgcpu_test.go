package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// postgresCPUTime returns the CPU time (user and system) of the processes
// on this machine named postgres, read from /proc, and false when there
// are none to read (another system, or a server elsewhere). With a local
// PostgreSQL server it shows what a request costs the database as well as
// this process; any other local cluster is counted too.
func postgresCPUTime() (time.Duration, bool) {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var ticks int64
	found := false
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		s := string(b)
		end := strings.LastIndexByte(s, ')')
		if end < 0 || !strings.Contains(s[:end+1], "(postgres)") {
			continue
		}
		// After "pid (comm) ": state is field 3, utime and stime 14 and 15.
		f := strings.Fields(s[end+1:])
		if len(f) < 13 {
			continue
		}
		u, err1 := strconv.ParseInt(f[11], 10, 64)
		st, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			continue
		}
		ticks += u + st
		found = true
	}
	// Linux reports these in clock ticks of 1/100 s (USER_HZ).
	return time.Duration(ticks) * 10 * time.Millisecond, found
}
