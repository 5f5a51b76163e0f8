//go:build !race

package httpapi_test

// raceEnabled reports a build with the race detector, which slows requests
// several times over: timing bounds are looser then.
const raceEnabled = false
